/** The fixed command line and the environment: pairs of --replay/--source, --once, and errors naming the setting. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, HELP, loadConfig, parseArgs } from '../../src/sensor/config.js';

const ENV = { REINS_URL: 'http://reins:8080', REINS_SENSOR_TOKEN: 'rs_x', NODE_NAME: 'node-a' };

test('several --replay/--source pairs, --once, --help', () => {
  assert.deepEqual(parseArgs(['--replay', 'a.jsonl', '--source', 'trace_dns', '--replay', 'b.jsonl', '--source', 'trace_tcp', '--once']), {
    help: false,
    once: true,
    replays: [{ file: 'a.jsonl', gadget: 'trace_dns' }, { file: 'b.jsonl', gadget: 'trace_tcp' }],
  });
  assert.equal(parseArgs(['--help']).help, true);
  assert.deepEqual(parseArgs([]), { help: false, once: false, replays: [] });
});

test('bad command lines are refused with the reason', () => {
  const refused: Array<[string[], RegExp]> = [
    [['--replay', 'a.jsonl'], /--replay a.jsonl has no --source/],
    [['--source', 'trace_dns'], /--source must follow a --replay FILE/],
    [['--replay', 'a', '--source', 'trace_http'], /--source trace_http: must be one of trace_dns, trace_tcp, trace_open, trace_exec/],
    [['--once'], /--once applies to --replay only/],
    [['--replay'], /--replay needs a value/],
    [['--bogus'], /unknown argument --bogus/],
  ];
  for (const [argv, message] of refused) assert.throws(() => parseArgs(argv), (err: Error) => err instanceof ConfigError && message.test(err.message), argv.join(' '));
});

test('environment: defaults, required settings, bad values named', () => {
  const c = loadConfig(ENV, { replays: [], once: false });
  assert.equal(c.metricsPort, 9090);
  assert.equal(c.flushMs, 10_000);
  assert.equal(c.statusMs, 30_000);
  assert.equal(c.lsmPath, '/sys/kernel/security/lsm');
  assert.deepEqual(c.families, ['dns', 'network', 'open', 'exec']);
  assert.deepEqual(c.ig, { path: 'ig', version: 'v0.55.1', repository: 'ghcr.io/inspektor-gadget/gadget', extraArgs: [], restartMaxMs: 60_000 });
  for (const name of ['REINS_URL', 'REINS_SENSOR_TOKEN', 'NODE_NAME']) {
    assert.throws(() => loadConfig({ ...ENV, [name]: '' }, { replays: [], once: false }), new RegExp(`${name} is required`));
  }
  assert.throws(() => loadConfig({ ...ENV, METRICS_PORT: 'x' }, { replays: [], once: false }), /METRICS_PORT/);
  assert.throws(() => loadConfig({ ...ENV, REINS_URL: 'reins:8080' }, { replays: [], once: false }), /REINS_URL: must start with http/);
  assert.throws(() => loadConfig({ ...ENV, REINS_SENSOR_FAMILIES: 'dns,files' }, { replays: [], once: false }), /unknown family "files"/);
  assert.deepEqual(loadConfig({ ...ENV, REINS_SENSOR_FAMILIES: 'dns, network', IG_EXTRA_ARGS: ' --host  --verify-image=false ' }, { replays: [], once: false }).ig.extraArgs, ['--host', '--verify-image=false']);
});

test('--help prints every setting the sensor reads from the environment, and exits 0', async () => {
  const { spawnSync } = await import('node:child_process');
  const { readFileSync } = await import('node:fs');
  const { fileURLToPath } = await import('node:url');
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/sensor/main.ts', '--help'], { cwd: root, env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout, HELP);
  // Every variable config.ts reads (env.NAME, or a name given to its required()/int() helpers).
  const source = readFileSync(new URL('../../src/sensor/config.ts', import.meta.url), 'utf8');
  const read = new Set([...source.matchAll(/env\.([A-Z][A-Z0-9_]+)|(?:required|int)\('([A-Z][A-Z0-9_]+)'/g)].map((m) => m[1] ?? m[2]));
  assert.ok(read.size >= 15, [...read].join(' '));
  for (const name of [...read, 'HOST_ROOT']) assert.match(HELP, new RegExp(`\\b${name}\\b`), `${name} is missing from --help`);
});
