/** The `reins` CLI against an embedded store directory, then against a running server's API. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { loadConfig } from '../../../src/config/config.js';
import { startReplica } from '../../../src/server.js';
import { Client } from '../../helpers/harness.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'reins-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function reins(args: string[], env: Record<string, string> = {}) {
  try {
    const r = await run(process.execPath, ['--import', 'tsx', 'src/cli-main.ts', ...args], { env: { ...process.env, REINS_DATA_DIR: dir, DATABASE_URL: '', ...env } });
    return { code: 0, stdout: r.stdout.trim(), stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout.trim(), stderr: e.stderr };
  }
}

test('admin create, identity create, tier set and token create work on the store, then through the API', async () => {
  const admin = await reins(['admin', 'create', 'ops/root']);
  assert.equal(admin.code, 0, admin.stderr);
  assert.match(admin.stdout, /^reins_pat_/);

  assert.equal((await reins(['identity', 'create', 'eng/bot', '--kind', 'agent'])).code, 0);
  const set = await reins(['tier', 'set', 'eng/bot', 'T1']);
  assert.deepEqual(JSON.parse(set.stdout), { status: 'ok', tier: 'T1', effectiveTier: 'T1' });
  const key = await reins(['token', 'create', 'eng/bot', '--name', 'ci']);
  assert.match(key.stdout, /^reins_agent_/);

  const bad = await reins(['tier', 'set', 'eng/bot', 'T9']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /tier/);
  const usage = await reins(['identity', 'create', 'eng/x', '--kind', 'robot']);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /--kind/);

  // The server takes the directory over; the CLI now speaks to its API with the admin token.
  const replica = await startReplica(loadConfig({ HOST: '127.0.0.1', PORT: '0', REINS_DATA_DIR: dir }), { logger: false });
  try {
    const viaApi = await reins(['tier', 'set', 'eng/bot', ''], { REINS_URL: replica.url, REINS_TOKEN: admin.stdout });
    assert.equal(viaApi.code, 0, viaApi.stderr);
    assert.deepEqual(JSON.parse(viaApi.stdout), { status: 'ok', tier: '', effectiveTier: 'T2' });
    assert.equal(replica.tiers.resolve('eng/bot')?.autonomyTier, 'T2');
    const events = (await new Client(replica.url, admin.stdout).get('/api/v1/audit-events?action=identity.tier_set')).body.items;
    assert.deepEqual(events.map((e: { actor: { id: string } }) => e.actor.id), ['ops/root', 'system:cli']);
  } finally {
    await replica.close();
  }
});
