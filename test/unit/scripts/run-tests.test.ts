/**
 * `npm test` (scripts/run-tests.mjs) counts every test of every file. Each file runs in its own process and
 * reports through a pipe; `--test-force-exit` ends that process with `process.exit()` right after its last
 * test, which on Linux drops whatever the process had not yet written into the pipe (test/helpers/whole-report.cjs
 * says how). A file's later tests then vanish from the run without failing it; the runner, ended the same way,
 * loses the end of its own report. And the runner must read each file's report whole wherever the pipe cuts it
 * (test/helpers/report-reader.cjs).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const WHOLE_REPORT = join(ROOT, 'test/helpers/whole-report.cjs');

/**
 * Runs node with `args` from the repository's root; resolves with all it wrote to stdout, read as it comes.
 * A runner that received a cut report has been seen to spin at full CPU without end: after `limitMs` it is
 * killed, so the failure is this test's and no process is left behind.
 */
function run(
  args: string[],
  { limitMs = 300_000, pauseAt }: { limitMs?: number; pauseAt?: string } = {},
): Promise<{ stdout: Buffer; code: number | null }> {
  return new Promise((done, fail) => {
    // NODE_TEST_CONTEXT marks this process as a file run by the test runner; a runner started with it would
    // report to this file's runner instead of running its own files.
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
    const chunks: Buffer[] = [];
    let paused = false;
    child.stdout.on('data', (chunk: Buffer) => {
      // A reader that falls behind near the end, as one on a busy machine does: once `pauseAt` has come (the tail of
      // the previous piece too, in case the text spans two), nothing is read for 3 s.
      if (pauseAt !== undefined && !paused) {
        const seen = Buffer.concat([chunks.at(-1)?.subarray(-pauseAt.length) ?? Buffer.alloc(0), chunk]);
        if (seen.includes(pauseAt)) {
          paused = true;
          child.stdout.pause();
          setTimeout(() => child.stdout.resume(), 3_000);
        }
      }
      chunks.push(chunk);
    });
    const limit = setTimeout(() => child.kill('SIGKILL'), limitMs);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(limit);
      done({ stdout: Buffer.concat(chunks), code });
    });
  });
}

/** Writes 4 MiB to stdout in one synchronous loop, then exits at once, as the runner's force-exit does. */
const WRITE_THEN_EXIT = `
  const chunk = Buffer.alloc(1024, 120);
  for (let i = 0; i < 4096; i++) process.stdout.write(chunk);
  process.exit(0);
`;
const WRITTEN = 4 * 1024 * 1024;

describe('a test process ended by process.exit() delivers its whole report', () => {
  test('with the preload every byte written before the exit reaches the reader', async () => {
    const { stdout, code } = await run(['--require', WHOLE_REPORT, '-e', WRITE_THEN_EXIT]);
    assert.equal(code, 0);
    assert.equal(stdout.length, WRITTEN);
  });

  test('without it the exit drops what the pipe had not taken (why the preload exists)', async () => {
    const { stdout, code } = await run(['-e', WRITE_THEN_EXIT]);
    assert.equal(code, 0);
    assert.ok(stdout.length < WRITTEN, `all ${stdout.length} bytes arrived: Node now flushes a pipe at exit`);
  });
});

/** A test file of 30 suites of 100 tests whose long names make its report several MiB, far past what a pipe holds. */
function manyFile(dir: string, name: string): string {
  const file = join(dir, `${name}.test.ts`);
  writeFileSync(
    file,
    `import { describe, test } from 'node:test';
for (let s = 0; s < 30; s++) describe('suite ' + s + ' ${'s'.repeat(200)}', () => {
  for (let i = 0; i < 100; i++) test('test ' + i + ' ${'t'.repeat(400)}', () => {});
});
`,
  );
  return file;
}

describe('npm test counts every test of files that report a lot at once', () => {
  const dir = mkdtempSync(join(tmpdir(), 'reins-run-tests-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("the runner's own report, its summary last, reaches a reader that falls behind at the end", async () => {
    // The runner's --test-force-exit ends the runner too, with process.exit() once its reporter has closed: the
    // last of its report, still queued for a full pipe, was lost (the report cut mid-line, no summary, code 0).
    // Stopping to read five suites from the end leaves the pipe full when the runner gets there.
    const file = manyFile(dir, 'tail');
    const { stdout, code } = await run(['scripts/run-tests.mjs', file], { pauseAt: 'suite 25 ' });
    const text = stdout.toString();
    assert.equal(code, 0, text.slice(-2000));
    assert.match(text, /^ℹ tests 3000$/m, text.slice(-3000));
  });

  test('three files of 3,000 tests each: 9,000 reported', async () => {
    const files = [1, 2, 3].map((n) => manyFile(dir, `many-${n}`));
    const { stdout, code } = await run(['scripts/run-tests.mjs', ...files]);
    const text = stdout.toString();
    assert.equal(code, 0, text.slice(-2000));
    // The report's end (its summary) when a count is off: the start is 3,000 lines of one file.
    assert.match(text, /^ℹ tests 9000$/m, text.slice(-3000));
    assert.match(text, /^ℹ pass 9000$/m, text.slice(-3000));
  });
});

/** A test file that writes a frame of its report itself (`frame(item)`: test/helpers/report-frame.ts), then has one test. */
function reportWriter(body: string): string {
  return `import { test } from 'node:test';
import { frame } from ${JSON.stringify(join(ROOT, 'test/helpers/report-frame.ts'))};
${body}
test('the test after it', () => {});
`;
}

describe("npm test reads a file's report whole wherever the pipe cuts it", () => {
  const dir = mkdtempSync(join(tmpdir(), 'reins-run-tests-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('a frame whose length ends in 0xFF, delivered six bytes first', async () => {
    // Node 20's own reader sets that 0xFF aside as a possible frame start and joins the next piece ahead of it:
    // it then fails to read the frame ("Unable to deserialize cloned data") and loses the file's tests, or reads
    // lengths out of the middle of frames and spins without end (test/helpers/report-reader.cjs).
    const file = join(dir, 'split-frame.test.ts');
    writeFileSync(
      file,
      reportWriter(`
let bytes = Buffer.alloc(0);
for (let pad = 0; bytes.length === 0 || bytes.readUInt32BE(2) % 256 !== 0xff; pad++) {
  bytes = frame({ type: 'test:diagnostic', data: { nesting: 0, message: 'the split frame' + '.'.repeat(pad) } });
}
// Written synchronously (stdout blocks in test processes), so nothing of the file's own report comes between.
process.stdout.write(bytes.subarray(0, 6));
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
process.stdout.write(bytes.subarray(6));
`),
    );
    const { stdout, code } = await run(['scripts/run-tests.mjs', file], { limitMs: 120_000 });
    const text = stdout.toString();
    assert.equal(code, 0, text.slice(-2000));
    assert.match(text, /^ℹ the split frame\.*$/m, text.slice(-2000));
    assert.match(text, /^ℹ pass 1$/m, text.slice(-2000));
  });

  test('a report that ends inside a frame fails the run, naming the file', async () => {
    const file = join(dir, 'cut-report.test.ts');
    writeFileSync(
      file,
      reportWriter(`
// After the last of the file's own report: half a frame, as a process ended mid-write leaves it.
process.on('exit', () => {
  process.stdout.write(frame({ type: 'test:diagnostic', data: { nesting: 0, message: 'never whole' } }).subarray(0, 12));
});
`),
    );
    const { stdout, code } = await run(['scripts/run-tests.mjs', file], { limitMs: 120_000 });
    const text = stdout.toString();
    assert.equal(code, 1, text.slice(-2000));
    assert.ok(text.includes(`${file}: its report ended inside a message (12 bytes of it arrived)`), text.slice(-2000));
    assert.match(text, /^ℹ pass 1$/m, text.slice(-2000));
  });
});

