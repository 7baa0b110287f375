/**
 * The load generator, run as its own process per measurement so it never shares an event loop with a server:
 * node --import tsx bench/gateway-overhead/load.ts '<LoadJob as JSON>'  -> one LoadResult as JSON on stdout.
 *
 * - sequential: autocannon. Its own latency histogram keeps whole milliseconds (lowestDiscernibleValue 1),
 *   too coarse for a 0.3 ms target, so every response's time is taken from its `response` event instead
 *   (process.hrtime, float milliseconds) and the percentiles are computed here.
 * - max: a closed loop over raw keep-alive sockets (raw-client.ts; `closedLoop` says why not autocannon).
 * - paced: an open-loop generator over raw keep-alive sockets (raw-client.ts). A request is sent when its slot in the schedule comes,
 *   whether earlier answers are back or not. autocannon's `overallRate` is not that: each connection gets a
 *   budget per second, sends it back to back, then waits for the next second, and all connections' seconds
 *   start together, so "1,000 requests/s" arrives as a burst at the top of every second (autocannon-rate
 *   below measures exactly that, for comparison).
 */
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import autocannon, { type Options, type Result } from 'autocannon';
import { REQUEST_BODY, type Target } from './payloads.js';
import { RawPool, buildRequest } from './raw-client.js';

export type LoadJob =
  | { kind: 'sequential'; target: Target; warmup: number; requests: number }
  | { kind: 'paced'; target: Target; rate: number; warmupSeconds: number; seconds: number; connections: number }
  | { kind: 'autocannon-rate'; target: Target; rate: number; warmupSeconds: number; seconds: number; connections: number }
  | { kind: 'max'; target: Target; connections: number; warmupSeconds: number; seconds: number };

/** Milliseconds. */
export interface LatencySummary {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

export interface LoadResult {
  kind: LoadJob['kind'];
  /** Answers with status 200. */
  ok: number;
  /** Other statuses, connection errors and time-outs, warm-up included. */
  failed: number;
  /** Answers during warm-up (they cost the target CPU too). */
  warmupOk: number;
  seconds: number;
  /** Completed 200 answers per second over the measured window. */
  rps: number;
  latency: LatencySummary | null;
  /** sequential and paced: every answer's latency (ms, to 0.1 µs), so the runner can pool rounds. */
  samples?: number[];
  /** paced and autocannon-rate: how evenly the requests went out. */
  pacing?: {
    /** How late a request left after its slot (paced only), ms. */
    lagP99: number;
    lagMax: number;
    /** The most answers completed in any 50 ms window, against rate / 20 for an even schedule. */
    busiest50ms: number;
    even50ms: number;
  };
  /** CPU time of the load generator itself, ms. */
  loaderCpuMs: number;
}

export function summarize(values: Float64Array | number[]): LatencySummary | null {
  const n = values.length;
  if (n === 0) return null;
  const sorted = Float64Array.from(values).sort();
  // Nearest rank: the smallest value with at least q of the samples at or below it.
  const at = (q: number) => sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]!;
  let sum = 0;
  for (const v of sorted) sum += v;
  return { count: n, mean: sum / n, p50: at(0.5), p90: at(0.9), p99: at(0.99), p999: at(0.999), max: sorted[n - 1]! };
}

function rounded(values: ArrayLike<number>): number[] {
  return Array.from(values, (v) => Math.round(v * 1e4) / 1e4);
}

function busiestWindow(completions: ArrayLike<number>, windowMs: number): number {
  const counts = new Map<number, number>();
  let most = 0;
  for (let i = 0; i < completions.length; i++) {
    const t = completions[i]!;
    const w = Math.floor(t / windowMs);
    const c = (counts.get(w) ?? 0) + 1;
    counts.set(w, c);
    if (c > most) most = c;
  }
  return most;
}

function cannonOptions(target: Target, extra: Partial<Options>): Options {
  return {
    url: target.url,
    method: 'POST',
    headers: { ...target.headers, 'content-type': 'application/json' },
    body: REQUEST_BODY,
    pipelining: 1,
    timeout: 10,
    ...extra,
  };
}

interface CannonRun {
  ok: number;
  failed: number;
  seconds: number;
  latencies: number[];
  completedAt: number[];
}

/**
 * One autocannon run. With `amount`, it settles as soon as that many requests are answered: autocannon itself
 * notices the end only at its next one-second tick, which would leave the machine idle for up to a second.
 */
function cannon(options: Options, record: boolean): Promise<CannonRun> {
  return new Promise((resolve, reject) => {
    const latencies: number[] = [];
    const completedAt: number[] = [];
    let ok = 0;
    let failed = 0;
    let settled = false;
    const started = performance.now();
    const finish = (seconds?: number) => {
      if (settled) return;
      settled = true;
      resolve({ ok, failed, seconds: seconds ?? (performance.now() - started) / 1000, latencies, completedAt });
    };
    const counted = () => {
      if (options.amount !== undefined && ok + failed >= options.amount) finish();
    };
    const instance = autocannon(options, (err, result: Result) => {
      if (err) {
        if (!settled) reject(err);
        settled = true;
      } else {
        finish(result.duration);
      }
    });
    instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      if (status === 200) {
        ok++;
        if (record) {
          latencies.push(ms);
          completedAt.push(performance.now());
        }
      } else {
        failed++;
      }
      counted();
    });
    // Connection errors and time-outs.
    instance.on('reqError', () => {
      failed++;
      counted();
    });
  });
}

async function sequential(job: Extract<LoadJob, { kind: 'sequential' }>): Promise<Omit<LoadResult, 'loaderCpuMs'>> {
  const warm = await cannon(cannonOptions(job.target, { connections: 1, amount: job.warmup }), false);
  const run = await cannon(cannonOptions(job.target, { connections: 1, amount: job.requests }), true);
  return {
    kind: job.kind,
    ok: run.ok,
    failed: run.failed + warm.failed,
    warmupOk: warm.ok,
    seconds: run.seconds,
    rps: run.ok / run.seconds,
    latency: summarize(run.latencies),
    samples: rounded(run.latencies),
  };
}

/**
 * Max throughput, closed loop over raw keep-alive sockets (raw-client.ts): each of `connections` connections sends
 * its next request as soon as its answer is in, for the warm-up and then the measured seconds in one go (no ramp
 * between them). Answers completed inside the measured window count toward `ok` and requests/s; those of the
 * warm-up and the few in flight when the window closes (each is waited for: no request is cut off, so the target
 * never records an aborted call the run caused) count toward `warmupOk`, since the target spent CPU on them too.
 * Not autocannon: on these 2-core machines the generator shares a core with the fake upstream and the PostgreSQL
 * server, and what it spends there can bound the gateway's maximum; autocannon spent 30-57 µs of that core a request,
 * this loop 26-29 (README.md, "The load generator").
 */
interface ClosedLoopRun {
  ok: number;
  /** 200 answers outside the measured window: the warm-up's and those in flight when it closed. */
  outside: number;
  failed: number;
  seconds: number;
  latencies: number[];
}

function closedLoop(pool: RawPool, connections: number, warmupSeconds: number, seconds: number): Promise<ClosedLoopRun> {
  const start = performance.now();
  const from = start + warmupSeconds * 1000;
  const until = from + seconds * 1000;
  const latencies: number[] = [];
  let ok = 0;
  let outside = 0;
  let failed = 0;
  let inFlight = 0;
  return new Promise((resolve) => {
    const fire = () => {
      inFlight++;
      const t0 = performance.now();
      pool.send((status) => {
        const t1 = performance.now();
        inFlight--;
        if (status === 200 && t1 >= from && t1 < until) {
          ok++;
          latencies.push(t1 - t0);
        } else if (status === 200) {
          outside++;
        } else {
          failed++;
        }
        // A broken connection (status 0) ends its sender: the pool has no connection to give it any more.
        if (t1 < until && status !== 0) fire();
        else if (inFlight === 0) resolve({ ok, outside, failed, seconds, latencies });
      });
    };
    for (let i = 0; i < connections; i++) fire();
  });
}

async function max(job: Extract<LoadJob, { kind: 'max' }>): Promise<Omit<LoadResult, 'loaderCpuMs'>> {
  const url = new URL(job.target.url);
  const pool = new RawPool(url, buildRequest(url, { ...job.target.headers, 'content-type': 'application/json' }, REQUEST_BODY), job.connections);
  await pool.open();
  try {
    const run = await closedLoop(pool, job.connections, job.warmupSeconds, job.seconds);
    return {
      kind: job.kind,
      ok: run.ok,
      failed: run.failed,
      warmupOk: run.outside,
      seconds: run.seconds,
      rps: run.ok / run.seconds,
      latency: summarize(run.latencies),
    };
  } finally {
    pool.close();
  }
}

async function autocannonRate(job: Extract<LoadJob, { kind: 'autocannon-rate' }>): Promise<Omit<LoadResult, 'loaderCpuMs'>> {
  const options = (seconds: number) => cannonOptions(job.target, { connections: job.connections, overallRate: job.rate, duration: seconds });
  const warm = job.warmupSeconds > 0 ? await cannon(options(job.warmupSeconds), false) : null;
  const run = await cannon(options(job.seconds), true);
  return {
    kind: job.kind,
    ok: run.ok,
    failed: run.failed + (warm?.failed ?? 0),
    warmupOk: warm?.ok ?? 0,
    seconds: run.seconds,
    rps: run.ok / run.seconds,
    latency: summarize(run.latencies),
    pacing: { lagP99: Number.NaN, lagMax: Number.NaN, busiest50ms: busiestWindow(run.completedAt, 50), even50ms: job.rate / 20 },
  };
}

/**
 * Sends `rate` requests per second for `seconds`, each at its slot (a 1 ms timer releases every slot that is due,
 * so at most a request or two leave together), without waiting for earlier answers. Latency runs from the moment
 * a request is handed to the pool to the last byte of its answer, so time queued for a free connection counts.
 */
function paced(pool: RawPool, rate: number, seconds: number, record: boolean): Promise<PacedRun> {
  const total = Math.round(rate * seconds);
  const interval = 1000 / rate;
  const latencies = new Float64Array(total);
  const lags = new Float64Array(total);
  const completedAt = new Float64Array(total);
  let ok = 0;
  let failed = 0;
  let sent = 0;
  let settled = 0;
  const start = performance.now();

  return new Promise((resolve) => {
    const fire = () => {
      const t0 = performance.now();
      pool.send((status) => {
        const t1 = performance.now();
        if (status === 200) {
          if (record) {
            latencies[ok] = t1 - t0;
            completedAt[ok] = t1;
          }
          ok++;
        } else {
          failed++;
        }
        if (++settled === total) {
          resolve({
            ok,
            failed,
            latencies: latencies.subarray(0, record ? ok : 0),
            lags: lags.subarray(0, sent),
            completedAt: completedAt.subarray(0, record ? ok : 0),
            elapsed: t1 - start,
          });
        }
      });
    };
    const tick = () => {
      const now = performance.now();
      const due = Math.min(total, Math.floor((now - start) / interval) + 1);
      while (sent < due) {
        lags[sent] = now - (start + sent * interval);
        sent++;
        fire();
      }
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
}

interface PacedRun {
  ok: number;
  failed: number;
  latencies: Float64Array;
  lags: Float64Array;
  completedAt: Float64Array;
  elapsed: number;
}

async function pacedJob(job: Extract<LoadJob, { kind: 'paced' }>): Promise<Omit<LoadResult, 'loaderCpuMs'>> {
  const url = new URL(job.target.url);
  const pool = new RawPool(url, buildRequest(url, { ...job.target.headers, 'content-type': 'application/json' }, REQUEST_BODY), job.connections);
  await pool.open();
  try {
    const warm = job.warmupSeconds > 0 ? await paced(pool, job.rate, job.warmupSeconds, false) : null;
    const run = await paced(pool, job.rate, job.seconds, true);
    const lag = summarize(run.lags);
    return {
      kind: job.kind,
      ok: run.ok,
      failed: run.failed + (warm?.failed ?? 0),
      warmupOk: warm?.ok ?? 0,
      seconds: run.elapsed / 1000,
      rps: run.ok / (run.elapsed / 1000),
      latency: summarize(run.latencies),
      samples: rounded(run.latencies),
      pacing: { lagP99: lag?.p99 ?? 0, lagMax: lag?.max ?? 0, busiest50ms: busiestWindow(run.completedAt, 50), even50ms: job.rate / 20 },
    };
  } finally {
    pool.close();
  }
}

async function runJob(job: LoadJob): Promise<Omit<LoadResult, 'loaderCpuMs'>> {
  switch (job.kind) {
    case 'sequential':
      return sequential(job);
    case 'max':
      return max(job);
    case 'paced':
      return pacedJob(job);
    case 'autocannon-rate':
      return autocannonRate(job);
  }
}

async function measured(job: LoadJob): Promise<LoadResult> {
  const cpu = process.cpuUsage();
  const result = await runJob(job);
  const used = process.cpuUsage(cpu);
  return { ...result, loaderCpuMs: (used.user + used.system) / 1000 };
}

// One job from argv, or (run.ts) one job per line on stdin and one result per line on stdout, so a single
// long-lived generator process serves the whole run and its JIT is warm for every target alike.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv[2]) {
    process.stdout.write(`${JSON.stringify(await measured(JSON.parse(process.argv[2]) as LoadJob))}\n`);
    process.exit(0);
  }
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line.trim() === '') continue;
    try {
      process.stdout.write(`${JSON.stringify(await measured(JSON.parse(line) as LoadJob))}\n`);
    } catch (err) {
      process.stdout.write(`${JSON.stringify({ error: err instanceof Error ? err.message : String(err) })}\n`);
    }
  }
}
