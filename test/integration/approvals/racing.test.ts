/**
 * Racing decisions on two replicas of one PostgreSQL database: in each of 100 rounds two deciders act on the
 * same request at once through different replicas. Every round ends in one final state, one grant outcome and
 * exactly one completion notification to the requester.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Replica } from '../../../src/app/server.js';
import { adminWithToken, ADMIN_TOKEN, Client, developerWithToken, openTestStore, startTestReplica, WAIT_MS, waitFor, type TestStore } from '../../helpers/harness.js';
import { postgresReachable, storeKinds } from '../../helpers/stores.js';

describe('racing approval decisions on two replicas', { skip: !storeKinds().includes('postgres') }, async () => {
  if (!(await postgresReachable())) return;
  let store: TestStore;
  let a: Replica;
  let b: Replica;
  const on: Record<string, { a: Client; b: Client }> = {};

  before(async () => {
    store = await openTestStore('postgres');
    // Both replicas sweep for expired grants five times a second: each expiry must still be announced once.
    const fast = { approvals: { expirySweepSeconds: 0.2, webhook: null } };
    [a, b] = await Promise.all([startTestReplica(store, fast), startTestReplica(store, fast)]);
    const adminA = new Client(a.url, ADMIN_TOKEN);
    on.admin = { a: adminA, b: new Client(b.url, ADMIN_TOKEN) };
    for (const [name, id, role] of [
      ['dev', 'eng/racer', 'developer'],
      ['x', 'eng/cosigner-x', 'developer'],
      ['y', 'sec/cosigner-y', 'viewer'],
      ['admin2', 'sec/admin-two', 'admin'],
    ] as const) {
      const token = role === 'admin' ? await adminWithToken(a.db, id) : await developerWithToken(adminA, id, role);
      on[name] = { a: new Client(a.url, token), b: new Client(b.url, token) };
    }
  });
  after(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await store?.close();
  });

  async function finalNotifications(requestId: string): Promise<string[]> {
    const r = await a.db.query<{ kind: string }>(
      `SELECT kind FROM notifications WHERE request_id = $1 AND recipient = 'eng/racer' AND kind IN ('request_approved', 'request_denied')`,
      [requestId],
    );
    return r.rows.map((row) => row.kind);
  }

  test('100 rounds: two co-signers vote at once (approve/approve or approve/deny) through different replicas', async () => {
    for (let round = 0; round < 100; round++) {
      const req = (await on.dev!.a.post('/api/v1/access-requests', { type: 'model_access', requestedModel: `m-${round}`, justification: 'race', requiredApprovers: ['eng/cosigner-x', 'sec/cosigner-y'] })).body;
      const escalated = await on.admin!.a.post(`/api/v1/access-requests/${req.id}/approve`, {});
      assert.equal(escalated.body.request.state, 'under_review');
      const yDecision = round % 2 === 0 ? 'approve' : 'deny';
      const [vx, vy] = await Promise.all([
        on.x!.a.post(`/api/v1/access-requests/${req.id}/votes`, { decision: 'approve' }),
        on.y!.b.post(`/api/v1/access-requests/${req.id}/votes`, { decision: yDecision, reason: 'no' }),
      ]);
      assert.ok([vx.status, vy.status].every((s) => s === 200 || s === 409), `${vx.status} ${vy.status}`);
      const final = (await on.admin!.b.get(`/api/v1/access-requests/${req.id}`)).body;
      const grant = (await on.admin!.b.get(`/api/v1/policy-exceptions/${final.grantId}`)).body;
      if (yDecision === 'approve') {
        assert.equal(final.state, 'approved', `round ${round}`);
        assert.equal(grant.state, 'active');
        assert.deepEqual(await finalNotifications(req.id), ['request_approved'], `round ${round}`);
      } else {
        assert.equal(final.state, 'denied', `round ${round}`);
        assert.equal(grant.state, 'revoked');
        assert.deepEqual(await finalNotifications(req.id), ['request_denied'], `round ${round}`);
      }
    }
  });

  test('each expiry is announced exactly once, though both replicas sweep', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const req = (await on.dev!.a.post('/api/v1/access-requests', { type: 'model_access', requestedModel: `e-${i}`, justification: 'short' })).body;
      // Far enough ahead that a busy machine still approves before it.
      const ok = await on.admin!.b.post(`/api/v1/access-requests/${req.id}/approve`, { expiresAt: new Date(Date.now() + 3000).toISOString() });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      ids.push(ok.body.grant.id);
    }
    const expiredAudits = async () => (await a.db.query(`SELECT id FROM audit_events WHERE action = 'grant.expire' AND data->>'grantId' = ANY($1)`, [ids])).rows.length;
    assert.notEqual(await waitFor(async () => (await expiredAudits()) >= 5, WAIT_MS, 100), -1, 'every grant expired');
    // Both replicas keep sweeping: a second announcement would show up now.
    await new Promise((r) => setTimeout(r, 1000));
    const notes = await a.db.query<{ grant_id: string }>(`SELECT grant_id FROM notifications WHERE kind = 'grant_expired' AND grant_id = ANY($1)`, [ids]);
    assert.deepEqual(notes.rows.map((r) => r.grant_id).sort(), [...ids].sort());
    const audits = await a.db.query(`SELECT id FROM audit_events WHERE action = 'grant.expire' AND data->>'grantId' = ANY($1)`, [ids]);
    assert.equal(audits.rows.length, 5);
    const history = (await on.admin!.a.get('/api/v1/policy-exceptions/history')).body.items.filter((g: any) => ids.includes(g.id));
    assert.ok(history.length === 5 && history.every((g: any) => g.state === 'expired'));
  });

  test('100 rounds: two admins approve and deny a pending request at once: one wins, the other gets 409', async () => {
    for (let round = 0; round < 100; round++) {
      const req = (await on.dev!.a.post('/api/v1/access-requests', { type: 'model_access', requestedModel: `p-${round}`, justification: 'race' })).body;
      const [approve, deny] = await Promise.all([
        on.admin!.a.post(`/api/v1/access-requests/${req.id}/approve`, {}),
        on.admin2!.b.post(`/api/v1/access-requests/${req.id}/deny`, { reason: 'no' }),
      ]);
      assert.deepEqual([approve.status, deny.status].sort(), [200, 409], `round ${round}`);
      const final = (await on.admin!.a.get(`/api/v1/access-requests/${req.id}`)).body;
      assert.equal(final.state, approve.status === 200 ? 'approved' : 'denied');
      const grants = await a.db.query('SELECT id FROM grants WHERE request_id = $1', [req.id]);
      assert.equal(grants.rows.length, approve.status === 200 ? 1 : 0);
      assert.equal((await finalNotifications(req.id)).length, 1);
    }
  });
});
