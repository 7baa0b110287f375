/**
 * Deleting an identity stops everything it had, and a revoked credential stops its held calls: through the
 * real HTTP API and the real SDK clients. Its grants are revoked, its open requests denied with a reason, its
 * held calls (made by it, or as it when it is an agent) stopped, each audited; an identity created later with
 * the same id inherits nothing. A held call whose token was revoked, or whose identity was deleted, while it
 * waited is never sent upstream on release.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { Client, agentWithKey, describeEachStore, developerWithToken, enc, waitFor } from '../../helpers/harness.js';
import { anthropic, openai, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';

describeEachStore('identity deletion and revoked credentials', ({ store }) => {
  let w: GatewayWorld;
  before(async () => {
    w = await startGatewayWorld(store());
    const held = await w.admin.post('/api/v1/policies', {
      name: 'review-gpt-4o-deletion',
      kind: 'approve',
      appliesTo: ['llm'],
      match: "object.llm.model == 'gpt-4o'",
      message: 'gpt-4o calls are reviewed.',
    });
    assert.equal(held.status, 201);
  });
  after(async () => w.close());

  const ask = (token: string, content: string) => openai(w.replica.url, token).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content }] });
  const premium = (token: string) => anthropic(w.replica.url, token).messages.create({ model: 'o3-pro', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });

  async function pending(match: (e: any) => boolean): Promise<any> {
    let entry: any;
    const found = await waitFor(async () => {
      entry = (await w.admin.get('/api/v1/held-calls?state=pending')).body.items.find(match);
      return entry !== undefined;
    }, 30_000);
    assert.notEqual(found, -1, 'the call was never parked');
    return entry;
  }

  const audited = async (action: string, match: (e: any) => boolean) => (await w.admin.get(`/api/v1/audit-events?action=${action}&limit=200`)).body.items.filter(match);

  test('deleting a developer revokes her grants, denies her open requests, stops her held calls; the same id created again inherits nothing', async () => {
    const id = 'eng/leaver';
    let token = await developerWithToken(w.admin, id, 'developer');
    let dev = w.admin.with(token);
    // An active grant (an exception to the model ceiling), an open request and a held call.
    const granted = (await dev.post('/api/v1/access-requests', { type: 'exception', targetPolicy: 'autonomy-model-ceiling', justification: 'opus' })).body;
    const approval = await w.admin.post(`/api/v1/access-requests/${granted.id}/approve`, {});
    assert.equal(approval.body.grant.state, 'active');
    await premium(token);
    const open = (await dev.post('/api/v1/access-requests', { type: 'model_access', requestedModel: 'gpt-5', justification: 'try it' })).body;
    const heldCall = ask(token, 'leaving soon');
    heldCall.catch(() => undefined);
    const entry = await pending((e) => e.requester === id);
    assert.ok((await dev.get('/api/v1/notifications')).body.items.length > 0);

    assert.equal((await w.admin.delete(`/api/v1/identities?id=${enc(id)}`)).status, 200);

    // The parked call is answered at once, with the reason, and never sent.
    await assert.rejects(heldCall, (err: unknown) => err instanceof OpenAI.APIError && /was deleted/.test(err.message));
    assert.equal((await w.admin.get(`/api/v1/held-calls/${entry.id}`)).body.state, 'stopped');
    assert.equal((await w.admin.get(`/api/v1/policy-exceptions/${approval.body.grant.id}`)).body.state, 'revoked');
    const denied = (await w.admin.get(`/api/v1/access-requests/${open.id}`)).body;
    assert.equal(denied.state, 'denied');
    assert.match(denied.denialReason, /deleted/);
    assert.equal((await audited('held_call.stop', (e) => e.data.heldCallId === entry.id)).length, 1);
    assert.equal((await audited('grant.revoke', (e) => e.data.grantId === approval.body.grant.id)).length, 1);
    assert.equal((await audited('access_request.deny', (e) => e.data.requestId === open.id)).length, 1);
    const deletion = (await audited('identity.delete', (e) => e.subject === id))[0];
    assert.deepEqual([deletion.data.grantsRevoked, deletion.data.requestsDenied, deletion.data.heldCallsStopped], [1, 1, 1]);

    // A new identity with the same id: nothing of the old one's.
    token = await developerWithToken(w.admin, id, 'developer');
    dev = w.admin.with(token);
    assert.deepEqual((await dev.get('/api/v1/access-requests')).body.items, []);
    assert.deepEqual((await dev.get('/api/v1/policy-exceptions')).body.items, []);
    assert.deepEqual((await dev.get('/api/v1/policy-exceptions/history')).body.items, []);
    assert.deepEqual((await dev.get('/api/v1/notifications')).body.items, []);
    assert.equal((await dev.get(`/api/v1/access-requests/${open.id}`)).status, 404);
    assert.equal((await dev.get(`/api/v1/policy-exceptions/${approval.body.grant.id}`)).status, 404);
    await assert.rejects(premium(token), Anthropic.PermissionDeniedError);
    // Admins still see the history.
    assert.ok((await w.admin.get('/api/v1/policy-exceptions/history')).body.items.some((g: any) => g.id === approval.body.grant.id));
  });

  test('a co-signer deleted and created again cannot vote on the requests that named the old identity', async () => {
    const requester = w.admin.with(await developerWithToken(w.admin, 'eng/asker', 'developer'));
    await developerWithToken(w.admin, 'eng/signer', 'developer');
    const req = (await requester.post('/api/v1/access-requests', { type: 'model_access', requestedModel: 'gpt-5', justification: 'x', requiredApprovers: ['eng/signer'] })).body;
    assert.equal((await w.admin.post(`/api/v1/access-requests/${req.id}/approve`, {})).body.request.state, 'under_review');
    await w.admin.delete(`/api/v1/identities?id=${enc('eng/signer')}`);
    const reborn = w.admin.with(await developerWithToken(w.admin, 'eng/signer', 'developer'));
    const vote = await reborn.post(`/api/v1/access-requests/${req.id}/votes`, { decision: 'approve' });
    assert.equal(vote.status, 404, JSON.stringify(vote.body));
    assert.equal((await w.admin.get(`/api/v1/access-requests/${req.id}`)).body.state, 'under_review');
  });

  test('deleting an agent stops the held calls made as it', async () => {
    const key = await agentWithKey(w.admin, 'eng/short-lived-bot');
    const call = ask(key, 'agent about to go');
    call.catch(() => undefined);
    const entry = await pending((e) => e.agentId === 'eng/short-lived-bot');
    assert.equal((await w.admin.delete(`/api/v1/identities?id=${enc('eng/short-lived-bot')}`)).status, 200);
    await assert.rejects(call, (err: unknown) => err instanceof OpenAI.APIError && /was deleted/.test(err.message));
    assert.equal((await w.admin.get(`/api/v1/held-calls/${entry.id}`)).body.state, 'stopped');
  });

  test('a held call whose token was revoked while it waited is refused on release, never sent upstream, and audited', async () => {
    const token = await developerWithToken(w.admin, 'eng/revoked-while-waiting', 'developer');
    const tokenId = (await w.admin.get(`/api/v1/tokens?identityId=${enc('eng/revoked-while-waiting')}`)).body.items[0].id;
    const call = ask(token, 'revoke me while I wait');
    call.catch(() => undefined);
    const entry = await pending((e) => e.requester === 'eng/revoked-while-waiting');
    assert.equal((await w.admin.delete(`/api/v1/tokens/${tokenId}`)).status, 200);
    assert.equal((await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {})).body.state, 'released');
    await assert.rejects(call, (err: unknown) => {
      assert.ok(err instanceof OpenAI.AuthenticationError, String(err));
      assert.match(err.message, /revoked/);
      return true;
    });
    assert.equal(w.fake.hits.filter((h) => h.body.toString('utf8').includes('revoke me while I wait')).length, 0, 'never sent upstream');
    let event: any;
    await waitFor(async () => {
      // The hold was the decision (audited when parked); the refusal is the call's end event.
      event = (await w.admin.get('/api/v1/audit-events?type=llm&limit=200')).body.items.find((e: any) => e.data.held?.entryId === entry.id && e.outcome === 'refused');
      return event !== undefined;
    }, 30_000);
    assert.ok(event, 'the refusal is audited');
    assert.equal(event.outcome, 'refused');
    assert.equal(event.data.refusal.reason, 'credential_revoked');
  });
});

void Client;
