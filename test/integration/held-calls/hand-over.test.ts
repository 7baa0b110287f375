/**
 * Held calls across a replica's graceful stop (a rolling update), on the registries themselves with short heartbeats:
 *  - `stop()` leaves the replica's pending entries pending (handed over), its heartbeat stamped;
 *  - a retry on another replica attaches to the entry and takes it over, and the decision answers it there;
 *  - an entry whose owner stopped but whose call another replica's caller still waits on is claimed by that replica
 *    (never stopped as orphaned while someone waits);
 *  - an entry nobody waits on is stopped as orphaned once the stopped replica's heartbeat lapsed.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { HeldCallRegistry, type HoldOutcome, type HoldRequest } from '../../../src/held-calls/registry.js';
import { HumanReviewCache } from '../../../src/held-calls/settings.js';
import type { Db } from '../../../src/store/db.js';
import { migrate } from '../../../src/store/migrate.js';
import { openStore } from '../../../src/store/open.js';
import type { Actor } from '../../../src/shared/actor.js';
import { describeEachStore, waitFor, WAIT_MS } from '../../helpers/harness.js';

const HEARTBEAT = 0.2;
const ADMIN: Actor = { kind: 'developer', identityId: 'ops/reviewer', role: 'admin', via: 'token', tokenId: 't_reviewer' };
const LAPSE = 1.5;

describeEachStore('held calls handed over on a graceful stop', ({ store }) => {
  let db: Db;
  const started: HeldCallRegistry[] = [];
  const caches: HumanReviewCache[] = [];
  before(async () => {
    const s = store();
    db = s.db ?? (await openStore({ kind: 'postgres', url: s.url! }));
    await migrate(db);
  });
  after(async () => {
    for (const r of started) await r.stop();
    for (const c of caches) await c.stop();
    if (!store().db) await db.close();
  });

  async function replica(): Promise<HeldCallRegistry> {
    const review = new HumanReviewCache(db, { refreshSeconds: 30 });
    await review.start();
    caches.push(review);
    const r = new HeldCallRegistry(db, review, { heartbeatSeconds: HEARTBEAT, lapseSeconds: LAPSE });
    await r.start();
    started.push(r);
    return r;
  }
  const request = (key: string): HoldRequest => ({
    kind: 'llm', requester: null, agentId: 'eng/hand-bot', sessionId: null, tool: null, model: 'gpt-held',
    policyName: 'review', policyMessage: 'A person looks first.', promptExcerpt: key, dedupeKey: key,
  });
  const entryOf = async (key: string) => (await db.query<{ id: string; state: string; replica_id: string; attached_calls: number }>('SELECT id, state, replica_id, attached_calls FROM held_calls WHERE dedupe_key = $1', [key])).rows[0]!;

  test('stop leaves the entry pending; a retry elsewhere attaches, takes it over, and gets the decision', async () => {
    const a = await replica();
    const b = await replica();
    const first = a.hold(request('k-retry'));
    await waitFor(async () => (await db.query(`SELECT 1 FROM held_calls WHERE dedupe_key = 'k-retry'`)).rows.length === 1, WAIT_MS);
    await a.stop();
    started.splice(started.indexOf(a), 1);
    assert.equal((await entryOf('k-retry')).state, 'pending', 'handed over, not stopped');
    void first; // A's caller's connection is gone with A.
    let outcome: HoldOutcome | null = null;
    const retry = b.hold(request('k-retry')).then((o) => (outcome = o));
    await waitFor(async () => (await entryOf('k-retry')).attached_calls === 2, WAIT_MS);
    const entry = await entryOf('k-retry');
    assert.equal(entry.replica_id, b.replicaId, 'the retry took the entry over');
    // Well past A's lapse: B owns it and beats, so nobody stops it.
    await new Promise((r) => setTimeout(r, LAPSE * 1000 + 1000)); // waiting out the product's lapse timer
    assert.equal((await entryOf('k-retry')).state, 'pending');
    await b.decideOnEntry(ADMIN, entry.id, { kind: 'approve' });
    await retry;
    assert.equal(outcome!.outcome, 'released');
  });

  test('an entry whose owner stopped is claimed by a replica whose caller waits on it, never orphaned under it', async () => {
    const a = await replica();
    const b = await replica();
    let outcome: HoldOutcome | null = null;
    const waiting = a.hold(request('k-claim')).then((o) => (outcome = o));
    await waitFor(async () => (await db.query(`SELECT 1 FROM held_calls WHERE dedupe_key = 'k-claim'`)).rows.length === 1, WAIT_MS);
    // B's caller attaches (B owns the entry), then B stops: A's caller still waits.
    void b.hold(request('k-claim'));
    await waitFor(async () => (await entryOf('k-claim')).replica_id === b.replicaId, WAIT_MS);
    await b.stop();
    started.splice(started.indexOf(b), 1);
    await waitFor(async () => (await entryOf('k-claim')).replica_id === a.replicaId, WAIT_MS);
    await new Promise((r) => setTimeout(r, LAPSE * 1000 + 1000)); // past B's lapse: A owns it, nothing stops it
    const entry = await entryOf('k-claim');
    assert.equal(entry.state, 'pending');
    await a.decideOnEntry(ADMIN, entry.id, { kind: 'approve' });
    await waiting;
    assert.equal(outcome!.outcome, 'released');
  });

  test('an entry nobody retried for is stopped as orphaned once the stopped replica\'s heartbeat lapsed', async () => {
    const a = await replica();
    await replica();
    void a.hold(request('k-orphan'));
    await waitFor(async () => (await db.query(`SELECT 1 FROM held_calls WHERE dedupe_key = 'k-orphan'`)).rows.length === 1, WAIT_MS);
    await a.stop();
    started.splice(started.indexOf(a), 1);
    await waitFor(async () => (await entryOf('k-orphan')).state === 'stopped', WAIT_MS);
    const audit = await db.query<{ data: any }>(`SELECT data FROM audit_events WHERE action = 'held_call.orphaned'`);
    assert.ok(audit.rows.some((r) => r.data.replicaId === a.replicaId));
  });
});
