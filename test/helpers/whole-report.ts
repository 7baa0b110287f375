/**
 * Loaded into every test process by scripts/run-tests.mjs (`--import`), after tsx.
 *
 * Each test file runs in its own process and sends its report to the runner through a pipe on stdout. The
 * runner's `--test-force-exit` ends that process with `process.exit()` as soon as its last test has ended.
 * On Linux Node leaves a piped stdout non-blocking: once the pipe's 64 KiB are full (the runner, reading four
 * files' pipes on two busy cores, falls behind), further writes wait in the process's own queue, and
 * `process.exit()` drops them. The file's later tests then never reach the runner: not failed, not counted,
 * and the run passes without them (seen: a CI run that reported 15 tests fewer than the run before, the rest
 * of one file's suite missing after its first two tests; Node's own report: nodejs/node#64833). Once, reproducing
 * it, the runner that received such a cut report spun at full CPU and never ended (nodejs/node#62693).
 *
 * A blocking stdout makes each write wait until the pipe takes it, so everything the file reported is in the
 * pipe before the process exits. stderr likewise, for what a failing test prints.
 */
for (const stream of [process.stdout, process.stderr]) {
  const handle = (stream as unknown as { _handle?: { setBlocking?: (blocking: boolean) => number } })._handle;
  handle?.setBlocking?.(true);
}
