/** The tier cache never applies an older value over a newer one, whichever path delivers it first. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TierCache } from '../../../src/identity/tier-cache.js';
import type { Db, QueryResult } from '../../../src/store/db.js';
import { migrate } from '../../../src/store/migrate.js';
import { PgliteDb } from '../../../src/store/pglite.js';

let db: PgliteDb;
before(async () => {
  db = await PgliteDb.open('memory');
  await migrate(db);
  await db.query(`INSERT INTO identities (id, kind, autonomy_tier) VALUES ('eng/a', 'agent', 'T1')`);
});
after(() => db.close());

const revisionOf = async (id: string) => (await db.query<{ r: string }>('SELECT revision::text AS r FROM identities WHERE id = $1', [id])).rows[0]!.r;

test('an older revision is ignored; a newer one applies', async () => {
  const cache = new TierCache(db, { refreshSeconds: 30, listen: false });
  await cache.start();
  try {
    const rev = BigInt(await revisionOf('eng/a'));
    cache.apply({ id: 'eng/a', op: 'upsert', kind: 'agent', tier: 'T4', revision: String(rev - 1n) });
    assert.equal(cache.resolve('eng/a')?.autonomyTier, 'T1');
    cache.apply({ id: 'eng/a', op: 'upsert', kind: 'agent', tier: 'T4', revision: String(rev + 1n) });
    assert.equal(cache.resolve('eng/a')?.autonomyTier, 'T4');
  } finally {
    await cache.stop();
  }
});

test('a change announced while a re-read is in flight survives that re-read', async () => {
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => (release = r));
  let gated = false;
  // The re-read's snapshot is taken, then held back while a newer change arrives by NOTIFY.
  const slow: Db = Object.assign(Object.create(db) as Db, {
    async query<T>(sql: string, params?: readonly unknown[]): Promise<QueryResult<T>> {
      const r = await db.query<T>(sql, params);
      if (gated) await gate;
      return r;
    },
  });
  const cache = new TierCache(slow, { refreshSeconds: 30, listen: false });
  await cache.start();
  try {
    gated = true;
    const reload = cache.reload();
    await db.query(`UPDATE identities SET autonomy_tier = 'T3', revision = nextval('identity_revision_seq') WHERE id = 'eng/a'`);
    cache.apply({ id: 'eng/a', op: 'upsert', kind: 'agent', tier: 'T3', revision: await revisionOf('eng/a') });
    release();
    await reload;
    assert.equal(cache.resolve('eng/a')?.autonomyTier, 'T3', 'the stale snapshot must not win');
  } finally {
    await cache.stop();
  }
});

test('unknown ids resolve to null (not an agent), deletes remove the entry', async () => {
  const cache = new TierCache(db, { refreshSeconds: 30, listen: false });
  await cache.start();
  try {
    assert.equal(cache.resolve('eng/nobody'), null);
    cache.apply({ id: 'eng/a', op: 'delete', kind: 'agent', tier: null, revision: String(BigInt(await revisionOf('eng/a')) + 10n) });
    assert.equal(cache.resolve('eng/a'), null);
  } finally {
    await cache.stop();
  }
});
