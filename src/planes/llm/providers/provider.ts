/**
 * One description object per LLM provider (Portkey's provider configs are the model): the routes it serves and
 * which are metered, where a request names its model, stream flag and token cap, how the client presents its key
 * and how Reins presents the provider's, the shape of an error the gateway answers itself, and which calls can be
 * held. Adding a provider is one file beside this one, and a line in index.ts.
 */

/** Why the gateway answers instead of the provider. */
export type GatewayErrorKind =
  | 'policy_denied'
  | 'model_not_allowed'
  | 'budget_exceeded'
  | 'unauthenticated'
  | 'unknown_route'
  | 'provider_not_configured'
  | 'upstream_unreachable'
  | 'body_too_large'
  | 'bad_request'
  | 'rate_limited'
  /** X-Reins-Agent names an agent the token's developer is not bound to (or no agent at all). */
  | 'agent_not_bound'
  | 'internal_error';

export interface GatewayAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface Endpoint {
  /** Whether a response can carry token usage (count-tokens and model listings consume none). */
  metered: boolean;
  /** Set for Bedrock, whose model is in the path. */
  pathModel?: string;
  pathStream?: boolean;
}

export interface CallFacts {
  model: string | null;
  stream: boolean;
  maxTokens: number | null;
}

/** The kinds that are Reins' own decisions on a call: refusals, which no client should retry. */
export const REFUSAL_KINDS: ReadonlySet<GatewayErrorKind> = new Set<GatewayErrorKind>(['policy_denied', 'model_not_allowed', 'budget_exceeded', 'agent_not_bound', 'bad_request']);

export interface LlmProvider {
  /** The endpoint a method and path (query excluded) name, or null when the gateway does not serve it. */
  matchEndpoint(method: string, path: string): Endpoint | null;
  /** The provider's name as the OpenAPI document and messages show it. */
  title: string;
  /** The routes served, as an unknown route's answer lists them. */
  routes: string;
  /** A header the provider's SDK sends the key in besides `Authorization: Bearer` (Anthropic's `x-api-key`). */
  apiKeyHeader: string | null;
  /** A query parameter the key may arrive in (Gemini's `?key=`); removed before the call goes upstream. */
  apiKeyQuery?: string;
  /** The provider credential Reins adds in place of the client's (which is never forwarded). */
  credential(apiKey: string): Record<string, string>;
  /** Model, stream flag and token cap as the policy object needs them. */
  callFacts(endpoint: Endpoint, body: Record<string, unknown>): CallFacts;
  /** The route as policies name it: `chat/completions`, `messages`, `converse`. */
  policyRoute(path: string): string;
  /**
   * Why an approve policy's call on this route and model cannot be parked (the sentence's end), or null when it
   * can. Absent: every metered call can be held.
   */
  unholdable?(policyRoute: string, model: string): string | null;
  /** The gateway's own error in the provider's shape (`status` is the HTTP status it goes with): sets content headers as needed, returns the body. */
  errorBody(kind: GatewayErrorKind, message: string, headers: Record<string, string>, status: number): string;
  /**
   * Servers of this kind may send no usage (OpenAI-compatible servers): the gateway then counts the tokens of the
   * request and the answer's text itself, and the usage is marked estimated.
   */
  estimateUsage?: boolean;
  /** Prices follow the model the answer names (Azure: a deployment's model), not the one the request named. */
  priceByResponseModel?: boolean;
  /**
   * Server-sent events as the provider's SDK reads them: the comment or event that keeps a held streaming call's
   * client waiting (null: a held stream is not kept alive, Bedrock's AWS event stream), and an error inside an
   * answer whose headers are sent.
   */
  sse: { keepAlive: string | null; error(body: string, policyRoute: string): string };
  /** A status other than the usual one for this kind of error (on `policyRoute`, when the answer is for a call). */
  statusFor?(kind: GatewayErrorKind, policyRoute: string): number | undefined;
}

type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function str(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

export function int(...vs: unknown[]): number | null {
  for (const v of vs) if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v;
  return null;
}

export interface RouteRule {
  re: RegExp;
  methods: readonly string[];
  metered: boolean;
}

/** The endpoint of a provider whose routes are a fixed table (OpenAI, Anthropic). */
export function matchRouteTable(routes: readonly RouteRule[], method: string, path: string): Endpoint | null {
  const route = routes.find((r) => r.re.test(path) && r.methods.includes(method));
  return route ? { metered: route.metered } : null;
}

/** Model, stream and token cap from a JSON body that names them (OpenAI, Anthropic). */
export function bodyCallFacts(b: Json): CallFacts {
  return { model: str(b.model), stream: b.stream === true, maxTokens: int(b.max_completion_tokens, b.max_tokens, b.max_output_tokens) };
}

/** The route after its version prefix: `/v1/chat/completions` -> `chat/completions`. */
export function versionedRoute(path: string): string {
  const rest = path.startsWith('/v1/') ? path.slice(4) : path;
  return rest.startsWith('/') ? rest.slice(1) : rest;
}
