/** Restarting on the same PGlite directory keeps identities, tiers and tokens. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { loadConfig } from '../../../src/config/config.js';
import { startReplica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, enc } from '../../helpers/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'reins-restart-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const config = () => loadConfig({ HOST: '127.0.0.1', PORT: '0', REINS_DATA_DIR: dir, REINS_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN });

test('identities, tiers and tokens survive a restart on the same PGlite directory', async () => {
  let replica = await startReplica(config(), { logger: false });
  let admin = new Client(replica.url, ADMIN_TOKEN);
  await admin.post('/api/v1/identities', { id: 'eng/kept', kind: 'agent' });
  await admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/kept')}`, { tier: 'T4' });
  await admin.post('/api/v1/identities', { id: 'eng/dev', kind: 'developer', role: 'viewer' });
  const minted = await admin.post('/api/v1/tokens', { identityId: 'eng/dev', name: 'kept' });
  const revoked = await admin.post('/api/v1/tokens', { identityId: 'eng/dev', name: 'revoked' });
  await admin.delete(`/api/v1/tokens/${revoked.body.id}`);
  await replica.close();

  replica = await startReplica(config(), { logger: false });
  admin = new Client(replica.url, ADMIN_TOKEN);
  try {
    assert.deepEqual(replica.tiers.resolve('eng/kept'), { autonomyTier: 'T4', autonomyLevel: 4, explicit: true });
    const detail = await admin.get(`/api/v1/identities/detail?id=${enc('eng/kept')}`);
    assert.equal(detail.body.autonomyTier, 'T4');
    assert.equal((await admin.with(minted.body.token).get('/api/v1/identities')).status, 200, 'token still valid');
    assert.equal((await admin.with(revoked.body.token).get('/api/v1/identities')).status, 401, 'revocation kept');
    const admins = await replica.db.query(`SELECT id FROM identities WHERE role = 'admin'`);
    assert.equal(admins.rows.length, 1, 'the bootstrap admin is not created twice');
    const events = (await admin.get('/api/v1/audit-events?action=identity.tier_set')).body.items;
    assert.equal(events.length, 1);
  } finally {
    await replica.close();
  }
});
