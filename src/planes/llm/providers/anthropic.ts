import { bodyCallFacts, matchRouteTable, versionedRoute, type GatewayErrorKind, type LlmProvider, type RouteRule } from './provider.js';

const ROUTES: readonly RouteRule[] = [
  { re: /^\/v1\/messages$/, methods: ['POST'], metered: true },
  { re: /^\/v1\/messages\/count_tokens$/, methods: ['POST'], metered: false },
  { re: /^\/v1\/models(\/[^/]+)?$/, methods: ['GET'], metered: false },
];

const TYPE: Record<GatewayErrorKind, string> = {
  policy_denied: 'permission_error',
  model_not_allowed: 'permission_error',
  // Anthropic's own type for its 402 (credit and billing problems).
  budget_exceeded: 'billing_error',
  unauthenticated: 'authentication_error',
  unknown_route: 'not_found_error',
  provider_not_configured: 'api_error',
  upstream_unreachable: 'api_error',
  body_too_large: 'request_too_large',
  bad_request: 'invalid_request_error',
  rate_limited: 'rate_limit_error',
  agent_not_bound: 'permission_error',
  internal_error: 'api_error',
};

/** Anthropic: messages, count_tokens, models; the key also as `x-api-key`; `{"type": "error", "error": {type, message}}`. */
export const ANTHROPIC: LlmProvider = {
  matchEndpoint: (method, path) => matchRouteTable(ROUTES, method, path),
  routes: '/v1/messages, /v1/messages/count_tokens, /v1/models',
  // Anthropic's SDK and Claude Code's ANTHROPIC_API_KEY send the key as x-api-key.
  apiKeyHeader: 'x-api-key',
  credential: (apiKey) => ({ 'x-api-key': apiKey }),
  callFacts: (_endpoint, body) => bodyCallFacts(body),
  policyRoute: versionedRoute,
  sse: { keepAlive: 'event: ping\ndata: {"type": "ping"}\n\n', error: (body) => `event: error\ndata: ${body}\n\n` },
  errorBody: (kind, message) => JSON.stringify({ type: 'error', error: { type: TYPE[kind], message } }),
};
