/**
 * JSON-RPC 2.0 as MCP uses it: reading what a client posts (one message or a batch) strictly enough to
 * govern it, and the few answers the gateway writes itself.
 */
import { nestedTooDeep, TOO_DEEP_MESSAGE } from '../../shared/json-depth.js';
import type { JsonRpcId } from './types.js';

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
/** JSON-RPC's implementation-defined server error range; used, as the MCP SDK's transport does, for HTTP-level
 * failures (authentication, unknown server, unreachable upstream). */
export const SERVER_ERROR = -32000;
/** SEP-2243 (revision 2026-07-28): an `Mcp-Method` / `Mcp-Name` header that disagrees with the body. */
export const HEADER_MISMATCH = -32020;

export type Inbound =
  | { kind: 'request'; id: JsonRpcId; method: string; params: Record<string, unknown> | undefined; raw: object }
  | { kind: 'notification'; method: string; raw: object }
  /** The client answering a request of the server's (sampling, elicitation, ping). */
  | { kind: 'response'; raw: object }
  | { kind: 'malformed'; id: JsonRpcId | null; code: number; message: string };

export type ParsedBody = { batch: boolean; messages: Inbound[] } | { error: { code: number; message: string } };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isId(v: unknown): v is JsonRpcId {
  return typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

/** A key that tells `1` from `"1"`. */
export function idKey(id: JsonRpcId): string {
  return typeof id === 'number' ? `n:${id}` : `s:${id}`;
}

export function parseBody(raw: Buffer): ParsedBody {
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    return { error: { code: PARSE_ERROR, message: `Parse error: the body is not JSON (${(err as Error).message})` } };
  }
  // What governs a tools/call (the held-call key, the policy object) walks its arguments recursively.
  if (nestedTooDeep(value)) return { error: { code: INVALID_REQUEST, message: `Invalid Request: ${TOO_DEEP_MESSAGE}` } };
  if (Array.isArray(value)) {
    if (value.length === 0) return { error: { code: INVALID_REQUEST, message: 'Invalid Request: an empty batch' } };
    const seen = new Set<string>();
    const messages = value.map((v) => {
      const m = classify(v);
      // Answers are matched to calls by id, so two requests of one POST must not share one.
      if (m.kind === 'request') {
        const key = idKey(m.id);
        if (seen.has(key)) return { kind: 'malformed' as const, id: m.id, code: INVALID_REQUEST, message: `Invalid Request: id ${JSON.stringify(m.id)} is used twice in this batch` };
        seen.add(key);
      }
      return m;
    });
    return { batch: true, messages };
  }
  return { batch: false, messages: [classify(value)] };
}

function classify(v: unknown): Inbound {
  if (!isObject(v)) return { kind: 'malformed', id: null, code: INVALID_REQUEST, message: 'Invalid Request: a JSON-RPC message is an object' };
  const id = isId(v.id) ? v.id : null;
  const bad = (message: string, code = INVALID_REQUEST): Inbound => ({ kind: 'malformed', id, code, message });
  if (v.jsonrpc !== '2.0') return bad('Invalid Request: "jsonrpc" must be "2.0"');
  if ('id' in v && !isId(v.id)) return bad('Invalid Request: "id" must be a string or a number');
  if (typeof v.method === 'string') {
    if (v.method === '') return bad('Invalid Request: "method" is empty');
    if (v.params !== undefined && !isObject(v.params)) return bad('Invalid params: "params" must be an object', INVALID_PARAMS);
    const params = v.params as Record<string, unknown> | undefined;
    // A tools/call without an id would reach the upstream undecided; it is a request or nothing.
    if (id === null && v.method === 'tools/call') return bad('Invalid Request: tools/call is a request and needs an "id"');
    if (id === null) return { kind: 'notification', method: v.method, raw: v };
    if (v.method === 'tools/call') {
      if (typeof params?.name !== 'string' || params.name === '') return bad('Invalid params: tools/call needs params.name, the tool to call', INVALID_PARAMS);
      if (params.arguments !== undefined && !isObject(params.arguments)) return bad('Invalid params: tools/call params.arguments must be an object', INVALID_PARAMS);
    }
    return { kind: 'request', id, method: v.method, params, raw: v };
  }
  if ('method' in v) return bad('Invalid Request: "method" must be a string');
  if (id !== null && ('result' in v || 'error' in v)) return { kind: 'response', raw: v };
  return bad('Invalid Request: a message needs "method" (a request or notification) or "result"/"error" with an "id" (a response)');
}

/** A message from the upstream, read only as far as the gateway needs. */
export type Outbound =
  | { kind: 'response'; id: JsonRpcId | null; result?: Record<string, unknown>; error?: { code: number; message: string } }
  | { kind: 'notification'; method: string }
  | { kind: 'other' };

export function readOutbound(v: unknown): Outbound {
  if (!isObject(v)) return { kind: 'other' };
  if (typeof v.method === 'string') return 'id' in v ? { kind: 'other' } : { kind: 'notification', method: v.method };
  const id = isId(v.id) ? v.id : null;
  if (isObject(v.result)) return { kind: 'response', id, result: v.result };
  if (isObject(v.error)) {
    const e = v.error;
    return { kind: 'response', id, error: { code: typeof e.code === 'number' ? e.code : INTERNAL_ERROR, message: typeof e.message === 'string' ? e.message : '' } };
  }
  return { kind: 'other' };
}

export function errorMessage(id: JsonRpcId | null, code: number, message: string): object {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

/** A refusal the model sees: the tool's result, marked as an error, carrying the policy's sentence. */
export function toolRefusal(id: JsonRpcId, message: string): object {
  return { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: message }], isError: true } };
}

/**
 * The errors for a POST the gateway will not forward at all: each malformed message gets its own error, each
 * well-formed request `code`/`message` (so no request waits for an answer that will not come).
 */
export function rejectAll(messages: readonly Inbound[], code: number, message: string): object[] {
  const out: object[] = [];
  for (const m of messages) {
    if (m.kind === 'malformed') out.push(errorMessage(m.id, m.code, m.message));
    else if (m.kind === 'request') out.push(errorMessage(m.id, code, message));
  }
  return out;
}

/** Whether an Accept header admits a media type (`type/subtype`, `type/*` or `*\/*`). */
export function accepts(accept: string | undefined, mediaType: string): boolean {
  if (!accept) return false;
  const [type] = mediaType.split('/');
  return accept.split(',').some((part) => {
    const range = part.split(';')[0]?.trim().toLowerCase() ?? '';
    return range === mediaType || range === `${type}/*` || range === '*/*';
  });
}
