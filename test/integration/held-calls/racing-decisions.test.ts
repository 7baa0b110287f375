/**
 * Deciding a held call, on the registries themselves (two on one store, as two replicas), both stores:
 *  - an approve and a deny racing on one entry give one outcome, one audit event and one notification, and the
 *    slower decider is refused (final state); the waiting caller gets the winner's outcome;
 *  - a deny note too long to travel in the notification still reaches the caller verbatim (read from the entry);
 *  - a decision whose notification never came still reaches the caller, through the periodic re-check.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { HeldCallRegistry, type HoldOutcome, type HoldRequest } from '../../../src/held-calls/registry.js';
import { HumanReviewCache } from '../../../src/held-calls/settings.js';
import type { Actor } from '../../../src/shared/actor.js';
import { AppError } from '../../../src/shared/errors.js';
import { Channels, type Db } from '../../../src/store/db.js';
import { migrate } from '../../../src/store/migrate.js';
import { openStore } from '../../../src/store/open.js';
import { describeEachStore, waitFor, WAIT_MS } from '../../helpers/harness.js';

const HEARTBEAT = 0.2;
const ALICE: Actor = { kind: 'developer', identityId: 'ops/alice', role: 'admin', via: 'token', tokenId: 't_alice' };
const BOB: Actor = { kind: 'developer', identityId: 'ops/bob', role: 'admin', via: 'token', tokenId: 't_bob' };

describeEachStore('held-call decisions racing, and notifications that carry the outcome', ({ store }) => {
  let db: Db;
  const stoppers: (() => Promise<void>)[] = [];
  const notices: { id?: string }[] = [];
  before(async () => {
    const s = store();
    db = s.db ?? (await openStore({ kind: 'postgres', url: s.url! }));
    await migrate(db);
    const unlisten = await db.listen(Channels.heldCall, (payload) => notices.push(JSON.parse(payload) as { id?: string }));
    stoppers.push(unlisten);
  });
  after(async () => {
    for (const stop of stoppers.reverse()) await stop().catch(() => {});
    if (!store().db) await db.close();
  });

  async function replica(): Promise<HeldCallRegistry> {
    const review = new HumanReviewCache(db, { refreshSeconds: 30 });
    await review.start();
    const r = new HeldCallRegistry(db, review, { heartbeatSeconds: HEARTBEAT });
    await r.start();
    stoppers.push(() => review.stop(), () => r.stop());
    return r;
  }
  const request = (key: string): HoldRequest => ({
    kind: 'llm', requester: 'eng/dev', agentId: 'eng/race-bot', sessionId: 's1', tool: null, model: 'gpt-held',
    policyName: 'review', policyMessage: 'A person looks first.', promptExcerpt: key, dedupeKey: key,
  });
  async function park(r: HeldCallRegistry, key: string): Promise<{ id: string; outcome: Promise<HoldOutcome> }> {
    let id = '';
    const outcome = r.hold(request(key), (entry) => (id = entry.id));
    await waitFor(() => id !== '', WAIT_MS);
    return { id, outcome };
  }

  test('approve and deny racing on one entry: one outcome, one audit event, one notification; the other is refused', async () => {
    const a = await replica();
    const b = await replica();
    for (let round = 0; round < 5; round++) {
      const { id, outcome } = await park(a, `race-${round}`);
      // Alice approves on A while Bob denies on B, both in flight together.
      const settled: PromiseSettledResult<unknown>[] = await Promise.allSettled([a.decideOnEntry(ALICE, id, { kind: 'approve' }), b.decideOnEntry(BOB, id, { kind: 'deny', note: 'not this one' })]);
      const won = settled.filter((s) => s.status === 'fulfilled');
      const lost = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
      assert.equal(won.length, 1, `round ${round}: exactly one decision takes effect`);
      assert.equal(lost.length, 1);
      assert.ok(lost[0]!.reason instanceof AppError && lost[0]!.reason.code === 'final_state', `round ${round}: the other is refused as already decided, got ${String(lost[0]!.reason)}`);
      const approved = settled[0]!.status === 'fulfilled';
      const got = await outcome;
      assert.equal(got.outcome, approved ? 'released' : 'stopped');
      if (got.outcome === 'stopped') assert.deepEqual([got.note, got.decidedBy], ['not this one', 'ops/bob']);
      const events = await db.query<{ action: string; outcome: string; data: { attachedCalls?: number } }>(
        `SELECT action, outcome, data FROM audit_events WHERE data->>'heldCallId' = $1 ORDER BY id`,
        [id],
      );
      const decided = events.rows.filter((e) => e.outcome === 'ok');
      assert.equal(decided.length, 1, `round ${round}: one decision event`);
      assert.equal(decided[0]!.action, approved ? 'held_call.approve' : 'held_call.deny');
      assert.equal(decided[0]!.data.attachedCalls, 1);
      assert.deepEqual(
        events.rows.filter((e) => e.outcome === 'refused').map((e) => e.action),
        [approved ? 'held_call.deny' : 'held_call.approve'],
      );
      // The one notification has arrived (the caller woke on it or on A's own decision); a second would be here too.
      await waitFor(() => notices.some((n) => n.id === id), WAIT_MS);
      await new Promise((r) => setTimeout(r, 300)); // "nothing else comes" check
      assert.equal(notices.filter((n) => n.id === id).length, 1, `round ${round}: one notification`);
    }
  });

  test('a deny note too long for the notification still reaches the caller verbatim', async () => {
    const a = await replica();
    const b = await replica();
    const { id, outcome } = await park(a, 'long-note');
    const note = `${'€'.repeat(3999)}!`; // 4,000 characters, 11,998 bytes: past what a notification carries
    await b.decideOnEntry(BOB, id, { kind: 'deny', note });
    const got = await outcome;
    assert.equal(got.outcome, 'stopped');
    if (got.outcome === 'stopped') assert.equal(got.note, note);
    await waitFor(() => notices.some((n) => n.id === id), WAIT_MS);
    assert.equal((notices.find((n) => n.id === id) as { note?: string }).note, undefined, 'the notification went without the note');
  });

  test('a decision whose notification never came still reaches the caller', async () => {
    const a = await replica();
    const { id, outcome } = await park(a, 'silent');
    // Decided behind the registries' backs: no NOTIFY at all.
    await db.query(`UPDATE held_calls SET state = 'released', decided_by = 'ops/alice', decided_at = now() WHERE id = $1`, [id]);
    const got = await Promise.race([outcome, new Promise<null>((r) => setTimeout(() => r(null), WAIT_MS))]);
    assert.deepEqual(got, { outcome: 'released', entryId: id });
  });
});
