/**
 * The check a held call passes once more before it is sent upstream (credential-cache.ts `revokedSince`): the asks of
 * one event-loop turn share one read of the store, sent after the last of them; an ask made once a read has left
 * gets a read of its own, so a revocation between the two is seen.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CredentialCache } from '../../../src/governance/credential-cache.js';
import type { Db, QueryResult } from '../../../src/store/db.js';
import { migrate } from '../../../src/store/migrate.js';
import { PgliteDb } from '../../../src/store/pglite.js';

let db: PgliteDb;
before(async () => {
  db = await PgliteDb.open('memory');
  await migrate(db);
  await db.query(`INSERT INTO identities (id, kind, autonomy_tier) VALUES ('eng/bot', 'agent', 'T3'), ('eng/other', 'agent', 'T3')`);
  await db.query(
    `INSERT INTO tokens (id, kind, identity_id, name, secret_hash, display_prefix)
     VALUES ('tok_bot', 'agent', 'eng/bot', 'k', 'h1', 'rk_a'), ('tok_other', 'agent', 'eng/other', 'k', 'h2', 'rk_b')`,
  );
});
after(() => db.close());

/** The store, counting the reads `revokedSince` sends and holding each one back until `release`. */
function countingStore(): { store: Db; reads: () => number; hold: () => void; release: () => void } {
  let reads = 0;
  let gate: Promise<void> | null = null;
  let open: () => void = () => {};
  const store = Object.assign(Object.create(db) as Db, {
    async query<T>(sql: string, params?: readonly unknown[]): Promise<QueryResult<T>> {
      if (sql.includes('token_ok')) reads++;
      const r = await db.query<T>(sql, params);
      if (gate) await gate;
      return r;
    },
  });
  return {
    store,
    reads: () => reads,
    hold: () => (gate = new Promise((r) => (open = r))),
    release: () => {
      gate = null;
      open();
    },
  };
}

test('the asks of one turn for one caller share one read; another caller gets its own', async () => {
  const s = countingStore();
  const cache = new CredentialCache(s.store, { listen: false });
  const answers = await Promise.all([
    ...Array.from({ length: 20 }, () => cache.revokedSince('tok_bot', 'eng/bot')),
    cache.revokedSince('tok_other', 'eng/other'),
  ]);
  assert.deepEqual(new Set(answers), new Set([null]));
  assert.equal(s.reads(), 2, 'one read for the twenty asks about tok_bot, one for tok_other');
});

test('an ask made after a read has left is not answered by it: a revocation between them is seen', async () => {
  const s = countingStore();
  const cache = new CredentialCache(s.store, { listen: false });
  s.hold();
  const first = cache.revokedSince('tok_bot', 'eng/bot');
  // Wait until the first read has left (it is held back before answering).
  while (s.reads() === 0) await new Promise((r) => setImmediate(r));
  await db.query(`UPDATE tokens SET revoked_at = now() WHERE id = 'tok_bot'`);
  const second = cache.revokedSince('tok_bot', 'eng/bot');
  s.release();
  assert.equal(await first, null, 'read before the revocation');
  assert.match((await second) ?? '', /revoked/, 'its own read, after the revocation');
  assert.equal(s.reads(), 2);
  await db.query(`UPDATE tokens SET revoked_at = NULL WHERE id = 'tok_bot'`);
});

test('a deleted agent is named', async () => {
  const cache = new CredentialCache(db, { listen: false });
  assert.match((await cache.revokedSince('tok_bot', 'eng/gone')) ?? '', /agent identity eng\/gone was deleted/);
});
