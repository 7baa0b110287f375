/**
 * The batched audit writer on a real store: events are written in batches off the caller's path, a failing
 * store loses nothing (the batch is retried), a full queue makes intake wait instead of dropping, and
 * closing writes what is queued.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { AuditWriter } from '../../../src/audit/audit-writer.js';
import type { Actor } from '../../../src/shared/actor.js';
import type { Db, Queryable, QueryResult } from '../../../src/store/db.js';
import { migrate } from '../../../src/store/migrate.js';
import { describeEachStore, WAIT_MS, waitFor } from '../../helpers/harness.js';
import { openStore } from '../../../src/store/open.js';

const actor: Actor = { kind: 'agent', identityId: 'eng/bot', tokenId: 'tok_x' };

/** Passes queries through, counting the audit INSERTs, and fails them while `down` is set. */
class FlakyStore implements Queryable {
  inserts = 0;
  down = false;
  constructor(private readonly db: Db) {}
  async query<T>(sql: string, params?: readonly unknown[]): Promise<QueryResult<T>> {
    if (sql.startsWith('INSERT INTO audit_events')) {
      if (this.down) throw new Error('connection refused (simulated)');
      this.inserts++;
    }
    return this.db.query<T>(sql, params);
  }
}

const count = async (db: Db, marker: string) =>
  Number((await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM audit_events WHERE data->>'marker' = $1`, [marker])).rows[0]!.n);

describeEachStore('audit writer', ({ store, kind }) => {
  let db: Db;
  before(async () => {
    const s = store();
    db = s.db ?? (await openStore({ kind: 'postgres', url: s.url! }));
    await migrate(db);
  });
  after(async () => {
    if (kind === 'postgres') await db.close();
  });

  test('many events become few INSERTs, written off the caller path', async () => {
    const flaky = new FlakyStore(db);
    const writer = new AuditWriter(flaky, { batchSize: 100, flushMs: 10 });
    for (let i = 0; i < 1000; i++) {
      assert.equal(writer.enqueue({ type: 'llm', action: 'llm.request', actor, data: { marker: 'batch', i } }), undefined);
    }
    await writer.drain();
    assert.equal(await count(db, 'batch'), 1000);
    assert.ok(flaky.inserts <= 12, `${flaky.inserts} INSERTs for 1000 events`);
    await writer.close();
  });

  test('a failing store loses nothing: batches are retried; a full queue makes intake wait', async () => {
    const flaky = new FlakyStore(db);
    const errors: Error[] = [];
    const writer = new AuditWriter(flaky, { batchSize: 50, flushMs: 5, maxQueue: 200, onError: (e) => errors.push(e) });
    flaky.down = true;
    const waits: Promise<void>[] = [];
    for (let i = 0; i < 300; i++) {
      const wait = writer.enqueue({ type: 'llm', action: 'llm.request', actor, data: { marker: 'flaky', i } });
      if (wait) waits.push(wait);
    }
    assert.equal(waits.length, 101, 'every event past the 199th waits for room');
    let released = false;
    void Promise.all(waits).then(() => (released = true));
    assert.ok((await waitFor(() => errors.length >= 1, WAIT_MS)) >= 0, 'the failed write was reported');
    assert.equal(released, false, 'intake still waits while the store is down');
    flaky.down = false;
    assert.ok((await waitFor(() => released, WAIT_MS)) >= 0, 'intake resumes once the store is back');
    await writer.drain();
    assert.equal(await count(db, 'flaky'), 300);
    const order = (await db.query<{ i: string }>(`SELECT data->>'i' AS i FROM audit_events WHERE data->>'marker' = 'flaky' ORDER BY id`)).rows.map((r) => Number(r.i));
    assert.deepEqual(order, [...Array(300).keys()], 'written once each, in order');
    await writer.close();
  });

  test('close writes everything still queued', async () => {
    const writer = new AuditWriter(db, { batchSize: 1000, flushMs: 60_000 });
    for (let i = 0; i < 25; i++) writer.enqueue({ type: 'llm', action: 'llm.request', actor, data: { marker: 'close', i } });
    assert.equal(await count(db, 'close'), 0, 'nothing written before the flush interval');
    await writer.close();
    assert.equal(await count(db, 'close'), 25);
  });

  test('an event whose data is no JSON is written without it, and the events around it as they are', async () => {
    const writer = new AuditWriter(db, { batchSize: 10, flushMs: 5 });
    writer.enqueue({ type: 'llm', action: 'llm.request', actor, subject: 'unwritable', data: { i: 0 } });
    writer.enqueue({ type: 'llm', action: 'llm.request', actor, subject: 'unwritable', data: { n: 1n } });
    writer.enqueue({ type: 'llm', action: 'llm.request', actor, subject: 'unwritable', data: { i: 2 } });
    await writer.drain();
    const rows = (await db.query<{ data: Record<string, unknown> }>(`SELECT data FROM audit_events WHERE subject = 'unwritable' ORDER BY id`)).rows;
    assert.deepEqual(rows[0]!.data, { i: 0 });
    assert.match(String(rows[1]!.data.unwritableData), /could not be written as JSON: .*BigInt/);
    assert.deepEqual(rows[2]!.data, { i: 2 });
    await writer.close();
  });

  test('an event with a host must be an egress event', () => {
    const writer = new AuditWriter(db);
    assert.throws(() => writer.enqueue({ type: 'llm', action: 'llm.request', actor, host: 'x.example' }), /egress/);
  });
});
