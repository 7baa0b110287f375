/**
 * A live replica is never taken for a dead one because it is busy (PostgreSQL, two replicas, each its own pool):
 * while every connection of A's pool is held by long queries (as a burst of 50,000 parked calls held them in
 * bench/held-calls), A's heartbeat still lands on the database clock within the lapse, so B stops none of A's
 * entries; once A is free, a decision on B still answers A's caller. (A replica that really stopped is still
 * orphaned: hand-over.test.ts and replicas.test.ts.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { HeldCallRegistry, type HoldOutcome, type HoldRequest } from '../../../src/held-calls/registry.js';
import { HumanReviewCache } from '../../../src/held-calls/settings.js';
import type { Actor } from '../../../src/shared/actor.js';
import type { Db } from '../../../src/store/db.js';
import { migrate } from '../../../src/store/migrate.js';
import { openStore } from '../../../src/store/open.js';
import { waitFor, WAIT_MS } from '../../helpers/harness.js';
import { freshPostgresDatabase, postgresReachable, storeKinds } from '../../helpers/stores.js';

const HEARTBEAT = 0.2;
const LAPSE = 1.5;
/** How long A's pool stays saturated: several lapses. */
const BUSY_SECONDS = LAPSE * 4;
/** More long queries than A's pool has connections (20), so A's own queries queue behind them too. */
const BLOCKERS = 25;
const ADMIN: Actor = { kind: 'developer', identityId: 'ops/reviewer', role: 'admin', via: 'token', tokenId: 't_reviewer' };

describe('a busy replica keeps its held calls (PostgreSQL, two replicas)', { skip: !storeKinds().includes('postgres') }, async () => {
  if (!(await postgresReachable())) return;
  let database: { url: string; drop: () => Promise<void> };
  let dbA: Db;
  let dbB: Db;
  const stoppers: (() => Promise<void>)[] = [];
  before(async () => {
    database = await freshPostgresDatabase();
    dbA = await openStore({ kind: 'postgres', url: database.url });
    dbB = await openStore({ kind: 'postgres', url: database.url });
    await migrate(dbB);
  });
  after(async () => {
    for (const stop of stoppers.reverse()) await stop().catch(() => {});
    await dbA?.close();
    await dbB?.close();
    await database?.drop();
  });

  async function replica(db: Db): Promise<HeldCallRegistry> {
    const review = new HumanReviewCache(db, { refreshSeconds: 30 });
    await review.start();
    const r = new HeldCallRegistry(db, review, { heartbeatSeconds: HEARTBEAT, lapseSeconds: LAPSE });
    await r.start();
    stoppers.push(() => review.stop(), () => r.stop());
    return r;
  }
  const request = (key: string): HoldRequest => ({
    kind: 'llm', requester: null, agentId: 'eng/busy-bot', sessionId: null, tool: null, model: 'gpt-held',
    policyName: 'review', policyMessage: 'A person looks first.', promptExcerpt: key, dedupeKey: key,
  });

  test("B stops none of A's entries while every connection of A's pool is busy past the lapse", async () => {
    const a = await replica(dbA);
    const b = await replica(dbB);
    const keys = ['busy-1', 'busy-2', 'busy-3'];
    const outcomes = new Map<string, HoldOutcome>();
    for (const key of keys) void a.hold(request(key)).then((o) => outcomes.set(key, o));
    const entries = async () =>
      (await dbB.query<{ id: string; dedupe_key: string; state: string; replica_id: string }>(`SELECT id, dedupe_key, state, replica_id FROM held_calls WHERE dedupe_key = ANY($1)`, [keys])).rows;
    assert.notEqual(await waitFor(async () => (await entries()).filter((e) => e.state === 'pending' && e.replica_id === a.replicaId).length === keys.length, WAIT_MS), -1, 'parked on A');

    // Every pooled connection of A held, and more waiting behind them.
    const blockers = Promise.all(Array.from({ length: BLOCKERS }, () => dbA.query('SELECT pg_sleep($1)', [BUSY_SECONDS])));
    const running = async () => Number((await dbB.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'SELECT pg_sleep%' AND state = 'active'`)).rows[0]!.n);
    assert.notEqual(await waitFor(async () => (await running()) >= 20, WAIT_MS), -1, "A's pool is saturated");

    // While A is busy, A's heartbeat as B sees it on the database clock never gets older than the lapse.
    let busy = true;
    let oldest = 0;
    let samples = 0;
    const watched = (async () => {
      while (busy) {
        const r = await dbB.query<{ age: number }>(`SELECT extract(epoch FROM now() - seen_at)::float8 AS age FROM replica_heartbeats WHERE replica_id = $1`, [a.replicaId]);
        oldest = Math.max(oldest, r.rows[0]?.age ?? Infinity);
        samples++;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await blockers;
    busy = false;
    await watched;
    assert.ok(samples > 0);
    assert.ok(oldest < LAPSE, `A's heartbeat was ${oldest.toFixed(2)} s old at worst while its pool was busy (lapse ${LAPSE} s)`);

    // B swept throughout (every HEARTBEAT s) and once more now: A's entries are all still pending, none orphaned.
    await b.resolveOrphans();
    assert.deepEqual((await entries()).map((e) => e.state), keys.map(() => 'pending'));
    const orphaned = await dbB.query(`SELECT 1 FROM audit_events WHERE action = 'held_call.orphaned'`);
    assert.equal(orphaned.rows.length, 0);
    assert.equal(outcomes.size, 0, "no caller of A was answered");

    // A is free again: a decision on B answers A's caller.
    const first = (await entries()).find((e) => e.dedupe_key === 'busy-1')!;
    await b.decideOnEntry(ADMIN, first.id, { kind: 'approve' });
    assert.notEqual(await waitFor(() => outcomes.has('busy-1'), WAIT_MS), -1);
    assert.equal(outcomes.get('busy-1')!.outcome, 'released');
  });
});
