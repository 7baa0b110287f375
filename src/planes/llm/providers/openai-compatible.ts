import { bodyCallFacts, matchRouteTable, versionedRoute, type LlmProvider, type RouteRule } from './provider.js';
import { OPENAI_SSE, openAiErrorBody } from './openai.js';

const ROUTES: readonly RouteRule[] = [
  { re: /^\/v1\/chat\/completions$/, methods: ['POST'], metered: true },
  { re: /^\/v1\/completions$/, methods: ['POST'], metered: true },
  { re: /^\/v1\/embeddings$/, methods: ['POST'], metered: true },
  { re: /^\/v1\/models(\/[^/]+)?$/, methods: ['GET'], metered: false },
];

/**
 * A self-hosted server speaking OpenAI's API (vLLM, Ollama, LM Studio, and hosted ones such as Mistral or Groq):
 * the OpenAI paths every such server implements, OpenAI's error shape. Many send no usage (a stream without
 * `stream_options.include_usage`, some servers never): the gateway then counts the tokens itself (`estimateUsage`).
 */
export const OPENAI_COMPATIBLE: LlmProvider = {
  matchEndpoint: (method, path) => matchRouteTable(ROUTES, method, path),
  title: 'OpenAI-compatible server',
  routes: '/v1/chat/completions, /v1/completions, /v1/embeddings, /v1/models',
  apiKeyHeader: null,
  credential: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  callFacts: (_endpoint, body) => bodyCallFacts(body),
  policyRoute: versionedRoute,
  sse: OPENAI_SSE,
  errorBody: openAiErrorBody,
  estimateUsage: true,
};
