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
 * whole batch as one JSON parameter unpacked by the database: the cheapest insert path measured for Reins' writer.
 * Nothing else: no rate limits, budgets, spend, metrics, traces, holds, logs.
 *
 * Run as a child: node --import tsx bench/gateway-overhead/governed-floor.ts <upstream origin> <client key> <postgres url | memory>;
 * prints {"ready":"<url>"}. `memory`: PGlite in memory in this process (the embedded store's CPU is the process's, as
 * Reins' worker thread's is).
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { Pool } from 'undici';
import { checkpointWhenWalGrows } from '../../src/store/pglite-checkpoints.js';
import { installDiagnostics } from './diagnostics.js';
import { passThrough } from './pass-through.js';
import { UPSTREAM_KEY } from './payloads.js';
import { announceReady, endWithRunner } from './server-child.js';

if (process.env.BENCH_DIAGNOSE === '1') installDiagnostics();

const [upstream, clientKey, store] = process.argv.slice(2);
if (!upstream || !clientKey || !store) throw new Error('usage: governed-floor.ts <upstream origin> <client key> <postgres url | memory>');

interface Db {
  query(sql: string, params?: unknown[]): Promise<unknown>;
  close(): Promise<void>;
}

async function openStore(where: string): Promise<Db> {
  if (where === 'memory') {
    const { PGlite } = await import('@electric-sql/pglite');
    const db = new PGlite();
    // Checkpoints as Reins' embedded store takes them (src/store/pglite-checkpoints.ts): without them every WAL
    // segment is a new file zero-filled in memory, and the floor would pay for work Reins no longer does.
    const stop = checkpointWhenWalGrows(db);
    return { query: (sql, params) => db.query(sql, params), close: () => (stop(), db.close()) };
  }
  const pg = (await import('pg')).default;
  const pool = new pg.Pool({ connectionString: where, max: 4 });
  return { query: (sql, params) => pool.query(sql, params), close: () => pool.end() };
}

const db = await openStore(store);
await db.query(`CREATE TABLE IF NOT EXISTS floor_audit (
  id uuid PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), action text NOT NULL, actor text NOT NULL, data jsonb NOT NULL)`);

/** The audit queue: rows are [id, action, actor, data]. */
let queue: unknown[][] = [];
let timer: NodeJS.Timeout | null = null;
let flushing = false;

function audit(action: string, actor: string, data: unknown): void {
  queue.push([randomUUID(), action, actor, data]);
  if (queue.length >= 200 && !flushing) void flush();
  else timer ??= setTimeout(() => void flush(), 20);
}

async function flush(): Promise<void> {
  if (timer) clearTimeout(timer);
  timer = null;
  if (flushing || queue.length === 0) return;
  flushing = true;
  const batch = queue;
  queue = [];
  try {
    await db.query(
      `INSERT INTO floor_audit (id, action, actor, data)
       SELECT (e->>0)::uuid, e->>1, e->>2, e->3 FROM jsonb_array_elements($1::jsonb) AS t(e)`,
      [JSON.stringify(batch)],
    );
  } finally {
    flushing = false;
    if (queue.length > 0) timer ??= setTimeout(() => void flush(), 0);
  }
}

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

function refuse(res: import('node:http').ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ error: { message } });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/__audited') {
    // The runner's check that the floor did its work: the audit rows it wrote, after writing what is queued.
    void flush()
      .then(() => db.query('SELECT count(*)::int AS n FROM floor_audit'))
      .then((r) => {
        const n = (r as { rows: { n: number }[] }).rows[0]!.n;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ rows: n }));
      });
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const started = performance.now();
    const raw = Buffer.concat(chunks);
    const auth = req.headers.authorization;
    const caller = auth?.startsWith('Bearer ') ? callers.get(sha256(auth.slice(7))) : undefined;
    if (!caller) return refuse(res, 401, 'unknown key');
    let body: { model?: unknown; max_tokens?: unknown; stream?: unknown };
    try {
      body = JSON.parse(raw.toString('utf8')) as typeof body;
    } catch {
      return refuse(res, 400, 'the body is not JSON');
    }
    const model = typeof body.model === 'string' ? body.model : '';
    const key = `${caller}\u0000${model}\u0000${String(body.max_tokens)}\u0000${body.stream === true}`;
    let allowed = decisions.get(key);
    if (allowed === undefined) decisions.set(key, (allowed = model !== ''));
    audit('llm.request', caller, { model, allowed });
    if (!allowed) return refuse(res, 403, 'refused');
    const seen: Buffer[] = [];
    passThrough(pool, { method: 'POST', path: req.url ?? '/', headers: forwardable(req.headers), body: raw }, res, NOT_BACK, {
      chunk: (c) => seen.push(c),
      ended: (status) => {
        let usage: unknown = null;
        try {
          usage = (JSON.parse(Buffer.concat(seen).toString('utf8')) as { usage?: unknown }).usage ?? null;
        } catch {
          // not JSON: no usage
        }
        audit('llm.request_end', caller, { status, durationMs: performance.now() - started, usage });
      },
      failed: (err) => {
        audit('llm.request_end', caller, { status: 502, error: err.message });
        refuse(res, 502, err.message);
      },
    });
  });
});
server.keepAliveTimeout = 60_000; // as the bare proxy
server.headersTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  announceReady(`http://127.0.0.1:${addr.port}`);
});
endWithRunner(async () => {
  server.close();
  await flush();
  await db.close();
});
