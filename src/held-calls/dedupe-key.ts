// The held-call de-duplication key. An identical call (same prompt or tool and
// arguments, model, agent, developer, session and policy) gets the same key and attaches
// to the pending entry; any difference gives another key and a separate entry. Entries
// never mix callers: the developer is part of the key, so a session value two developers
// both send is two sessions, and no call joins an entry that did not name its developer.
import { createHash } from 'node:crypto';

export interface LlmCallIdentity {
  kind: 'llm';
  agentId: string;
  /** The personal access token's developer; null for an agent key. */
  developerId: string | null;
  /** Developer session (the tool's own value, scoped by `developerId`); null for an agent key, which has none. */
  sessionId: string | null;
  policyName: string;
  /** Gateway route, e.g. `/llm/openai/v1/chat/completions`; a query string is ignored. */
  route: string;
  model: string;
  /** Parsed JSON request body, as the client sent it. */
  body: unknown;
}

export interface McpCallIdentity {
  kind: 'mcp';
  agentId: string;
  developerId: string | null;
  sessionId: string | null;
  policyName: string;
  server: string;
  tool: string;
  /** `params.arguments` of the `tools/call`; absent means `{}`. */
  arguments: unknown;
}

export type HeldCallIdentity = LlmCallIdentity | McpCallIdentity;

/**
 * Body fields of an LLM request that do not change what the model is asked. Everything
 * else in the body is "the prompt": messages, system, input, prompt, instructions, tools,
 * tool_choice, sampling parameters and any field we do not know yet. We list the noise
 * rather than the prompt because the two errors are not equal: treating a real difference
 * as noise would attach a call the reviewer never saw to their decision, while treating
 * noise as a difference only costs a second entry.
 */
export const LLM_TRANSPORT_NOISE_FIELDS: readonly string[] = [
  'stream', // same request, streamed or not
  'stream_options', // usage reporting of a stream
  'metadata', // caller telemetry (user ids, trace ids)
  'user', // end-user tag for abuse tracking
  'safety_identifier',
  'prompt_cache_key', // caching hints
  'prompt_cache_retention',
  'store', // whether the provider keeps the completion
  'service_tier', // latency and billing class
];

/** Removed at any depth of an LLM body: Anthropic prompt-caching breakpoints move between turns. */
const LLM_NESTED_NOISE_FIELDS: readonly string[] = ['cache_control'];

/**
 * Canonical JSON: object keys sorted by UTF-16 code units, no whitespace, numbers in
 * ECMAScript's shortest round-trip form (as RFC 8785), `undefined` members omitted.
 * Two parses of equal JSON give the same string whatever the key order or number
 * spelling (`1.0`, `1e0` and `1` are one number).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'string':
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) {
        return `[${value.map((item) => canonicalJson(item)).join(',')}]`;
      }
      const entries = Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
    }
    default:
      throw new TypeError(`canonicalJson: ${typeof value} is not a JSON value`);
  }
}

function withoutFields(value: unknown, fields: readonly string[]): unknown {
  if (Array.isArray(value)) return value.map((item) => withoutFields(item, fields));
  if (value === null || typeof value !== 'object') return value;
  // fromEntries, not assignment: a `__proto__` member must stay a member.
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>)
      .filter(([k]) => !fields.includes(k))
      .map(([k, v]) => [k, withoutFields(v, fields)]),
  );
}

/** The part of an LLM request body that identifies the call: the body without transport noise. */
export function promptOf(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const top = Object.fromEntries(
    Object.entries(body as Record<string, unknown>).filter(([k]) => !LLM_TRANSPORT_NOISE_FIELDS.includes(k)),
  );
  return withoutFields(top, LLM_NESTED_NOISE_FIELDS);
}

function routePath(route: string): string {
  const q = route.indexOf('?');
  return q === -1 ? route : route.slice(0, q);
}

/**
 * SHA-256 hex of the canonical identity of a call. Headers never enter the key, so SDK
 * retry headers (`x-stainless-retry-count`, `x-stainless-timeout`, `idempotency-key`,
 * `x-request-id`, `traceparent`) cannot split a retried call from its first attempt.
 */
export function heldCallDedupeKey(call: HeldCallIdentity): string {
  const common = {
    v: 2, // bump when the identity changes shape, so old and new keys never meet
    kind: call.kind,
    agentId: call.agentId,
    developerId: call.developerId,
    sessionId: call.sessionId,
    policyName: call.policyName,
  };
  const identity =
    call.kind === 'llm'
      ? { ...common, route: routePath(call.route), model: call.model, prompt: promptOf(call.body) }
      : // params._meta (progress tokens) and the JSON-RPC id differ per call and are not taken.
        { ...common, server: call.server, tool: call.tool, arguments: call.arguments === undefined ? {} : call.arguments };
  return createHash('sha256').update(canonicalJson(identity)).digest('hex');
}
