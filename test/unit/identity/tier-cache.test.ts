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

test('owners: direct ids and namespace rules bind; a change without owners keeps them; a late older list cannot revive a deleted developer', async () => {
  await db.query(`INSERT INTO identities (id, kind) VALUES ('eng/b', 'agent')`);
  const cache = new TierCache(db, { refreshSeconds: 30, listen: false });
  await cache.start();
  try {
    assert.equal(cache.isBound('eng/b', 'eng/alice'), false, 'no owners: nobody is bound');
    const rev = BigInt(await revisionOf('eng/b'));
    cache.apply({ id: 'eng/b', op: 'upsert', kind: 'agent', tier: null, owners: ['eng/alice', 'qa/*'], revision: String(rev + 10n) });
    assert.ok(cache.isBound('eng/b', 'eng/alice'));
    assert.ok(cache.isBound('eng/b', 'qa/anyone'));
    assert.equal(cache.isBound('eng/b', 'eng/bob'), false);
    assert.equal(cache.isBound('eng/b', 'qa'), false);
    assert.equal(cache.isBound('eng/b', 'qax/anyone'), false, 'a namespace rule is the whole namespace, not a prefix');
    assert.equal(cache.isBound('eng/nobody', 'eng/alice'), false, 'no such agent');
    // A sender that does not know owners (a tier change from an older replica) leaves them as they were.
    cache.apply({ id: 'eng/b', op: 'upsert', kind: 'agent', tier: 'T4', revision: String(rev + 11n) });
    assert.ok(cache.isBound('eng/b', 'eng/alice'));
    assert.equal(cache.resolve('eng/b')?.autonomyTier, 'T4');
    // eng/alice is deleted at rev+20; the list above (rev+11) predates it, so it no longer binds her namesake.
    cache.apply({ id: 'eng/alice', op: 'delete', kind: 'developer', tier: null, revision: String(rev + 20n) });
    assert.equal(cache.isBound('eng/b', 'eng/alice'), false);
    assert.ok(cache.isBound('eng/b', 'qa/anyone'));
    // An owners list announced after the deletion (she was re-created and added again) counts.
    cache.apply({ id: 'eng/b', op: 'upsert', kind: 'agent', tier: 'T4', owners: ['eng/alice'], revision: String(rev + 30n) });
    assert.ok(cache.isBound('eng/b', 'eng/alice'));
  } finally {
    await cache.stop();
  }
});
