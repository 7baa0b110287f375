/**
 * --diagnose: where a server's latency tail comes from. Inside a server child (Reins, the bare proxy) it watches
 * event-loop stalls and garbage-collection pauses; `reset` on stdin starts a window, `report` prints
 * {"diag":{...}} on stdout for it. Off by default: the 10 ms event-loop sampler and the GC observer cost little,
 * but the headline figures are taken without any instrumentation.
 */
import {
  type EventLoopUtilization,
  type PerformanceEntry,
  PerformanceObserver,
  constants,
  monitorEventLoopDelay,
  performance,
} from 'node:perf_hooks';
import { createInterface } from 'node:readline';

export interface Diagnosis {
  /** Event-loop lag beyond the sampler's 10 ms period, ms: a long task, or a queue of short ones. */
  loopDelayP99: number;
  loopDelayMax: number;
  /** Share of the window the event loop was busy, 0 to 1. */
  loopUtilization: number;
  gcPauses: number;
  gcPauseTotalMs: number;
  gcPauseMaxMs: number;
  /** Pauses per GC kind (minor, major, incremental, weakcb). */
  gcByKind: Record<string, { count: number; totalMs: number; maxMs: number }>;
}

const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

export function installDiagnostics(): void {
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  let elu: EventLoopUtilization = performance.eventLoopUtilization();
  let gc: Diagnosis['gcByKind'] = {};
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const detail = (entry as PerformanceEntry & { detail?: { kind?: number } }).detail;
      const kind = GC_KINDS[detail?.kind ?? 0] ?? 'other';
      const k = (gc[kind] ??= { count: 0, totalMs: 0, maxMs: 0 });
      k.count++;
      k.totalMs += entry.duration;
      k.maxMs = Math.max(k.maxMs, entry.duration);
    }
  }).observe({ entryTypes: ['gc'] });

  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line === 'reset') {
      loop.reset();
      elu = performance.eventLoopUtilization();
      gc = {};
    } else if (line === 'report') {
      const kinds = Object.values(gc);
      const diag: Diagnosis = {
        loopDelayP99: Math.max(0, loop.percentile(99) / 1e6 - 10),
        loopDelayMax: Math.max(0, loop.max / 1e6 - 10),
        loopUtilization: performance.eventLoopUtilization(elu).utilization,
        gcPauses: kinds.reduce((n, k) => n + k.count, 0),
        gcPauseTotalMs: kinds.reduce((n, k) => n + k.totalMs, 0),
        gcPauseMaxMs: kinds.reduce((n, k) => Math.max(n, k.maxMs), 0),
        gcByKind: gc,
      };
      process.stdout.write(`${JSON.stringify({ diag })}\n`);
    }
  });
}
