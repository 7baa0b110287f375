#!/usr/bin/env node
// `npm test`: every test file under test/ in one run of Node's test runner (TypeScript through tsx).
// Integration suites run themselves once per store (PGlite and PostgreSQL); `--store pglite|postgres`
// narrows that. Extra arguments are test files or name patterns (`--test-name-pattern`).
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const env = { ...process.env };
const storeAt = args.indexOf('--store');
if (storeAt >= 0) {
  env.REINS_TEST_STORES = args[storeAt + 1];
  args.splice(storeAt, 2);
}

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    // test/outside-clients/node_modules holds the Node 22 clients (Claude Code, Codex, the MCP conformance suite).
    if (name === 'node_modules') return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return find(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
}

const explicit = args.filter((a) => a.endsWith('.ts'));
const passThrough = args.filter((a) => !a.endsWith('.ts'));
const files = explicit.length > 0 ? explicit : find('test').sort();

// The time limit turns a hang into a failure. Node applies it to each test file as a whole and to each test
// in it alike, so it must fit the longest file on a loaded machine (the approval races: 200 rounds on two
// replicas, about a minute when the two cores are shared), with room to spare: a test that fails does so
// long before it, through its own waits (30 s) and the bounded closes of replicas and fakes. 600 s: the files that
// start real processes (the CLI on the embedded store, Claude Code, the conformance suite, two replicas shut down
// with SIGTERM) took 190-260 s of the former 300 s on a machine at load average 20-30, with no test failing.
const FILE_LIMIT_MS = 600_000;
// Every test process loads this after tsx: failed `assert.ok` calls without a message report at once.
const assertOk = new URL('../test/helpers/assert-ok.ts', import.meta.url).href;
// The runner and every test process load this: a report reaches its reader whole before `--test-force-exit` ends
// the process that wrote it. `--require`, because Node 20 runs `--import` modules in the test processes only.
const wholeReport = fileURLToPath(new URL('../test/helpers/whole-report.cjs', import.meta.url));
// The runner reads each file's report with this instead of Node 20's own reader, which can lose its place in a
// report and then spin without end (the file says how). It replaces a method of the runner's internals, hence
// `--expose-internals`.
const reportReader = fileURLToPath(new URL('../test/helpers/report-reader.cjs', import.meta.url));
// The whole run's limit: the suite takes 13-20 minutes here. Node's runner has been seen to spin at full CPU without
// end when it lost its place in a file's report (nodejs/node#62693; SIGTERM does not stop it): should anything
// still hang, past this the runner is killed and the run fails, instead of holding CI until its own limit.
const RUN_LIMIT_MS = 60 * 60_000;
const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--import',
    assertOk,
    '--require',
    wholeReport,
    '--expose-internals',
    '--require',
    reportReader,
    '--test',
    '--test-reporter=spec',
    '--test-concurrency=4',
    `--test-timeout=${FILE_LIMIT_MS}`,
    // A file whose tests all ended exits even if a failed test left a server or a timer behind: the failure
    // is reported, not turned into a timeout.
    '--test-force-exit',
    ...passThrough,
    ...files,
  ],
  { stdio: 'inherit', env, timeout: RUN_LIMIT_MS, killSignal: 'SIGKILL' },
);
if (result.error?.code === 'ETIMEDOUT') {
  console.error(`npm test: the test runner ran past ${RUN_LIMIT_MS / 60_000} minutes and was killed`);
}
process.exit(result.status ?? 1);
