/**
 * bench/held-calls: park N calls (50,000; --quick 1,000) on replica A, release them all from replica B, and measure
 * A's resident memory with everything parked and the latency from B's approve answer to A's answer to the parked
 * call arriving at the client.
 *
 *   node --import tsx bench/held-calls/run.ts [--quick] [--n N] [--concurrency C] [--out DIR] [--no-build] [--http2]
 *
 * README.md beside this file says what is measured and how to read it. The process model (each server a child
 * process), the replica launcher, the fake upstream and the fresh PostgreSQL database are bench/gateway-overhead's,
 * reused as they are.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { type ClientHttp2Session, connect as connectHttp2 } from 'node:http2';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Pool } from 'undici';
import { createBenchDatabase } from '../gateway-overhead/bench-database.js';
import { type LatencySummary, summarize } from '../gateway-overhead/load.js';
import { COMPLETION_BODY } from '../gateway-overhead/payloads.js';
import { type Child, delay, machineSpeedMs, processCpuMs, REINS_NODE_FLAGS, startServer } from '../gateway-overhead/processes.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../..');
const TSX = ['--import', 'tsx'];

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    n: { type: 'string' },
    concurrency: { type: 'string', default: '20' },
    out: { type: 'string' },
    'no-build': { type: 'boolean', default: false },
    http2: { type: 'boolean', default: false },
    timeline: { type: 'boolean', default: false },
  },
});
const positive = (name: string, s: string): number => {
  if (!/^[1-9]\d*$/.test(s)) throw new Error(`--${name}: a whole number from 1, got "${s}"`);
  return Number(s);
};
const N = args.n !== undefined ? positive('n', args.n) : args.quick ? 1_000 : 50_000;
const CONCURRENCY = positive('concurrency', args.concurrency!);
/** Issue targets: 50,000 calls parked on one replica under 1 GB resident, release p99 under 200 ms. */
const TARGET_RSS_MB = 1024;
const TARGET_P99_MS = 200;
const TARGET_AT_N = 50_000;
/**
 * Parked calls per HTTP/2 connection. A process here may hold 20,000 open files (`ulimit -n`, hard limit too), so
 * 50,000 calls cannot each have a TCP connection: when N does not fit, they are streams of HTTP/2 connections
 * (h2c by prior knowledge, which Reins' gateway port serves beside HTTP/1.1), this many per connection (100, the limit most servers advertise: at 200, Node refused some of a burst of new streams with REFUSED_STREAM).
 */
const STREAMS_PER_SESSION = 100;

const AGENT = 'bench/held-agent';
// A window of an hour: parking and releasing 50,000 on a loaded machine takes longer than the 300 s default, and a
// call that times out before its approval is not a release the bench can time.
const POLICY = { name: 'hold-all', kind: 'approve', appliesTo: ['llm'], match: "object.llm.model == 'gpt-4o'", message: 'bench', approvalWindowSeconds: 3600 };

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** A distinct prompt per call, so none attaches to another's entry; the index comes back in the prompt excerpt. */
function body(tag: string): string {
  return JSON.stringify({
    model: 'gpt-4o',
    messages: [
      { role: 'system', content: 'You are a helpful assistant. Answer in one short sentence.' },
      { role: 'user', content: `${tag} What is the capital of France?` },
    ],
    max_tokens: 64,
    temperature: 0,
  });
}
const TAG = (i: number) => `[held ${i}]`;
const TAG_RE = /^\[held (\d+)\]/;

/** VmRSS and VmHWM (peak) of a process, in MB. */
function memoryMb(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

/** The soft limit on open files of a process (what `ulimit -n` shows for it). */
function openFiles(pid: number): number {
  const m = /^Max open files\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

async function api(base: string, token: string, method: string, path: string, payload?: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
  });
  return { status: res.status, text: await res.text() };
}

function must(what: string, r: { status: number; text: string }, ok: number[] = [200, 201]): string {
  if (!ok.includes(r.status)) throw new Error(`${what} answered ${r.status}: ${r.text.slice(0, 300)}`);
  return r.text;
}

interface Parked {
  /** performance.now() when A's whole answer had arrived; NaN while pending. */
  answeredAt: number;
  status: number;
  ok: boolean;
  error: string | null;
}

function round(v: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

function roundSummary(s: LatencySummary | null): LatencySummary | null {
  if (!s) return null;
  return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, k === 'count' ? v : round(v, 2)])) as unknown as LatencySummary;
}

async function main(): Promise<void> {
  const started = Date.now();
  const loadAtStart = os.loadavg();
  const speedMs = machineSpeedMs();
  const ulimitSoft = openFiles(process.pid);
  const admin = `bench-admin-${randomBytes(12).toString('hex')}`;
  const warnings: string[] = [];
  // Over HTTP/1.1 every parked call holds a socket in this process and one in replica A (both inherit this limit);
  // past it, the calls go as HTTP/2 streams, STREAMS_PER_SESSION to a connection.
  const http2 = args.http2 || N > ulimitSoft - 1_000;
  const connections = http2 ? Math.ceil(N / STREAMS_PER_SESSION) : N;
  log(`held-calls: N=${N}, ${connections} client ${http2 ? `HTTP/2 connections (${STREAMS_PER_SESSION} streams each)` : 'HTTP/1.1 connections'} to A, release concurrency ${CONCURRENCY}, ulimit -n ${ulimitSoft}`);

  if (!args['no-build']) {
    log('building Reins (tsc -p tsconfig.build.json)…');
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });
  }

  const children: Child[] = [];
  const database = await createBenchDatabase();
  const dbClient = new pg.Client({ connectionString: database.url });
  let clientPool: Pool | null = null;
  const sessions: ClientHttp2Session[] = [];
  let releasePool: Pool | null = null;
  try {
    const upstream = await startServer('fake-upstream', [...TSX, join(ROOT, 'bench/gateway-overhead/fake-upstream.ts')]);
    children.push(upstream.child);
    // B first: it migrates the fresh database; then A joins it.
    const server = join(ROOT, 'bench/gateway-overhead/reins-server.ts');
    const b = await startServer('reins-B', [...REINS_NODE_FLAGS, ...TSX, server, upstream.url, admin, database.url]);
    children.push(b.child);
    /** A's GC pauses since its start, as memory-probe.ts counts them. */
    type GcCounts = { count: number; totalMs: number; longestMs: number; over50: number; over200: number; majorCount: number; majorMs: number };
    let lastGc: GcCounts | null = null;
    let onMem: (m: NodeJS.MemoryUsage) => void = () => {};
    const a = await startServer('reins-A', [...REINS_NODE_FLAGS, ...TSX, '--import', join(HERE, 'memory-probe.ts'), server, upstream.url, admin, database.url], {
      onLine: (line) => {
        if (line.startsWith('{"mem":')) {
          const probe = JSON.parse(line) as { mem: NodeJS.MemoryUsage; gc?: GcCounts };
          lastGc = probe.gc ?? null;
          onMem(probe.mem);
        }
      },
    });
    /** A's own view of its memory (V8 heap, external, array buffers), in MB. */
    const heapOfA = async (): Promise<Record<string, number> | null> => {
      const got = new Promise<NodeJS.MemoryUsage>((resolve) => {
        onMem = resolve;
      });
      a.child.proc.kill('SIGUSR2');
      const m = await Promise.race([got, delay(2_000).then(() => null)]);
      return m && Object.fromEntries(Object.entries(m).map(([k, v]) => [k, round(v / 2 ** 20, 1)]));
    };
    children.push(a.child);
    log(`upstream ${upstream.url}; replica A ${a.url} (pid ${a.child.pid}); replica B ${b.url} (pid ${b.child.pid})`);
    await dbClient.connect();

    // 1. Set-up through B's API.
    must('POST /api/v1/identities', await api(b.url, admin, 'POST', '/api/v1/identities', { id: AGENT, kind: 'agent' }));
    must('PUT autonomy-tier', await api(b.url, admin, 'PUT', `/api/v1/identities/autonomy-tier?id=${encodeURIComponent(AGENT)}`, { tier: 'T3' }), [200]);
    const agentKey = (JSON.parse(must('POST /api/v1/tokens', await api(b.url, admin, 'POST', '/api/v1/tokens', { identityId: AGENT, name: 'held-bench' }))) as { token: string }).token;
    must('POST /api/v1/policies', await api(b.url, admin, 'POST', '/api/v1/policies', POLICY));

    clientPool = new Pool(a.url, { connections: http2 ? 1 : connections, pipelining: 1, headersTimeout: 0, bodyTimeout: 0, connectTimeout: 60_000, keepAliveTimeout: 600_000 });
    releasePool = new Pool(b.url, { connections: CONCURRENCY, pipelining: 1 });
    const pool = clientPool;
    const headers = { authorization: `Bearer ${agentKey}`, 'content-type': 'application/json' };
    const callA = async (tag: string): Promise<{ status: number; text: string; at: number }> => {
      const res = await pool.request({ path: '/llm/openai/v1/chat/completions', method: 'POST', headers, body: body(tag) });
      const text = await res.body.text();
      return { status: res.statusCode, text, at: performance.now() };
    };
    /** A parked call as a stream of an HTTP/2 connection: the i-th call goes on connection i / STREAMS_PER_SESSION. */
    const callA2 = (i: number, tag: string): Promise<{ status: number; text: string; at: number }> => {
      const k = Math.floor(i / STREAMS_PER_SESSION);
      const session = (sessions[k] ??= connectHttp2(a.url).on('error', () => undefined));
      return new Promise((resolve, reject) => {
        const req = session.request({ ':method': 'POST', ':path': '/llm/openai/v1/chat/completions', ...headers });
        let status = 0;
        let text = '';
        req.setEncoding('utf8');
        req.on('response', (h) => (status = Number(h[':status'])));
        req.on('data', (chunk: string) => (text += chunk));
        req.on('end', () => resolve({ status, text, at: performance.now() }));
        req.on('error', reject);
        req.end(body(tag));
      });
    };
    const pendingCount = async (): Promise<number> => Number((await dbClient.query<{ n: string }>(`SELECT count(*) AS n FROM held_calls WHERE state = 'pending'`)).rows[0]!.n);
    const approve = async (id: string): Promise<{ status: number; text: string; at: number }> => {
      const res = await releasePool!.request({ path: `/api/v1/held-calls/${encodeURIComponent(id)}/approve`, method: 'POST', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: '{}' });
      const text = await res.body.text();
      return { status: res.statusCode, text, at: performance.now() };
    };

    // Wait until A applies the policy: a probe call on A parks (then B releases it) instead of passing through.
    const probeDeadline = Date.now() + 30_000;
    let probes = 0;
    for (;;) {
      probes++;
      const probe = callA(`[probe ${probes}]`);
      const early = await Promise.race([probe, delay(1_500).then(() => null)]);
      if (early === null && (await pendingCount()) === 1) {
        const id = (await dbClient.query<{ id: string }>(`SELECT id FROM held_calls WHERE state = 'pending'`)).rows[0]!.id;
        must('probe approve', await approve(id), [200]);
        const answered = await probe;
        if (answered.status !== 200) throw new Error(`the released probe answered ${answered.status}: ${answered.text.slice(0, 300)}`);
        break;
      }
      if (early === null) throw new Error('the probe call neither answered nor parked within 1.5 s');
      if (early.status !== 200) throw new Error(`probe answered ${early.status}: ${early.text.slice(0, 300)}`);
      if (Date.now() > probeDeadline) throw new Error('replica A did not apply the approve policy within 30 s');
      await delay(200);
    }
    log(`replica A holds calls (after ${probes} probe${probes === 1 ? '' : 's'})`);

    await delay(1_000);
    const rssBefore = memoryMb(a.child.pid);
    const heapBefore = await heapOfA();
    const cpuBeforeA = processCpuMs(a.child.pid);

    // 2. Park N distinct calls on A, all in flight at once.
    const parked: Parked[] = Array.from({ length: N }, () => ({ answeredAt: NaN, status: 0, ok: false, error: null }));
    const parkStart = performance.now();
    const calls = parked.map((p, i) =>
      (http2 ? callA2(i, TAG(i)) : callA(TAG(i))).then(
        (r) => {
          p.answeredAt = r.at;
          p.status = r.status;
          p.ok = r.status === 200 && r.text === COMPLETION_BODY;
          if (!p.ok) p.error = `status ${r.status}: ${r.text.slice(0, 200)}`;
        },
        (err: Error) => {
          p.answeredAt = performance.now();
          p.error = `${err.name}: ${err.message}`;
        },
      ),
    );

    // 3. Until the shared store shows all N pending.
    let pending = 0;
    const parkLimitS = Math.max(120, N / 100); // a loaded machine parks a few hundred calls a second
    const parkDeadline = performance.now() + parkLimitS * 1000;
    let peakDuringPark = rssBefore;
    // A call answered before any release is a failure of the run (reported, and the release target fails with it),
    // not a reason to stop measuring the others.
    const answeredEarly = () => parked.filter((p) => !Number.isNaN(p.answeredAt));
    while ((pending = await pendingCount()) + answeredEarly().length < N) {
      if (performance.now() > parkDeadline) throw new Error(`only ${pending} of ${N} calls pending after ${parkLimitS} s`);
      const m = memoryMb(a.child.pid);
      if (m.rss > peakDuringPark.rss) peakDuringPark = m;
      await delay(100);
    }
    const parkMs = performance.now() - parkStart;
    log(`${N} calls pending in ${(parkMs / 1000).toFixed(2)} s`);

    // 4. A's memory with all N parked, once it has settled (two heartbeats of the registry, 5 s each, included).
    const parkedSamples: number[] = [];
    for (let i = 0; i < 10; i++) {
      await delay(1_000);
      parkedSamples.push(memoryMb(a.child.pid).rss);
    }
    const rssParked = memoryMb(a.child.pid);
    const heapParked = await heapOfA();
    const gcParked = lastGc as GcCounts | null;
    const cpuParkedA = processCpuMs(a.child.pid);
    const stillPending = await pendingCount();
    const earlyCalls = answeredEarly();
    const early = earlyCalls.length;
    if (stillPending + early !== N) throw new Error(`before release: ${early} calls answered, ${stillPending} pending of ${N}`);
    if (early > 0) warnings.push(`${early} calls were answered before any release, e.g. ${earlyCalls[0]!.error ?? `status ${earlyCalls[0]!.status}`}`);
    log(`A: RSS ${rssBefore.rss.toFixed(1)} MB before, ${rssParked.rss.toFixed(1)} MB with ${N} parked (peak so far ${rssParked.hwm.toFixed(1)} MB)`);

    // 5. Release all N from B.
    const rows = (await dbClient.query<{ id: string; prompt_excerpt: string | null }>(`SELECT id, prompt_excerpt FROM held_calls WHERE state = 'pending'`)).rows;
    const byIndex: string[] = [];
    for (const r of rows) {
      const m = TAG_RE.exec(r.prompt_excerpt ?? '');
      if (!m) throw new Error(`a pending entry without the bench's tag: ${r.id} ${JSON.stringify(r.prompt_excerpt)}`);
      byIndex[Number(m[1])] = r.id;
    }
    if (byIndex.filter(Boolean).length !== N - early) throw new Error(`${rows.length} pending entries do not map one to one onto the ${N - early} calls still parked`);

    const approveMs = new Float64Array(N);
    const approvedAt = new Float64Array(N).fill(NaN);
    const sentAt = new Float64Array(N).fill(NaN);
    const approveErrors: string[] = [];
    let next = 0;
    const releaseStart = performance.now();
    let rssPeakRelease = rssParked.rss;
    const sampler = setInterval(() => {
      const m = memoryMb(a.child.pid).rss;
      if (m > rssPeakRelease) rssPeakRelease = m;
    }, 100);
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < N) {
          const i = next++;
          if (byIndex[i] === undefined) continue; // answered before release: nothing to approve
          const t0 = performance.now();
          sentAt[i] = t0;
          const r = await approve(byIndex[i]!).catch((err: Error) => ({ status: 0, text: err.message, at: performance.now() }));
          approveMs[i] = r.at - t0;
          if (r.status === 200) approvedAt[i] = r.at;
          else approveErrors.push(`${byIndex[i]}: ${r.status} ${r.text.slice(0, 200)}`);
        }
      }),
    );
    const approvalsDone = performance.now();
    const allAnswered = Promise.all(calls);
    const answerDeadline = await Promise.race([allAnswered.then(() => true), delay(60_000).then(() => false)]);
    clearInterval(sampler);
    const releaseEnd = Math.max(...parked.map((p) => (Number.isNaN(p.answeredAt) ? 0 : p.answeredAt)));
    const rssAfter = memoryMb(a.child.pid);
    const cpuAfterA = processCpuMs(a.child.pid);
    await heapOfA();
    const gcAfter = lastGc as GcCounts | null;
    // A's collector during the release: its main-thread pauses between the two probes.
    const gcRelease =
      gcParked && gcAfter
        ? {
            pauses: gcAfter.count - gcParked.count,
            totalMs: round(gcAfter.totalMs - gcParked.totalMs, 1),
            longestMs: round(gcAfter.longestMs, 1),
            over50: gcAfter.over50 - gcParked.over50,
            over200: gcAfter.over200 - gcParked.over200,
            major: gcAfter.majorCount - gcParked.majorCount,
            majorMs: round(gcAfter.majorMs - gcParked.majorMs, 1),
          }
        : null;

    const latencies: number[] = [];
    const fromSent: number[] = [];
    let negative = 0;
    for (let i = 0; i < N; i++) {
      const p = parked[i]!;
      if (!p.ok || Number.isNaN(approvedAt[i]!)) continue;
      const l = p.answeredAt - approvedAt[i]!;
      if (l < 0) negative++;
      latencies.push(l);
      fromSent.push(p.answeredAt - sentAt[i]!);
    }
    const failed = parked.filter((p) => !p.ok);
    const unanswered = parked.filter((p) => Number.isNaN(p.answeredAt)).length;
    if (!answerDeadline) warnings.push(`${unanswered} parked calls not answered within 60 s after the last approval`);
    if (failed.length > 0) warnings.push(`${failed.length} parked calls did not come back with the upstream's completion, e.g. ${failed[0]!.error ?? 'unanswered'}`);
    if (approveErrors.length > 0) warnings.push(`${approveErrors.length} approvals failed, e.g. ${approveErrors[0]}`);
    const upstreamCount = (await (await fetch(`${upstream.url}/__count`)).json()) as { served: number; refused: number };
    if (upstreamCount.served !== N - early + 1) warnings.push(`the upstream served ${upstreamCount.served} completions, expected ${N - early + 1} (the calls released and the probe)`);
    const states = (await dbClient.query<{ state: string; n: string }>(`SELECT state, count(*) AS n FROM held_calls GROUP BY state ORDER BY state`)).rows.map((r) => ({ state: r.state, count: Number(r.n) }));

    const latency = roundSummary(summarize(latencies));
    const approveLatency = roundSummary(summarize(approveMs));
    const sentLatency = roundSummary(summarize(fromSent));
    const releaseSeconds = (releaseEnd - releaseStart) / 1000;
    const throughput = latencies.length / releaseSeconds;

    // 6. Report.
    const checks =
      N >= TARGET_AT_N
        ? [
            { name: `A's RSS with ${N} calls parked < ${TARGET_RSS_MB} MB`, value: `${rssParked.rss.toFixed(1)} MB`, pass: rssParked.rss < TARGET_RSS_MB },
            { name: `release latency p99 < ${TARGET_P99_MS} ms`, value: `${latency?.p99 ?? 'n/a'} ms`, pass: latency !== null && latency.p99 < TARGET_P99_MS && failed.length === 0 },
          ]
        : [];
    const table = [
      ['calls parked on A (distinct prompts)', `${N}`],
      ['client connections to A (all calls in flight)', http2 ? `${connections} HTTP/2 (${STREAMS_PER_SESSION} streams each)` : `${connections} HTTP/1.1`],
      ['time until all pending (s)', (parkMs / 1000).toFixed(2)],
      ["A's RSS before parking (MB)", rssBefore.rss.toFixed(1)],
      [`A's RSS with ${N} parked (MB)`, `${rssParked.rss.toFixed(1)} (over 10 s: ${Math.min(...parkedSamples).toFixed(1)}–${Math.max(...parkedSamples).toFixed(1)})`],
      ['  per parked call (KB)', (((rssParked.rss - rssBefore.rss) * 1024) / N).toFixed(1)],
      ["A's RSS peak while parking / releasing / after (MB)", `${peakDuringPark.rss.toFixed(1)} / ${rssPeakRelease.toFixed(1)} / ${rssAfter.rss.toFixed(1)} (VmHWM ${rssAfter.hwm.toFixed(1)})`],
      [
        "A's V8 heap used / total, external before → parked (MB)",
        heapBefore && heapParked
          ? `${heapBefore.heapUsed} / ${heapBefore.heapTotal}, ${heapBefore.external} → ${heapParked.heapUsed} / ${heapParked.heapTotal}, ${heapParked.external}`
          : 'n/a',
      ],
      ['release concurrency on B', `${CONCURRENCY}`],
      ["release latency (B's 200 → A's answer) p50 / p90 / p99 / max (ms)", latency ? `${latency.p50} / ${latency.p90} / ${latency.p99} / ${latency.max}` : 'n/a'],
      ["approve sent to B → A's answer p50 / p90 / p99 / max (ms)", sentLatency ? `${sentLatency.p50} / ${sentLatency.p90} / ${sentLatency.p99} / ${sentLatency.max}` : 'n/a'],
      ['approve request on B p50 / p99 (ms)', approveLatency ? `${approveLatency.p50} / ${approveLatency.p99}` : 'n/a'],
      ['release throughput (calls/s, first approve → last answer)', throughput.toFixed(0)],
      ['approvals done / last answer after (s)', `${((approvalsDone - releaseStart) / 1000).toFixed(2)} / ${releaseSeconds.toFixed(2)}`],
      ["A's CPU while parked 10 s / during release (ms)", `${cpuParkedA - cpuBeforeA} (incl. parking) / ${cpuAfterA - cpuParkedA}`],
      [
        "A's GC pauses during release: count, total ms (mark-compact: count, ms), over 50 / 200 ms, longest since start (ms)",
        gcRelease
          ? `${gcRelease.pauses}, ${gcRelease.totalMs} (${gcRelease.major}, ${gcRelease.majorMs}), ${gcRelease.over50} / ${gcRelease.over200}, ${gcRelease.longestMs}`
          : 'n/a',
      ],
      ['failed calls / failed approvals', `${failed.length} / ${approveErrors.length}`],
    ];
    const width = Math.max(...table.map((r) => r[0]!.length));
    const consoleText = table.map(([k, v]) => `${k!.padEnd(width)}  ${v}`).join('\n');
    process.stdout.write(`\n${consoleText}\n\n`);
    for (const c of checks) process.stdout.write(`${c.pass ? 'PASS' : 'FAIL'}  ${c.name}: ${c.value}\n`);
    if (checks.length === 0) process.stdout.write(`(targets are checked at N=${TARGET_AT_N}; this run has N=${N})\n`);
    const notes: string[] = [];
    if (negative > 0) notes.push(`${negative} of ${latencies.length} calls were answered by A before B's 200 reached the client (A woke from the NOTIFY while B was still answering); their release latency is counted as negative, not dropped`);
    for (const n of notes) process.stdout.write(`note: ${n}\n`);
    for (const w of warnings) process.stdout.write(`warning: ${w}\n`);

    const outDir = args.out ? resolve(args.out) : args.quick || N !== TARGET_AT_N ? os.tmpdir() : join(ROOT, 'bench/results');
    const stem = args.quick ? 'held-calls.quick' : 'held-calls';
    mkdirSync(outDir, { recursive: true });
    const result = {
      bench: 'held-calls',
      date: new Date().toISOString(),
      durationSeconds: round((Date.now() - started) / 1000, 1),
      machine: {
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model ?? null,
        memoryMb: Math.round(os.totalmem() / 2 ** 20),
        kernel: os.release(),
        loadAverageAtStart: loadAtStart.map((l) => round(l, 2)),
        loadAverageAtEnd: os.loadavg().map((l) => round(l, 2)),
        /** machineSpeedMs() at the start: a fixed workload's time, lower is faster. */
        speedMs,
      },
      versions: { node: process.version, postgres: (await dbClient.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version },
      settings: { n: N, replicaNodeFlags: REINS_NODE_FLAGS, clientConnections: connections, clientProtocol: http2 ? 'h2c' : 'http/1.1', streamsPerConnection: http2 ? STREAMS_PER_SESSION : 1, ulimitN: ulimitSoft, releaseConcurrency: CONCURRENCY, policy: POLICY },
      park: { seconds: round(parkMs / 1000, 3) },
      memoryMb: {
        before: round(rssBefore.rss, 1),
        parked: round(rssParked.rss, 1),
        parkedSamples: parkedSamples.map((v) => round(v, 1)),
        perParkedCallKb: round(((rssParked.rss - rssBefore.rss) * 1024) / N, 2),
        peakWhileParking: round(peakDuringPark.rss, 1),
        peakWhileReleasing: round(rssPeakRelease, 1),
        after: round(rssAfter.rss, 1),
        hwm: round(rssAfter.hwm, 1),
        processMemoryUsageBefore: heapBefore,
        processMemoryUsageParked: heapParked,
      },
      release: {
        latencyMs: latency,
        approveRequestMs: approveLatency,
        approveSentToAnswerMs: sentLatency,
        gcPausesOfA: gcRelease,
        negativeLatencies: negative,
        throughputPerSecond: round(throughput, 1),
        approvalsSeconds: round((approvalsDone - releaseStart) / 1000, 3),
        lastAnswerSeconds: round(releaseSeconds, 3),
      },
      cpuMsA: { parkingAndParked: cpuParkedA - cpuBeforeA, release: cpuAfterA - cpuParkedA },
      failures: { calls: failed.length, approvals: approveErrors.length, unanswered },
      upstream: upstreamCount,
      heldCallStates: states,
      checks,
      notes,
      warnings,
    };
    writeFileSync(join(outDir, `${stem}.json`), `${JSON.stringify(result, null, 2)}\n`);
    if (args.timeline) {
      // One line per call, ms since the first approve was sent: where in the run the slow releases fall.
      const at = (v: number) => (Number.isNaN(v) ? '' : (v - releaseStart).toFixed(1));
      const lines = parked.map((p, i) => `${i},${at(sentAt[i]!)},${at(approvedAt[i]!)},${at(p.answeredAt)}`);
      writeFileSync(join(outDir, `${stem}.timeline.csv`), `call,approve_sent_ms,approve_answered_ms,call_answered_ms\n${lines.join('\n')}\n`);
    }
    const md = [
      `# bench/held-calls${args.quick ? ' (quick)' : ''}`,
      '',
      `${result.date}; ${result.machine.cpus} CPUs (${result.machine.cpuModel}), ${Math.round(result.machine.memoryMb / 1024)} GiB, Linux ${result.machine.kernel}, Node ${process.version}, ` +
        `PostgreSQL ${result.versions.postgres}; machine speed ${result.machine.speedMs} ms (a fixed workload, lower is faster: bench/gateway-overhead/processes.ts machineSpeedMs); load average (1/5/15 min) at start ${result.machine.loadAverageAtStart.join(' / ')}, at end ${result.machine.loadAverageAtEnd.join(' / ')} (a shared machine). ` +
        `Two Reins replicas from dist/ (node ${REINS_NODE_FLAGS.length > 0 ? REINS_NODE_FLAGS.join(' ') : 'with no flags'}) on one fresh database; N=${N} distinct calls parked on A, released from B at concurrency ${CONCURRENCY}. ` +
        '`node --import tsx bench/held-calls/run.ts' + (args.quick ? ' --quick' : '') + '`; see bench/held-calls/README.md.',
      '',
      '| figure | value |',
      '| --- | --- |',
      ...table.map(([k, v]) => `| ${k} | ${v} |`),
      '',
      '## Targets',
      '',
      ...(checks.length > 0 ? checks.map((c) => `- ${c.pass ? 'PASS' : 'FAIL'}: ${c.name}: ${c.value}`) : [`- not checked: the targets are for N=${TARGET_AT_N}`]),
      '',
      ...(notes.length > 0 ? ['## Notes', '', ...notes.map((n) => `- ${n}`), ''] : []),
      ...(warnings.length > 0 ? ['## Warnings', '', ...warnings.map((w) => `- ${w}`), ''] : []),
    ].join('\n');
    writeFileSync(join(outDir, `${stem}.md`), md);
    log(`wrote ${relative(process.cwd(), join(outDir, `${stem}.json`))} and .md`);
    if (checks.some((c) => !c.pass) || warnings.length > 0) process.exitCode = 2;
  } finally {
    for (const session of sessions) session.destroy();
    await clientPool?.destroy().catch(() => {});
    await releasePool?.destroy().catch(() => {});
    await dbClient.end().catch(() => {});
    for (const c of children.reverse()) await c.stop().catch(() => {});
    await database.drop().catch((err: Error) => log(`could not drop the bench database: ${err.message}`));
  }
}

await main();
