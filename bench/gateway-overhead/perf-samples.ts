/**
 * Linux perf's samples of one process, charged to the first JavaScript function on each sample's stack (the function
 * that called into V8's builtins, the runtime, the kernel or the garbage collector). Shared by
 * bench/gateway-overhead/perf-attribution.ts and bench/planes-overhead/profile.ts (`--perf`).
 *
 * The process must run with `--perf-basic-prof` (Node writes /tmp/perf-<pid>.map as it compiles, and perf reads it
 * to name the compiled functions). perf samples CPU time only, from the kernel: unlike V8's own profiler, a process
 * waiting to be scheduled is not sampled, and sampling costs a few percent.
 *
 * Names are taken from the map here, not from perf: V8 reuses the addresses of code it has freed (start-up code once
 * run, code replaced by an optimised version), and the map then holds two entries for one address, of which perf
 * names the first. So a hot function compiled late was charged to whatever start-up code once sat there: undici's
 * llhttp/constants.js at 128 µs a call was Node's own `clearBuffer` (the socket writes). The last entry that covers
 * an address is the code there since it was written, and the measured rounds run after the warm-up that compiled it.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

/** Samples per second per CPU; 4 kHz keeps perf's own cost to a few percent of a busy process. */
export const PERF_HZ = 4000;

/** Throws with the Debian package to install when perf is missing. */
export function requirePerf(): void {
  try {
    execFileSync('perf', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('perf is not installed (Debian: apt-get install linux-perf)');
  }
}

/** Starts `perf record -g` on a process until the returned stop() (SIGINT, which perf answers by writing `data`). */
export function startPerf(pid: number, data: string): { stop(): Promise<void> } {
  const perf = spawn('perf', ['record', '-F', String(PERF_HZ), '-g', '-p', String(pid), '-o', data], { stdio: 'ignore' });
  const exited = new Promise<void>((done) => perf.once('exit', () => done()));
  return {
    stop: async () => {
      perf.kill('SIGINT');
      await exited;
    },
  };
}

/** perf's samples in `data`, each charged to its first JavaScript frame, as µs per unit of work (`units` of them). */
export function attributePerf(data: string, units: number): Map<string, number> {
  const script = execFileSync('perf', ['script', '-i', data, '-F', 'ip,sym,dso'], { maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  return attribute(script, units);
}

/** A perf map's entries: each address names the code written there last (see the header). */
export class PerfMap {
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  private readonly names: string[] = [];
  /** Entry indexes sorted by start address. */
  private readonly order: number[];
  private longest = 0;
  private readonly found = new Map<number, string | null>();

  constructor(text: string) {
    for (const line of text.split('\n')) {
      const first = line.indexOf(' ');
      const second = line.indexOf(' ', first + 1);
      if (first < 0 || second < 0) continue;
      const start = Number.parseInt(line.slice(0, first), 16);
      const size = Number.parseInt(line.slice(first + 1, second), 16);
      if (!Number.isFinite(start) || !Number.isFinite(size)) continue;
      this.starts.push(start);
      this.ends.push(start + size);
      this.names.push(line.slice(second + 1));
      if (size > this.longest) this.longest = size;
    }
    this.order = this.starts.map((_, i) => i).sort((a, b) => this.starts[a]! - this.starts[b]!);
  }

  /** The name of the last entry covering `address`, or null. */
  nameAt(address: number): string | null {
    const known = this.found.get(address);
    if (known !== undefined) return known;
    // The last entry starting at or before the address, then back while an entry could still reach it.
    let lo = 0;
    let hi = this.order.length - 1;
    let at = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.starts[this.order[mid]!]! <= address) {
        at = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    let best = -1;
    for (let k = at; k >= 0 && this.starts[this.order[k]!]! > address - this.longest; k--) {
      const i = this.order[k]!;
      if (address < this.ends[i]! && i > best) best = i;
    }
    const name = best < 0 ? null : this.names[best]!;
    this.found.set(address, name);
    return name;
  }
}

/** Adds one attribution into another (several recordings of one process). */
export function addInto(total: Map<string, number>, part: Map<string, number>): void {
  for (const [fn, us] of part) total.set(fn, (total.get(fn) ?? 0) + us);
}

/** The sum of an attribution: perf's µs per unit of work. */
export function totalOf(by: Map<string, number>): number {
  let sum = 0;
  for (const v of by.values()) sum += v;
  return sum;
}

/**
 * Every sample charged to the first JavaScript function on its stack, leaf first; µs per unit of work. Lines are
 * `<ip> <symbol> (<dso>)`; a frame in a perf map (`/tmp/perf-<pid>.map`) is named from that map (PerfMap).
 */
export function attribute(script: string, units: number, readMap: (path: string) => string = (path) => readFileSync(path, 'utf8')): Map<string, number> {
  const perSample = 1e6 / PERF_HZ / units;
  const by = new Map<string, number>();
  const maps = new Map<string, PerfMap | null>();
  const mapFor = (path: string): PerfMap | null => {
    let map = maps.get(path);
    if (map === undefined) {
      try {
        map = new PerfMap(readMap(path));
      } catch {
        map = null; // gone: perf's own names stand
      }
      maps.set(path, map);
    }
    return map;
  };
  const frameName = (line: string): string => {
    const m = /^([0-9a-f]+) (.*?)(?: \(([^()]*)\))?$/.exec(line);
    if (!m) return line;
    const [, ip, sym, dso] = m;
    if (dso && /\/perf-\d+\.map$/.test(dso)) return mapFor(dso)?.nameAt(Number.parseInt(ip!, 16)) ?? sym!;
    return sym!;
  };
  for (const block of script.split(/\n\s*\n/)) {
    const frames = block
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '')
      .map(frameName);
    if (frames.length === 0) continue;
    const js = frames.find((f) => f.startsWith('JS:'));
    const name = js === undefined ? '(no JavaScript on the stack: GC helpers, libuv, the kernel alone)' : tidy(js);
    by.set(name, (by.get(name) ?? 0) + perSample);
  }
  return by;
}

/** `JS:*call file:///…/dist/planes/llm/routes.js:152:15` → `call dist/planes/llm/routes.js:152`. */
function tidy(frame: string): string {
  return frame
    .replace(/^JS:[*^~+]?/, '')
    .replace(`file://${ROOT}/`, '')
    .replace(`${ROOT}/node_modules/`, '')
    .replace(`${ROOT}/`, '')
    .replace(/:(\d+):\d+$/, ':$1')
    .trim();
}

/** Two attributions set against each other, function by function: what the first spends that the second does not. */
export function differenceLines(first: Map<string, number>, second: Map<string, number>, top: number): string[] {
  const names = new Set([...first.keys(), ...second.keys()]);
  const rows = [...names].map((fn) => ({ fn, a: first.get(fn) ?? 0, b: second.get(fn) ?? 0 }));
  rows.sort((x, y) => y.a - y.b - (x.a - x.b));
  return rows.slice(0, top).map((r) => `  ${(r.a - r.b).toFixed(2).padStart(7)}  (${r.a.toFixed(2)}, ${r.b.toFixed(2)})  ${r.fn}`);
}

/** The costliest functions of one attribution. */
export function topLines(by: Map<string, number>, top: number): string[] {
  return [...by]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([fn, us]) => `  ${us.toFixed(2).padStart(7)}  ${fn}`);
}
