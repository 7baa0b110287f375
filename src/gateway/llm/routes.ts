/**
 * The LLM gateway's routes: `/llm/openai/v1/…`, `/llm/anthropic/v1/…`, `/llm/bedrock/model/{modelId}/…`.
 * Each call: the client's Reins secret -> caller, route and body -> LlmCall, decide -> refuse in the client's
 * protocol or forward, then report how it ended with the usage read on the way.
 *
 * Registered as an encapsulated plugin: bodies stay raw Buffers here (forwarded byte for byte) while the
 * control plane keeps its JSON parsing, and errors here answer in the provider's shape, not Reins'.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { EventEmitter } from 'node:events';
import type { Access } from '../../http/access.js';
import { Upstreams, downstreamHeaders, upstreamHeaders } from './forward.js';
import { callFacts, clientSecret, describeRoutes, matchEndpoint, providerCredential } from './providers.js';
import { gatewayAnswer, type GatewayAnswer, type GatewayErrorKind } from './refusal.js';
import type { CallResult, GatewayCaller, LlmCall, LlmGatewayDeps, ProviderName, RefusalReason } from './types.js';
import { meterFor, type UsageMeter } from './usage.js';

export type * from './types.js';

/** Large prompts (images, long contexts) exceed the control plane's limit; this is the gateway's. */
export const GATEWAY_BODY_LIMIT = 32 * 1024 * 1024;

const PROVIDERS: readonly ProviderName[] = ['openai', 'anthropic', 'bedrock'];
// The gateway authenticates with the provider-key header itself, so the control plane's auth hook lets it pass.
const GATEWAY_ACCESS: Access = 'gateway';

const PROVIDER_TITLE: Record<ProviderName, string> = { openai: 'OpenAI', anthropic: 'Anthropic', bedrock: 'Amazon Bedrock runtime' };

const GATEWAY_DESCRIPTION =
  'Point the provider SDK at this base URL and use a Reins token as its API key (Authorization: Bearer, or x-api-key ' +
  'on the Anthropic routes); Reins injects the provider credential. Optional headers with a personal access token: ' +
  'X-Reins-Session (the session id; default one per token and UTC day) and X-Reins-Agent (an agent identity id). ' +
  'Bodies and answers pass through byte for byte, streams unbuffered. Refusals (policy, model access, budget) answer ' +
  "in the provider's own error shape with x-should-retry: false and a message naming the policy or rule.";

const REFUSAL_KIND: Record<RefusalReason, GatewayErrorKind> = {
  policy: 'policy_denied',
  approval_required: 'policy_denied',
  model_access: 'model_not_allowed',
  budget: 'budget_exceeded',
  bad_request: 'bad_request',
};

const NO_METER: UsageMeter = { push: () => undefined, finish: () => undefined };

function providerOf(url: string): ProviderName | null {
  const name = /^\/llm\/([^/?]+)/.exec(url)?.[1];
  return PROVIDERS.find((p) => p === name) ?? null;
}

function answer(reply: FastifyReply, a: GatewayAnswer): FastifyReply {
  return reply.status(a.status).headers(a.headers).send(a.body);
}

function parseJson(body: Buffer | undefined, contentType: string | undefined): unknown {
  if (!body || body.length === 0 || !(contentType ?? 'application/json').toLowerCase().includes('json')) return null;
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    return null;
  }
}

export function registerLlmGateway<C = GatewayCaller>(app: FastifyInstance, deps: LlmGatewayDeps<C>): void {
  void app.register(
    async (scope) => {
      const upstreams = new Upstreams();
      scope.addHook('onClose', async () => upstreams.close());

      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: GATEWAY_BODY_LIMIT }, (_request, body, done) => {
        done(null, body);
      });

      scope.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
        const provider = providerOf(request.url) ?? 'openai';
        if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
          return answer(reply, gatewayAnswer(provider, 'body_too_large', `the request body is larger than the gateway accepts (${GATEWAY_BODY_LIMIT} bytes)`));
        }
        const status = err.statusCode ?? 500;
        if (status >= 400 && status < 500) return answer(reply, gatewayAnswer(provider, 'bad_request', err.message, status));
        request.log.error({ err }, 'gateway error');
        return answer(reply, gatewayAnswer(provider, 'internal_error', 'the Reins gateway failed on this request; it has been logged'));
      });

      scope.setNotFoundHandler((request, reply) => {
        const provider = providerOf(request.url);
        if (!provider) {
          return reply.status(404).send({ error: { code: 'not_found', message: `no LLM provider at ${request.url.split('?')[0]}; use /llm/openai, /llm/anthropic or /llm/bedrock` } });
        }
        return answer(reply, gatewayAnswer(provider, 'unknown_route', `the Reins gateway does not serve ${request.method} ${request.url.split('?')[0]}; it serves ${describeRoutes(provider)}`));
      });

      // Claude Code probes this before its first call; it carries nothing to govern.
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
          handler: (request, reply) => handleCall(provider, request, reply, deps, upstreams),
        });
      }
    },
    { prefix: '/llm' },
  );
}

async function handleCall<C>(provider: ProviderName, request: FastifyRequest, reply: FastifyReply, deps: LlmGatewayDeps<C>, upstreams: Upstreams): Promise<FastifyReply> {
  const started = performance.now();
  const route = request.url.slice(`/llm/${provider}`.length);
  const path = route.split('?')[0] ?? route;

  const secret = clientSecret(provider, request.headers);
  if (!secret) {
    const where = provider === 'anthropic' ? 'x-api-key: <token> or Authorization: Bearer <token>' : 'Authorization: Bearer <token>';
    return answer(reply, gatewayAnswer(provider, 'unauthenticated', `send your Reins token as the API key (${where})`));
  }
  const caller = await deps.hooks.authenticate({ secret, provider, headers: request.headers });
  if (caller === null) {
    return answer(reply, gatewayAnswer(provider, 'unauthenticated', 'the Reins token is unknown, revoked or expired'));
  }

  const endpoint = matchEndpoint(provider, request.method, path);
  if (!endpoint) {
    return answer(reply, gatewayAnswer(provider, 'unknown_route', `the Reins gateway does not serve ${request.method} ${path}; it serves ${describeRoutes(provider)}`));
  }
  const settings = deps.providers[provider];
  if (!settings) {
    return answer(reply, gatewayAnswer(provider, 'provider_not_configured', `Reins has no upstream for ${provider}: set providers.${provider} (baseUrl, apiKey) in the config file`));
  }

  const rawBody = Buffer.isBuffer(request.body) ? request.body : undefined;
  const body = parseJson(rawBody, request.headers['content-type']);
  const call: LlmCall<C> = {
    caller,
    provider,
    route,
    body,
    bodyBytes: rawBody?.length ?? 0,
    metered: endpoint.metered,
    ...callFacts(provider, endpoint, body),
  };

  let reported = false;
  const complete = (result: Omit<CallResult, 'durationMs'>): void => {
    if (reported) return;
    reported = true;
    try {
      deps.hooks.completed(call, { ...result, durationMs: performance.now() - started });
    } catch (err) {
      request.log.error({ err }, 'gateway completed hook threw');
    }
  };

  const decision = await deps.hooks.decide(call);
  if (decision.outcome === 'deny') {
    const refusal = gatewayAnswer(provider, REFUSAL_KIND[decision.reason], decision.message, decision.status);
    complete({ status: refusal.status, end: 'refused' });
    return answer(reply, refusal);
  }

  // A client that goes away while the provider is still thinking cancels the upstream call. The signal is an
  // EventEmitter, which undici accepts: an AbortController (and the DOMException of its abort) per call was a
  // measurable share of the gateway's CPU.
  const cancel = new EventEmitter();
  let cancelled = false;
  reply.raw.once('close', () => {
    if (reply.raw.writableFinished) return;
    cancelled = true;
    cancel.emit('abort');
  });

  let upstream;
  try {
    upstream = await upstreams.pool(settings.baseUrl).request({
      method: request.method as 'GET' | 'POST' | 'DELETE',
      path: route,
      headers: upstreamHeaders(request.headers, providerCredential(provider, settings)),
      body: rawBody,
      signal: cancel,
    });
  } catch (err) {
    if (cancelled) {
      complete({ status: 499, end: 'client_aborted' });
      return reply;
    }
    request.log.warn({ err, provider }, 'upstream unreachable');
    const origin = new URL(settings.baseUrl).origin;
    const failed = gatewayAnswer(provider, 'upstream_unreachable', `Reins could not reach ${provider} at ${origin}: ${(err as Error).message}`);
    complete({ status: failed.status, end: 'upstream_unreachable' });
    return answer(reply, failed);
  }

  const status = upstream.statusCode;
  const answerBody = upstream.body;
  // The meter sees each chunk as Fastify pipes the body to the client; it never holds the stream back.
  const meter = endpoint.metered && status >= 200 && status < 300 ? meterFor(upstream.headers) : NO_METER;
  if (meter !== NO_METER) {
    answerBody.on('data', (chunk: Buffer) => observe(meter, chunk));
    // A 'data' listener starts the flow; nothing may flow before Fastify's pipe to the client is attached
    // (after its onSend hooks), which resumes the stream.
    answerBody.pause();
  }
  let upstreamFailed = false;
  answerBody.once('error', () => {
    if (!cancelled) upstreamFailed = true;
  });
  reply.raw.once('close', () => {
    const usage = meter.finish();
    const end = reply.raw.writableFinished ? 'forwarded' : upstreamFailed ? 'upstream_unreachable' : 'client_aborted';
    complete(usage ? { status, end, usage } : { status, end });
  });
  return reply.status(status).headers(downstreamHeaders(upstream.headers)).send(answerBody);
}

function observe(meter: UsageMeter, chunk: Buffer): void {
  try {
    meter.push(chunk);
  } catch {
    // metering must never break the answer
  }
}
