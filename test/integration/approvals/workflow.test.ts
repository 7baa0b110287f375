/**
 * The approval workflow through HTTP: requests, single-approver decisions, co-signing, grants that change the
 * next gateway call (real SDK client), revoke and expiry, budget-rule raising, self-approval refused and
 * audited, notifications, and a justification that comes back byte for byte.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { adminWithToken, Client, describeEachStore, developerWithToken, waitFor } from '../../helpers/harness.js';
import { anthropic, llmEvent, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';

describeEachStore('approvals workflow', ({ store }) => {
  let w: GatewayWorld;
  let dev: Client;
  let devToken: string;
  let otherAdmin: Client;
  let viewer: Client;
  let cosigner: Client;
  before(async () => {
    w = await startGatewayWorld(store());
    devToken = await developerWithToken(w.admin, 'eng/erin', 'developer');
    dev = w.admin.with(devToken);
    otherAdmin = w.admin.with(await adminWithToken(w.replica.db, 'sec/olga'));
    viewer = w.admin.with(await developerWithToken(w.admin, 'sec/vic', 'viewer'));
    cosigner = w.admin.with(await developerWithToken(w.admin, 'eng/lead', 'developer'));
  });
  after(async () => w.close());

  const premium = () => anthropic(w.replica.url, devToken).messages.create({ model: 'o3-pro', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });

  test('a request is filed for the caller (never a body field); the justification comes back byte for byte', async () => {
    const justification = `<script>alert("x")</script> & <b>bold</b> \\u0000 ${'é'.repeat(3)} "quotes"`;
    const r = await dev.post('/api/v1/access-requests', { type: 'exception', targetPolicy: 'autonomy-model-ceiling', justification });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.requester, 'eng/erin');
    assert.equal(r.body.state, 'pending');
    assert.equal(r.body.justification, justification);
    assert.equal((await w.admin.get(`/api/v1/access-requests/${r.body.id}`)).body.justification, justification);
    assert.equal((await dev.post('/api/v1/access-requests', { type: 'exception', targetPolicy: 'autonomy-model-ceiling', justification: 'x', requester: 'sec/olga' })).status, 400);
    assert.equal((await dev.post('/api/v1/access-requests', { type: 'exception', justification: 'x' })).status, 400);
    assert.equal((await dev.post('/api/v1/access-requests', { type: 'budget_topup', justification: 'x' })).status, 400);
    // Developers see only their own; viewers see all.
    assert.ok((await viewer.get('/api/v1/access-requests')).body.items.some((i: any) => i.id === r.body.id));
    assert.equal((await cosigner.get(`/api/v1/access-requests/${r.body.id}`)).status, 404);
  });

  test('approve creates an active grant that changes the next call; revoke changes it back at once', async () => {
    await assert.rejects(premium(), Anthropic.PermissionDeniedError);
    const req = (await dev.post('/api/v1/access-requests', { type: 'exception', targetPolicy: 'autonomy-model-ceiling', justification: 'needs opus for the migration' })).body;
    assert.equal((await viewer.post(`/api/v1/access-requests/${req.id}/approve`, {})).status, 403, 'viewers never decide');
    const approved = await w.admin.post(`/api/v1/access-requests/${req.id}/approve`, { durationSeconds: 3600 });
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    assert.equal(approved.body.request.state, 'approved');
    assert.equal(approved.body.grant.state, 'active');
    assert.deepEqual(approved.body.grant.approvers, ['default/admin']);
    await premium();
    const notes = (await dev.get('/api/v1/notifications')).body.items;
    assert.ok(notes.some((n: any) => n.kind === 'request_approved' && /default\/admin approved/.test(n.message) && /Retry/.test(n.message)));
    assert.equal((await w.admin.post(`/api/v1/access-requests/${req.id}/deny`, { reason: 'changed my mind' })).status, 409, 'final');
    const grants = (await w.admin.get(`/api/v1/policy-exceptions?developerId=${encodeURIComponent('eng/erin')}&policyName=autonomy-model-ceiling`)).body.items;
    assert.equal(grants.length, 1);
    assert.equal((await dev.delete(`/api/v1/policy-exceptions/${grants[0].id}`)).status, 403);
    const revoked = await w.admin.delete(`/api/v1/policy-exceptions/${grants[0].id}`);
    assert.deepEqual(revoked.body, { id: grants[0].id, state: 'revoked' });
    await assert.rejects(premium(), Anthropic.PermissionDeniedError);
    assert.equal((await w.admin.delete(`/api/v1/policy-exceptions/${grants[0].id}`)).status, 409);
    const history = (await w.admin.get('/api/v1/policy-exceptions/history')).body.items;
    assert.equal(history.find((g: any) => g.id === grants[0].id).state, 'revoked');
    assert.ok((await dev.get('/api/v1/notifications')).body.items.some((n: any) => n.kind === 'grant_revoked'));
  });

  test("the model ceiling's remedy is true: an approved model-access request lets that model through, revoking it refuses again", async () => {
    const monaToken = await developerWithToken(w.admin, 'eng/mona', 'developer');
    const mona = w.admin.with(monaToken);
    const ask = (model: string) => anthropic(w.replica.url, monaToken).messages.create({ model, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    await assert.rejects(ask('gpt-5-pro'), (err: Error) => err instanceof Anthropic.PermissionDeniedError && /autonomy-model-ceiling/.test(err.message) && /request model access/.test(err.message));
    const req = (await mona.post('/api/v1/access-requests', { type: 'model_access', requestedModel: 'gpt-5-pro', justification: 'one hard proof' })).body;
    // The next refusal tells her where her request stands.
    await assert.rejects(ask('gpt-5-pro'), (err: Error) => err.message.includes(`Your request ${req.id} is waiting for an admin.`));
    const approved = await w.admin.post(`/api/v1/access-requests/${req.id}/approve`, { durationSeconds: 3600 });
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    assert.equal((await ask('gpt-5-pro')).id, 'msg_fake');
    // Access to one model is not an exception to the whole ceiling.
    await assert.rejects(ask('o3-pro'), /autonomy-model-ceiling/);
    await llmEvent(w.admin, (e) => e.data.model === 'gpt-5-pro' && e.data.decision === 'allow', `&identity=${encodeURIComponent('eng/mona')}`);
    assert.equal((await w.admin.delete(`/api/v1/policy-exceptions/${approved.body.grant.id}`)).status, 200);
    await assert.rejects(ask('gpt-5-pro'), /autonomy-model-ceiling/);
  });

  test('a grant ends by itself at its expiry: the next call is refused and History shows it expired', async () => {
    const req = (await dev.post('/api/v1/access-requests', { type: 'exception', targetPolicy: 'autonomy-model-ceiling', justification: 'quick look' })).body;
    // Far enough ahead that a busy machine still makes the call before it.
    const approved = await w.admin.post(`/api/v1/access-requests/${req.id}/approve`, { expiresAt: new Date(Date.now() + 5000).toISOString() });
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    await premium();
    // Waited out by the grant's own expiry (whole seconds from the approval), not the one asked for.
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(approved.body.grant.expiresAt) - Date.now()) + 200));
    await assert.rejects(premium(), Anthropic.PermissionDeniedError);
    const history = (await w.admin.get('/api/v1/policy-exceptions/history')).body.items;
    assert.equal(history.find((g: any) => g.id === approved.body.grant.id).state, 'expired');
  });

  test("self-approval is refused and audited, also for an admin requester; denying one's own is allowed", async () => {
    const mine = (await w.admin.post('/api/v1/access-requests', { type: 'model_access', requestedModel: 'o3-pro', justification: 'eval' })).body;
    const r = await w.admin.post(`/api/v1/access-requests/${mine.id}/approve`, {});
    assert.equal(r.status, 403);
    const audited = (await w.admin.get('/api/v1/audit-events?type=control&action=access_request.approve')).body.items;
    assert.ok(audited.some((e: any) => e.outcome === 'refused' && e.data.code === 'self_approval' && e.data.requestId === mine.id));
    const denied = await w.admin.post(`/api/v1/access-requests/${mine.id}/deny`, { reason: 'withdrawn' });
    assert.equal(denied.status, 200);
    assert.equal(denied.body.request.state, 'denied');
    assert.equal(denied.body.request.denialReason, 'withdrawn');
  });

  test('co-signing: under review with the grant active; only named approvers vote, for themselves; a denial revokes', async () => {
    const req = (await dev.post('/api/v1/access-requests', { type: 'exception', targetPolicy: 'autonomy-model-ceiling', justification: 'big refactor' })).body;
    const escalated = await w.admin.post(`/api/v1/access-requests/${req.id}/approve`, { additionalApprovers: ['eng/lead', 'sec/olga'] });
    assert.equal(escalated.body.request.state, 'under_review');
    assert.equal(escalated.body.grant.state, 'active');
    await premium();
    // A developer named as a co-signer finds the request in their own list (and only requests that name them).
    const listed = (await cosigner.get('/api/v1/access-requests?state=under_review')).body.items;
    assert.deepEqual(listed.map((r: any) => r.id), [req.id]);
    assert.equal((await cosigner.get(`/api/v1/access-requests?requester=${encodeURIComponent('eng/erin')}`)).body.items.length, 1);
    assert.equal((await viewer.post(`/api/v1/access-requests/${req.id}/votes`, { decision: 'approve' })).status, 403, 'not a named approver');
    const forOther = await cosigner.post(`/api/v1/access-requests/${req.id}/votes`, { decision: 'approve', approver: 'sec/olga' });
    assert.equal(forOther.status, 403);
    const first = await cosigner.post(`/api/v1/access-requests/${req.id}/votes`, { decision: 'approve' });
    assert.equal(first.body.request.state, 'under_review');
    assert.equal((await cosigner.post(`/api/v1/access-requests/${req.id}/votes`, { decision: 'approve' })).status, 409, 'already voted');
    const last = await otherAdmin.post(`/api/v1/access-requests/${req.id}/votes`, { decision: 'approve' });
    assert.equal(last.body.request.state, 'approved');
    assert.equal(last.body.request.decisions.length, 3);

    const second = (await dev.post('/api/v1/access-requests', { type: 'model_access', requestedModel: 'gpt-5-pro', justification: 'again' })).body;
    await w.admin.post(`/api/v1/access-requests/${second.id}/approve`, { additionalApprovers: ['eng/lead'] });
    const no = await cosigner.post(`/api/v1/access-requests/${second.id}/votes`, { decision: 'deny', reason: 'not this quarter' });
    assert.equal(no.body.request.state, 'denied');
    assert.equal(no.body.grant.state, 'revoked');
    const notes = (await dev.get('/api/v1/notifications')).body.items;
    assert.ok(notes.some((n: any) => n.kind === 'request_denied' && n.message.endsWith('not this quarter')));
  });

  test('a top-up with "raise the rule": found raises it to the absolute limit; missing or ambiguous still grants with a warning', async () => {
    const rule = (await w.admin.post('/api/v1/budget-rules', { name: 'erin session', scope: 'eng/erin', pattern: '*', limitUsd: 5, period: 'session' })).body;
    const req = (await dev.post('/api/v1/access-requests', { type: 'budget_topup', requestedAmountUsd: 10, justification: 'long session' })).body;
    assert.equal((await w.admin.post(`/api/v1/access-requests/${req.id}/approve`, { raiseBudgetRule: true })).status, 400, 'permanent limit required');
    const ok = await w.admin.post(`/api/v1/access-requests/${req.id}/approve`, { raiseBudgetRule: true, permanentLimitUsd: 40 });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.deepEqual(ok.body.warnings, []);
    assert.equal((await w.admin.get(`/api/v1/budget-rules/${rule.id}`)).body.limitUsd, 40);

    await w.admin.post('/api/v1/budget-rules', { name: 'erin session twin', scope: 'eng/erin', pattern: '*', limitUsd: 7, period: 'session' });
    const twin = (await dev.post('/api/v1/access-requests', { type: 'budget_topup', requestedAmountUsd: 3, justification: 'more' })).body;
    const ambiguous = await w.admin.post(`/api/v1/access-requests/${twin.id}/approve`, { raiseBudgetRule: true, permanentLimitUsd: 50 });
    assert.equal(ambiguous.status, 200);
    assert.equal(ambiguous.body.grant.state, 'active');
    assert.match(ambiguous.body.warnings[0], /several budget rules/);

    const lonely = (await w.admin.with(await developerWithToken(w.admin, 'ops/nobudget', 'developer')).post('/api/v1/access-requests', { type: 'budget_topup', requestedAmountUsd: 3, justification: 'x' })).body;
    const missing = await w.admin.post(`/api/v1/access-requests/${lonely.id}/approve`, { raiseBudgetRule: true, permanentLimitUsd: 9 });
    assert.equal(missing.status, 200);
    assert.match(missing.body.warnings[0], /no budget rule covers/);

    // The rule a request matched at submission, renamed or removed before approval: granted, not raised, warned.
    const gina = w.admin.with(await developerWithToken(w.admin, 'ops/gina', 'developer'));
    const ginaRule = (await w.admin.post('/api/v1/budget-rules', { name: 'gina daily', scope: 'ops/gina', pattern: '*', limitUsd: 2, period: 'day' })).body;
    const renamedReq = (await gina.post('/api/v1/access-requests', { type: 'budget_topup', requestedAmountUsd: 1, justification: 'x' })).body;
    const removedReq = (await gina.post('/api/v1/access-requests', { type: 'budget_topup', requestedAmountUsd: 1, justification: 'y' })).body;
    await w.admin.put(`/api/v1/budget-rules/${ginaRule.id}`, { name: 'gina per day', scope: 'ops/gina', pattern: '*', limitUsd: 2, period: 'day' });
    const renamed = await w.admin.post(`/api/v1/access-requests/${renamedReq.id}/approve`, { raiseBudgetRule: true, permanentLimitUsd: 20 });
    assert.equal(renamed.status, 200);
    assert.match(renamed.body.warnings[0], /"gina daily" .* renamed to "gina per day"/);
    assert.equal((await w.admin.get(`/api/v1/budget-rules/${ginaRule.id}`)).body.limitUsd, 2, 'not raised');
    await w.admin.delete(`/api/v1/budget-rules/${ginaRule.id}`);
    const removed = await w.admin.post(`/api/v1/access-requests/${removedReq.id}/approve`, { raiseBudgetRule: true, permanentLimitUsd: 20 });
    assert.equal(removed.status, 200);
    assert.equal(removed.body.grant.state, 'active');
    assert.match(removed.body.warnings[0], /removed since/);
  });

  test('exception rules: CRUD, and their required approvers join each request for the policy', async () => {
    const rule = await w.admin.post('/api/v1/exception-rules', { name: 'egress exceptions', policyName: 'autonomy-egress-allowlist', maxDurationSeconds: 7200, requiredApprovers: ['eng/lead'] });
    assert.equal(rule.status, 201, JSON.stringify(rule.body));
    const req = (await dev.post('/api/v1/access-requests', { type: 'exception', targetPolicy: 'autonomy-egress-allowlist', justification: 'pypi mirror' })).body;
    assert.deepEqual(req.requiredApprovers, ['eng/lead']);
    const approved = await w.admin.post(`/api/v1/access-requests/${req.id}/approve`, { durationSeconds: 86_400 });
    assert.equal(approved.body.request.state, 'under_review');
    const hours = (Date.parse(approved.body.grant.expiresAt) - Date.now()) / 3_600_000;
    assert.ok(hours > 1.9 && hours <= 2, `the rule caps the grant at 2 h, got ${hours}`);
    assert.equal((await w.admin.put(`/api/v1/exception-rules/${rule.body.id}`, { ...rule.body, maxDurationSeconds: 3600 })).status, 400, 'unknown field id');
    const { id: _id, ...body } = rule.body;
    assert.equal((await w.admin.put(`/api/v1/exception-rules/${rule.body.id}`, { ...body, maxDurationSeconds: 3600 })).body.maxDurationSeconds, 3600);
    assert.equal((await w.admin.post('/api/v1/exception-rules', { ...body, policyName: 'nope' })).status, 400);
    assert.equal((await w.admin.delete(`/api/v1/exception-rules/${rule.body.id}`)).status, 200);
  });

  test('the next refusal relays the developer\'s own request: waiting, or denied with the reason verbatim', async () => {
    const tier = await developerWithToken(w.admin, 'eng/frank', 'developer');
    const ask = () => anthropic(w.replica.url, tier).messages.create({ model: 'gpt-5-pro', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    const client = w.admin.with(tier);
    const req = (await client.post('/api/v1/access-requests', { type: 'exception', targetPolicy: 'autonomy-model-ceiling', justification: 'please' })).body;
    await assert.rejects(ask(), new RegExp(`request ${req.id} is waiting for an admin`));
    await w.admin.post(`/api/v1/access-requests/${req.id}/deny`, { reason: 'Use Sonnet for refactors <not opus>.' });
    await assert.rejects(ask(), (err: Error) => err.message.includes(`request ${req.id} was denied: Use Sonnet for refactors <not opus>.`));
  });

  test('an exception scoped to a project counts only for calls that name that project (X-Reins-Project)', async () => {
    const token = await developerWithToken(w.admin, 'eng/hana', 'developer');
    const ask = (project?: string) =>
      anthropic(w.replica.url, token, project ? { 'X-Reins-Project': project } : {}).messages.create({ model: 'o3-pro', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    const req = (await w.admin.with(token).post('/api/v1/access-requests', { type: 'exception', targetPolicy: 'autonomy-model-ceiling', justification: 'repo-a only', projectScope: 'github.com/acme/repo-a' })).body;
    const approved = await w.admin.post(`/api/v1/access-requests/${req.id}/approve`, {});
    assert.equal(approved.body.grant.projectScope, 'github.com/acme/repo-a');
    await ask('github.com/acme/repo-a');
    await assert.rejects(ask('github.com/acme/repo-b'), /autonomy-model-ceiling/);
    await assert.rejects(ask(), /autonomy-model-ceiling/);
  });

  test('the requester cannot be added as a co-signer at approval (400, audited); she may still withdraw her request', async () => {
    const req = (await dev.post('/api/v1/access-requests', { type: 'model_access', requestedModel: 'o1-pro', justification: 'x' })).body;
    const added = await w.admin.post(`/api/v1/access-requests/${req.id}/approve`, { additionalApprovers: ['eng/erin'] });
    assert.equal(added.status, 400);
    const audited = (await w.admin.get('/api/v1/audit-events?type=control&action=access_request.approve')).body.items;
    assert.ok(audited.some((e: any) => e.outcome === 'refused' && e.data.code === 'requester_as_approver' && e.data.requestId === req.id));
    const withdraw = await dev.post(`/api/v1/access-requests/${req.id}/deny`, { reason: 'not needed after all' });
    assert.equal(withdraw.status, 403, 'deny is an admin action; a developer withdraws through her votes only when named');
    assert.equal((await w.admin.get(`/api/v1/access-requests/${req.id}`)).body.state, 'pending');
  });

  test("notifications are the caller's own and can be marked read", async () => {
    const mine = (await dev.get('/api/v1/notifications')).body.items;
    assert.ok(mine.length > 0);
    assert.equal((await cosigner.post(`/api/v1/notifications/${mine[0].id}/read`)).status, 404);
    assert.equal((await dev.post(`/api/v1/notifications/${mine[0].id}/read`)).status, 200);
    assert.ok((await dev.get('/api/v1/notifications?unread=true')).body.items.every((n: any) => n.id !== mine[0].id));
  });
  void waitFor;
});
