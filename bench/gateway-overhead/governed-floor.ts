/**
 * The governed floor: the bare proxy plus only the work that any gateway which governs and audits every call must do
 * per call, each step done the cheapest way this bench knows. It is what the ratio targets are restated against
 * (README.md, "Why the floor"): no product can govern for less, so 1.15x the bare proxy is out of reach when this
 * floor alone costs more than that.
 *
 * Per call:
 *  1. read the whole request body and parse its JSON (the model, max_tokens and stream are what a policy decides on);
 *  2. authenticate: SHA-256 of the presented key, looked up in a Map (a credential cache; nothing is read per call);
 *  3. decide: one Map lookup keyed by the decision's inputs (a memoised decision: no policy is evaluated per call);
 *  4. audit the decision before forwarding: one row queued for a batched insert;
 *  5. forward over a keep-alive undici Pool with the client's key swapped for the provider's, relay the answer back
 *     (undici's dispatch, as Reins and the bare proxy: pass-through.ts);
 *  6. meter: keep the answer's bytes as they pass and parse its JSON for `usage` at the end;
 *  7. audit the end (status, duration, tokens): a second row.
 * The audit rows go to the store in batches (at most 200 rows or 20 ms apart), one multi-row INSERT per batch, the
 * whole batch as one JSON parameter unpacked by the database: the cheapest insert path measured for Reins' writer
 * (floor-audit.ts, shared with the egress floor of bench/planes-overhead).
 * At most 20,000 rows wait; past that a call waits for room before it is admitted, as in Reins, so the floor keeps
 * up with its own audit log instead of leaving the writes for after the measurement.
 * Nothing else: no rate limits, budgets, spend, metrics, traces, holds, logs.
 *
 * Where the rows go (the fourth argument):
 *  - `own` (the floor): a table of its own with a primary key only, the cheapest place to keep them;
 *  - `search` (the search floor): Reins' own audit table, made by Reins' migrations (on PostgreSQL its day
 *    partitions and fourteen secondary indexes, on the embedded store six: docs/audit.md), each row in Reins' columns
 *    with a call id joining the decision and the end. Those indexes are what the audit search (by time, type, action,
 *    actor, subject, call id) reads; a gateway whose audit log can be searched at a fleet's volume keeps them up on
 *    every write, so this floor is the least such a gateway can do (README.md, "Why the floor").
 *
 * Run as a child: node --import tsx bench/gateway-overhead/governed-floor.ts <upstream origin> <client key> <postgres url | memory> [own | search] [llm | mcp];
 * prints {"ready":"<url>"}. `memory`: PGlite in memory in this process (the embedded store's CPU is the process's, as
 * Reins' worker thread's is). `mcp`: the same work for a JSON-RPC call to an MCP server (the method and tool's name
 * decided on, the answer's result.isError kept), rows of type `mcp`: bench/planes-overhead's audited MCP floor.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { Pool } from 'undici';
import { installDiagnostics } from './diagnostics.js';
import { openFloorAudit } from './floor-audit.js';
import { passThrough } from './pass-through.js';
import { UPSTREAM_KEY } from './payloads.js';
import { announceReady, endWithRunner } from './server-child.js';

if (process.env.BENCH_DIAGNOSE === '1') installDiagnostics();

const [upstream, clientKey, store, table = 'own', planeName = 'llm'] = process.argv.slice(2);
if (!upstream || !clientKey || !store || (table !== 'own' && table !== 'search') || (planeName !== 'llm' && planeName !== 'mcp')) {
  throw new Error('usage: governed-floor.ts <upstream origin> <client key> <postgres url | memory> [own | search] [llm | mcp]');
}
const search = table === 'search';

/**
 * What a policy of the plane decides on, read from the call's JSON body, and what the end row keeps of the answer.
 * `llm`: an OpenAI chat completion (the model, max_tokens, stream; the answer's usage). `mcp`: a JSON-RPC request to an
 * MCP server (the method and the tool's name; the answer's result.isError), bench/planes-overhead's audited MCP floor.
 */
interface FloorPlane {
  type: string;
  action: string;
  decide(body: Record<string, unknown>, caller: string): { key: string; facts: Record<string, unknown>; allowed: boolean };
  endFacts(answer: Record<string, unknown>): Record<string, unknown>;
}
const PLANES: Record<'llm' | 'mcp', FloorPlane> = {
  llm: {
    type: 'llm',
    action: 'llm.request',
    decide(body, caller) {
      const model = typeof body.model === 'string' ? body.model : '';
      return { key: `${caller}\u0000${model}\u0000${String(body.max_tokens)}\u0000${body.stream === true}`, facts: { model }, allowed: model !== '' };
    },
    endFacts: (answer) => ({ usage: answer.usage ?? null }),
  },
  mcp: {
    type: 'mcp',
    action: 'mcp.tool_call',
    decide(body, caller) {
      const method = typeof body.method === 'string' ? body.method : '';
      const params = body.params as { name?: unknown } | undefined;
      const tool = typeof params?.name === 'string' ? params.name : null;
      return { key: `${caller}\u0000${method}\u0000${String(tool)}`, facts: { method, tool }, allowed: method !== '' };
    },
    endFacts: (answer) => ({ isError: (answer.result as { isError?: unknown } | undefined)?.isError ?? null }),
  },
};
const plane = PLANES[planeName];

const floor = await openFloorAudit(store, table);
/** The rows of a call, made with the agent's own key (no host: only egress events carry one). */
const audit = (action: string, actor: string, data: unknown) => floor.audit({ type: plane.type, action, actor, data });

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
/** The credential cache: the key's hash to the caller it names. */
const callers = new Map([[sha256(clientKey), 'bench/agent']]);
/** Memoised decisions: the decision's inputs to allow (true) or deny. */
const decisions = new Map<string, boolean>();

const pool = new Pool(upstream, { connections: 128, keepAliveTimeout: 30_000 });
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'authorization', 'content-length']);
/** The answer's headers not passed back; its content-length is (the body passes byte for byte). */
const NOT_BACK = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

function forwardable(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  out.authorization = `Bearer ${UPSTREAM_KEY}`;
  return out;
}

function refuse(res: ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ error: { message } });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/__audited') {
    // The runner's check that the floor did its work: the audit rows it wrote, after writing what is queued.
    void floor.count().then((n) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ rows: n }));
    });
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const wait = floor.room();
    if (wait) void wait.then(() => admit(req, res, chunks));
    else admit(req, res, chunks);
  });
});

/** One call, once its audit rows have room: authenticate, decide, audit, forward, meter, audit its end. */
function admit(req: IncomingMessage, res: ServerResponse, chunks: Buffer[]): void {
  const started = performance.now();
  const raw = Buffer.concat(chunks);
  const auth = req.headers.authorization;
  const caller = auth?.startsWith('Bearer ') ? callers.get(sha256(auth.slice(7))) : undefined;
  if (!caller) return refuse(res, 401, 'unknown key');
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(raw.toString('utf8')) as typeof body;
  } catch {
    return refuse(res, 400, 'the body is not JSON');
  }
  if (body === null || typeof body !== 'object') return refuse(res, 400, 'the body is not a JSON object');
  const inputs = plane.decide(body, caller);
  let allowed = decisions.get(inputs.key);
  if (allowed === undefined) decisions.set(inputs.key, (allowed = inputs.allowed));
  // The search floor's rows carry the call id the audit search joins a call's two events by (Reins' `callId`).
  const callId = search ? randomUUID() : undefined;
  audit(plane.action, caller, Object.assign({ callId, allowed }, inputs.facts));
  if (!allowed) return refuse(res, 403, 'refused');
  const seen: Buffer[] = [];
  passThrough(pool, { method: 'POST', path: req.url ?? '/', headers: forwardable(req.headers), body: raw }, res, NOT_BACK, {
    chunk: (c) => seen.push(c),
    ended: (status) => {
      let facts: Record<string, unknown> = {};
      try {
        const answer = JSON.parse(Buffer.concat(seen).toString('utf8')) as unknown;
        if (answer !== null && typeof answer === 'object') facts = plane.endFacts(answer as Record<string, unknown>);
      } catch {
        // not JSON (an MCP notification's empty 202): nothing to keep of it
      }
      audit(`${plane.action}_end`, caller, Object.assign({ callId, status, durationMs: performance.now() - started }, facts));
    },
    failed: (err) => {
      audit(`${plane.action}_end`, caller, { callId, status: 502, error: err.message });
      refuse(res, 502, err.message);
    },
  });
}
server.keepAliveTimeout = 60_000; // as the bare proxy
server.headersTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  announceReady(`http://127.0.0.1:${addr.port}`);
});
endWithRunner(async () => {
  server.close();
  await floor.close();
});
