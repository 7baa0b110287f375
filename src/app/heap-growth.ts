/**
 * How far the heap may grow past what a full collection left before V8 collects again, chosen by how big the heap is.
 *
 * A replica serving calls has a small heap (~60 MB, most of it code) and allocates fast: V8's own growth (up to 4x
 * for a small heap) keeps its full collections rare, and each one on a busy core stalls calls for tens of ms. A
 * replica holding tens of thousands of parked calls, or the runtime guard's index of a large cluster, has a heap of
 * hundreds of MB: with V8's own growth it overshoots by as much again before collecting (50,000 parked calls:
 * 1,106 MB resident, over the 1 GB target; 938 MB held to 25%). So while the used heap is above `LARGE_HEAP_BYTES`
 * the growth is held to `CONSERVATIVE_PERCENT`, with one full collection when that starts (the last limit was set
 * under V8's own growth while the heap was small), and V8's own growth comes back below three quarters of it (the
 * gap keeps it from flapping).
 *
 * V8 reads `--heap-growing-percent` each time it sets the next limit (after a full collection), so changing it at
 * run time takes effect from the next collection; Node leaves V8's flags writable for `v8.setFlagsFromString`. The
 * flag is process-wide: every replica in one process shares one governor. An operator who sets the flag on Node's
 * command line or in NODE_OPTIONS keeps it, and the governor stays out of the way.
 */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Used heap above which growth is held to CONSERVATIVE_PERCENT. */
export const LARGE_HEAP_BYTES = 256 * 1024 * 1024;
export const CONSERVATIVE_PERCENT = 25;
const CHECK_EVERY_MS = 500;

type Mode = 'v8' | 'conservative';

let holders = 0;
let timer: NodeJS.Timeout | null = null;
let mode: Mode = 'v8';
let threshold = LARGE_HEAP_BYTES;

/** Whether the operator set the growth on the command line or in NODE_OPTIONS: then it is theirs. */
export function growthSetByOperator(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? ''): boolean {
  return execArgv.some((a) => /^--heap[-_]growing[-_]percent\b/.test(a)) || /--heap[-_]growing[-_]percent\b/.test(nodeOptions);
}

/** The mode for a used heap of `used` bytes, given the current one (hysteresis between 3/4 and all of the threshold). */
export function nextMode(current: Mode, used: number, large = LARGE_HEAP_BYTES): Mode {
  if (used > large) return 'conservative';
  if (used < large * 0.75) return 'v8';
  return current;
}

let collector: (() => void) | null = null;

/**
 * One full collection now. V8 sets the next limit only after a full collection, and the last one ran while the heap
 * was small, under V8's own growth (up to 4x for a small heap): without this the heap would fill that limit first.
 * `--expose-gc` set at run time installs `gc` in the contexts made after it, such as the one made here.
 */
function collectNow(): void {
  if (!collector) {
    setFlagsFromString('--expose-gc');
    collector = runInNewContext('gc') as () => void;
  }
  collector();
}

function apply(next: Mode): void {
  if (next === mode) return;
  mode = next;
  // 0 is V8's default: its own growth factor, from the heap's size and the collector's speed.
  setFlagsFromString(`--heap-growing-percent=${next === 'conservative' ? CONSERVATIVE_PERCENT : 0}`);
  if (next === 'conservative') collectNow();
}

function check(): void {
  apply(nextMode(mode, getHeapStatistics().used_heap_size, threshold));
}

/** The current mode (tests). */
export function heapGrowthMode(): Mode {
  return mode;
}

/**
 * Starts watching the heap (once per process, however many replicas hold it); the returned function lets go, and
 * the last holder's release restores V8's own growth. Does nothing when the operator set the flag. `largeHeapBytes`
 * (tests): the threshold, taken from the first holder.
 */
export function governHeapGrowth(options: { largeHeapBytes?: number } = {}): () => void {
  if (growthSetByOperator()) return () => {};
  holders++;
  if (holders === 1) {
    threshold = options.largeHeapBytes ?? LARGE_HEAP_BYTES;
    check();
    timer = setInterval(check, CHECK_EVERY_MS);
    timer.unref();
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    holders--;
    if (holders > 0) return;
    if (timer) clearInterval(timer);
    timer = null;
    apply('v8');
  };
}
