/**
 * The server side of a benchmark child (processes.ts's `startServer` is the runner's side): the line that says where
 * it listens, and its end with the runner.
 */

/** `{"ready":"<url>"}` on stdout: what `startServer` waits for. */
export function announceReady(url: string): void {
  process.stdout.write(`${JSON.stringify({ ready: url })}\n`);
}

/**
 * Ends this process on SIGTERM, or when the runner that holds its stdin goes away, however the runner died; `close`
 * runs first when given (a Reins replica drains and closes its store).
 */
export function endWithRunner(close?: () => Promise<void>): void {
  let ending = false;
  const end = () => {
    if (ending) return;
    ending = true;
    if (!close) process.exit(0);
    close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', end);
  process.stdin.on('end', end).resume();
}
