import { REFUSAL_KINDS, bodyCallFacts, matchRouteTable, versionedRoute, type GatewayErrorKind, type LlmProvider, type RouteRule } from './provider.js';

const ROUTES: readonly RouteRule[] = [
  { re: /^\/v1\/chat\/completions$/, methods: ['POST'], metered: true },
  { re: /^\/v1\/completions$/, methods: ['POST'], metered: true },
  { re: /^\/v1\/embeddings$/, methods: ['POST'], metered: true },
  { re: /^\/v1\/responses$/, methods: ['POST'], metered: true },
  // Retrieve, cancel, delete, input items and compaction of a stored response (Codex uses some of these).
  { re: /^\/v1\/responses\/[^/]+(\/[a-z_]+)?$/, methods: ['GET', 'POST', 'DELETE'], metered: true },
  { re: /^\/v1\/models(\/[^/]+)?$/, methods: ['GET'], metered: false },
];

const TYPE: Record<GatewayErrorKind, string> = {
  policy_denied: 'permission_error',
  model_not_allowed: 'permission_error',
  budget_exceeded: 'insufficient_quota',
  unauthenticated: 'invalid_request_error',
  unknown_route: 'invalid_request_error',
  provider_not_configured: 'server_error',
  upstream_unreachable: 'server_error',
  body_too_large: 'invalid_request_error',
  bad_request: 'invalid_request_error',
  rate_limited: 'requests',
  agent_not_bound: 'permission_error',
  internal_error: 'server_error',
};

const CODE: Record<GatewayErrorKind, string> = {
  policy_denied: 'policy_denied',
  model_not_allowed: 'model_not_allowed',
  budget_exceeded: 'budget_exceeded',
  unauthenticated: 'invalid_api_key',
  unknown_route: 'unknown_url',
  provider_not_configured: 'provider_not_configured',
  upstream_unreachable: 'upstream_unreachable',
  body_too_large: 'request_too_large',
  bad_request: 'invalid_request',
  rate_limited: 'rate_limit_exceeded',
  agent_not_bound: 'agent_not_bound',
  internal_error: 'internal_error',
};

/**
 * An error inside a Responses API stream whose headers are sent (a held call denied or timed out): the API's own
 * `response.failed` event. Its code decides what Codex CLI does (checked against 0.169): `invalid_prompt` stops it
 * and shows the message as it is, any other code is retried five times (a new held call each time), and the
 * Vercel AI SDK reads `invalid…` as a 400, which it does not retry either. An unreachable upstream keeps
 * `server_error`, which both retry.
 */
function responseFailed(body: string): string {
  const error = (JSON.parse(body) as { error: { message: string; type: string } }).error;
  const code = error.type === 'server_error' ? 'server_error' : 'invalid_prompt';
  const event = { type: 'response.failed', response: { object: 'response', status: 'failed', error: { code, message: error.message } } };
  return `event: response.failed\ndata: ${JSON.stringify(event)}\n\n`;
}

/** OpenAI: chat completions, completions, embeddings, responses, models; `{"error": {message, type, param, code}}`. */
export const OPENAI: LlmProvider = {
  matchEndpoint: (method, path) => matchRouteTable(ROUTES, method, path),
  routes: '/v1/chat/completions, /v1/completions, /v1/embeddings, /v1/responses, /v1/models',
  apiKeyHeader: null,
  credential: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  callFacts: (_endpoint, body) => bodyCallFacts(body),
  policyRoute: versionedRoute,
  sse: { keepAlive: ': held by Reins for approval\n\n', error: (body, route) => (route === 'responses' ? responseFailed(body) : `data: ${body}\n\n`) },
  errorBody: (kind, message) => JSON.stringify({ error: { message, type: TYPE[kind], param: null, code: CODE[kind] } }),
  // Codex CLI (0.169, the Responses API's main client) retries every status of a refusal five times except 400 and
  // 429, and the Vercel AI SDK and LangChain retry 429: on this route a refusal is a 400, which none of them retries.
  statusFor: (kind, route) => (route === 'responses' && REFUSAL_KINDS.has(kind) ? 400 : undefined),
};
