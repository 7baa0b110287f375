/**
 * bench/sensor, the real process: the compiled sensor (`dist/sensor/main.js`, or SENSOR_MAIN) in replay mode reading
 * two pipes (trace_tcp lines on one, trace_dns question/answer pairs on the other, today's shape) as fast as it
 * takes them, pinned to one core with taskset, against a minimal Reins stand-in. Measured from the outside: wall
 * time, the sensor's CPU time and its peak resident memory (VmHWM) from /proc.
 *
 *   npm run build && node --import tsx bench/sensor/process.ts      # EVENTS=1000000
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

const EVENTS = Number(process.env.EVENTS ?? 1_000_000);
const MAIN = process.env.SENSOR_MAIN ?? fileURLToPath(new URL('../../dist/sensor/main.js', import.meta.url));
if (!existsSync(MAIN)) {
  console.error(`${MAIN} not found: run npm run build first (or set SENSOR_MAIN)`);
  process.exit(1);
}
const FIXTURES = new URL('../../test/fixtures/ig/', import.meta.url);
const tcp = JSON.parse(readFileSync(new URL('trace_tcp.jsonl', FIXTURES), 'utf8').split('\n')[0]!);
const dnsLines = readFileSync(new URL('trace_dns.jsonl', FIXTURES), 'utf8').split('\n');
const dnsQ = JSON.parse(dnsLines[6]!);
const dnsR = JSON.parse(dnsLines[7]!);

function lines(kind: 'tcp' | 'dns', n: number): string[] {
  const ts = new Date().toISOString();
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const pod = i % 400;
    const k8s = { ...tcp.k8s, podName: `agent-${pod}` };
    const podIP = `10.244.${pod >> 8}.${pod & 255}`;
    const dest = `34.120.${(i % 300) >> 8}.${(i % 300) & 255}`;
    if (kind === 'tcp') out.push(JSON.stringify({ ...tcp, k8s, timestamp: ts, src: { ...tcp.src, addr: podIP }, dst: { ...tcp.dst, addr: dest } }));
    else {
      const name = `api${i % 300}.example.com.`;
      out.push(JSON.stringify({ ...dnsQ, k8s, id: `0x${i.toString(16)}`, name, timestamp: ts, src: { ...dnsQ.src, addr: podIP } }));
      out.push(JSON.stringify({ ...dnsR, k8s, id: `0x${i.toString(16)}`, name, timestamp: ts, dst: { ...dnsR.dst, addr: podIP }, addresses: dest }));
    }
  }
  return out;
}

async function feed(stream: Writable, pool: string[], n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    if (!stream.write(pool[i % pool.length] + '\n')) await once(stream, 'drain');
  }
  stream.end();
}

function procStats(pid: number): { cpuSeconds: number; hwmMB: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    const ticks = Number(stat[11]) + Number(stat[12]);
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return { cpuSeconds: ticks / 100, hwmMB: hwm ? Math.round(Number(hwm[1]) / 1024) : -1 };
  } catch {
    return { cpuSeconds: -1, hwmMB: -1 };
  }
}

const reinsCode = `const http=require('node:http');const s=http.createServer((q,r)=>{q.resume();q.on('end',()=>{r.writeHead(200,{'content-type':'application/json'});r.end('{"stored":0}')})});s.listen(0,'127.0.0.1',()=>process.stdout.write(String(s.address().port)+'\\n'));`;
const reins = spawn(process.execPath, ['-e', reinsCode], { stdio: ['ignore', 'pipe', 'inherit'] });
const [portChunk] = await once(reins.stdout!, 'data');
const pinned = spawnSync('taskset', ['-c', '0', 'true']).status === 0;
// Named pipes: the sensor reads them as it reads any file, at the pace it takes them.
const dir = mkdtempSync(join(tmpdir(), 'reins-sensor-bench-'));
const tcpFifo = join(dir, 'tcp.jsonl');
const dnsFifo = join(dir, 'dns.jsonl');
for (const f of [tcpFifo, dnsFifo]) if (spawnSync('mkfifo', [f]).status !== 0) throw new Error('mkfifo failed');
const argv = [MAIN, '--replay', tcpFifo, '--source', 'trace_tcp', '--replay', dnsFifo, '--source', 'trace_dns', '--once'];
const started = process.hrtime.bigint();
const sensor = spawn(pinned ? 'taskset' : process.execPath, pinned ? ['-c', '0', process.execPath, ...argv] : argv, {
  stdio: ['ignore', 'inherit', 'inherit'],
  env: { PATH: process.env.PATH ?? '', REINS_URL: `http://127.0.0.1:${String(portChunk).trim()}`, REINS_SENSOR_TOKEN: 'rs_bench', NODE_NAME: 'bench-node', METRICS_PORT: '0', METRICS_HOST: '127.0.0.1', REINS_SENSOR_LSM_PATH: '/nonexistent', ...(process.env.SENSOR_NODE_OPTIONS ? { NODE_OPTIONS: process.env.SENSOR_NODE_OPTIONS } : {}) },
});
let last = { cpuSeconds: 0, hwmMB: 0 };
const sampler = setInterval(() => {
  const s = procStats(sensor.pid!);
  if (s.cpuSeconds >= 0) last = s;
}, 100);
const exited = new Promise<number | null>((resolve) => sensor.on('exit', (code) => resolve(code)));
const tcpEvents = Math.round(EVENTS / 2);
const dnsPairs = Math.round((EVENTS - tcpEvents) / 2);
await feed(createWriteStream(tcpFifo), lines('tcp', 10_000), tcpEvents);
await feed(createWriteStream(dnsFifo), lines('dns', 5_000), dnsPairs);
const code = await exited;
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
clearInterval(sampler);
reins.kill();
const result = {
  events: tcpEvents + dnsPairs * 2,
  exitCode: code,
  seconds: Number(seconds.toFixed(2)),
  eventsPerSecond: Math.round((tcpEvents + dnsPairs * 2) / seconds),
  sensorCpuSeconds: last.cpuSeconds,
  eventsPerCpuSecond: last.cpuSeconds > 0 ? Math.round((tcpEvents + dnsPairs * 2) / last.cpuSeconds) : null,
  peakRssMB: last.hwmMB,
  pinnedToOneCore: pinned,
  nodeOptions: process.env.SENSOR_NODE_OPTIONS ?? '',
  node: process.version,
};
console.log(JSON.stringify(result, null, 2));
writeFileSync(new URL('results-process.json', import.meta.url), JSON.stringify(result, null, 2) + '\n');
