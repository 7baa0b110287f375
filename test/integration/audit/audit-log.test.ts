/** The audit log: filters, cursor pagination newest first, append-only storage. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, describeEachStore, enc, startTestReplica } from '../../helpers/harness.js';

describeEachStore('audit log', ({ store }) => {
  let replica: Replica;
  let admin: Client;

  before(async () => {
    replica = await startTestReplica(store());
    admin = new Client(replica.url, ADMIN_TOKEN);
    // Enough events that ids cross from one digit to two: ordering must be numeric, not textual.
    for (let i = 0; i < 12; i++) await admin.post('/api/v1/identities', { id: `eng/page-${i}`, kind: 'agent' });
  });
  after(() => replica.close());

  test('cursor pagination walks every event once, newest first', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const r: { status: number; body: { items: { id: string }[]; nextCursor: string | null } } = await admin.get(
        `/api/v1/audit-events?action=identity.create&limit=3${cursor ? `&cursor=${enc(cursor)}` : ''}`,
      );
      assert.equal(r.status, 200);
      assert.ok(r.body.items.length <= 3);
      seen.push(...r.body.items.map((e) => e.id));
      cursor = r.body.nextCursor;
    } while (cursor);
    const ids = seen.map(Number);
    assert.deepEqual(ids, [...ids].sort((a, b) => b - a));
    assert.equal(new Set(ids).size, ids.length);
    const all = await replica.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM audit_events WHERE action = 'identity.create'`);
    assert.equal(ids.length, Number(all.rows[0]!.n), 'every event, none skipped');
    assert.ok(ids.length >= 13, 'twelve agents and the bootstrap admin');
    assert.ok(ids.some((id) => id >= 10), 'ids of more than one digit');
  });

  test('filters by type, identity and time', async () => {
    const byIdentity = (await admin.get(`/api/v1/audit-events?identity=${enc('eng/page-3')}`)).body.items;
    assert.deepEqual(byIdentity.map((e: { action: string; subject: string }) => [e.action, e.subject]), [['identity.create', 'eng/page-3']]);
    assert.equal((await admin.get('/api/v1/audit-events?type=llm')).body.items.length, 0);
    // Control events belong to no gateway call: no callId matches them, and none carries callEnded.
    assert.equal((await admin.get('/api/v1/audit-events?callId=none')).body.items.length, 0);
    assert.ok(byIdentity.every((e: { callEnded?: boolean }) => e.callEnded === undefined));
    const future = (await admin.get(`/api/v1/audit-events?since=${enc(new Date(Date.now() + 60_000).toISOString())}`)).body.items;
    assert.equal(future.length, 0);
    const past = (await admin.get(`/api/v1/audit-events?until=${Math.floor(Date.now() / 1000) + 60}`)).body.items;
    assert.ok(past.length > 0);
  });

  test('callEnded says whether a listed decision has its end, wherever the end is', async () => {
    const put = (action: string, data: Record<string, unknown>, at = new Date()) =>
      replica.db.query(`INSERT INTO audit_events (at, type, action, actor_kind, actor_id, subject, data) VALUES ($1, 'llm', $2, 'agent', 'eng/page-1', 'eng/page-1', $3)`, [
        at,
        action,
        JSON.stringify(data),
      ]);
    // Ended, with its end in a later day partition than its decision; in flight; refused at once (no end to wait
    // for); and a pair the writer wrote twice (an INSERT that committed but whose answer was lost, then retried).
    const yesterday = new Date(Date.now() - 86_400_000);
    await replica.db.query(`SELECT audit_events_ensure_partitions((now() AT TIME ZONE 'UTC')::date - 1, (now() AT TIME ZONE 'UTC')::date)`);
    await put('llm.request', { callId: 'c-ended', marker: 'ended' }, yesterday);
    await put('llm.request_end', { callId: 'c-ended', end: 'completed' });
    await put('llm.request', { callId: 'c-flight', marker: 'flight' });
    await put('llm.request', { callId: 'c-refused', end: 'refused', marker: 'refused' });
    for (let i = 0; i < 2; i++) await put('llm.request', { callId: 'c-twice', marker: 'twice' });
    for (let i = 0; i < 2; i++) await put('llm.request_end', { callId: 'c-twice', end: 'completed' });
    const items: { action: string; data: { marker?: string }; callEnded?: boolean }[] = (await admin.get('/api/v1/audit-events?action=llm.request&identity=eng%2Fpage-1')).body.items;
    const ended = Object.fromEntries(items.map((e) => [e.data.marker, e.callEnded]));
    assert.deepEqual(ended, { ended: true, flight: false, refused: undefined, twice: true });
  });

  test('bad filters are 400s naming the parameter', async () => {
    for (const [qs, field] of [['limit=0', 'limit'], ['limit=501', 'limit'], ['since=yesterday', 'since'], ['cursor=zzz', 'cursor'], ['colour=red', 'colour'], [`callId=${'c'.repeat(65)}`, 'callId']]) {
      const r = await admin.get(`/api/v1/audit-events?${qs}`);
      assert.equal(r.status, 400, qs);
      assert.match(r.body.error.message, new RegExp(field!));
    }
  });

  test('the table is append-only: past events cannot be changed or deleted', async () => {
    await assert.rejects(replica.db.query(`UPDATE audit_events SET data = '{}'`), /append-only/);
    await assert.rejects(replica.db.query(`DELETE FROM audit_events`), /append-only/);
  });
});
