/**
 * How long threads waited for a CPU after being woken, and what ran meanwhile, from `perf sched timehist` (Linux
 * `perf sched record` of the whole machine). tail-sched.ts uses it to tell a gateway's own slow answers from the
 * time its load generator, its upstream or its event loop spent runnable behind another thread on the same core.
 */

/** One stretch a thread ran on a CPU; times in seconds (perf's clock). */
export interface Slice {
  /** When it stopped running. */
  end: number;
  cpu: number;
  comm: string;
  tid: number;
  /** The process the thread belongs to (its own tid for a main thread). */
  pid: number;
  /** How long it ran. */
  run: number;
  /** How long it had been runnable (woken, or preempted) before it ran. */
  delay: number;
}

/**
 * Parses `perf sched timehist` text: after its header, lines of `time [cpu] comm[tid/pid] wait delay run` (the last
 * three in ms). Lines it cannot read (perf's notes, the idle task's summary) are skipped.
 */
export function parseTimehist(text: string): Slice[] {
  const slices: Slice[] = [];
  for (const line of text.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 6) continue;
    const end = Number(fields[0]);
    const cpuField = fields[1]!;
    if (!Number.isFinite(end) || !cpuField.startsWith('[') || !cpuField.endsWith(']')) continue;
    const run = Number(fields[fields.length - 1]);
    const delay = Number(fields[fields.length - 2]);
    // The task's name may hold spaces; its [tid/pid] closes the last field before the three numbers.
    const task = fields.slice(2, fields.length - 3).join(' ');
    const ids = /^(.*)\[(\d+)(?:\/(\d+))?\]$/.exec(task);
    if (!ids || !Number.isFinite(run) || !Number.isFinite(delay)) continue;
    const tid = Number(ids[2]);
    slices.push({ end, cpu: Number(cpuField.slice(1, -1)), comm: ids[1]!, tid, pid: ids[3] === undefined ? tid : Number(ids[3]), run: run / 1000, delay: delay / 1000 });
  }
  return slices;
}

export interface Waits {
  /** Times the thread was put on a CPU. */
  runs: number;
  /** Its runnable-but-waiting time before each run, ms. */
  p50: number;
  p99: number;
  max: number;
  /** Waits longer than the threshold. */
  long: number;
  /** During those long waits, ms each other task ran on that CPU, by `label`, largest first. */
  blockers: [string, number][];
}

/**
 * The waits of thread `tid`, and for each longer than `thresholdMs`, what ran on its CPU between its wake-up and
 * its start, charged by `label(slice)`.
 */
export function waitsOf(slices: Slice[], tid: number, label: (s: Slice) => string, thresholdMs = 0.5): Waits {
  const own = slices.filter((s) => s.tid === tid);
  const delays = own.map((s) => s.delay * 1000).sort((a, b) => a - b);
  const at = (q: number) => (delays.length === 0 ? 0 : delays[Math.min(delays.length - 1, Math.floor(q * delays.length))]!);
  const byCpu = new Map<number, Slice[]>();
  for (const s of slices) {
    if (s.tid === tid) continue;
    let list = byCpu.get(s.cpu);
    if (!list) byCpu.set(s.cpu, (list = []));
    list.push(s);
  }
  for (const list of byCpu.values()) list.sort((a, b) => a.end - b.end);
  const blockers = new Map<string, number>();
  let long = 0;
  for (const s of own) {
    if (s.delay * 1000 <= thresholdMs) continue;
    long++;
    const start = s.end - s.run;
    const woken = start - s.delay;
    const list = byCpu.get(s.cpu) ?? [];
    // The first slice that ends after the wake-up; every one from there that began before the start overlaps.
    let i = firstEndingAfter(list, woken);
    for (; i < list.length; i++) {
      const other = list[i]!;
      const from = Math.max(woken, other.end - other.run);
      const to = Math.min(start, other.end);
      if (other.end - other.run >= start) break;
      if (to > from) {
        const who = label(other);
        blockers.set(who, (blockers.get(who) ?? 0) + (to - from) * 1000);
      }
    }
  }
  return {
    runs: own.length,
    p50: at(0.5),
    p99: at(0.99),
    max: delays.length === 0 ? 0 : delays[delays.length - 1]!,
    long,
    blockers: [...blockers].sort((a, b) => b[1] - a[1]),
  };
}

function firstEndingAfter(list: Slice[], t: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]!.end <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
