/**
 * `npm test` (scripts/run-tests.mjs) counts every test of every file. Each file runs in its own process and
 * reports through a pipe; `--test-force-exit` ends that process with `process.exit()` right after its last
 * test, which on Linux drops whatever the process had not yet written into the pipe (test/helpers/whole-report.ts
 * says how). A file's later tests then vanish from the run without failing it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const WHOLE_REPORT = join(ROOT, 'test/helpers/whole-report.ts');

/**
 * Runs node with `args` from the repository's root; resolves with all it wrote to stdout, read as it comes.
 * A runner that received a cut report has been seen to spin at full CPU without end: after `limitMs` it is
 * killed, so the failure is this test's and no process is left behind.
 */
function run(args: string[], limitMs = 300_000): Promise<{ stdout: Buffer; code: number | null }> {
  return new Promise((done, fail) => {
    // NODE_TEST_CONTEXT marks this process as a file run by the test runner; a runner started with it would
    // report to this file's runner instead of running its own files.
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
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
    const { stdout, code } = await run(['--import', 'tsx', '--import', WHOLE_REPORT, '-e', WRITE_THEN_EXIT]);
    assert.equal(code, 0);
    assert.equal(stdout.length, WRITTEN);
  });

  test('without it the exit drops what the pipe had not taken (why the preload exists)', async () => {
    const { stdout, code } = await run(['-e', WRITE_THEN_EXIT]);
    assert.equal(code, 0);
    assert.ok(stdout.length < WRITTEN, `all ${stdout.length} bytes arrived: Node now flushes a pipe at exit`);
  });
});

describe('npm test counts every test of files that report a lot at once', () => {
  const dir = mkdtempSync(join(tmpdir(), 'reins-run-tests-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('three files of 3,000 tests each: 9,000 reported', async () => {
    const files = [1, 2, 3].map((n) => {
      const file = join(dir, `many-${n}.test.ts`);
      // Long names make each file's report several MiB, far past what a pipe holds.
      writeFileSync(
        file,
        `import { describe, test } from 'node:test';
for (let s = 0; s < 30; s++) describe('suite ' + s + ' ${'s'.repeat(200)}', () => {
  for (let i = 0; i < 100; i++) test('test ' + i + ' ${'t'.repeat(400)}', () => {});
});
`,
      );
      return file;
    });
    const { stdout, code } = await run(['scripts/run-tests.mjs', ...files]);
    const text = stdout.toString();
    assert.equal(code, 0, text.slice(-2000));
    // The report's end (its summary) when a count is off: the start is 3,000 lines of one file.
    assert.match(text, /^ℹ tests 9000$/m, text.slice(-3000));
    assert.match(text, /^ℹ pass 9000$/m, text.slice(-3000));
  });
});
