#!/usr/bin/env node
// `npm test`: every test file under test/ in one run of Node's test runner (TypeScript through tsx).
// Integration suites run themselves once per store (PGlite and PostgreSQL); `--store pglite|postgres`
// narrows that. Extra arguments are test files or name patterns (`--test-name-pattern`).
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const env = { ...process.env };
const storeAt = args.indexOf('--store');
if (storeAt >= 0) {
  env.REINS_TEST_STORES = args[storeAt + 1];
  args.splice(storeAt, 2);
}

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return find(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
}

const explicit = args.filter((a) => a.endsWith('.ts'));
const passThrough = args.filter((a) => !a.endsWith('.ts'));
const files = explicit.length > 0 ? explicit : find('test').sort();
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=4', '--test-timeout=120000', ...passThrough, ...files],
  { stdio: 'inherit', env },
);
process.exit(result.status ?? 1);
