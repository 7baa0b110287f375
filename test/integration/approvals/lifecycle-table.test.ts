/**
 * The spec's request and grant lifecycle table, row by row, through HTTP (the pure core has the same table in
 * test/unit/approvals/decision-state.test.ts). Each row: a fresh request brought to the row's state, the trigger by
 * the row's actor, then the next state, the grant's state, the answer's status and the requester's notifications.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Replica } from '../../../src/app/server.js';
import { adminWithToken, ADMIN_TOKEN, Client, describeEachStore, developerWithToken, startTestReplica } from '../../helpers/harness.js';

type Setup = 'pending' | 'pending_multi' | 'approved' | 'denied' | 'under_review_two' | 'under_review_one_left';
interface Row {
  name: string;
  setup: Setup;
  /** Who acts: the admin, the requester (an admin here, so role is not the reason), co-signer x or y. */
  by: 'admin' | 'requester' | 'x' | 'y';
  trigger: 'approve' | 'deny' | 'vote_approve' | 'vote_deny';
  status: number;
  next: string;
  grant: 'active' | 'revoked' | null;
  /** Final notifications to the requester after the trigger (request_approved / request_denied). */
  finals: string[];
}

const ROWS: Row[] = [
  { name: 'pending (single) + approve by admin, not the requester -> approved, grant active, requester notified', setup: 'pending', by: 'admin', trigger: 'approve', status: 200, next: 'approved', grant: 'active', finals: ['request_approved'] },
  { name: 'pending (single) + approve by the requester -> unchanged, refused', setup: 'pending', by: 'requester', trigger: 'approve', status: 403, next: 'pending', grant: null, finals: [] },
  { name: 'pending (single) + deny by admin -> denied, reason relayed', setup: 'pending', by: 'admin', trigger: 'deny', status: 200, next: 'denied', grant: null, finals: ['request_denied'] },
  { name: 'pending (single) + deny by the requester (an admin) -> denied', setup: 'pending', by: 'requester', trigger: 'deny', status: 200, next: 'denied', grant: null, finals: ['request_denied'] },
  { name: 'approved + any decision -> unchanged, final', setup: 'approved', by: 'admin', trigger: 'deny', status: 409, next: 'approved', grant: 'active', finals: ['request_approved'] },
  { name: 'denied + any decision -> unchanged, final', setup: 'denied', by: 'admin', trigger: 'approve', status: 409, next: 'denied', grant: null, finals: ['request_denied'] },
  { name: 'pending (multi) + approve -> under review, grant active at once', setup: 'pending_multi', by: 'admin', trigger: 'approve', status: 200, next: 'under_review', grant: 'active', finals: [] },
  { name: 'under review + approve by the last required approver -> approved, notified once, grant unchanged', setup: 'under_review_one_left', by: 'y', trigger: 'vote_approve', status: 200, next: 'approved', grant: 'active', finals: ['request_approved'] },
  { name: 'under review + approve by a required approver, others pending -> under review', setup: 'under_review_two', by: 'x', trigger: 'vote_approve', status: 200, next: 'under_review', grant: 'active', finals: [] },
  { name: 'under review + deny by any required approver -> denied, grant revoked, notified once', setup: 'under_review_two', by: 'y', trigger: 'vote_deny', status: 200, next: 'denied', grant: 'revoked', finals: ['request_denied'] },
];

describeEachStore('request lifecycle table through HTTP', ({ store }) => {
  let replica: Replica;
  const as: Record<string, Client> = {};
  before(async () => {
    replica = await startTestReplica(store());
    const root = new Client(replica.url, ADMIN_TOKEN);
    as.admin = root;
    as.requester = root.with(await adminWithToken(replica.db, 'eng/requesting-admin'));
    as.x = root.with(await developerWithToken(root, 'eng/x', 'developer'));
    as.y = root.with(await developerWithToken(root, 'sec/y', 'viewer'));
  });
  after(async () => replica.close());

  async function bring(setup: Setup, i: number): Promise<string> {
    const multi = setup === 'pending_multi' || setup.startsWith('under_review');
    const req = (await as.requester!.post('/api/v1/access-requests', {
      type: 'model_access',
      requestedModel: `row-${i}`,
      justification: 'table',
      ...(multi ? { requiredApprovers: ['eng/x', 'sec/y'] } : {}),
    })).body;
    if (setup === 'approved' || setup.startsWith('under_review')) assert.equal((await as.admin!.post(`/api/v1/access-requests/${req.id}/approve`, {})).status, 200);
    if (setup === 'denied') assert.equal((await as.admin!.post(`/api/v1/access-requests/${req.id}/deny`, { reason: 'no' })).status, 200);
    if (setup === 'under_review_one_left') assert.equal((await as.x!.post(`/api/v1/access-requests/${req.id}/votes`, { decision: 'approve' })).status, 200);
    return req.id as string;
  }

  ROWS.forEach((row, i) => {
    test(row.name, async () => {
      const id = await bring(row.setup, i);
      const who = as[row.by]!;
      const answer =
        row.trigger === 'approve'
          ? await who.post(`/api/v1/access-requests/${id}/approve`, {})
          : row.trigger === 'deny'
            ? await who.post(`/api/v1/access-requests/${id}/deny`, { reason: 'because' })
            : await who.post(`/api/v1/access-requests/${id}/votes`, { decision: row.trigger === 'vote_approve' ? 'approve' : 'deny', reason: 'because' });
      assert.equal(answer.status, row.status, JSON.stringify(answer.body));
      const now = (await as.admin!.get(`/api/v1/access-requests/${id}`)).body;
      assert.equal(now.state, row.next);
      if (row.grant === null) assert.equal(now.grantId, null);
      else assert.equal((await as.admin!.get(`/api/v1/policy-exceptions/${now.grantId}`)).body.state, row.grant);
      const finals = (await as.requester!.get('/api/v1/notifications')).body.items
        .filter((n: any) => n.requestId === id && (n.kind === 'request_approved' || n.kind === 'request_denied'))
        .map((n: any) => n.kind);
      assert.deepEqual(finals, row.finals);
      if (row.status === 403) {
        const refused = (await as.admin!.get('/api/v1/audit-events?type=control&limit=20')).body.items.find((e: any) => e.outcome === 'refused' && e.data.requestId === id);
        assert.ok(refused, 'the refused attempt is audited');
      }
    });
  });
});
