/**
 * The `reins` CLI on an embedded store directory, and against a running server's API; the directory's lock
 * between them. Every CLI run is its own process, so each test spawns few of them (at most three): the runner's
 * per-test limit must hold on a machine many times slower than a quiet one. Waits are on the processes' own
 * events (exit, a line of output), never on a clock.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../../src/config/config.js';
import { startReplica, type Replica } from '../../../src/app/server.js';
import { LOCK_FILE } from '../../../src/store/data-dir-lock.js';
import { PgliteDb } from '../../../src/store/pglite.js';
import { Client } from '../../helpers/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'reins-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));
/** The environment of every child: this directory's embedded store, whatever store the suite runs on. */
const childEnv = (env: Record<string, string> = {}) => ({ ...process.env, REINS_DATA_DIR: dir, DATABASE_URL: '', REINS_URL: '', REINS_TOKEN: '', ...env });

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function reins(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'src/cli-main.ts', ...args], { env: childEnv(env) }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout: stdout.trim(), stderr });
    });
  });
}

/** Starts a child and resolves once a line of its output matches, or rejects when it exits first. */
function startChild(args: string[], ready: RegExp, env: Record<string, string> = {}): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const line = output.split('\n').find((l) => ready.test(l));
      if (line !== undefined) resolve({ child, line });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited (${code}) before ready: ${output}`)));
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

let adminToken = '';

test('on the embedded store: admin create makes the store and prints the first token', async () => {
  const admin = await reins(['admin', 'create', 'ops/root']);
  assert.equal(admin.code, 0, admin.stderr);
  assert.match(admin.stdout, /^reins_pat_/);
  adminToken = admin.stdout;
  // The lock went with the CLI's exit.
  assert.equal(existsSync(join(dir, LOCK_FILE)), false);
});

test('a bad option exits 2 before opening anything', async () => {
  const usage = await reins(['identity', 'create', 'eng/x', '--kind', 'robot']);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /--kind/);
});

describe('while a server holds the directory', () => {
  let replica: Replica;
  before(async () => {
    replica = await startReplica(loadConfig({ HOST: '127.0.0.1', PORT: '0', REINS_DATA_DIR: dir }), { logger: false });
  });
  after(() => replica.close());
  const api = () => ({ REINS_URL: replica.url, REINS_TOKEN: adminToken });

  test('the CLI refuses the directory and names --url; with --url it creates through the API', async () => {
    const refused = await reins(['identity', 'create', 'eng/bot', '--kind', 'agent']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /in use by process \d+/);
    assert.match(refused.stderr, /--url http/);
    assert.match(refused.stderr, /REINS_URL/);

    const created = await reins(['identity', 'create', 'eng/bot', '--kind', 'agent'], api());
    assert.equal(created.code, 0, created.stderr);
    assert.equal(JSON.parse(created.stdout).id, 'eng/bot');
    // The refused run wrote nothing: eng/bot was created once, through the API, by the admin.
    const events = (await new Client(replica.url, adminToken).get('/api/v1/audit-events?action=identity.create')).body.items;
    const createdBy = events.map((e: { subject: string; actor: { id: string } }) => `${e.subject} by ${e.actor.id}`).sort();
    assert.deepEqual(createdBy, ['eng/bot by ops/root', 'ops/root by system:cli']);
  });

  test('tier set and token create through the API; a bad tier is refused', async () => {
    const set = await reins(['tier', 'set', 'eng/bot', 'T1'], api());
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(JSON.parse(set.stdout), { status: 'ok', tier: 'T1', effectiveTier: 'T1' });
    assert.equal(replica.tiers.resolve('eng/bot')?.autonomyTier, 'T1');

    const key = await reins(['token', 'create', 'eng/bot', '--name', 'ci'], api());
    assert.match(key.stdout, /^reins_agent_/);

    const bad = await reins(['tier', 'set', 'eng/bot', 'T9'], api());
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /tier/);
  });
});

test('the embedded store again once the server stopped: the CLI acts as system:cli', async () => {
  const cleared = await reins(['tier', 'set', 'eng/bot', '']);
  assert.equal(cleared.code, 0, cleared.stderr);
  assert.deepEqual(JSON.parse(cleared.stdout), { status: 'ok', tier: '', effectiveTier: 'T2' });
});

test('a second server on a held directory refuses to start; the first releases the lock on SIGTERM', async () => {
  const { child: first } = await startChild(['src/main.ts'], /reins is listening/, { HOST: '127.0.0.1', PORT: '0' });
  try {
    const second = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: childEnv({ HOST: '127.0.0.1', PORT: '0' }), stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    second.stderr!.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    assert.equal(await exited(second), 1);
    assert.match(stderr, new RegExp(`failed to start: the embedded store .* is in use by process ${first.pid}`));
  } finally {
    first.kill('SIGTERM');
  }
  assert.equal(await exited(first), 0);
  assert.equal(existsSync(join(dir, LOCK_FILE)), false);
});

test('a lock left by a holder killed with -9 is taken over', async () => {
  const holder = `
    const { PgliteDb } = await import(${JSON.stringify(new URL('../../../src/store/pglite.ts', import.meta.url).href)});
    await PgliteDb.open(process.env.REINS_DATA_DIR, { inProcess: true });
    console.log('holding');
    setInterval(() => {}, 60_000);
  `;
  const { child } = await startChild(['--input-type=module', '-e', holder], /^holding$/);
  child.kill('SIGKILL');
  await exited(child);
  assert.equal(existsSync(join(dir, LOCK_FILE)), true, 'kill -9 leaves the lock file behind');

  const list = await reins(['identity', 'list']);
  assert.equal(list.code, 0, list.stderr);
  assert.deepEqual(JSON.parse(list.stdout).map((i: { id: string }) => i.id).sort(), ['eng/bot', 'ops/root']);
  assert.equal(existsSync(join(dir, LOCK_FILE)), false);

  // And the tier changes of the runs above, by their actors: the admin through the API, the CLI on the store.
  const db = await PgliteDb.open(dir, { inProcess: true });
  try {
    const r = await db.query<{ actor_id: string }>(`SELECT actor_id FROM audit_events WHERE action = 'identity.tier_set' ORDER BY id`);
    assert.deepEqual(r.rows.map((e) => e.actor_id), ['ops/root', 'system:cli']);
  } finally {
    await db.close();
  }
});
