/**
 * bench/sensor: how many engine events per second the sensor turns into reports on one core, and its resident
 * memory at that rate (targets: 50,000 events/s, a busy node; under 100 MB).
 *
 * The sensor's own pipeline in this process (startSensor: adapter → aggregation → reports → HTTP), fed the
 * engine's JSON lines (trace_tcp connects and trace_dns question/answer pairs in today's shape, from a pool of
 * 20,000 distinct lines over 400 pods and 300 destinations) as fast as it takes them, for EVENTS events. Reins is a
 * minimal HTTP server in a child process that answers 200 (the sensor's cost, not Reins', is measured). The whole
 * process is pinned to one core with taskset when available (re-executed under it).
 *
 *   node --import tsx bench/sensor/run.ts            # EVENTS=1000000 by default
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EventAdapter } from '../../src/sensor/adapter.js';
import { SensorMetrics, serveMetrics } from '../../src/sensor/metrics.js';
import { Reporter } from '../../src/sensor/reporter.js';

const EVENTS = Number(process.env.EVENTS ?? 1_000_000);
const FLUSH_MS = Number(process.env.FLUSH_MS ?? 10_000);

if (process.env.REINS_BENCH_PINNED !== '1' && spawnSync('taskset', ['-c', '0', 'true']).status === 0) {
  const r = spawnSync('taskset', ['-c', '0', process.execPath, ...process.execArgv, fileURLToPath(import.meta.url)], { stdio: 'inherit', env: { ...process.env, REINS_BENCH_PINNED: '1' } });
  process.exit(r.status ?? 1);
}

const FIXTURES = new URL('../../test/fixtures/ig/', import.meta.url);
const tcpTemplate = JSON.parse(readFileSync(new URL('trace_tcp.jsonl', FIXTURES), 'utf8').split('\n')[0]!);
const dnsLines = readFileSync(new URL('trace_dns.jsonl', FIXTURES), 'utf8').split('\n');
const dnsQ = JSON.parse(dnsLines[6]!);
const dnsR = JSON.parse(dnsLines[7]!);

function pool(): Array<['trace_tcp' | 'trace_dns', string]> {
  const lines: Array<['trace_tcp' | 'trace_dns', string]> = [];
  const ts = new Date().toISOString();
  for (let i = 0; i < 10_000; i++) {
    const pod = `agent-${i % 400}`;
    const podIP = `10.244.${(i % 400) >> 8}.${(i % 400) & 255}`;
    const k8s = { ...tcpTemplate.k8s, podName: pod };
    const dest = `34.120.${(i % 300) >> 8}.${(i % 300) & 255}`;
    lines.push(['trace_tcp', JSON.stringify({ ...tcpTemplate, k8s, timestamp: ts, src: { ...tcpTemplate.src, addr: podIP }, dst: { ...tcpTemplate.dst, addr: dest } })]);
    const name = `api${i % 300}.example.com.`;
    const id = `0x${i.toString(16)}`;
    if (i % 2 === 0) {
      lines.push(['trace_dns', JSON.stringify({ ...dnsQ, k8s, id, name, timestamp: ts, src: { ...dnsQ.src, addr: podIP } })]);
      lines.push(['trace_dns', JSON.stringify({ ...dnsR, k8s, id, name, timestamp: ts, dst: { ...dnsR.dst, addr: podIP }, addresses: dest })]);
    }
  }
  return lines;
}

async function fakeReins(): Promise<{ url: string; stop(): void }> {
  const code = `const http=require('node:http');let n=0;const s=http.createServer((q,r)=>{q.resume();q.on('end',()=>{r.writeHead(200,{'content-type':'application/json'});r.end('{"stored":0}')})});s.listen(0,'127.0.0.1',()=>process.stdout.write(String(s.address().port)+'\\n'));`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [chunk] = await once(child.stdout!, 'data');
  return { url: `http://127.0.0.1:${String(chunk).trim()}`, stop: () => child.kill() };
}

async function main(): Promise<void> {
  const lines = pool();
  global.gc?.();
  const baselineRss = process.memoryUsage().rss;
  const reins = await fakeReins();
  const metrics = new SensorMetrics('bench-node');
  const { server } = await serveMetrics(metrics, 0, '127.0.0.1');
  const reporter = new Reporter({
    url: reins.url, token: 'rs_bench', node: 'bench-node', metrics, flushMs: FLUSH_MS, statusMs: 30_000,
    status: async () => ({ node: 'bench-node', sensorAlive: true, bpfLsm: 'unknown', reason: 'bench' }),
  });
  const adapter = new EventAdapter({ node: 'bench-node', sink: { observe: (o) => reporter.record(o), drop: (c) => (metrics.eventsDropped[c] += 1) } });
  reporter.start();
  const expire = setInterval(() => adapter.expire(), 1_000);

  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
  const started = process.hrtime.bigint();
  const cpuStart = process.cpuUsage();
  let i = 0;
  while (i < EVENTS) {
    // Chunks of 2,000 lines, then the event loop runs (timers, sends), as with a stream from the engine.
    const end = Math.min(EVENTS, i + 2_000);
    for (; i < end; i++) {
      const [gadget, line] = lines[i % lines.length]!;
      metrics.eventsRead[gadget] += 1;
      adapter.line(gadget, line);
    }
    await new Promise<void>((r) => setImmediate(r));
  }
  adapter.expire(true);
  await reporter.drain(30_000);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpuStart);
  clearInterval(sampler);
  clearInterval(expire);
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
  await reporter.stop();
  server.close();
  reins.stop();

  const result = {
    events: EVENTS,
    seconds: Number(seconds.toFixed(2)),
    eventsPerSecond: Math.round(EVENTS / seconds),
    cpuSeconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(2)),
    eventsPerCpuSecond: Math.round(EVENTS / ((cpu.user + cpu.system) / 1e6)),
    baselineRssMB: Math.round(baselineRss / 1024 / 1024),
    peakRssMB: Math.round(peakRss / 1024 / 1024),
    reportsSent: metrics.reportsSent,
    itemsRecorded: metrics.observationsRecorded,
    itemsDiscardedReportFull: metrics.observationsLost['report-full'],
    pinnedToOneCore: process.env.REINS_BENCH_PINNED === '1',
    node: process.version,
  };
  console.log(JSON.stringify(result, null, 2));
  writeFileSync(new URL('results.json', import.meta.url), JSON.stringify(result, null, 2) + '\n');
}

await main();
