import { int, isObject, type GatewayErrorKind, type LlmProvider } from './provider.js';

/** The methods of `/{v1beta|v1}/models/{model}:{method}`. */
const METHODS: Record<string, { stream: boolean; metered: boolean }> = {
  generateContent: { stream: false, metered: true },
  streamGenerateContent: { stream: true, metered: true },
  // Token counting consumes nothing and is never held.
  countTokens: { stream: false, metered: false },
};

const MODEL_ROUTE = /^\/(?:v1beta|v1)\/models\/([^/:]+):([A-Za-z]+)$/;
const LIST_ROUTE = /^\/(?:v1beta|v1)\/models(\/[^/:]+)?$/;

/** google.rpc.Code names, as Google's APIs put them in `error.status`. */
const STATUS: Record<GatewayErrorKind, string> = {
  policy_denied: 'PERMISSION_DENIED',
  model_not_allowed: 'PERMISSION_DENIED',
  budget_exceeded: 'RESOURCE_EXHAUSTED',
  unauthenticated: 'UNAUTHENTICATED',
  unknown_route: 'NOT_FOUND',
  provider_not_configured: 'UNAVAILABLE',
  upstream_unreachable: 'UNAVAILABLE',
  body_too_large: 'INVALID_ARGUMENT',
  bad_request: 'INVALID_ARGUMENT',
  rate_limited: 'RESOURCE_EXHAUSTED',
  agent_not_bound: 'PERMISSION_DENIED',
  internal_error: 'INTERNAL',
};

/**
 * Google Gemini (the Gemini API of generativelanguage.googleapis.com): the model and the method in the path;
 * the key in `x-goog-api-key` (what @google/genai sends) or `?key=`, to Google in `x-goog-api-key`; usage in
 * `usageMetadata`; errors `{"error": {code, message, status}}`.
 */
export const GEMINI: LlmProvider = {
  matchEndpoint: (method, path) => {
    const m = MODEL_ROUTE.exec(path);
    if (m) {
      const action = METHODS[m[2]!];
      if (!action || method !== 'POST') return null;
      return { metered: action.metered, pathModel: m[1]!, pathStream: action.stream };
    }
    return method === 'GET' && LIST_ROUTE.test(path) ? { metered: false } : null;
  },
  title: 'Google Gemini',
  routes: '/v1beta/models/{model}:generateContent, :streamGenerateContent, :countTokens, /v1beta/models (and the same under /v1)',
  apiKeyHeader: 'x-goog-api-key',
  apiKeyQuery: 'key',
  credential: (apiKey) => ({ 'x-goog-api-key': apiKey }),
  callFacts: (endpoint, b) => {
    const generation = isObject(b.generationConfig) ? b.generationConfig : {};
    return { model: endpoint.pathModel ?? null, stream: endpoint.pathStream ?? false, maxTokens: int(generation.maxOutputTokens) };
  },
  policyRoute: (path) => MODEL_ROUTE.exec(path)?.[2] ?? path.replace(/^\/v1(beta)?\//, ''),
  // @google/genai reads `data:` events and skips anything else; an error event is `data: {"error": …}`.
  sse: { keepAlive: ': held by Reins for approval\n\n', error: (body) => `data: ${body}\n\n` },
  errorBody: (kind, message, _headers, status) => JSON.stringify({ error: { code: status, message, status: STATUS[kind] } }),
};
