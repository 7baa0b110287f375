/**
 * The live engine: one `ig run <gadget image> -o json` child process per observed gadget, its stdout read line by
 * line into the adapter. A process that ends (crash, OOM, a kernel refusing a probe) is restarted with a growing
 * back-off, reset once it has run for a minute; each restart is counted. Its stderr is logged, rate-limited.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Gadget } from './adapter.js';

export interface EngineOptions {
  igPath: string;
  /** `<repository>/<gadget>:<version>`. */
  image: (gadget: Gadget) => string;
  extraArgs: string[];
  restartMinMs?: number;
  restartMaxMs: number;
  onLine: (gadget: Gadget, line: string) => void;
  onRestart: (gadget: Gadget) => void;
  /** Why a gadget is not running (null once it runs), for the node status. */
  onState: (gadget: Gadget, trouble: string | null) => void;
  log: (message: string) => void;
}

/** `ig run` flags per gadget: `--paths` gives the executable path (the subject) where the gadget has it. */
const GADGET_ARGS: Record<Gadget, string[]> = { trace_dns: ['--paths'], trace_tcp: [], trace_open: [], trace_exec: ['--paths'] };

export function igArgs(gadget: Gadget, image: string, extra: string[]): string[] {
  return ['run', image, '-o', 'json', ...GADGET_ARGS[gadget], ...extra];
}

export class Engine {
  private readonly children = new Map<Gadget, ChildProcess>();
  private readonly timers = new Map<Gadget, NodeJS.Timeout>();
  private readonly wanted = new Set<Gadget>();
  private stopped = false;

  constructor(private readonly o: EngineOptions) {}

  start(gadgets: Gadget[]): void {
    this.set(gadgets);
  }

  /** Runs exactly these gadgets: starts the missing ones, stops the others (the observation policies changed). */
  set(gadgets: Gadget[]): void {
    for (const g of gadgets) {
      if (this.wanted.has(g)) continue;
      this.wanted.add(g);
      this.run(g, this.o.restartMinMs ?? 1_000);
    }
    for (const g of [...this.wanted]) {
      if (gadgets.includes(g)) continue;
      this.wanted.delete(g);
      const timer = this.timers.get(g);
      if (timer) clearTimeout(timer);
      this.timers.delete(g);
      this.children.get(g)?.kill('SIGTERM');
      this.o.onState(g, null);
    }
  }

  get running(): Gadget[] {
    return [...this.wanted];
  }

  private run(gadget: Gadget, backoffMs: number): void {
    if (this.stopped || !this.wanted.has(gadget)) return;
    const startedAt = Date.now();
    const args = igArgs(gadget, this.o.image(gadget), this.o.extraArgs);
    const child = spawn(this.o.igPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.children.set(gadget, child);
    let lastError = '';
    child.on('error', (err) => {
      lastError = err.message;
    });
    createInterface({ input: child.stdout! }).on('line', (line) => this.o.onLine(gadget, line));
    let logged = 0;
    createInterface({ input: child.stderr! }).on('line', (line) => {
      lastError = line.slice(0, 300);
      if (logged++ < 20) this.o.log(`${gadget}: ${line.slice(0, 500)}`);
    });
    this.o.onState(gadget, null);
    child.on('close', (code, signal) => {
      if (this.children.get(gadget) === child) this.children.delete(gadget);
      if (this.stopped || !this.wanted.has(gadget)) return;
      const ranLong = Date.now() - startedAt > 60_000;
      const next = ranLong ? (this.o.restartMinMs ?? 1_000) : Math.min(this.o.restartMaxMs, backoffMs * 2);
      const wait = ranLong ? (this.o.restartMinMs ?? 1_000) : backoffMs;
      const why = `${this.o.igPath} ${args.join(' ')} ended (${signal ?? `exit ${code}`})${lastError ? `: ${lastError}` : ''}`;
      this.o.onState(gadget, `${why}; restarting in ${Math.round(wait / 1000)} s`);
      this.o.log(`${gadget}: ${why}; restarting in ${wait} ms`);
      const timer = setTimeout(() => {
        this.timers.delete(gadget);
        if (!this.wanted.has(gadget)) return;
        this.o.onRestart(gadget);
        this.run(gadget, next);
      }, wait);
      this.timers.set(gadget, timer);
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    const closing = [...this.children.values()].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('close', () => resolve());
          child.kill('SIGTERM');
          setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
        }),
    );
    await Promise.all(closing);
  }
}
