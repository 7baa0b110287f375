/**
 * Preloaded into replica A (node --import): on SIGUSR2 it prints {"mem":{...},"gc":{...}} on stdout:
 * process.memoryUsage() (bytes), so the run can tell how much of A's resident memory is V8 heap, and A's main-thread
 * garbage-collection pauses since start (count, total and longest ms, and how many lasted over 50 and 200 ms), so the
 * run can tell the collector's share of a release's tail. A signal handler and a GC observer only: no timer, no
 * sampling.
 */
import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';

const gc = { count: 0, totalMs: 0, longestMs: 0, over50: 0, over200: 0, majorCount: 0, majorMs: 0 };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const ms = entry.duration;
    gc.count += 1;
    gc.totalMs += ms;
    if (ms > gc.longestMs) gc.longestMs = ms;
    if (ms > 50) gc.over50 += 1;
    if (ms > 200) gc.over200 += 1;
    // NODE_PERFORMANCE_GC_MAJOR (mark-compact)
    if ((entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === 4) {
      gc.majorCount += 1;
      gc.majorMs += ms;
    }
  }
}).observe({ entryTypes: ['gc'] });

process.on('SIGUSR2', () => {
  process.stdout.write(`${JSON.stringify({ mem: process.memoryUsage(), gc })}\n`);
});
