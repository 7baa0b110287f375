/**
 * The gateway's credential cache (credential-cache.ts) past its TTL: the calls go on with the entry while one
 * re-read of the store runs beside them, and what that re-read finds (a revocation whose announcement was lost)
 * applies from its answer on. A read that was under way when a revocation was announced is not kept.
 */
import assert from 'node:assert/strict';
import { after, before, mock, test } from 'node:test';
import { CredentialCache } from '../../../src/governance/credential-cache.js';
import { hashSecret } from '../../../src/identity/tokens.js';
import type { Db, QueryResult } from '../../../src/store/db.js';
import { migrate } from '../../../src/store/migrate.js';
import { PgliteDb } from '../../../src/store/pglite.js';

const SECRET = 'rk_agent_secret_for_the_cache_test';
const TTL_MS = 40;

let db: PgliteDb;
before(async () => {
  db = await PgliteDb.open('memory');
  await migrate(db);
  await db.query(`INSERT INTO identities (id, kind, autonomy_tier) VALUES ('eng/bot', 'agent', 'T3')`);
  await db.query(
    `INSERT INTO tokens (id, kind, identity_id, name, secret_hash, display_prefix) VALUES ('tok_bot', 'agent', 'eng/bot', 'k', $1, 'rk_a')`,
    [hashSecret(SECRET)],
  );
  // The cache's clock (Date.now) moves only when a test moves it: an entry is past its TTL exactly when the test says,
  // never because a busy machine was slow between two lines (a renewed entry read 40 ms later was past it again).
  mock.timers.enable({ apis: ['Date'], now: Date.now() });
});
after(async () => {
  mock.timers.reset();
  await db.close();
});

/**
 * The store, counting the credential reads sent and answered, each held back while `hold` is on; `reached` resolves
 * once a count reaches a figure (an event, not a poll: a polling loop would spin a core the store's thread needs).
 */
function countingStore(): {
  store: Db;
  sent: () => number;
  answered: () => number;
  reached: (count: () => number, n: number) => Promise<void>;
  hold: () => void;
  release: () => void;
} {
  let sent = 0;
  let answered = 0;
  let gate: Promise<void> | null = null;
  let open: () => void = () => {};
  const waiters = new Set<() => void>();
  const changed = () => {
    for (const check of [...waiters]) check();
  };
  const store = Object.assign(Object.create(db) as Db, {
    async query<T>(sql: string, params?: readonly unknown[]): Promise<QueryResult<T>> {
      const credentialRead = sql.includes('secret_hash');
      if (credentialRead) {
        sent++;
        changed();
      }
      const r = await db.query<T>(sql, params);
      if (gate) await gate;
      if (credentialRead) {
        answered++;
        // After this answer has reached the cache: the count's waiters see what it did with it.
        queueMicrotask(changed);
      }
      return r;
    },
  });
  return {
    store,
    sent: () => sent,
    answered: () => answered,
    reached: (count, n) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (count() < n) return;
          waiters.delete(check);
          // A turn later: the cache has taken the answer that moved the count.
          setImmediate(resolve);
        };
        waiters.add(check);
        check();
      }),
    hold: () => (gate = new Promise((r) => (open = r))),
    release: () => {
      gate = null;
      open();
    },
  };
}

/** Past the entry's TTL: the cache's clock moved on by more than TTL_MS since the entry was read. */
const pastTtl = () => mock.timers.tick(TTL_MS + 10);

test('past the TTL the calls go on with the entry while one re-read runs', async () => {
  const s = countingStore();
  const cache = new CredentialCache(s.store, { listen: false, ttlMs: TTL_MS });
  assert.equal((await cache.authenticate(SECRET))?.tokenId, 'tok_bot');
  assert.equal(s.sent(), 1);
  pastTtl();
  s.hold();
  for (let i = 0; i < 20; i++) assert.equal(cache.cached(SECRET)?.tokenId, 'tok_bot', 'served from the entry, without a promise');
  assert.equal((await cache.authenticate(SECRET))?.tokenId, 'tok_bot', 'authenticate does not wait for the re-read either');
  assert.equal(s.sent(), 2, 'one re-read for all the calls past the TTL');
  s.release();
  await s.reached(s.answered, 2);
  assert.equal(cache.cached(SECRET)?.tokenId, 'tok_bot');
  assert.equal(s.sent(), 2, 'the re-read renewed the entry: no read for the next call');
});

test('a revocation whose announcement was lost applies once the re-read answers', async () => {
  const s = countingStore();
  const cache = new CredentialCache(s.store, { listen: false, ttlMs: TTL_MS });
  try {
    assert.ok(await cache.authenticate(SECRET));
    await db.query(`UPDATE tokens SET revoked_at = now() WHERE id = 'tok_bot'`);
    pastTtl();
    // The call that finds the entry past its TTL still goes on with it (as it would have within the TTL)...
    assert.equal(cache.cached(SECRET)?.tokenId, 'tok_bot');
    await s.reached(s.answered, 2);
    // ...and from the re-read's answer on, the token is refused.
    assert.equal(cache.cached(SECRET), undefined);
    assert.equal(await cache.authenticate(SECRET), null);
  } finally {
    await db.query(`UPDATE tokens SET revoked_at = NULL WHERE id = 'tok_bot'`);
  }
});

test('a read under way when a revocation is announced answers its call but is not kept', async () => {
  const s = countingStore();
  const cache = new CredentialCache(s.store, { listen: false, ttlMs: 60_000 });
  s.hold();
  const first = cache.authenticate(SECRET);
  await s.reached(s.sent, 1);
  // The revocation is committed and announced while the read is held back (it read the token before).
  cache.forgetToken('tok_bot');
  s.release();
  assert.equal((await first)?.tokenId, 'tok_bot', 'the call in flight goes on, as any call in flight at a revocation');
  assert.equal(cache.cached(SECRET), undefined, 'nothing was kept');
  assert.ok(await cache.authenticate(SECRET));
  assert.equal(s.sent(), 2, 'the next call read the store again');
});
