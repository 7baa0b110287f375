/** One request's passage through the MCP proxy (proxy.ts): its forwarded calls and tools/list requests, and the refusals beside them. */
import { toolsOf, type AnnotationCache } from './annotations.js';
import type { Upstream } from './forward.js';
import type { HeldStream } from './held-stream.js';
import { errorMessage, idKey, readOutbound, SERVER_ERROR } from './json-rpc.js';
import type { McpCallResult, McpHold, McpToolCall } from './types.js';

/** What an exchange needs of the gateway that owns it (McpGateway). */
export interface ExchangeOwner<C> {
  readonly cache: AnnotationCache;
  readonly hidesTools: boolean;
  hides(caller: C, server: string, tool: unknown): boolean;
  report(call: McpToolCall<C>, result: McpCallResult): void;
}

/** JSON-RPC errors for the forwarded calls no answer reached, on a held call's stream (its HTTP status is sent). */
export function heldStreamErrors<C>(exchange: Exchange<C>, message: string): object[] {
  return [...exchange.calls.values()].filter((t) => !t.done).map((t) => errorMessage(t.call.requestId, SERVER_ERROR, message));
}

interface Tracked<C> {
  call: McpToolCall<C>;
  done: boolean;
}

/**
 * One request's passage through the proxy: the calls it forwarded (to report when their answers pass), the
 * `tools/list` requests it forwarded (whose results teach annotations and may be filtered), and the refusals
 * Reins answers itself alongside the upstream's answer.
 */
export class Exchange<C> {
  readonly calls = new Map<string, Tracked<C>>();
  readonly listIds = new Set<string>();
  refusals: object[] = [];
  status = 0;
  /** The SSE answer begun because a call of this request was held for a person; null otherwise. */
  held: HeldStream | null = null;
  /** Held calls the client cancelled (`notifications/cancelled`) while they waited, or that were answered
   * "held, call again after approval" (`answered`): never run. */
  readonly cancelled = new Set<string>();
  readonly answered = new Set<string>();
  /** The holds of this request's parked calls, by request id. */
  readonly holds = new Map<string, McpHold>();
  /** Whether the POST carried one message (not a batch): a JSON answer to it can be the held call's. */
  soleMessage = false;
  /** How many `tools/call` requests the POST carried. */
  toolCalls = 0;
  /** Added to the forwarded POST: the trace context of its (first) allowed tool call, when Reins exports spans. */
  upstreamHeaders: Readonly<Record<string, string>> | undefined = undefined;
  endHeldStream: () => void = () => {};

  constructor(
    private readonly gateway: ExchangeOwner<C>,
    readonly upstream: Upstream,
    readonly caller: C,
    readonly started: number,
  ) {}

  track(call: McpToolCall<C>): void {
    this.calls.set(idKey(call.requestId), { call, done: false });
  }

  /** Whether the upstream's answer must be rewritten rather than passed through byte for byte. */
  get rewrites(): boolean {
    return this.refusals.length > 0 || (this.gateway.hidesTools && this.listIds.size > 0);
  }

  get observes(): boolean {
    return this.calls.size > 0 || this.listIds.size > 0;
  }

  complete(call: McpToolCall<C>, result: Omit<McpCallResult, 'durationMs'>): void {
    // Not `{ ...result, durationMs }`: a property after a leading spread takes a slow path on Node 20's V8 (0.7 µs).
    this.gateway.report(call, Object.assign({ durationMs: performance.now() - this.started }, result));
  }

  /** A message from the upstream, on its way to the client. */
  observe(message: unknown): void {
    const o = readOutbound(message);
    if (o.kind === 'notification' && o.method === 'notifications/tools/list_changed') this.gateway.cache.forget(this.upstream.name);
    if (o.kind !== 'response' || o.id === null) return;
    const key = idKey(o.id);
    if (o.result && this.listIds.has(key)) {
      const tools = toolsOf(o.result);
      if (tools) this.gateway.cache.learn(this.upstream.name, tools);
    }
    const tracked = this.calls.get(key);
    if (tracked && !tracked.done) {
      tracked.done = true;
      const result: Omit<McpCallResult, 'durationMs'> = o.error
        ? { status: this.status, end: 'forwarded', isError: true, error: o.error }
        : { status: this.status, end: 'forwarded', isError: o.result?.isError === true };
      this.complete(tracked.call, result);
    }
  }

  /** The message as the client should see it: a `tools/list` result without the tools `hideTool` hides. */
  rewrite(message: unknown): unknown {
    const o = readOutbound(message);
    if (!this.gateway.hidesTools || o.kind !== 'response' || o.id === null || !o.result || !this.listIds.has(idKey(o.id))) return message;
    if (!Array.isArray(o.result.tools)) return message;
    const tools = (o.result.tools as unknown[]).filter((t) => !this.gateway.hides(this.caller, this.upstream.name, t));
    if (tools.length === o.result.tools.length) return message;
    return { ...(message as object), result: { ...o.result, tools } };
  }

  /** The HTTP answer is over: calls whose answer did not pass end now. */
  finish(status: number, end: McpCallResult['end']): void {
    for (const tracked of this.calls.values()) {
      if (tracked.done) continue;
      tracked.done = true;
      this.complete(tracked.call, { status, end });
    }
  }
}

