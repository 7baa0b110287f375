/**
 * Loaded by scripts/run-tests.mjs (`--require`) into the test runner's own process and into every test process it
 * starts. `--require`, not `--import`: Node 20 runs `--import` modules in the test processes only, never in the
 * runner, whose report needs this as much.
 *
 * `--test-force-exit` ends each test process with `process.exit()` as soon as its last test has ended, and the
 * runner the same way once every file has reported and its reporter has closed. On Linux Node leaves a piped stdout
 * non-blocking: once the pipe's 64 KiB are full (its reader, on two busy cores, falls behind), further writes wait
 * in the process's own queue, and `process.exit()` drops them.
 * - In a test process: the file's later tests never reach the runner: not failed, not counted, and the run passes
 *   without them (seen: a CI run that reported 15 tests fewer than the run before, the rest of one file's suite
 *   missing after its first two tests; Node's own report: nodejs/node#64833).
 * - In the runner: the end of the run's report, its summary included, never reaches `npm test`'s caller (seen: 5 runs
 *   in 12 of three files of 3,000 tests beside three busy cores ended with code 0 and the report cut mid-line, 16-18
 *   KB still queued when the runner called `process.exit()`; once in CI).
 *
 * A blocking stdout makes each write wait until the pipe takes it, so everything reported is in the pipe before
 * the process exits. stderr likewise, for what a failing test prints.
 */
'use strict';

for (const stream of [process.stdout, process.stderr]) {
  const handle = stream._handle;
  if (handle && typeof handle.setBlocking === 'function') handle.setBlocking(true);
}
