import { bodyCallFacts, matchRouteTable, str, type Endpoint, type LlmProvider, type RouteRule } from './provider.js';
import { OPENAI_SSE, openAiErrorBody } from './openai.js';

/** `/openai/deployments/{deployment}/{operation}`: the deployment names the model (what AzureOpenAI sends). */
const DEPLOYMENT_ROUTE = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|completions|embeddings)$/;

/** The v1 API (`/openai/v1/…`): OpenAI's paths, the model in the body. */
const V1_ROUTES: readonly RouteRule[] = [
  { re: /^\/openai\/v1\/chat\/completions$/, methods: ['POST'], metered: true },
  { re: /^\/openai\/v1\/completions$/, methods: ['POST'], metered: true },
  { re: /^\/openai\/v1\/embeddings$/, methods: ['POST'], metered: true },
  { re: /^\/openai\/v1\/responses$/, methods: ['POST'], metered: true },
  { re: /^\/openai\/v1\/responses\/[^/]+(\/[a-z_]+)?$/, methods: ['GET', 'POST', 'DELETE'], metered: true },
  { re: /^\/openai\/v1\/models(\/[^/]+)?$/, methods: ['GET'], metered: false },
];

function deploymentEndpoint(method: string, path: string): Endpoint | null {
  const m = DEPLOYMENT_ROUTE.exec(path);
  if (!m || method !== 'POST') return null;
  try {
    return { metered: true, pathModel: decodeURIComponent(m[1]!) };
  } catch {
    return null;
  }
}

/**
 * Azure OpenAI: deployments paths (`?api-version=` passes through) and the v1 paths; the key in `api-key` both from
 * the client (the `AzureOpenAI` client of the `openai` package) and to Azure; OpenAI's error shape. The model for
 * policies is the body's, else the deployment's name; for prices, the model the answer names (`responseModel`).
 */
export const AZURE_OPENAI: LlmProvider = {
  matchEndpoint: (method, path) => deploymentEndpoint(method, path) ?? matchRouteTable(V1_ROUTES, method, path),
  title: 'Azure OpenAI',
  routes: '/openai/deployments/{deployment}/chat/completions, completions, embeddings; /openai/v1/chat/completions, completions, embeddings, responses, models',
  apiKeyHeader: 'api-key',
  credential: (apiKey) => ({ 'api-key': apiKey }),
  callFacts: (endpoint, body) => {
    const facts = bodyCallFacts(body);
    return { ...facts, model: facts.model ?? str(endpoint.pathModel) };
  },
  policyRoute: (path) => DEPLOYMENT_ROUTE.exec(path)?.[2] ?? path.replace(/^\/openai\/v1\//, '').replace(/^\//, ''),
  sse: OPENAI_SSE,
  errorBody: openAiErrorBody,
  priceByResponseModel: true,
};
