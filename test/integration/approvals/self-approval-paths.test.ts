/**
 * The ways around the self-approval rule, each closed through the real HTTP API: a token minted by the
 * requester (it decides as the requester), an admin minting another admin's personal token, the requester
 * added as an approver at approval, and an exception rule that names the requester among its co-signers (the
 * request is accepted; only the requester's own approval is refused).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, adminWithToken, describeEachStore, developerWithToken, startTestReplica } from '../../helpers/harness.js';

describeEachStore('self-approval paths', ({ store }) => {
  let replica: Replica;
  let root: Client;
  let ana: Client;
  let ben: Client;
  before(async () => {
    replica = await startTestReplica(store());
    root = new Client(replica.url, ADMIN_TOKEN);
    ana = root.with(await adminWithToken(replica.db, 'sec/ana'));
    ben = root.with(await developerWithToken(root, 'eng/ben', 'developer'));
  });
  after(() => replica.close());

  const refusals = async (action: string, requestId: string) =>
    (await root.get(`/api/v1/audit-events?action=${action}&limit=200`)).body.items.filter((e: any) => e.outcome === 'refused' && e.data.requestId === requestId);

  test('an admin cannot mint a personal access token for another admin; she may for herself and for developers', async () => {
    const other = await root.post('/api/v1/tokens', { identityId: 'sec/ana', name: 'impersonation' });
    assert.equal(other.status, 403, JSON.stringify(other.body));
    assert.match(other.body.error.message, /sec\/ana/);
    assert.equal((await ana.post('/api/v1/tokens', { identityId: 'sec/ana', name: 'second' })).status, 201);
    const forDev = await ana.post('/api/v1/tokens', { identityId: 'eng/ben', name: 'minted by ana' });
    assert.equal(forDev.status, 201);
    assert.equal(forDev.body.createdBy, 'sec/ana', 'every token records who issued it');
  });

  test("a decision made with a token the requester minted is the requester's own: refused and audited with the issuer", async () => {
    // ana (admin) asks for an exception naming ben as co-signer, and holds a token for ben that she minted.
    const anaMintedForBen = root.with((await ana.post('/api/v1/tokens', { identityId: 'eng/ben', name: 'ana keeps this' })).body.token);
    const req = (await ana.post('/api/v1/access-requests', { type: 'exception', targetPolicy: 'autonomy-model-ceiling', justification: 'opus for a week', requiredApprovers: ['eng/ben'] })).body;
    const approved = await root.post(`/api/v1/access-requests/${req.id}/approve`, {});
    assert.equal(approved.body.request.state, 'under_review');

    const vote = await anaMintedForBen.post(`/api/v1/access-requests/${req.id}/votes`, { decision: 'approve' });
    assert.equal(vote.status, 403, JSON.stringify(vote.body));
    assert.match(vote.body.error.message, /minted/);
    const [refused] = await refusals('access_request.vote', req.id);
    assert.equal(refused.actor.id, 'eng/ben');
    assert.equal(refused.data.code, 'self_approval');
    assert.equal(refused.data.tokenIssuer, 'sec/ana', 'the audit names who minted the token');
    assert.equal((await root.get(`/api/v1/access-requests/${req.id}`)).body.state, 'under_review');

    // ben with his own token (the one the bootstrap admin minted) completes it; the event names the issuer too.
    const own = await ben.post(`/api/v1/access-requests/${req.id}/votes`, { decision: 'approve' });
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.equal(own.body.request.state, 'approved');
    const voted = (await root.get('/api/v1/audit-events?action=access_request.vote&limit=200')).body.items.find((e: any) => e.outcome === 'ok' && e.data.requestId === req.id);
    assert.equal(voted.data.tokenIssuer, 'default/admin');
  });

  test('approving with the requester as an additional approver is refused with 400 and audited; the request stays pending', async () => {
    const req = (await ben.post('/api/v1/access-requests', { type: 'model_access', requestedModel: 'gpt-5', justification: 'evaluation' })).body;
    const r = await root.post(`/api/v1/access-requests/${req.id}/approve`, { additionalApprovers: ['eng/ben'] });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error.code, 'requester_as_approver');
    assert.match(r.body.error.message, /additionalApprovers/);
    assert.equal((await refusals('access_request.approve', req.id))[0].data.code, 'requester_as_approver');
    assert.equal((await root.get(`/api/v1/access-requests/${req.id}`)).body.state, 'pending');
    assert.equal((await root.post(`/api/v1/access-requests/${req.id}/approve`, {})).body.request.state, 'approved');
  });

  test('an exception rule naming the requester as a co-signer: the request is created, only her approval is refused', async () => {
    const cosigner = root.with(await developerWithToken(root, 'eng/cleo', 'developer'));
    const rule = await root.post('/api/v1/exception-rules', {
      name: 'egress needs two',
      policyName: 'autonomy-egress-allowlist',
      maxDurationSeconds: 3600,
      requiredApprovers: ['eng/ben', 'eng/cleo'],
    });
    assert.equal(rule.status, 201, JSON.stringify(rule.body));
    try {
      const submitted = await ben.post('/api/v1/access-requests', { type: 'exception', targetPolicy: 'autonomy-egress-allowlist', justification: 'reach the docs site' });
      assert.equal(submitted.status, 201, JSON.stringify(submitted.body));
      assert.deepEqual([...submitted.body.requiredApprovers].sort(), ['eng/ben', 'eng/cleo']);
      // Naming yourself in the request body is still a mistake pointed out at once.
      assert.equal((await ben.post('/api/v1/access-requests', { type: 'exception', targetPolicy: 'autonomy-egress-allowlist', justification: 'x', requiredApprovers: ['eng/ben'] })).status, 400);

      const id = submitted.body.id;
      assert.equal((await root.post(`/api/v1/access-requests/${id}/approve`, {})).body.request.state, 'under_review');
      const own = await ben.post(`/api/v1/access-requests/${id}/votes`, { decision: 'approve' });
      assert.equal(own.status, 403);
      assert.equal((await refusals('access_request.vote', id))[0].data.code, 'self_approval');
      // The others' signatures complete it: the requester is never waited for.
      const last = await cosigner.post(`/api/v1/access-requests/${id}/votes`, { decision: 'approve' });
      assert.equal(last.status, 200, JSON.stringify(last.body));
      assert.equal(last.body.request.state, 'approved');
      // She was never asked to co-sign her own request.
      const asked = (await ben.get('/api/v1/notifications')).body.items.filter((n: any) => n.kind === 'cosign_requested' && n.requestId === id);
      assert.equal(asked.length, 0);
    } finally {
      await root.delete(`/api/v1/exception-rules/${rule.body.id}`);
    }
  });
});
