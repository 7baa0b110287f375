/**
 * The MCP gateway: `/mcp/{server}` is a streamable HTTP proxy to the configured upstream MCP server.
 * Each request: the client's Reins token -> caller; for a POST, the JSON-RPC message (or batch) is read, each
 * `tools/call` decided (with the tool's annotations, learned from the upstream's `tools/list`) before anything
 * of it reaches the upstream; a denied call is answered by Reins as a tool result with `isError: true`, the
 * rest is forwarded, and the answer (JSON or SSE) streams back while the proxy reads it on the side: tool
 * annotations from `tools/list` results, each call's outcome for `completed`.
 *
 * Like the LLM gateway it runs on plain node:http objects and knows nothing of identities, policies or
 * storage: it asks `hooks`. `/mcp/reins` (the built-in server) is not served here: `isMcpRequest` says no.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AnswerHeaders } from '../../shared/answer-headers.js';
import { AnswerRelay, type AnswerPlan } from '../../shared/answer-relay.js';
import { AnnotationCache, DEFAULT_ANNOTATIONS, resolveAnnotations, toolsOf, type ListedTool } from './annotations.js';
import { McpUpstreams, resolveUpstream, upstreamHeaders, type Upstream } from './forward.js';
import {
  HEADER_MISMATCH,
  INTERNAL_ERROR,
  INVALID_REQUEST,
  SERVER_ERROR,
  accepts,
  errorMessage,
  idKey,
  parseBody,
  readOutbound,
  rejectAll,
  toolRefusal,
  type Inbound,
} from './json-rpc.js';
import { HELD_ANSWER_MS, HELD_KEEP_ALIVE_MS, HeldStream, heldAnswerText } from './held-stream.js';
import { SseSplitter, sseEvent, withData, type SseEvent } from './sse.js';
import type { JsonRpcId, McpCallResult, McpDecision, McpGatewayDeps, McpGatewayLog, McpHold, McpToolCall } from './types.js';
import { refusedOrigin } from '../../shared/mcp-origin.js';
import { readBodyNow } from '../../shared/read-body.js';
import { Exchange, heldStreamErrors } from './exchange.js';
import { answerLocally, send, sendError } from './local-answers.js';
import { BUILT_IN_SERVER, bearerToken, header, headerMismatch, pathOf, protocolMeta, routeOf } from './request-checks.js';
import { findAnswer, mediaKind, parseEventData } from './upstream-answers.js';

export type * from './types.js';
export { DEFAULT_ANNOTATIONS, resolveAnnotations } from './annotations.js';
export { BUILT_IN_SERVER, isMcpRequest } from './request-checks.js';

/** Tool arguments can carry documents; this is the gateway's limit for one POST. */
export const MCP_BODY_LIMIT = 16 * 1024 * 1024;
/** How long the gateway waits for an upstream's `tools/list` when a call names a tool it has not seen. */
export const TOOLS_LIST_TIMEOUT_MS = 10_000;
const MAX_LIST_PAGES = 20;
/** A JSON answer larger than this is still forwarded, but not read for tool annotations or call outcomes. */
const OBSERVED_JSON_LIMIT = 8 * 1024 * 1024;

const METHODS = new Set(['GET', 'POST', 'DELETE']);
/** How long a POST waits for its session's earlier GET stream to be open upstream (streamOrder); the upstream is slow then. */
export const STREAM_FIRST_WAIT_MS = 5_000;
/** How long after a session's `notifications/initialized` its first POST waits for the GET stream the client may open. */
export const STREAM_GRACE_MS = 500;

/**
 * Ends the SSE answer a held call began, once nothing more will be written to it. Made by a plain function, not as an
 * arrow inside the async `post`: measured in the replica (bench/planes-overhead, 2026-11-30), closures made inside the
 * async functions of a tool call's path and kept on the call's objects (this one, the decide hook's onHeld, the
 * plane's onParked) left each call's whole graph (request, response, exchange, context) alive through the young
 * collections: 2.3 MB of a sequential tools/call load promoted to the old generation at every scavenge (6 KB a call),
 * each scavenge 13-21 ms, major collections to follow. The same closures made by plain functions or methods: 4-13 KB
 * a scavenge, under 1.5 ms. A standalone script does not show it, so the cause lies in what else retains an async
 * function's scope in the replica; the rule kept here is the measured one.
 */
function heldStreamEnder<C>(exchange: Exchange<C>, res: ServerResponse): () => void {
  return () => {
    exchange.held?.stop();
    if (res.headersSent && !res.writableEnded) res.end();
  };
}

async function afterStreams(streams: Promise<void>[]): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, STREAM_FIRST_WAIT_MS)));
  await Promise.race([Promise.all(streams), late]);
  clearTimeout(timer);
}

type Request = Extract<Inbound, { kind: 'request' }>;

/** The MCP data plane's request handler, on node:http objects. */
export class McpGateway<C> {
  /** @internal */ readonly cache = new AnnotationCache();
  private readonly upstreams = new McpUpstreams();
  private readonly servers = new Map<string, Upstream>();
  private readonly refreshing = new Map<string, Promise<ListedTool[] | null>>();
  /** Held calls waiting for a person, by session and request id, so that a cancellation can find them. */
  private readonly waiting = new Map<string, Exchange<C>>();
  /** GET streams on their way to the upstream (no answer headers yet), by server and session: see streamOrder. */
  private readonly openingStreams = new Map<string, Set<Promise<void>>>();
  /** Sessions just initialized whose GET stream has not arrived yet: see streamOrder. */
  private readonly expectedStreams = new Map<string, { arrived: Promise<void>; resolve: () => void; timer: NodeJS.Timeout }>();

  /** A session's `notifications/initialized` passed: its client may open the GET stream now (streamOrder). */
  private expectStream(server: string, session: string | undefined): void {
    if (session === undefined) return;
    const key = `${server}\n${session}`;
    if (this.expectedStreams.has(key) || this.openingStreams.has(key)) return;
    let resolve!: () => void;
    const arrived = new Promise<void>((r) => (resolve = r));
    const timer = setTimeout(() => {
      if (this.expectedStreams.get(key)?.arrived === arrived) this.expectedStreams.delete(key);
      resolve();
    }, STREAM_GRACE_MS);
    timer.unref();
    this.expectedStreams.set(key, { arrived, resolve, timer });
  }

  constructor(
    private readonly deps: McpGatewayDeps<C>,
    private readonly log: McpGatewayLog,
  ) {
    for (const s of deps.servers) {
      if (s.name === BUILT_IN_SERVER) throw new Error(`MCP server name "${BUILT_IN_SERVER}" is the built-in server's`);
      if (this.servers.has(s.name)) throw new Error(`MCP server "${s.name}" is configured twice`);
      this.servers.set(s.name, resolveUpstream(s.name, s.url, s.headers));
    }
  }

  close(): Promise<void> {
    return this.upstreams.close();
  }

  /** Serves a request for which `isMcpRequest` is true. Never throws; every failure answers as JSON-RPC. */
  handle(req: IncomingMessage, res: ServerResponse): void {
    // Noted on arrival, before anything is awaited: the order in which a session's GET stream and POSTs reached Reins.
    const streams = this.streamOrder(req);
    this.serve(req, res, streams?.before ?? [])
      .catch((err: unknown) => {
        this.log.error({ err }, 'mcp gateway error');
        req.resume();
        sendError(res, 500, null, INTERNAL_ERROR, 'Internal error: the Reins MCP gateway failed on this request; it has been logged');
      })
      .finally(() => streams?.opened());
  }

  /**
   * A server sends its own requests (sampling, elicitation, roots) and notifications that belong to no call on the
   * session's standalone GET stream, and drops them when that stream is not open yet. A client opens it right after
   * initializing and may send its next POST at once, and through the proxy that POST could reach the upstream first:
   * the server's request was lost and the client timed out (most runs of the conformance suite's sampling and
   * elicitation scenarios). So a POST waits, before it is forwarded, until every GET of its session that reached
   * Reins before it has its answer's headers from the upstream (the upstream has registered the stream), or has been
   * on its way for STREAM_FIRST_WAIT_MS (an upstream may send the headers only with its first event). And since the
   * client's own connections can deliver its first POST after `notifications/initialized` ahead of its GET, a POST
   * of a session initialized less than STREAM_GRACE_MS ago whose GET has not arrived waits for it for the rest of
   * that time (a client that never opens the GET stream, which MCP allows, pays that once per session).
   */
  private streamOrder(req: IncomingMessage): { before: Promise<void>[]; opened: () => void } | null {
    const session = header(req.headers, 'mcp-session-id');
    const route = session === undefined ? null : routeOf(req.url ?? '/');
    if (!route || session === undefined) return null;
    const key = `${route.name}\n${session}`;
    if (req.method === 'POST') {
      const pending = this.openingStreams.get(key);
      if (pending) return { before: [...pending.values()], opened: () => {} };
      const expected = this.expectedStreams.get(key);
      return expected ? { before: [expected.arrived], opened: () => {} } : null;
    }
    if (req.method !== 'GET') return null;
    let opened!: () => void;
    const done = new Promise<void>((resolve) => (opened = resolve));
    let set = this.openingStreams.get(key);
    if (!set) this.openingStreams.set(key, (set = new Set()));
    set.add(done);
    // An upstream that sends the stream's headers only with its first event would otherwise make every POST of the
    // session wait: past STREAM_FIRST_WAIT_MS the GET counts as open (it has long reached the upstream).
    const late = setTimeout(() => forget(), STREAM_FIRST_WAIT_MS);
    late.unref();
    const forget = (): void => {
      clearTimeout(late);
      opened();
      set.delete(done);
      if (set.size === 0 && this.openingStreams.get(key) === set) this.openingStreams.delete(key);
    };
    const expected = this.expectedStreams.get(key);
    if (expected) {
      this.expectedStreams.delete(key);
      clearTimeout(expected.timer);
      void done.then(expected.resolve);
    }
    return { before: [], opened: forget };
  }

  /** @internal */ get hidesTools(): boolean {
    return this.deps.hooks.hideTool !== undefined;
  }

  /** @internal Whether `hideTool` hides an entry of a `tools/list` result (entries without a name stay). */
  hides(caller: C, server: string, tool: unknown): boolean {
    const hide = this.deps.hooks.hideTool;
    if (!hide || typeof tool !== 'object' || tool === null) return false;
    const { name, annotations } = tool as Record<string, unknown>;
    if (typeof name !== 'string') return false;
    try {
      return hide(caller, server, name, resolveAnnotations(annotations));
    } catch (err) {
      this.log.error({ err, server, tool: name }, 'mcp hideTool hook threw; the tool stays listed');
      return false;
    }
  }

  /** @internal */ report(call: McpToolCall<C>, result: McpCallResult): void {
    try {
      this.deps.hooks.completed(call, result);
    } catch (err) {
      this.log.error({ err }, 'mcp completed hook threw');
    }
  }

  private async serve(req: IncomingMessage, res: ServerResponse, streamsBefore: Promise<void>[]): Promise<void> {
    const started = performance.now();
    const url = req.url ?? '/';
    const method = req.method ?? 'GET';

    // A browser page's request from an origin not allowed (MCP's DNS-rebinding rule) is refused before anything else.
    const badOrigin = refusedOrigin(req.headers, this.deps.allowedOrigins ?? []);
    if (badOrigin) {
      req.resume();
      return sendError(res, 403, null, SERVER_ERROR, badOrigin);
    }
    // Authentication comes first, so that nothing (not even which servers exist) is told to a stranger.
    const secret = bearerToken(header(req.headers, 'authorization'));
    if (!secret) {
      req.resume();
      return sendError(res, 401, null, SERVER_ERROR, 'Unauthorized: send your Reins token as Authorization: Bearer <token>', {
        'www-authenticate': 'Bearer realm="reins"',
      });
    }
    const wait = this.deps.failedAuth?.retryAfter(req) ?? null;
    if (wait !== null) {
      req.resume();
      return sendError(res, 429, null, SERVER_ERROR, `Too many failed authentications from your address; retry in ${wait} s`, { 'retry-after': String(wait) });
    }
    const caller = await this.deps.hooks.authenticate({ secret, headers: req.headers });
    if (caller === null) {
      this.deps.failedAuth?.failed(req, 'mcp', 'unknown, revoked or expired token');
      req.resume();
      return sendError(res, 401, null, SERVER_ERROR, 'Unauthorized: the Reins token is unknown, revoked or expired', {
        'www-authenticate': 'Bearer realm="reins", error="invalid_token"',
      });
    }

    const route = routeOf(url);
    const upstream = route && (route.rest === '' || route.rest === '/') ? this.servers.get(route.name) : undefined;
    if (!upstream) {
      req.resume();
      const names = [...this.servers.keys()].map((n) => `/mcp/${n}`);
      const served = names.length > 0 ? `it serves ${names.join(', ')}` : 'no MCP server is configured (mcpServers in the config file)';
      return sendError(res, 404, null, SERVER_ERROR, `Not found: no MCP server at ${pathOf(url)}; ${served}`);
    }
    if (!METHODS.has(method)) {
      req.resume();
      return sendError(res, 405, null, SERVER_ERROR, `Method not allowed: ${method}; an MCP endpoint takes POST, GET and DELETE`, { allow: 'GET, POST, DELETE' });
    }

    const exchange = new Exchange(this, upstream, caller, started);
    if (method !== 'POST') return this.forward(req, res, exchange, undefined);
    const read = readBodyNow(req, MCP_BODY_LIMIT);
    const raw = read instanceof Promise ? await read : read;
    if (raw === 'too_large') {
      return sendError(res, 413, null, INVALID_REQUEST, `Request too large: the MCP gateway accepts ${MCP_BODY_LIMIT} bytes per POST`, { connection: 'close' });
    }
    if (raw === 'aborted') return;
    return this.post(req, res, exchange, raw, streamsBefore);
  }

  private async post(req: IncomingMessage, res: ServerResponse, exchange: Exchange<C>, raw: Buffer, streamsBefore: Promise<void>[]): Promise<void> {
    const parsed = parseBody(raw);
    if ('error' in parsed) return sendError(res, 400, null, parsed.error.code, parsed.error.message);
    const { batch, messages } = parsed;
    const first = messages[0];
    if (!first) return sendError(res, 400, null, INVALID_REQUEST, 'Invalid Request: no message');

    // A batch is forwarded whole or not at all: a malformed member stops it before anything is decided.
    if (messages.some((m) => m.kind === 'malformed')) {
      const errors = rejectAll(messages, INVALID_REQUEST, 'Invalid Request: not forwarded, another message of this batch is malformed');
      return send(res, 400, batch ? errors : errors[0]);
    }
    if (!batch) {
      const mismatch = headerMismatch(req.headers, first);
      if (mismatch) return sendError(res, 400, first.kind === 'request' ? first.id : null, HEADER_MISMATCH, mismatch);
    }

    this.noteCancellations(messages, req.headers);
    if (messages.some((m) => m.kind === 'notification' && m.method === 'notifications/initialized')) {
      this.expectStream(exchange.upstream.name, header(req.headers, 'mcp-session-id'));
    }
    const toolCalls = messages.filter((m): m is Request => m.kind === 'request' && m.method === 'tools/call');
    exchange.toolCalls = toolCalls.length;
    exchange.soleMessage = !batch;
    exchange.endHeldStream = heldStreamEnder(exchange, res);
    const denied = new Set<string>();
    const settledCalls: { call: McpToolCall<C>; decision: McpDecision }[] = [];
    if (toolCalls.length > 0) {
      // A loop, not toolCalls.map(m => …): no closure over this async function's scope (see heldStreamEnder).
      const deciding: Promise<{ call: McpToolCall<C>; decision: McpDecision }>[] = [];
      for (const m of toolCalls) deciding.push(this.decideCall(exchange, m, req.headers, res));
      const settled = await Promise.allSettled(deciding);
      exchange.held?.stop();
      for (const s of settled) if (s.status === 'fulfilled') settledCalls.push(s.value);
      const failure = settled.find((s) => s.status === 'rejected');
      if (failure) {
        this.log.error({ err: failure.reason, server: exchange.upstream.name }, 'mcp decide hook failed; nothing was forwarded');
        for (const s of settled) if (s.status === 'fulfilled') exchange.complete(s.value.call, { status: 500, end: 'gateway_error' });
        const message = 'Internal error: Reins could not decide this tool call; nothing was sent to the MCP server';
        return send(res, 500, batch ? rejectAll(messages, INTERNAL_ERROR, message) : errorMessage(toolCalls[0]?.id ?? null, INTERNAL_ERROR, message));
      }
      for (const s of settled) {
        if (s.status !== 'fulfilled') continue;
        const { call, decision } = s.value;
        const key = idKey(call.requestId);
        if (exchange.cancelled.has(key)) {
          // The client gave up on this held call, or was answered "held, call again after approval", before a
          // person decided: it is not run, and the decision is not written to an answer that is already over.
          denied.add(key);
          exchange.complete(call, exchange.answered.has(key) ? { status: 200, end: 'refused', isError: true } : { status: 499, end: 'client_aborted' });
          continue;
        }
        if (decision.outcome === 'allow') {
          exchange.track(call);
          // One POST goes up for a whole batch: its first allowed call's span is the upstream request's parent.
          exchange.upstreamHeaders ??= decision.upstreamHeaders;
          continue;
        }
        denied.add(idKey(call.requestId));
        exchange.refusals.push(toolRefusal(call.requestId, decision.message));
        exchange.complete(call, { status: 200, end: 'refused' });
      }
    }

    // A client that gave up while its call was held for approval is not served: nothing goes upstream.
    if (toolCalls.length > 0 && (res.destroyed || req.socket.destroyed)) {
      // (Calls cancelled or answered "held" were reported above.)
      for (const s of settledCalls) if (s.decision.outcome === 'allow' && !exchange.cancelled.has(idKey(s.call.requestId))) exchange.complete(s.call, { status: 499, end: 'client_aborted' });
      return;
    }
    const forwarded = denied.size === 0 ? messages : messages.filter((m) => !(m.kind === 'request' && denied.has(idKey(m.id))));
    if (forwarded.length === 0) {
      if (exchange.refusals.length === 0 && res.headersSent) return exchange.endHeldStream();
      return answerLocally(res, header(req.headers, 'accept'), batch ? exchange.refusals : (exchange.refusals[0] ?? {}));
    }
    for (const m of forwarded) if (m.kind === 'request' && m.method === 'tools/list') exchange.listIds.add(idKey(m.id));
    // The body goes up as the client wrote it, unless refused calls were taken out of a batch.
    const body = denied.size === 0 ? raw : Buffer.from(JSON.stringify(forwarded.map((m) => ('raw' in m ? m.raw : null))));
    if (streamsBefore.length > 0) await afterStreams(streamsBefore);
    return this.forward(req, res, exchange, body);
  }

  private async decideCall(exchange: Exchange<C>, m: Request, headers: IncomingHttpHeaders, res: ServerResponse): Promise<{ call: McpToolCall<C>; decision: McpDecision }> {
    const { upstream } = exchange;
    const tool = m.params?.name as string;
    let known = this.cache.lookup(upstream.name, tool);
    if (known === null) {
      await this.refresh(upstream, headers, m.params, tool);
      known = this.cache.lookup(upstream.name, tool) ?? { annotations: { ...DEFAULT_ANNOTATIONS }, source: 'unlisted' };
    }
    const call: McpToolCall<C> = {
      caller: exchange.caller,
      server: upstream.name,
      tool,
      arguments: (m.params?.arguments as Record<string, unknown> | undefined) ?? {},
      annotations: { ...known.annotations },
      annotationSource: known.source,
      requestId: m.id,
      sessionId: header(headers, 'mcp-session-id') ?? null,
    };
    const waitingKey = `${call.sessionId ?? ''}\n${idKey(m.id)}`;
    const answerTimer: { timer?: NodeJS.Timeout } = {};
    try {
      return { call, decision: await this.deps.hooks.decide(call, { onHeld: this.onHeldFor(exchange, m, headers, res, waitingKey, answerTimer) }) };
    } finally {
      clearTimeout(answerTimer.timer);
      exchange.held?.settled(m.id);
      if (this.waiting.get(waitingKey) === exchange) this.waiting.delete(waitingKey);
    }
  }

  /**
   * What decideCall hands the decide hook for a call parked for a person: the held stream opened (or joined), the
   * call findable by a cancellation, and for a client that asked for no progress the timer of its answer. Made here,
   * in a plain method, not as a closure in decideCall (see heldStreamEnder).
   */
  private onHeldFor(exchange: Exchange<C>, m: Request, headers: IncomingHttpHeaders, res: ServerResponse, waitingKey: string, answerTimer: { timer?: NodeJS.Timeout }): (hold: McpHold) => void {
    return (hold) => {
      exchange.held ??= HeldStream.open(res, accepts(header(headers, 'accept'), 'text/event-stream'), this.deps.heldKeepAliveMs ?? HELD_KEEP_ALIVE_MS);
      const token = (m.params?._meta as { progressToken?: unknown } | undefined)?.progressToken;
      const progressToken = typeof token === 'string' || typeof token === 'number' ? token : undefined;
      exchange.held?.add(m.id, progressToken, hold);
      exchange.holds.set(idKey(m.id), hold);
      this.waiting.set(waitingKey, exchange);
      // Nothing resets the request timer of a client that asked for no progress (the MCP TypeScript SDK's is 60 s,
      // then the call is lost with "Request timed out"): before it runs out, the call is answered with a result the
      // model can act on, and its retry after the approval runs (held-answer.ts).
      if (progressToken === undefined) {
        answerTimer.timer = setTimeout(() => this.answerHeld(exchange, res, m.id, hold, waitingKey), this.deps.heldAnswerMs ?? HELD_ANSWER_MS);
        answerTimer.timer.unref();
      }
    };
  }

  /**
   * A held call of a client that asked for no progress, still undecided as that client's own timeout nears: it is
   * answered now with an `isError` result naming the entry and saying to call again after approval, and it leaves
   * the entry (it will not run, whatever the decision). The retried identical call attaches to the entry while it
   * is pending, or claims its release once (held-calls registry), and runs.
   */
  private answerHeld(exchange: Exchange<C>, res: ServerResponse, id: JsonRpcId, hold: McpHold, waitingKey: string): void {
    const key = idKey(id);
    if (exchange.cancelled.has(key)) return;
    if (this.waiting.get(waitingKey) === exchange) this.waiting.delete(waitingKey);
    exchange.cancelled.add(key);
    exchange.answered.add(key);
    exchange.held?.settled(id);
    hold.leave?.();
    const answer = toolRefusal(id, heldAnswerText(hold));
    if (res.headersSent) {
      if (!res.writableEnded && !res.destroyed) res.write(sseEvent(answer));
    } else if (exchange.soleMessage) {
      // A client that takes only JSON: the POST carried this call alone, so the call's answer is the POST's.
      send(res, 200, answer);
    } else {
      return;
    }
    if (exchange.cancelled.size === exchange.toolCalls) exchange.endHeldStream();
  }

  /**
   * `notifications/cancelled` for a call still held for a person (the MCP client timed out, or its user
   * stopped it): that call will not be run whatever the decision, and its stream ends now. The notification
   * itself still goes to the upstream, which does not know the request and ignores it. A client that retries
   * the same call later attaches to the same held entry.
   */
  private noteCancellations(messages: readonly Inbound[], headers: IncomingHttpHeaders): void {
    for (const m of messages) {
      if (m.kind !== 'notification' || m.method !== 'notifications/cancelled') continue;
      const requestId = (m.raw as { params?: { requestId?: unknown } }).params?.requestId;
      if (typeof requestId !== 'string' && typeof requestId !== 'number') continue;
      const key = `${header(headers, 'mcp-session-id') ?? ''}\n${idKey(requestId)}`;
      const exchange = this.waiting.get(key);
      if (!exchange) continue;
      this.waiting.delete(key);
      exchange.cancelled.add(idKey(requestId));
      exchange.held?.settled(requestId);
      exchange.holds.get(idKey(requestId))?.leave?.();
      // Every call of that request was cancelled: its stream has nothing more to carry.
      if (exchange.cancelled.size === exchange.toolCalls) exchange.endHeldStream();
    }
  }

  /**
   * A call names a tool the gateway has not seen listed: it asks the upstream's `tools/list` itself, with the
   * client's session and protocol headers, before deciding, so that a client which never listed tools (or
   * listed them before Reins started) is still decided on the server's annotations. Concurrent calls on one
   * session share one listing. If the listing fails, the call is decided with MCP's default annotations and
   * the next call asks again; a tool absent from a complete listing is remembered as unlisted until the
   * server's list changes.
   */
  private async refresh(upstream: Upstream, headers: IncomingHttpHeaders, params: Record<string, unknown> | undefined, tool: string): Promise<void> {
    const key = `${upstream.name}\n${header(headers, 'mcp-session-id') ?? ''}`;
    let listing = this.refreshing.get(key);
    if (!listing) {
      listing = this.listTools(upstream, headers, protocolMeta(params)).finally(() => this.refreshing.delete(key));
      this.refreshing.set(key, listing);
    }
    const tools = await listing;
    if (tools && !tools.some((t) => t.name === tool)) this.cache.markUnlisted(upstream.name, tool);
  }

  private async listTools(upstream: Upstream, clientHeaders: IncomingHttpHeaders, meta: Record<string, unknown> | undefined): Promise<ListedTool[] | null> {
    const transport: IncomingHttpHeaders = {};
    for (const name of ['mcp-session-id', 'mcp-protocol-version', 'user-agent']) {
      const v = header(clientHeaders, name);
      if (v !== undefined) transport[name] = v;
    }
    const headers = {
      ...upstreamHeaders(transport, upstream.headers),
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      'mcp-method': 'tools/list',
    };
    const tools: ListedTool[] = [];
    let cursor: string | undefined;
    try {
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const id = `reins-tools-list-${randomUUID()}`;
        const params = { ...(cursor === undefined ? {} : { cursor }), ...(meta === undefined ? {} : { _meta: meta }) };
        const r = await this.upstreams.pool(upstream.origin).request({
          method: 'POST',
          path: upstream.path,
          headers,
          body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list', params }),
          signal: AbortSignal.timeout(TOOLS_LIST_TIMEOUT_MS),
        });
        const text = await r.body.text();
        if (r.statusCode !== 200) throw new Error(`HTTP ${r.statusCode}: ${text.slice(0, 200)}`);
        const answer = readOutbound(findAnswer(text, mediaKind(r.headers['content-type']), id));
        if (answer.kind !== 'response') throw new Error('no answer to tools/list');
        if (answer.error) throw new Error(`tools/list answered error ${answer.error.code}: ${answer.error.message}`);
        const listed = answer.result ? toolsOf(answer.result) : null;
        if (!listed) throw new Error('the tools/list result has no tools array');
        tools.push(...listed);
        cursor = typeof answer.result?.nextCursor === 'string' ? answer.result.nextCursor : undefined;
        if (cursor === undefined) {
          this.cache.replace(upstream.name, tools);
          return tools;
        }
      }
      throw new Error(`tools/list has more than ${MAX_LIST_PAGES} pages`);
    } catch (err) {
      this.log.warn({ err, server: upstream.name }, 'could not read the MCP server\'s tools/list; deciding with MCP default annotations');
      return null;
    }
  }

  /**
   * Sends the request up and relays the answer (shared/answer-relay.ts), choosing by its status and media type how:
   * byte for byte (a JSON answer read on the side when it carries calls or a listing), event by event (SSE),
   * rewritten whole (refusals merged into a batch's answer, hidden tools taken out), or into the SSE answer a held
   * call began. For a GET, the promise settles when the upstream's headers are in (or it failed): streamOrder's wait.
   */
  private forward(req: IncomingMessage, res: ServerResponse, exchange: Exchange<C>, body: Buffer | undefined): Promise<void> | undefined {
    const { upstream } = exchange;
    const method = (req.method ?? 'GET') as 'GET' | 'POST' | 'DELETE';
    let headersIn: (() => void) | undefined;
    const opened = method === 'GET' ? new Promise<void>((resolve) => (headersIn = resolve)) : undefined;
    // A JSON answer passed byte for byte and read once it is out (null: nothing to read, or over the limit).
    let kept: Buffer[] | null = null;
    let collected: (raw: Buffer, whole: boolean) => void = () => {};
    // A client that hangs up aborts the upstream request (for the 2026-07-28 revision, a closed stream is a cancel).
    const relay = new AnswerRelay(res, {
      answered: (status, headers) => {
        headersIn?.();
        exchange.status = status;
        const kind = mediaKind(headers.get('content-type'));
        if (res.headersSent && !(kind === 'sse' && status < 300)) {
          collected = (raw, whole) => this.relayIntoHeldStream(res, status, raw, whole, kind, exchange);
          return { collect: OBSERVED_JSON_LIMIT };
        }
        if (kind === 'sse') return this.relayEvents(res, status, headers, exchange);
        if (kind === 'json' && exchange.rewrites) {
          collected = (raw) => this.relayRewrittenJson(res, status, headers, raw, exchange);
          return { collect: Number.POSITIVE_INFINITY };
        }
        if (exchange.refusals.length > 0 && status === 202) {
          // Only notifications or responses were left to forward (202, no body): the refusals are the answer.
          collected = () => answerLocally(res, header(req.headers, 'accept'), exchange.refusals);
          return { collect: 0 };
        }
        res.writeHead(status, headers.forClient(true));
        if (kind !== 'json' || !exchange.observes) return { observe: null };
        const chunks: Buffer[] = [];
        kept = chunks;
        let size = 0;
        return {
          observe: (chunk) => {
            size += chunk.length;
            if (size <= OBSERVED_JSON_LIMIT) chunks.push(chunk);
            else kept = null;
          },
        };
      },
      collected: (raw, whole) => collected(raw, whole),
      failed: (err, clientGone) => {
        headersIn?.();
        if (clientGone) return exchange.finish(499, 'client_aborted');
        this.log.warn({ err, server: upstream.name }, 'mcp upstream unreachable');
        exchange.finish(502, 'upstream_unreachable');
        const message = `Bad gateway: Reins could not reach the MCP server "${upstream.name}" at ${upstream.origin}: ${err.message}`;
        if (res.headersSent) return void res.end(heldStreamErrors(exchange, message).map(sseEvent).join(''));
        const onlyCall = exchange.calls.size === 1 ? [...exchange.calls.values()][0]?.call.requestId : undefined;
        sendError(res, 502, onlyCall ?? null, SERVER_ERROR, message);
      },
      ended: (end) => {
        // Once the answer is out: reading it (the call's audit event, a listing's annotations) is not the client's
        // wait. Then the calls no answer reached are ended.
        if (end === 'forwarded' && kept !== null) this.observeJson(Buffer.concat(kept), exchange);
        exchange.finish(exchange.status, end);
      },
    });
    const headers = upstreamHeaders(req.headers, upstream.headers);
    if (exchange.upstreamHeaders) Object.assign(headers, exchange.upstreamHeaders);
    this.upstreams.pool(upstream.origin).dispatch({ method, path: upstream.path, headers, body }, relay);
    return opened;
  }

  private observeJson(raw: Buffer, exchange: Exchange<C>): unknown[] | null {
    try {
      const v = JSON.parse(raw.toString('utf8')) as unknown;
      const messages = Array.isArray(v) ? v : [v];
      for (const m of messages) exchange.observe(m);
      return messages;
    } catch {
      return null;
    }
  }

  /** An SSE answer: events pass as they complete (byte for byte unless `hideTool` filters a listing),
   * after any refusals of the same batch. */
  private relayEvents(res: ServerResponse, status: number, headers: AnswerHeaders, exchange: Exchange<C>): AnswerPlan {
    // A held call's SSE answer began while it waited; the upstream's events continue it.
    if (!res.headersSent) {
      res.writeHead(status, headers.forClient(false));
      res.flushHeaders();
    }
    if (exchange.refusals.length > 0) res.write(exchange.refusals.map(sseEvent).join(''));
    const splitter = new SseSplitter();
    const observe = (event: SseEvent): unknown[] => {
      const messages = parseEventData(event);
      for (const m of messages) exchange.observe(m);
      return messages;
    };
    if (!(this.hidesTools && exchange.listIds.size > 0)) {
      return {
        observe: (chunk) => {
          for (const event of splitter.push(chunk)) observe(event);
        },
      };
    }
    return {
      rewrite: (chunk) => {
        let out = '';
        for (const event of splitter.push(chunk)) {
          const messages = observe(event);
          const rewritten = messages.map((m) => exchange.rewrite(m));
          const changed = rewritten.some((m, i) => m !== messages[i]);
          out += changed ? withData(event, JSON.stringify(rewritten.length === 1 ? rewritten[0] : rewritten)) : event.raw;
        }
        return out;
      },
      rest: () => splitter.end(),
    };
  }

  /**
   * A JSON (or empty, or error) answer to a request whose SSE answer began while a call of it was held: its
   * messages go on as SSE events; an HTTP error becomes a JSON-RPC error for each call it leaves unanswered.
   */
  private relayIntoHeldStream(res: ServerResponse, status: number, raw: Buffer, whole: boolean, kind: 'sse' | 'json' | 'other', exchange: Exchange<C>): void {
    const messages = status < 300 && kind === 'json' && whole ? (this.observeJson(raw, exchange) ?? []) : [];
    const out: object[] = [...exchange.refusals, ...messages.map((m) => exchange.rewrite(m) as object)];
    if (status >= 300) {
      out.push(...heldStreamErrors(exchange, `The MCP server "${exchange.upstream.name}" answered HTTP ${status}: ${raw.subarray(0, 300).toString('utf8')}`));
    }
    res.end(out.map(sseEvent).join(''));
  }

  /** A JSON answer that must change on its way (refusals merged into a batch's answer, hidden tools taken out). */
  private relayRewrittenJson(res: ServerResponse, status: number, headers: AnswerHeaders, raw: Buffer, exchange: Exchange<C>): void {
    let out = raw;
    const messages = this.observeJson(raw, exchange);
    if (messages) {
      const rewritten = [...exchange.refusals, ...messages.map((m) => exchange.rewrite(m))];
      const wasBatch = raw.subarray(0, 64).toString('utf8').trimStart().startsWith('[');
      out = Buffer.from(JSON.stringify(wasBatch || rewritten.length > 1 ? rewritten : rewritten[0]));
    } else if (exchange.refusals.length > 0) {
      this.log.warn({ server: exchange.upstream.name, status }, 'mcp upstream answered a batch with unreadable JSON; refusals in it are lost');
    }
    res.writeHead(status, [...headers.forClient(false), 'content-length', String(out.length)]);
    res.end(out);
  }
}
