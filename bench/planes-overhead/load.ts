/**
 * The load generator of bench/planes-overhead, one long-lived process for the whole run (one job per line on stdin,
 * one result per line on stdout), so its JIT is equally warm for every target. Every latency is taken with
 * performance.now() around the exchange itself, in float milliseconds.
 *
 * - mcp-seq: one keep-alive connection, one `tools/call` at a time (raw socket, one prebuilt request:
 *   bench/gateway-overhead/raw-client.ts).
 * - mcp-max: closed loop over N keep-alive connections, each with its own JSON-RPC id (the SDK's JSON mode maps
 *   answers to requests by id, so concurrent requests of one session must not share one).
 * - egress-new: per request a new TCP connection (to the origin, or to the proxy with CONNECT -> 200), a full TLS
 *   handshake, one GET, then close. Latency is the whole of it; the phases are kept apart too.
 * - egress-reuse: one connection opened before, then one GET at a time on it.
 */
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { RawPool, buildRequest } from '../gateway-overhead/raw-client.js';
import { type LatencySummary, summarize } from '../gateway-overhead/load.js';
import { OriginConnection } from './egress-client.js';
import { type EgressTarget, type McpTarget, toolCallBody } from './payloads.js';

export type PlanesJob =
  | { kind: 'mcp-seq'; target: McpTarget; warmup: number; requests: number }
  | { kind: 'mcp-max'; target: McpTarget; connections: number; warmupSeconds: number; seconds: number }
  | { kind: 'egress-new'; target: EgressTarget; warmup: number; requests: number }
  | { kind: 'egress-reuse'; target: EgressTarget; warmup: number; requests: number };

export interface PlanesResult {
  kind: PlanesJob['kind'];
  ok: number;
  /** Non-200 answers and errors, warm-up included. */
  failed: number;
  firstError: string | null;
  warmupOk: number;
  seconds: number;
  rps: number;
  latency: LatencySummary | null;
  /** mcp-seq, egress-*: every measured latency (ms), for pooling rounds. */
  samples?: number[];
  /** egress-new: p50 and p99 of each phase (ms). */
  phases?: { tunnel: LatencySummary | null; tls: LatencySummary | null; request: LatencySummary | null };
  /** egress-new: every measured set-up phase (ms): TCP connect, through a proxy plus CONNECT and its 200. */
  tunnelSamples?: number[];
  /** TCP connections (tunnels, through Reins) the job opened, warm-up included. */
  connectionsOpened: number;
  loaderCpuMs: number;
}

type Body = Omit<PlanesResult, 'loaderCpuMs' | 'kind'>;

function rounded(values: ArrayLike<number>): number[] {
  return Array.from(values, (v) => Math.round(v * 1e4) / 1e4);
}

function mcpRequest(target: McpTarget, id: number): { url: URL; request: Buffer } {
  const url = new URL(target.url);
  return { url, request: buildRequest(url, { ...target.headers, 'content-type': 'application/json' }, toolCallBody(id)) };
}

function sendOn(pool: RawPool): Promise<number> {
  return new Promise((resolve) => pool.send(resolve));
}

async function mcpSeq(job: Extract<PlanesJob, { kind: 'mcp-seq' }>): Promise<Body> {
  const { url, request } = mcpRequest(job.target, 1);
  const pool = new RawPool(url, request, 1);
  await pool.open();
  let ok = 0;
  let failed = 0;
  let warmupOk = 0;
  const latencies = new Float64Array(job.requests);
  try {
    for (let i = 0; i < job.warmup; i++) {
      if ((await sendOn(pool)) === 200) warmupOk++;
      else failed++;
    }
    const start = performance.now();
    for (let i = 0; i < job.requests; i++) {
      const t0 = performance.now();
      const status = await sendOn(pool);
      if (status === 200) latencies[ok++] = performance.now() - t0;
      else failed++;
    }
    const seconds = (performance.now() - start) / 1000;
    const measured = latencies.subarray(0, ok);
    return { ok, failed, firstError: failed ? 'non-200 answer or broken connection' : null, warmupOk, seconds, rps: ok / seconds, latency: summarize(measured), samples: rounded(measured), connectionsOpened: 1 };
  } finally {
    pool.close();
  }
}

async function mcpMax(job: Extract<PlanesJob, { kind: 'mcp-max' }>): Promise<Body> {
  const pools = Array.from({ length: job.connections }, (_, i) => {
    const { url, request } = mcpRequest(job.target, i + 1);
    return new RawPool(url, request, 1);
  });
  await Promise.all(pools.map((p) => p.open()));
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  let warmupOk = 0;
  const t0 = performance.now();
  const measureFrom = t0 + job.warmupSeconds * 1000;
  const end = measureFrom + job.seconds * 1000;
  try {
    await Promise.all(
      pools.map(async (pool) => {
        for (;;) {
          const sent = performance.now();
          if (sent >= end) return;
          const status = await sendOn(pool);
          const done = performance.now();
          if (status !== 200) {
            failed++;
            return; // a broken connection would answer 0 at once, forever
          }
          if (sent >= measureFrom && done <= end) {
            ok++;
            latencies.push(done - sent);
          } else {
            warmupOk++;
          }
        }
      }),
    );
  } finally {
    for (const p of pools) p.close();
  }
  return { ok, failed, firstError: failed ? 'non-200 answer or broken connection' : null, warmupOk, seconds: job.seconds, rps: ok / job.seconds, latency: summarize(latencies), connectionsOpened: job.connections };
}

async function egressNew(job: Extract<PlanesJob, { kind: 'egress-new' }>): Promise<Body> {
  let ok = 0;
  let failed = 0;
  let warmupOk = 0;
  let firstError: string | null = null;
  const total = new Float64Array(job.requests);
  const tunnel = new Float64Array(job.requests);
  const tls = new Float64Array(job.requests);
  const request = new Float64Array(job.requests);
  let start = 0;
  for (let i = 0; i < job.warmup + job.requests; i++) {
    const measuring = i >= job.warmup;
    if (i === job.warmup) start = performance.now();
    const phases = { tunnel: 0, tls: 0 };
    const t0 = performance.now();
    let conn: OriginConnection | null = null;
    try {
      conn = await OriginConnection.open(job.target, phases);
      const t2 = performance.now();
      const status = await conn.get();
      const t3 = performance.now();
      if (status !== 200) throw new Error(`the origin answered ${status}`);
      if (measuring) {
        total[ok] = t3 - t0;
        tunnel[ok] = phases.tunnel;
        tls[ok] = phases.tls;
        request[ok] = t3 - t2;
        ok++;
      } else {
        warmupOk++;
      }
    } catch (err) {
      failed++;
      firstError ??= err instanceof Error ? err.message : String(err);
    } finally {
      conn?.close();
    }
  }
  const seconds = (performance.now() - start) / 1000;
  const measured = total.subarray(0, ok);
  return {
    ok,
    failed,
    firstError,
    warmupOk,
    seconds,
    rps: ok / seconds,
    latency: summarize(measured),
    samples: rounded(measured),
    phases: { tunnel: summarize(tunnel.subarray(0, ok)), tls: summarize(tls.subarray(0, ok)), request: summarize(request.subarray(0, ok)) },
    tunnelSamples: rounded(tunnel.subarray(0, ok)),
    connectionsOpened: job.warmup + job.requests,
  };
}

async function egressReuse(job: Extract<PlanesJob, { kind: 'egress-reuse' }>): Promise<Body> {
  const conn = await OriginConnection.open(job.target);
  let ok = 0;
  let failed = 0;
  let warmupOk = 0;
  let firstError: string | null = null;
  const latencies = new Float64Array(job.requests);
  let start = 0;
  try {
    for (let i = 0; i < job.warmup + job.requests; i++) {
      if (i === job.warmup) start = performance.now();
      const t0 = performance.now();
      try {
        const status = await conn.get();
        if (status !== 200) throw new Error(`the origin answered ${status}`);
        if (i >= job.warmup) latencies[ok++] = performance.now() - t0;
        else warmupOk++;
      } catch (err) {
        failed++;
        firstError ??= err instanceof Error ? err.message : String(err);
        break; // the connection is gone
      }
    }
  } finally {
    conn.close();
  }
  const seconds = (performance.now() - start) / 1000;
  const measured = latencies.subarray(0, ok);
  return { ok, failed, firstError, warmupOk, seconds, rps: ok / seconds, latency: summarize(measured), samples: rounded(measured), connectionsOpened: 1 };
}

async function runJob(job: PlanesJob): Promise<PlanesResult> {
  const cpu = process.cpuUsage();
  let body: Body;
  switch (job.kind) {
    case 'mcp-seq':
      body = await mcpSeq(job);
      break;
    case 'mcp-max':
      body = await mcpMax(job);
      break;
    case 'egress-new':
      body = await egressNew(job);
      break;
    case 'egress-reuse':
      body = await egressReuse(job);
      break;
  }
  const used = process.cpuUsage(cpu);
  return { kind: job.kind, ...body, loaderCpuMs: (used.user + used.system) / 1000 };
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line.trim() === '') continue;
  try {
    process.stdout.write(`${JSON.stringify(await runJob(JSON.parse(line) as PlanesJob))}\n`);
  } catch (err) {
    process.stdout.write(`${JSON.stringify({ error: err instanceof Error ? err.message : String(err) })}\n`);
  }
}
