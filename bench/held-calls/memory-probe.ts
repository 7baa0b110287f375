/**
 * Preloaded into replica A (node --import): on SIGUSR2 it prints {"mem":{...}} (process.memoryUsage(), bytes) on
 * stdout, so the run can tell how much of A's resident memory is V8 heap. A signal handler only: no timer, no
 * sampling, nothing runs until the run asks.
 */
process.on('SIGUSR2', () => {
  process.stdout.write(`${JSON.stringify({ mem: process.memoryUsage() })}\n`);
});
