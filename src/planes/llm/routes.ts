/**
 * The LLM gateway: `/llm/openai/v1/…`, `/llm/anthropic/v1/…`, `/llm/bedrock/model/{modelId}/…`.
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
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Access } from '../../shared/access.js';
import { nestedTooDeep, TOO_DEEP_MESSAGE } from '../../shared/json-depth.js';
import { readBody } from '../../shared/read-body.js';
import { Upstreams, downstreamHeaders, upstreamHeaders } from './forward.js';
import { callFacts, clientSecret, describeRoutes, matchEndpoint, providerCredential } from './providers.js';
import { PROVIDERS as DESCRIPTIONS } from './providers/index.js';
import { gatewayAnswer, type GatewayAnswer, type GatewayErrorKind } from './refusal.js';
import type { ProviderName } from '../../config/config.js';
import type { CallResult, GatewayCaller, LlmCall, LlmGatewayDeps, RefusalReason } from './types.js';
import { meterFor, type UsageMeter } from './usage.js';

export type * from './types.js';

/** Large prompts (images, long contexts) exceed the control plane's limit; this is the gateway's. */
export const GATEWAY_BODY_LIMIT = 32 * 1024 * 1024;

const PROVIDERS: readonly ProviderName[] = ['openai', 'anthropic', 'bedrock'];
// The gateway authenticates with the provider-key header itself, so the control plane's auth hook lets it pass.
const GATEWAY_ACCESS: Access = 'gateway';
const METHODS = new Set(['GET', 'POST', 'DELETE']);

const PROVIDER_TITLE: Record<ProviderName, string> = { openai: 'OpenAI', anthropic: 'Anthropic', bedrock: 'Amazon Bedrock runtime' };

const GATEWAY_DESCRIPTION =
  'Point the provider SDK at this base URL and use a Reins token as its API key (Authorization: Bearer, or x-api-key ' +
  'on the Anthropic routes); Reins injects the provider credential. Optional headers with a personal access token: ' +
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
  bad_request: 'bad_request',
  credential_revoked: 'unauthenticated',
  agent_not_bound: 'agent_not_bound',
};

const NO_METER: UsageMeter = { push: () => undefined, finish: () => undefined };

export interface GatewayLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

function providerOf(url: string): ProviderName | null {
  const name = /^\/llm\/([^/?]+)/.exec(url)?.[1];
  return PROVIDERS.find((p) => p === name) ?? null;
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
function rateLimited(provider: ProviderName, retryAfterSeconds: number): GatewayAnswer {
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

  constructor(
    private readonly deps: LlmGatewayDeps<C>,
    private readonly log: GatewayLog,
  ) {}

  close(): Promise<void> {
    return this.upstreams.close();
  }

  /** Serves any request whose path starts with `/llm/`. Never throws; every failure answers in the provider's shape. */
  handle(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    const method = req.method ?? 'GET';
    // Claude Code probes this before its first call; it carries nothing to govern.
    if (pathOf(url) === '/llm/anthropic/api/hello' && (method === 'GET' || method === 'HEAD')) {
      req.resume();
      res.writeHead(200, { 'content-length': 0 });
      res.end();
      return;
    }
    const provider = providerOf(url);
    if (!provider) {
      req.resume();
      const body = JSON.stringify({ error: { code: 'not_found', message: `no LLM provider at ${pathOf(url)}; use /llm/openai, /llm/anthropic or /llm/bedrock` } });
      res.writeHead(404, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    if (!METHODS.has(method)) {
      req.resume();
      send(res, gatewayAnswer(provider, 'unknown_route', `the Reins gateway does not serve ${method} ${pathOf(url)}; it serves ${describeRoutes(provider)}`));
      return;
    }
    void readBody(req, GATEWAY_BODY_LIMIT).then((body) => {
      if (body === 'aborted') return;
      if (body === 'too_large') {
        send(res, gatewayAnswer(provider, 'body_too_large', `the request body is larger than the gateway accepts (${GATEWAY_BODY_LIMIT} bytes)`));
        return;
      }
      this.serve(provider, req, res, body.length === 0 ? undefined : body);
    });
  }

  /** Serves a call whose body was already read (the Fastify route). */
  serve(provider: ProviderName, req: IncomingMessage, res: ServerResponse, rawBody: Buffer | undefined): void {
    this.call(provider, req, res, rawBody).catch((err: unknown) => {
      this.log.error({ err }, 'gateway error');
      send(res, gatewayAnswer(provider, 'internal_error', 'the Reins gateway failed on this request; it has been logged'));
    });
  }

  private async call(provider: ProviderName, req: IncomingMessage, res: ServerResponse, rawBody: Buffer | undefined): Promise<void> {
    const { deps } = this;
    const started = performance.now();
    const method = req.method ?? 'GET';
    const route = (req.url ?? '/').slice(`/llm/${provider}`.length);
    const path = pathOf(route);

    const secret = clientSecret(provider, req.headers);
    if (!secret) {
      const header = DESCRIPTIONS[provider].apiKeyHeader;
      const where = header ? `${header}: <token> or Authorization: Bearer <token>` : 'Authorization: Bearer <token>';
      return send(res, gatewayAnswer(provider, 'unauthenticated', `send your Reins token as the API key (${where})`));
    }
    const wait = deps.failedAuth?.retryAfter(req) ?? null;
    if (wait !== null) return send(res, rateLimited(provider, wait));
    const caller = await deps.hooks.authenticate({ secret, provider, headers: req.headers });
    if (caller === null) {
      deps.failedAuth?.failed(req, 'llm', 'unknown, revoked or expired token');
      return send(res, gatewayAnswer(provider, 'unauthenticated', 'the Reins token is unknown, revoked or expired'));
    }

    const endpoint = matchEndpoint(provider, method, path);
    if (!endpoint) {
      return send(res, gatewayAnswer(provider, 'unknown_route', `the Reins gateway does not serve ${method} ${path}; it serves ${describeRoutes(provider)}`));
    }
    const settings = deps.providers[provider];
    if (!settings) {
      return send(res, gatewayAnswer(provider, 'provider_not_configured', `Reins has no upstream for ${provider}: set providers.${provider} (baseUrl, apiKey) in the config file`));
    }

    const parsed = parseJson(rawBody, req.headers['content-type']);
    const body = parsed === TOO_DEEP ? null : parsed;
    const call: LlmCall<C> = {
      caller,
      provider,
      route,
      body,
      bodyBytes: rawBody?.length ?? 0,
      metered: endpoint.metered,
      // Refused by decide (400 in the provider's shape, audited like any refusal); nothing walks the body.
      bodyProblem: parsed === TOO_DEEP ? `Reins refused this request: ${TOO_DEEP_MESSAGE}.` : undefined,
      ...callFacts(provider, endpoint, body),
    };

    let reported = false;
    const complete = (result: Omit<CallResult, 'durationMs'>): void => {
      if (reported) return;
      reported = true;
      try {
        // Object.assign, not `{ ...result, durationMs }`: a property added after a leading spread takes V8's slow path
        // on Node 20 (see plane-governance.ts record()).
        deps.hooks.completed(call, Object.assign({}, result, { durationMs: performance.now() - started }) as CallResult);
      } catch (err) {
        this.log.error({ err }, 'gateway completed hook threw');
      }
    };

    // A streaming call parked for approval gets its headers at once and protocol pings while it waits, so that
    // neither the SDK nor a proxy on the way gives up on a silent connection; the outcome then arrives in-stream.
    let keepAlive: KeepAlive | null = null;
    const decision = await deps.hooks.decide(call, {
      onHeld: () => {
        const ping = DESCRIPTIONS[provider].sse.keepAlive;
        if (call.stream && ping !== null && !res.headersSent) keepAlive = startKeepAlive(res, ping, this.deps.heldKeepAliveMs ?? KEEP_ALIVE_MS);
      },
    });
    const held = keepAlive as KeepAlive | null;
    held?.stop();
    if (decision.outcome === 'deny') {
      const refusal = gatewayAnswer(provider, REFUSAL_KIND[decision.reason], decision.message, decision.status, DESCRIPTIONS[provider].policyRoute(path));
      complete({ status: refusal.status, end: 'refused' });
      return held ? sseError(res, provider, refusal.body, DESCRIPTIONS[provider].policyRoute(path)) : send(res, refusal);
    }

    // A client that gave up while its call was held for approval is not served: nothing goes upstream.
    if (res.destroyed || req.socket.destroyed) {
      complete({ status: 499, end: 'client_aborted' });
      return;
    }

    // A client that goes away while the provider is still thinking cancels the upstream call. The signal is an
    // EventEmitter, which undici accepts: an AbortController (and the DOMException of its abort) per call was a
    // measurable share of the gateway's CPU.
    const cancel = new EventEmitter();
    let cancelled = false;
    res.once('close', () => {
      if (res.writableFinished) return;
      cancelled = true;
      cancel.emit('abort');
    });

    let upstream;
    try {
      upstream = await this.upstreams.pool(settings.baseUrl).request({
        method: method as 'GET' | 'POST' | 'DELETE',
        path: route,
        headers: upstreamHeaders(req.headers, providerCredential(provider, settings)),
        body: rawBody,
        signal: cancel,
      });
    } catch (err) {
      if (cancelled) {
        complete({ status: 499, end: 'client_aborted' });
        return;
      }
      this.log.warn({ err, provider }, 'upstream unreachable');
      const origin = new URL(settings.baseUrl).origin;
      const failed = gatewayAnswer(provider, 'upstream_unreachable', `Reins could not reach ${provider} at ${origin}: ${(err as Error).message}`);
      complete({ status: failed.status, end: 'upstream_unreachable' });
      return held ? sseError(res, provider, failed.body, DESCRIPTIONS[provider].policyRoute(path)) : send(res, failed);
    }

    const status = upstream.statusCode;
    const answerBody = upstream.body;
    // The meter sees each chunk on its way to the client; it never holds the stream back.
    const meter = endpoint.metered && status >= 200 && status < 300 ? meterFor(upstream.headers) : NO_METER;
    let upstreamFailed = false;
    answerBody.once('error', () => {
      if (!cancelled) upstreamFailed = true;
      res.destroy();
    });
    res.once('close', () => {
      if (!res.writableFinished) answerBody.destroy();
      const usage = meter.finish();
      const end = res.writableFinished ? 'forwarded' : upstreamFailed ? 'upstream_unreachable' : 'client_aborted';
      complete(usage ? { status, end, usage } : { status, end });
    });
    if (held && (status < 200 || status >= 300)) {
      // The 200 and the stream's headers are out already: the provider's error goes in-stream, in its own shape.
      const chunks: Buffer[] = [];
      answerBody.on('data', (chunk: Buffer) => chunks.push(chunk));
      // As the upstream worded it (route ''): its own error, which the client may retry as it would without Reins.
      answerBody.once('end', () => sseError(res, provider, Buffer.concat(chunks).toString('utf8'), ''));
      return;
    }
    if (!held) res.writeHead(status, downstreamHeaders(upstream.headers));
    if (meter !== NO_METER) answerBody.on('data', (chunk: Buffer) => observe(meter, chunk));
    answerBody.pipe(res);
  }
}

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
function sseError(res: ServerResponse, provider: ProviderName, body: string, policyRoute: string): void {
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
        const provider = providerOf(request.url) ?? 'openai';
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
      scope.route({
        method: ['GET', 'HEAD'],
        url: '/anthropic/api/hello',
        config: { access: GATEWAY_ACCESS },
        schema: { tags: ['gateway'], summary: 'Reachability probe Claude Code sends before its first call; answers 200 with no body' },
        handler: async (_request, reply) => reply.status(200).send(),
      });
      for (const provider of PROVIDERS) {
        scope.route({
          method: ['GET', 'POST', 'DELETE'],
          url: `/${provider}/*`,
          config: { access: GATEWAY_ACCESS },
          schema: {
            tags: ['gateway'],
            summary: `${PROVIDER_TITLE[provider]} API through Reins: ${describeRoutes(provider)}`,
            description: GATEWAY_DESCRIPTION,
            security: [{ bearer: [] }],
          },
          handler: (request, reply) => {
            reply.hijack();
            gateway.serve(provider, request.raw, reply.raw, Buffer.isBuffer(request.body) ? request.body : undefined);
          },
        });
      }
    },
    { prefix: '/llm' },
  );
}

/** Whether a request belongs to the data plane's fast path. */
export function isGatewayRequest(url: string | undefined): boolean {
  return url !== undefined && url.startsWith('/llm/');
}
