/**
 * The LLM gateway: `/llm/<name>/…` for every configured upstream, with its kind's paths (`/llm/openai/v1/…`,
 * `/llm/anthropic/v1/…`, `/llm/bedrock/model/{modelId}/…`, `/llm/vllm/v1/…`, `/llm/gemini/v1beta/models/…`).
 * Each call: the client's Reins secret -> caller, route and body -> LlmCall, decide -> refuse in the client's
 * protocol or forward, then report how it ended with the usage read on the way.
 *
 * The data path runs on plain node:http objects (`LlmGateway.handle`): the server hands every `/llm/` request
 * to it before Fastify sees it, because Fastify's per-request machinery (routing, hooks, reply) was a large
 * share of the gateway's CPU and the data plane needs none of it. The same routes are also registered with
 * Fastify (`registerLlmGateway`), which describes them in the OpenAPI document and serves them through
 * `app.inject`; both paths run the same code. Errors here answer in the provider's shape, not Reins'.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Access } from '../../shared/access.js';
import { nestedTooDeep, TOO_DEEP_MESSAGE } from '../../shared/json-depth.js';
import { readBodyNow, type BodyRead } from '../../shared/read-body.js';
import { Upstreams, upstreamHeaders } from './forward.js';
import { AnswerRelay, type AnswerPlan, type RelayEnd, type RelayRoute } from '../../shared/answer-relay.js';
import type { AnswerHeaders } from '../../shared/answer-headers.js';
import { callFacts, clientSecret, describeRoutes, matchEndpoint, providerCredential, upstreamRoute } from './providers.js';
import { PROVIDERS as DESCRIPTIONS } from './providers/index.js';
import { gatewayAnswer, type GatewayAnswer, type GatewayErrorKind } from './refusal.js';
import { DEFAULT_KIND_NAMES, type ProviderKind, type ProviderSettings } from '../../config/config.js';
import type { CallResult, DecideEvents, GatewayCaller, LlmCall, LlmGatewayDeps, RefusalReason } from './types.js';
import { estimatedUsage, meterFor, type UsageMeter } from './usage.js';
import { BedrockSigning } from './sigv4.js';
import { DOCUMENTED_ROUTES, fastifyPath } from './documented-routes.js';
import { Type } from 'typebox';

export type * from './types.js';

const PARAM_DESCRIPTION: Record<string, string> = {
  modelId: 'A Bedrock model id or inference profile (`anthropic.claude-sonnet-4-5-20250929-v1:0`, `us.amazon.nova-pro-v1:0`), or its ARN percent-encoded',
  model: 'A model id',
  responseId: 'A stored response id',
  deployment: 'An Azure OpenAI deployment name',
  modelAction: 'A Gemini model and method: `gemini-2.5-pro:generateContent`, `:streamGenerateContent` (with `?alt=sse`), `:countTokens`',
};

/** Every gateway path starts with it, then the upstream's name (`/llm/<name>/…`). */
const LLM_PREFIX = '/llm/';

/** Large prompts (images, long contexts) exceed the control plane's limit; this is the gateway's. */
export const GATEWAY_BODY_LIMIT = 32 * 1024 * 1024;

// The gateway authenticates with the provider-key header itself, so the control plane's auth hook lets it pass.
const GATEWAY_ACCESS: Access = 'gateway';
const METHODS = new Set(['GET', 'POST', 'DELETE']);

const GATEWAY_DESCRIPTION =
  'Point the provider SDK at this base URL and use a Reins token as its API key (Authorization: Bearer, or the ' +
  "header the provider's SDK uses: x-api-key for Anthropic, api-key for Azure OpenAI, x-goog-api-key or ?key= for " +
  'Gemini); Reins injects the upstream credential. Optional headers with a personal access token: ' +
  'X-Reins-Session (the session id; default one per token and UTC day) and X-Reins-Agent (an agent identity id). ' +
  'Bodies and answers pass through byte for byte, streams unbuffered. Refusals (policy, model access, budget) answer ' +
  "in the provider's own error shape with x-should-retry: false, a status no mainstream client retries (403; 402 for a " +
  'budget, 400 on Bedrock) and a message naming the policy or rule. Past ' +
  'http.failedAuthLimit bad keys from one client address in the window: 429 in the same shape, with Retry-After.';

const REFUSAL_KIND: Record<RefusalReason, GatewayErrorKind> = {
  policy: 'policy_denied',
  approval_required: 'policy_denied',
  model_access: 'model_not_allowed',
  budget: 'budget_exceeded',
  // A rate limit is the one refusal worth retrying: 429 with retry-after, x-should-retry left unset.
  rate_limit: 'rate_limited',
  bad_request: 'bad_request',
  credential_revoked: 'unauthenticated',
  agent_not_bound: 'agent_not_bound',
};

const NO_METER: UsageMeter = { push: () => undefined, finish: () => undefined };

export interface GatewayLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** An upstream as a request names it: its name, its kind, and its settings (absent: a default name not configured). */
export interface Upstream {
  name: string;
  kind: ProviderKind;
  settings: ProviderSettings | undefined;
}

/** The upstreams served: every configured name, and openai, anthropic and bedrock (503 until configured). */
export function upstreamsOf(providers: LlmGatewayDeps['providers']): Map<string, Upstream> {
  const out = new Map<string, Upstream>();
  for (const name of DEFAULT_KIND_NAMES) out.set(name, { name, kind: name, settings: undefined });
  for (const [name, settings] of Object.entries(providers)) out.set(name, { name, kind: settings.kind, settings });
  return out;
}

/** The upstream's name in `/llm/<name>/…` (what /^\/llm\/([^/?]+)/ captures), read without a regular expression. */
function nameOf(url: string): string | undefined {
  if (!url.startsWith('/llm/')) return undefined;
  let end = 5;
  while (end < url.length && url.charCodeAt(end) !== 47 /* / */ && url.charCodeAt(end) !== 63 /* ? */) end++;
  return end === 5 ? undefined : url.slice(5, end);
}

function send(res: ServerResponse, a: GatewayAnswer): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(a.status, { ...a.headers, 'content-length': Buffer.byteLength(a.body) });
  res.end(a.body);
}

/** Too many failed keys from this address: 429 in the provider's shape, with the seconds to wait. */
function rateLimited(provider: ProviderKind, retryAfterSeconds: number): GatewayAnswer {
  const answer = gatewayAnswer(provider, 'rate_limited', `too many failed authentications from your address; retry in ${retryAfterSeconds} s`);
  answer.headers['retry-after'] = String(retryAfterSeconds);
  return answer;
}

/** What `parseJson` answers for a body nested deeper than MAX_JSON_DEPTH: refused, never walked. */
const TOO_DEEP = Symbol('too deep');

function parseJson(body: Buffer | undefined, contentType: string | undefined): unknown {
  if (!body || body.length === 0 || !(contentType ?? 'application/json').toLowerCase().includes('json')) return null;
  try {
    const value = JSON.parse(body.toString('utf8')) as unknown;
    return nestedTooDeep(value) ? TOO_DEEP : value;
  } catch {
    return null;
  }
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** The data plane's request handler, on node:http objects. */
export class LlmGateway<C = GatewayCaller> {
  private readonly upstreams = new Upstreams();
  private readonly signing = new BedrockSigning();
  /** By name: every configured upstream, and the three default names. */
  readonly served: ReadonlyMap<string, Upstream>;

  constructor(
    private readonly deps: LlmGatewayDeps<C>,
    private readonly log: GatewayLog,
  ) {
    this.served = upstreamsOf(deps.providers);
  }

  /** The upstream a request's path names, or null. */
  upstreamOf(url: string): Upstream | null {
    const name = nameOf(url);
    return name === undefined ? null : (this.served.get(name) ?? null);
  }

  close(): Promise<void> {
    return this.upstreams.close();
  }

  /** Serves any request whose path starts with `/llm/`. Never throws; every failure answers in the provider's shape. */
  handle(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    const method = req.method ?? 'GET';
    const upstream = this.upstreamOf(url);
    if (!upstream) {
      req.resume();
      const names = [...this.served.keys()].map((n) => `/llm/${n}`).join(', ');
      const body = JSON.stringify({ error: { code: 'not_found', message: `no LLM upstream at ${pathOf(url)}; use one of ${names}` } });
      res.writeHead(404, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    const provider = upstream.kind;
    // Claude Code probes this before its first call; it carries nothing to govern.
    if (provider === 'anthropic' && pathOf(url) === `/llm/${upstream.name}/api/hello` && (method === 'GET' || method === 'HEAD')) {
      req.resume();
      res.writeHead(200, { 'content-length': 0 });
      res.end();
      return;
    }
    if (!METHODS.has(method)) {
      req.resume();
      send(res, gatewayAnswer(provider, 'unknown_route', `the Reins gateway does not serve ${method} ${pathOf(url)}; it serves ${describeRoutes(provider)}`));
      return;
    }
    const served = (body: BodyRead): void => {
      if (body === 'aborted') return;
      if (body === 'too_large') {
        send(res, gatewayAnswer(provider, 'body_too_large', `the request body is larger than the gateway accepts (${GATEWAY_BODY_LIMIT} bytes)`));
        return;
      }
      this.serve(upstream, req, res, body.length === 0 ? undefined : body);
    };
    // A microtask later the parser has pushed whatever came in the same read as the headers: a small body is then
    // taken whole without a promise (readBodyNow), else read as it arrives.
    queueMicrotask(() => {
      const read = readBodyNow(req, GATEWAY_BODY_LIMIT);
      if (read instanceof Promise) void read.then(served);
      else served(read);
    });
  }

  /** Serves a call whose body was already read (the Fastify route). */
  serve(upstream: Upstream, req: IncomingMessage, res: ServerResponse, rawBody: Buffer | undefined): void {
    this.call(upstream, req, res, rawBody).catch((err: unknown) => {
      this.log.error({ err }, 'gateway error');
      send(res, gatewayAnswer(upstream.kind, 'internal_error', 'the Reins gateway failed on this request; it has been logged'));
    });
  }

  private async call(upstream: Upstream, req: IncomingMessage, res: ServerResponse, rawBody: Buffer | undefined): Promise<void> {
    const { deps } = this;
    const started = performance.now();
    const method = req.method ?? 'GET';
    const provider = upstream.kind;
    const route = (req.url ?? '/').slice(LLM_PREFIX.length + upstream.name.length);
    const path = pathOf(route);

    const secret = clientSecret(provider, req.headers, route.length > path.length ? route.slice(path.length + 1) : '');
    if (!secret) {
      const { apiKeyHeader: header, apiKeyQuery } = DESCRIPTIONS[provider];
      const where = (header ? `${header}: <token> or ` : '') + 'Authorization: Bearer <token>' + (apiKeyQuery ? ` or ?${apiKeyQuery}=<token>` : '');
      return send(res, gatewayAnswer(provider, 'unauthenticated', `send your Reins token as the API key (${where})`));
    }
    const wait = deps.failedAuth?.retryAfter(req) ?? null;
    if (wait !== null) return send(res, rateLimited(provider, wait));
    // Awaited only when it is a promise: an await costs a turn of the microtask queue even on a plain value.
    const authenticated = deps.hooks.authenticate({ secret, provider, upstream: upstream.name, headers: req.headers });
    const caller = authenticated instanceof Promise ? await authenticated : authenticated;
    if (caller === null) {
      deps.failedAuth?.failed(req, 'llm', 'unknown, revoked or expired token');
      return send(res, gatewayAnswer(provider, 'unauthenticated', 'the Reins token is unknown, revoked or expired'));
    }

    const endpoint = matchEndpoint(provider, method, path);
    if (!endpoint) {
      return send(res, gatewayAnswer(provider, 'unknown_route', `the Reins gateway does not serve ${method} ${path}; it serves ${describeRoutes(provider)}`));
    }
    const settings = upstream.settings;
    if (!settings) {
      return send(res, gatewayAnswer(provider, 'provider_not_configured', `Reins has no upstream for ${upstream.name}: set providers.${upstream.name} (baseUrl, apiKey) in the config file`));
    }

    const parsed = parseJson(rawBody, req.headers['content-type']);
    const body = parsed === TOO_DEEP ? null : parsed;
    const call: LlmCall<C> = {
      caller,
      provider,
      upstream: upstream.name,
      route,
      body,
      bodyBytes: rawBody?.length ?? 0,
      metered: endpoint.metered,
      // Refused by decide (400 in the provider's shape, audited like any refusal); nothing walks the body.
      bodyProblem: parsed === TOO_DEEP ? `Reins refused this request: ${TOO_DEEP_MESSAGE}.` : undefined,
      ...callFacts(provider, endpoint, body),
    };

    const run = new CallRun(deps, this.log, call, started, res, path, settings);

    // A streaming call parked for approval gets its headers at once and protocol pings while it waits (the run's
    // onHeld), so that neither the SDK nor a proxy on the way gives up on a silent connection; the outcome then
    // arrives in-stream.
    const deciding = deps.hooks.decide(call, run);
    const decision = deciding instanceof Promise ? await deciding : deciding;
    const held = run.stopKeepAlive();
    if (decision.outcome === 'deny') {
      const refusal = gatewayAnswer(provider, REFUSAL_KIND[decision.reason], decision.message, decision.status, DESCRIPTIONS[provider].policyRoute(path));
      if (decision.retryAfterSeconds !== undefined) refusal.headers['retry-after'] = String(decision.retryAfterSeconds);
      run.complete({ status: refusal.status, end: 'refused' });
      return held ? sseError(res, provider, refusal.body, DESCRIPTIONS[provider].policyRoute(path)) : send(res, refusal);
    }

    // A client that gave up while its call was held for approval is not served: nothing goes upstream.
    if (res.destroyed || req.socket.destroyed) {
      run.complete({ status: 499, end: 'client_aborted' });
      return;
    }

    const upstreamPath = upstreamRoute(provider, route);
    // The trace context Reins continues (traceparent) travels with the provider's credential.
    let headers = upstreamHeaders(
      req.headers,
      decision.upstreamHeaders ? Object.assign({}, decision.upstreamHeaders, providerCredential(settings)) : providerCredential(settings),
    );
    if (provider === 'bedrock' && !settings.apiKey) {
      // No Bedrock API key: SigV4 with IAM credentials from the AWS credential chain.
      try {
        headers = await this.signing.sign(bedrockRegion(settings), settings.baseUrl, method, upstreamPath, headers, rawBody);
      } catch (err) {
        this.log.warn({ err, upstream: upstream.name }, 'SigV4 signing failed');
        const failed = gatewayAnswer(
          provider,
          'provider_not_configured',
          `Reins could not sign this request for ${upstream.name}: ${(err as Error).message} (set providers.${upstream.name}.apiKey, or give Reins AWS credentials)`,
        );
        run.complete({ status: failed.status, end: 'upstream_unreachable' });
        return held ? sseError(res, provider, failed.body, DESCRIPTIONS[provider].policyRoute(path)) : send(res, failed);
      }
      if (res.destroyed || req.socket.destroyed) {
        run.complete({ status: 499, end: 'client_aborted' });
        return;
      }
    }

    // The answer goes to the client as it arrives (shared/answer-relay.ts); a client that goes away cancels the upstream call.
    const relay = new AnswerRelay(res, run);
    this.upstreams.pool(settings.baseUrl).dispatch({ method: method as 'GET' | 'POST' | 'DELETE', path: upstreamPath, headers, body: rawBody }, relay);
  }
}

/**
 * One call from its decision on: the decision's events (a held call's keep-alive), the relay's route for its
 * answer, and its end, reported to the hooks once. One object a call where closures over the call's variables
 * were eight (the answer's four handlers, the end, the hold's), each allocated per call on the data path.
 */
class CallRun<C> implements RelayRoute, DecideEvents {
  private reported = false;
  /** Set when the call was parked with its stream open: its headers are out, answers and errors go in-stream. */
  private keepAlive: KeepAlive | null = null;
  private status = 0;
  private meter: UsageMeter = NO_METER;
  /** Each chunk of the answer, shown to the meter on its way to the client; it never holds the stream back. */
  private readonly observeChunk = (chunk: Buffer): void => observe(this.meter, chunk);

  constructor(
    private readonly deps: LlmGatewayDeps<C>,
    private readonly log: GatewayLog,
    private readonly call: LlmCall<C>,
    private readonly started: number,
    private readonly res: ServerResponse,
    private readonly path: string,
    private readonly settings: ProviderSettings,
  ) {}

  /** Reports how the call ended, once, whichever path ended it. */
  complete(result: Omit<CallResult, 'durationMs'>): void {
    if (this.reported) return;
    this.reported = true;
    try {
      // Object.assign, not `{ ...result, durationMs }`: a property added after a leading spread takes V8's slow path
      // on Node 20 (see plane-governance.ts record()).
      this.deps.hooks.completed(this.call, Object.assign({}, result, { durationMs: performance.now() - this.started }) as CallResult);
    } catch (err) {
      this.log.error({ err }, 'gateway completed hook threw');
    }
  }

  onHeld(): void {
    const ping = DESCRIPTIONS[this.call.provider].sse.keepAlive;
    if (this.call.stream && ping !== null && !this.res.headersSent) {
      this.keepAlive = startKeepAlive(this.res, ping, this.deps.heldKeepAliveMs ?? KEEP_ALIVE_MS);
    }
  }

  /** The decision is in: pings stop. True when the call was held with its stream open (the rest goes in-stream). */
  stopKeepAlive(): boolean {
    this.keepAlive?.stop();
    return this.held;
  }

  private get held(): boolean {
    return this.keepAlive !== null;
  }

  answered(status: number, headers: AnswerHeaders): AnswerPlan {
    this.status = status;
    if (this.call.metered && status >= 200 && status < 300) this.meter = meterFor(headers);
    // The 200 and the stream's headers are out already: the provider's error goes in-stream, in its own shape.
    if (this.held && (status < 200 || status >= 300)) return COLLECT_ALL;
    if (!this.held) this.res.writeHead(status, headers.forClient(true));
    return this.meter === NO_METER ? RELAY_ONLY : { observe: this.observeChunk };
  }

  /** As the upstream worded it (route ''): its own error, which the client may retry as it would without Reins. */
  collected(body: Buffer): void {
    sseError(this.res, this.call.provider, body.toString('utf8'), '');
  }

  failed(err: Error, clientGone: boolean): void {
    if (clientGone) {
      this.complete({ status: 499, end: 'client_aborted' });
      return;
    }
    const { provider, upstream } = this.call;
    this.log.warn({ err, upstream }, 'upstream unreachable');
    const origin = new URL(this.settings.baseUrl).origin;
    const failed = gatewayAnswer(provider, 'upstream_unreachable', `Reins could not reach ${upstream} at ${origin}: ${err.message}`);
    this.complete({ status: failed.status, end: 'upstream_unreachable' });
    if (this.held) sseError(this.res, provider, failed.body, DESCRIPTIONS[provider].policyRoute(this.path));
    else send(this.res, failed);
  }

  ended(end: RelayEnd): void {
    const meter = this.meter;
    let usage = meter.finish();
    const seen = meter.seen?.();
    // A server of a kind that may send no usage (OpenAI-compatible): the tokens counted here, marked estimated.
    if (usage === undefined && meter !== NO_METER && DESCRIPTIONS[this.call.provider].estimateUsage) {
      usage = estimatedUsage(this.call.body, seen?.textChars ?? 0);
    }
    const result: Omit<CallResult, 'durationMs'> = usage ? { status: this.status, end, usage } : { status: this.status, end };
    if (seen?.model !== undefined) result.responseModel = seen.model;
    this.complete(result);
  }
}

/** An answer relayed as it comes with nothing to see on the way, and one kept whole (a held call's error). */
const RELAY_ONLY: AnswerPlan = { observe: null };
const COLLECT_ALL: AnswerPlan = { collect: Number.POSITIVE_INFINITY };

/** Pings a held streaming call every 10 s (`gateway.heldKeepAliveSeconds`): Anthropic's own `ping` event, an SSE comment for OpenAI. */
export const KEEP_ALIVE_MS = 10_000;

interface KeepAlive {
  stop(): void;
}

/** `ping` is the provider's keep-alive (its description's `sse.keepAlive`): an event or comment its SDK ignores. */
function startKeepAlive(res: ServerResponse, ping: string, intervalMs: number): KeepAlive {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-reins-held': 'true' });
  res.write(ping);
  const timer = setInterval(() => {
    if (!res.destroyed) res.write(ping);
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** An error inside an SSE answer whose headers are sent: Anthropic's `error` event, OpenAI's `data: {"error": …}`. */
function sseError(res: ServerResponse, provider: ProviderKind, body: string, policyRoute: string): void {
  if (res.destroyed) return;
  res.end(DESCRIPTIONS[provider].sse.error(body, policyRoute));
}

function observe(meter: UsageMeter, chunk: Buffer): void {
  try {
    meter.push(chunk);
  } catch {
    // metering must never break the answer
  }
}

/**
 * Registers the gateway's routes with Fastify: the OpenAPI description and `app.inject` see them. Requests that
 * reach the server's socket are served by `gateway.handle` before Fastify (see app/app.ts); these handlers hand
 * Fastify's raw request and response to the same code.
 */
export function registerLlmGateway<C>(app: FastifyInstance, gateway: LlmGateway<C>): void {
  void app.register(
    async (scope) => {
      scope.addHook('onClose', async () => gateway.close());
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: GATEWAY_BODY_LIMIT }, (_request, body, done) => {
        done(null, body);
      });
      const reply = (r: FastifyReply, a: GatewayAnswer) => r.status(a.status).headers(a.headers).send(a.body);
      scope.setErrorHandler((err: FastifyError, request: FastifyRequest, r: FastifyReply) => {
        const provider = gateway.upstreamOf(request.url)?.kind ?? 'openai';
        if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
          return reply(r, gatewayAnswer(provider, 'body_too_large', `the request body is larger than the gateway accepts (${GATEWAY_BODY_LIMIT} bytes)`));
        }
        const status = err.statusCode ?? 500;
        if (status >= 400 && status < 500) return reply(r, gatewayAnswer(provider, 'bad_request', err.message, status));
        request.log.error({ err }, 'gateway error');
        return reply(r, gatewayAnswer(provider, 'internal_error', 'the Reins gateway failed on this request; it has been logged'));
      });
      scope.setNotFoundHandler((request, r) => {
        r.hijack();
        gateway.handle(request.raw, r.raw);
      });
      for (const upstream of gateway.served.values()) {
        if (upstream.kind === 'anthropic') {
          scope.route({
            method: ['GET', 'HEAD'],
            url: `/${upstream.name}/api/hello`,
            config: { access: GATEWAY_ACCESS },
            schema: { tags: ['gateway'], summary: 'Reachability probe Claude Code sends before its first call; answers 200 with no body' },
            handler: async (_request, reply) => reply.status(200).send(),
          });
        }
        const handler = (request: FastifyRequest, reply: FastifyReply): void => {
          reply.hijack();
          gateway.serve(upstream, request.raw, reply.raw, Buffer.isBuffer(request.body) ? request.body : undefined);
        };
        // Everything under the upstream's prefix reaches the gateway, which answers an unknown route in the provider's
        // shape. OpenAPI has no wildcard paths: the document lists the endpoints one by one (documented-routes.ts).
        scope.route({ method: ['GET', 'POST', 'DELETE'], url: `/${upstream.name}/*`, config: { access: GATEWAY_ACCESS }, schema: { hide: true }, handler });
        for (const route of DOCUMENTED_ROUTES[upstream.kind]) {
          const params = [...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
          scope.route({
            method: route.method,
            url: `/${upstream.name}${fastifyPath(route.path)}`,
            config: { access: GATEWAY_ACCESS },
            schema: {
              // One operationId per upstream: the kind's own name keeps the plain id, other names are suffixed.
              operationId: upstream.name === upstream.kind ? route.operationId : `${route.operationId}_${upstream.name.replace(/[^A-Za-z0-9]/g, '_')}`,
              tags: ['gateway'],
              summary: `${route.summary}, through Reins${upstream.name === upstream.kind ? '' : ` (upstream ${upstream.name})`}`,
              description: `${DESCRIPTIONS[upstream.kind].title} API (the gateway serves ${describeRoutes(upstream.kind)}). ${GATEWAY_DESCRIPTION}`,
              security: [{ bearer: [] }],
              ...(params.length > 0 ? { params: Type.Object(Object.fromEntries(params.map((p) => [p, Type.String({ description: PARAM_DESCRIPTION[p] ?? p })]))) } : {}),
              response: {
                200: Type.Unknown({ description: "The provider's answer, passed through (streams unbuffered)" }),
                '4XX': Type.Unknown({ description: "Refused by Reins (policy, model access, budget, credential) or by the provider, in the provider's error shape" }),
                '5XX': Type.Unknown({ description: "The provider unreachable (502) or failing, in the provider's error shape" }),
              },
            },
            handler,
          });
        }
      }
    },
    { prefix: '/llm' },
  );
}

/** The region a Bedrock upstream signs for: `region`, else the one in `bedrock-runtime.<region>.amazonaws.com`. */
function bedrockRegion(settings: ProviderSettings): string {
  return settings.region ?? /bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com/.exec(settings.baseUrl)?.[1] ?? 'us-east-1';
}

/** Whether a request belongs to the data plane's fast path. */
export function isGatewayRequest(url: string | undefined): boolean {
  return url !== undefined && url.startsWith('/llm/');
}
