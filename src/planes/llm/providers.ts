/**
 * What differs between the three providers on the data path: which routes exist, how the client presents
 * its key, how Reins presents the provider's, and where a request names its model, stream flag and token cap.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderName, ProviderSettings } from '../../config/config.js';

export interface Endpoint {
  /** Whether a response can carry token usage (count-tokens and model listings consume none). */
  metered: boolean;
  /** Set for Bedrock, whose model is in the path. */
  pathModel?: string;
  pathStream?: boolean;
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

function int(...vs: unknown[]): number | null {
  for (const v of vs) if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v;
  return null;
}

const OPENAI_ROUTES: readonly { re: RegExp; methods: readonly string[]; metered: boolean }[] = [
  { re: /^\/v1\/chat\/completions$/, methods: ['POST'], metered: true },
  { re: /^\/v1\/completions$/, methods: ['POST'], metered: true },
  { re: /^\/v1\/embeddings$/, methods: ['POST'], metered: true },
  { re: /^\/v1\/responses$/, methods: ['POST'], metered: true },
  // Retrieve, cancel, delete, input items and compaction of a stored response (Codex uses some of these).
  { re: /^\/v1\/responses\/[^/]+(\/[a-z_]+)?$/, methods: ['GET', 'POST', 'DELETE'], metered: true },
  { re: /^\/v1\/models(\/[^/]+)?$/, methods: ['GET'], metered: false },
];

const ANTHROPIC_ROUTES: readonly { re: RegExp; methods: readonly string[]; metered: boolean }[] = [
  { re: /^\/v1\/messages$/, methods: ['POST'], metered: true },
  { re: /^\/v1\/messages\/count_tokens$/, methods: ['POST'], metered: false },
  { re: /^\/v1\/models(\/[^/]+)?$/, methods: ['GET'], metered: false },
];

const BEDROCK_ACTIONS: Record<string, { stream: boolean; metered: boolean }> = {
  invoke: { stream: false, metered: true },
  'invoke-with-response-stream': { stream: true, metered: true },
  converse: { stream: false, metered: true },
  'converse-stream': { stream: true, metered: true },
  'count-tokens': { stream: false, metered: false },
};

/** The endpoint a method and path (query excluded) name, or null when the gateway does not serve it. */
export function matchEndpoint(provider: ProviderName, method: string, path: string): Endpoint | null {
  if (provider === 'bedrock') {
    const m = /^\/model\/([^/]+)\/([a-z-]+)$/.exec(path);
    const action = m ? BEDROCK_ACTIONS[m[2]!] : undefined;
    if (!m || !action || method !== 'POST') return null;
    let model: string;
    try {
      model = decodeURIComponent(m[1]!);
    } catch {
      return null;
    }
    return { metered: action.metered, pathModel: model, pathStream: action.stream };
  }
  const routes = provider === 'openai' ? OPENAI_ROUTES : ANTHROPIC_ROUTES;
  const route = routes.find((r) => r.re.test(path) && r.methods.includes(method));
  return route ? { metered: route.metered } : null;
}

export function describeRoutes(provider: ProviderName): string {
  switch (provider) {
    case 'openai':
      return '/v1/chat/completions, /v1/completions, /v1/embeddings, /v1/responses, /v1/models';
    case 'anthropic':
      return '/v1/messages, /v1/messages/count_tokens, /v1/models';
    case 'bedrock':
      return '/model/{modelId}/invoke, invoke-with-response-stream, converse, converse-stream, count-tokens';
  }
}

/** The Reins secret the client sent where its SDK puts the provider key, or null. */
export function clientSecret(provider: ProviderName, headers: IncomingHttpHeaders): string | null {
  const auth = headers.authorization;
  if (auth !== undefined) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    return m ? m[1]! : null;
  }
  // Anthropic's SDK and Claude Code's ANTHROPIC_API_KEY send the key as x-api-key.
  const apiKey = headers['x-api-key'];
  if (provider === 'anthropic' && typeof apiKey === 'string' && apiKey.trim() !== '') return apiKey.trim();
  return null;
}

/** The provider credential Reins adds in place of the client's (which is never forwarded). */
export function providerCredential(provider: ProviderName, settings: ProviderSettings): Record<string, string> {
  if (!settings.apiKey) return {};
  switch (provider) {
    case 'openai':
    case 'bedrock':
      // Bedrock API keys are bearer tokens; SigV4 signing with IAM credentials is not built yet.
      return { authorization: `Bearer ${settings.apiKey}` };
    case 'anthropic':
      return { 'x-api-key': settings.apiKey };
  }
}

export interface CallFacts {
  model: string | null;
  stream: boolean;
  maxTokens: number | null;
}

/** Model, stream flag and token cap as the policy object needs them. */
export function callFacts(provider: ProviderName, endpoint: Endpoint, body: unknown): CallFacts {
  const b = isObject(body) ? body : {};
  if (provider === 'bedrock') {
    const inference = isObject(b.inferenceConfig) ? b.inferenceConfig : {};
    const titan = isObject(b.textGenerationConfig) ? b.textGenerationConfig : {};
    return {
      model: endpoint.pathModel ?? null,
      stream: endpoint.pathStream ?? false,
      // Converse and Nova use inferenceConfig; native bodies: Anthropic/Mistral max_tokens, Llama max_gen_len, Titan.
      maxTokens: int(inference.maxTokens, inference.max_new_tokens, b.max_tokens, b.max_gen_len, titan.maxTokenCount),
    };
  }
  return {
    model: str(b.model),
    stream: b.stream === true,
    maxTokens: int(b.max_completion_tokens, b.max_tokens, b.max_output_tokens),
  };
}
