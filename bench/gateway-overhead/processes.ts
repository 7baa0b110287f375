/**
 * The child processes of a run: each server and the load generator in a process of its own, so none shares an
 * event loop with another, and /proc tells how much CPU each one spent.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createWriteStream, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface Child {
  name: string;
  proc: ChildProcess;
  pid: number;
  /** The last lines the process wrote, for error messages. */
  tail(): string;
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

const TAIL_LINES = 30;

export interface ChildOptions {
  env?: NodeJS.ProcessEnv;
  /** Pin the process (all its threads) to this CPU with taskset, which execs node under the same pid. */
  cpu?: number | null;
  onLine?: (line: string) => void;
}

export function startChild(name: string, args: string[], options: ChildOptions = {}): Child {
  const { env = process.env, cpu = null, onLine } = options;
  const proc =
    cpu === null
      ? spawn(process.execPath, args, { env, stdio: ['pipe', 'pipe', 'pipe'] })
      : spawn('taskset', ['--cpu-list', String(cpu), process.execPath, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  if (proc.pid === undefined) throw new Error(`${name}: could not start`);
  const lines: string[] = [];
  // BENCH_CHILD_OUTPUT_DIR: every line each child writes, kept whole in <dir>/<name>-<pid>.log (for --trace-gc and
  // the like passed to a server through a bench's Node options); otherwise only the last lines, for error messages.
  const outputDir = process.env.BENCH_CHILD_OUTPUT_DIR;
  // The name made a file name: a child's name may hold a path ("reins (/work/main)").
  const whole = outputDir ? createWriteStream(join(outputDir, `${name.replace(/[^\w.-]+/g, '_')}-${proc.pid}.log`)) : null;
  const keep = (line: string) => {
    whole?.write(`${line}\n`);
    lines.push(line);
    if (lines.length > TAIL_LINES) lines.shift();
  };
  // Both streams are always drained: a server whose pipe fills up would block on its next log write.
  let open = 2;
  const closed = () => {
    if (--open === 0) whole?.end();
  };
  createInterface({ input: proc.stdout! })
    .on('line', (line) => {
      onLine?.(line);
      keep(line);
    })
    .once('close', closed);
  createInterface({ input: proc.stderr! }).on('line', keep).once('close', closed);
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return {
    name,
    proc,
    pid: proc.pid,
    tail: () => lines.join('\n'),
    exited,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGCONT'); // in case the runner froze it
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000); // a loaded machine; a --cpu-prof child writes its profile as it exits
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Starts a server child that prints {"ready":"<url>"} once listening, and waits for that line. */
/**
 * The V8 flags `npm start` runs a replica with (package.json "start"), so that benchmarks measure the replica users
 * run. `REINS_BENCH_NODE_FLAGS` overrides them (space-separated; empty for Node's defaults).
 */
export const REINS_NODE_FLAGS: string[] = (() => {
  const override = process.env.REINS_BENCH_NODE_FLAGS;
  if (override !== undefined) return override.split(' ').filter((f) => f !== '');
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } };
  return pkg.scripts.start.split(' ').filter((w) => w.startsWith('--'));
})();

export async function startServer(name: string, args: string[], options: ChildOptions = {}): Promise<{ child: Child; url: string }> {
  let announce: (url: string) => void = () => {};
  const ready = new Promise<string>((resolve) => {
    announce = resolve;
  });
  const child = startChild(name, args, {
    ...options,
    onLine: (line) => {
      if (line.startsWith('{"ready":')) announce((JSON.parse(line) as { ready: string }).ready);
      else options.onLine?.(line);
    },
  });
  const url = await Promise.race([
    ready,
    child.exited.then((code) => {
      throw new Error(`${name} exited with code ${code} before listening:\n${child.tail()}`);
    }),
    delay(180_000).then(() => {
      throw new Error(`${name} did not listen within 180 s (a loaded machine starts slowly):\n${child.tail()}`);
    }),
  ]);
  return { child, url };
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const CLOCK_TICK_MS = 10; // USER_HZ is 100 on Linux

/** A process's command name and its user plus system CPU time, all its threads (GC helpers included), in ms. */
/** A /proc stat file's command name and the numbered fields after it (fields[0] is the state, field 3 of proc(5)). */
function parseStat(path: string): { command: string; fields: string[] } {
  const stat = readFileSync(path, 'utf8');
  // The command name is in parentheses and may contain spaces; the numbered fields follow it.
  const close = stat.lastIndexOf(')');
  return { command: stat.slice(stat.indexOf('(') + 1, close), fields: stat.slice(close + 2).split(' ') };
}

function readStat(pid: number): { command: string; cpuMs: number } {
  const { command, fields } = parseStat(`/proc/${pid}/stat`);
  return { command, cpuMs: (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS };
}

/** A thread's nice value (/proc/<pid>/task/<tid>/stat, field 19). */
export function threadNice(pid: number, tid: number): number {
  return Number(parseStat(`/proc/${pid}/task/${tid}/stat`).fields[16]);
}

/** User plus system CPU time of a process and all its threads (GC helpers included), in ms. */
export function processCpuMs(pid: number): number {
  return readStat(pid).cpuMs;
}

/** Every process this user can read, by pid: its command name and CPU time (ms); null when /proc cannot be read. */
function everyProcess(): Map<number, { command: string; cpuMs: number }> | null {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return null;
  }
  const out = new Map<number, { command: string; cpuMs: number }>();
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      out.set(Number(name), readStat(Number(name)));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

/**
 * CPU time of each process of the local PostgreSQL server (by pid, ms), or null when there is none this user can
 * read. Its backends come and go with the connections, so a job's share is taken per pid (`cpuSpentBetween`).
 */
export function postgresCpuMs(): Map<number, number> | null {
  const out = new Map<number, number>();
  for (const [pid, { command, cpuMs }] of everyProcess() ?? []) if (command === 'postgres') out.set(pid, cpuMs);
  return out.size > 0 ? out : null;
}

/**
 * Moves every process of the local PostgreSQL server (and, through the postmaster, every backend forked later) to
 * `cpu`, the load generator's, so that a gateway on PostgreSQL has its core to itself, as it would with the database
 * on a machine of its own: left to the kernel, the backends writing its audit rows run on the gateway's core too
 * (about 60 µs of a Reins call at the maximum) and take that time from it. The CPU placement is put back when the run
 * ends (process exit included). Returns what it did, for the report, or null when there is no local server this user
 * may move.
 */
export function pinPostgres(cpu: number): string | null {
  const pids = postgresCpuMs();
  if (pids === null) return null;
  const moved: number[] = [];
  for (const pid of pids.keys()) {
    try {
      execFileSync('taskset', ['--all-tasks', '--pid', '--cpu-list', String(cpu), String(pid)], { stdio: 'ignore' });
      moved.push(pid);
    } catch {
      // gone meanwhile, or not ours to move
    }
  }
  if (moved.length === 0) return null;
  const every = `0-${os.cpus().length - 1}`;
  let restored = false;
  const restore = (): void => {
    if (restored) return;
    restored = true;
    for (const pid of postgresCpuMs()?.keys() ?? []) {
      try {
        execFileSync('taskset', ['--all-tasks', '--pid', '--cpu-list', every, String(pid)], { stdio: 'ignore' });
      } catch {
        // gone meanwhile
      }
    }
  };
  process.once('exit', restore);
  return `the local PostgreSQL server's ${moved.length} processes (and the backends it starts) on CPU ${cpu}, back on CPUs ${every} at the end`;
}

/** CPU spent between two `postgresCpuMs` readings: a process that started meanwhile counts whole; one that ended, not at all. */
export function cpuSpentBetween(before: Map<number, number> | null, after: Map<number, number> | null): number | null {
  if (before === null || after === null) return null;
  let spent = 0;
  for (const [pid, ms] of after) spent += ms - (before.get(pid) ?? 0);
  return spent;
}

/** Whether processes can be pinned: taskset is there and the machine has a second CPU. */
export function canPin(): boolean {
  try {
    execFileSync('taskset', ['--version'], { stdio: 'ignore' });
  } catch {
    return false;
  }
  return os.cpus().length >= 2;
}

/**
 * Runs the main threads of `pids` (the load generator and the fake upstream) at real-time priority (SCHED_FIFO 1,
 * reset on fork) until the returned function puts them back; null when this user may not (no CAP_SYS_NICE) or
 * there is no `chrt`. What it is for: the local PostgreSQL server shares their core (pinPostgres), and on the kernels
 * of these machines a woken thread waits for a running one to finish its slice, up to a 4 ms tick, whatever the
 * running one's priority or the woken one's slice (README.md, "Where the tail waits"): the database writing a
 * gateway's audit batch delayed the instruments that time its answers. Real-time threads preempt it at once, as if
 * the database had a machine of its own. Only for an open-loop job that leaves them mostly idle (run.ts: the paced
 * one): real-time threads kept busy, by a closed loop or a load at its maximum, would starve the database, and the
 * kernel stops them for the rest of any second they were busy for 95% of (a 0.9 s stall in one run).
 *
 * Only the main threads are raised, and while they are, the processes' other threads (V8's collector and compiler
 * helpers) may run on every CPU, not only the pinned one. A raised main thread must never wait on a helper that
 * only its own CPU could run: after a full collection V8's incremental-marking task and cppgc's sweeping task post
 * themselves again at once until the concurrent helpers have finished, so a real-time main thread kept its CPU
 * without a pause, the helpers at normal priority on that CPU never ran, and the process spun until the kernel's
 * real-time limit stopped it: about 0.9 s of CPU and answers up to 0.95 s late (README.md, "CPU placement"). With
 * the helpers free to run on the other CPU the spin ends as soon as they have finished. `helperCpus` is where they
 * may run meanwhile ("0-1"); they go back to their pinned CPUs with the priority.
 */
export function instrumentsFirst(pids: number[], helperCpus = `0-${os.cpus().length - 1}`): (() => void) | null {
  const run = (command: string, args: string[]): boolean => {
    try {
      execFileSync(command, args, { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  };
  const raised = pids.filter((pid) => run('chrt', ['--reset-on-fork', '--fifo', '--pid', '1', String(pid)]));
  const freed: { tid: number; cpus: string }[] = [];
  const restore = (): void => {
    for (const pid of raised) run('chrt', ['--other', '--pid', '0', String(pid)]);
    for (const { tid, cpus } of freed) run('taskset', ['--pid', '--cpu-list', cpus, String(tid)]);
  };
  if (raised.length < pids.length) {
    restore();
    return null;
  }
  for (const pid of pids) {
    for (const tid of helperThreads(pid)) {
      const cpus = allowedCpus(pid, tid);
      if (cpus !== null && run('taskset', ['--pid', '--cpu-list', helperCpus, String(tid)])) freed.push({ tid, cpus });
    }
  }
  return restore;
}

/**
 * Node flags for the instruments (the load generator and the fake upstream) on the CPU they are pinned to: the
 * collector's work on their main thread alone (`--single-threaded-gc`). Pinned to one CPU its helper threads add no
 * parallelism, only threads a main thread at real-time priority can end up waiting on (instrumentsFirst): with them
 * a full collection in the generator cost ~0.9 s of spinning CPU and held answers up to 0.95 s; without, the same
 * workload at real-time priority spent what it spends at normal priority (README.md, "CPU placement").
 */
export function instrumentFlags(cpu: number | null): string[] {
  return cpu === null ? [] : ['--single-threaded-gc'];
}

/** The threads of `pid` other than its main thread (/proc/<pid>/task); none when it is gone. */
export function helperThreads(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).map(Number).filter((tid) => tid !== pid);
  } catch {
    return [];
  }
}

/** The CPUs a thread may run on, as the kernel lists them ("0", "0-1"); null when it is gone. */
export function allowedCpus(pid: number, tid: number): string | null {
  try {
    return /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8'))?.[1] ?? null;
  } catch {
    return null;
  }
}

/** CPU time the hypervisor gave to others while this machine wanted it (all cores), in ms. */
export function stealMs(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  return Number(cpu[8] ?? 0) * CLOCK_TICK_MS;
}

/** A process that used the CPU while a benchmark was about to start. */
export interface BusyProcess {
  pid: number;
  command: string;
  /** Percent of one CPU over the sample. */
  cpuPercent: number;
}

/**
 * The processes other than this one that used at least `minPercent` of a CPU over `sampleMs`, busiest first.
 * A process left spinning on one of the two cores (seen: a test runner that never ended) makes every figure of a run
 * worse and nothing else in the report says so: the load average only hints at it.
 */
export function busyProcesses(sampleMs = 1000, minPercent = 20): BusyProcess[] {
  const before = everyProcess();
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, sampleMs);
  const after = everyProcess();
  const busy: BusyProcess[] = [];
  for (const [pid, { command, cpuMs }] of after ?? []) {
    const was = before?.get(pid);
    if (pid === process.pid || was === undefined) continue;
    const cpuPercent = Math.round(((cpuMs - was.cpuMs) / sampleMs) * 100);
    if (cpuPercent >= minPercent) busy.push({ pid, command, cpuPercent });
  }
  return busy.sort((a, b) => b.cpuPercent - a.cpuPercent);
}

/** The report's warnings for machineFacts' `busyAtStart`: one line per process that was busy before the run. */
export function busyAtStartWarnings(facts: Record<string, unknown>): string[] {
  return ((facts.busyAtStart ?? []) as BusyProcess[]).map(
    (busy) => `before the run, process ${String(busy.pid)} (${busy.command}) used ${String(busy.cpuPercent)}% of a CPU: every figure of this run shared the machine with it`,
  );
}

/** The version of an installed package, for the results' record of what was measured. */
export function packageVersion(root: string, name: string): string {
  return (JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * A long-lived child (a load generator) that takes one JSON job per stdin line and answers one JSON line per job,
 * in order; `{"error": …}` rejects the job. The child's exit rejects every job still waiting.
 */
export class JobChild<Job, Result> {
  private readonly waiting: { resolve: (r: Result) => void; reject: (e: Error) => void }[] = [];
  readonly child: Child;

  constructor(name: string, args: string[], cpu: number | null) {
    this.child = startChild(name, args, {
      cpu,
      onLine: (line) => {
        if (!line.startsWith('{')) return;
        const next = this.waiting.shift();
        const parsed = JSON.parse(line) as Result | { error: string };
        if (typeof parsed === 'object' && parsed !== null && 'error' in parsed) next?.reject(new Error(`${name}: ${(parsed as { error: string }).error}`));
        else next?.resolve(parsed as Result);
      },
    });
    void this.child.exited.then((code) => {
      for (const w of this.waiting.splice(0)) w.reject(new Error(`${name} exited (${code}):\n${this.child.tail()}`));
    });
  }

  run(job: Job): Promise<Result> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.child.proc.stdin!.write(`${JSON.stringify(job)}\n`);
    });
  }
}

/**
 * How fast this machine is now, as the milliseconds a fixed single-threaded workload takes in a fresh Node process
 * (JSON round trips of a 200-item array, a SHA-256 of 64 MiB, a regular expression over 1 MB; the best of three).
 * Absolute figures (a held call's release p99, an answer's latency) scale with it: the 2-vCPU machines these benches
 * run on have differed by 1.5-2x between sessions, so two runs' absolute figures compare only next to their speeds.
 */
export function machineSpeedMs(): number {
  const work = `
    const { createHash } = require('node:crypto');
    const item = (i) => ({ id: 'item-' + i, n: i, text: 'the quick brown fox jumps over the lazy dog ' + i, tags: ['a', 'b', String(i)] });
    const doc = { items: Array.from({ length: 200 }, (_, i) => item(i)) };
    const big = Buffer.alloc(64 << 20, 7);
    const text = 'abc123 '.repeat(150000);
    let best = Infinity;
    for (let round = 0; round < 3; round++) {
      const t = process.hrtime.bigint();
      let n = 0;
      for (let i = 0; i < 1500; i++) n += JSON.parse(JSON.stringify(doc)).items.length;
      createHash('sha256').update(big).digest();
      n += (text.match(/[a-z]+\\d+/g) || []).length;
      best = Math.min(best, Number(process.hrtime.bigint() - t) / 1e6);
      if (n === 0) throw new Error('no work');
    }
    process.stdout.write(String(best));`;
  return Math.round(Number(execFileSync(process.execPath, ['-e', work], { encoding: 'utf8' })));
}

/**
 * What a benchmark's results say about where they were measured: the machine, Node and OpenSSL, the load before
 * the run, the Reins commit (and whether src/ had uncommitted changes), and the given packages' versions.
 */
export function machineFacts(root: string, packages: string[]): Record<string, unknown> {
  const cpus = os.cpus();
  let commit = 'unknown';
  let dirty = false;
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: root, encoding: 'utf8' }).trim() !== '';
  } catch {
    // not a git checkout
  }
  return {
    cpuModel: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    openssl: process.versions.openssl,
    loadAverageAtStart: os.loadavg(),
    /** Other processes busy on the CPU just before the run (busyProcesses): none, on a machine fit to measure. */
    busyAtStart: busyProcesses(),
    /** machineSpeedMs() at the start: the time of a fixed workload, lower is faster. */
    speedMs: machineSpeedMs(),
    /** The run's scheduling priority (nice), which every child inherits: a run under `nice -n -15` says so. */
    nice: os.getPriority(),
    reinsCommit: commit,
    reinsSrcUncommittedChanges: dirty,
    versions: Object.fromEntries(packages.map((name) => [name, packageVersion(root, name)])),
  };
}
