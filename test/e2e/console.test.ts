/**
 * The admin console in Chromium against a real replica: sign-in and sign-out, the tier selector and its
 * badge, approving and denying requests (with the server's warnings and refusals shown), co-signing,
 * revoking a grant, releasing a held call while a real SDK client waits, what a viewer and a developer
 * see, and user text (a justification with markup) shown as text. Screenshots of each screen go to
 * test-output/screenshots.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ADMIN_TOKEN, Client, developerWithToken, agentWithKey, enc, openTestStore, waitFor, type TestStore } from '../helpers/harness.js';
import { openai, startGatewayWorld, type GatewayWorld } from '../helpers/gateway.js';
import { browserStoreKind, ensureConsoleBuilt, launchBrowser, openConsole, screenshot, signIn, skipWithoutBrowser } from './browser.js';

const VIEWER_TITLE = /admin role is needed/;
const MARKUP = '<img src=x onerror=alert(1)><b>bold</b>';

const kind = await browserStoreKind();

describe(`admin console in the browser [${kind}]`, { skip: skipWithoutBrowser }, () => {
  let store: TestStore;
  let w: GatewayWorld;
  let browser: Browser;
  let admin: Client;
  let alice: Client; // developer, the requester
  let carolToken: string; // viewer, named co-signer
  let daveToken: string; // developer
  let aliceToken: string;
  const contexts: BrowserContext[] = [];
  const problems: string[] = [];
  const dialogs: string[] = [];

  before(async () => {
    await ensureConsoleBuilt();
    store = await openTestStore(kind);
    w = await startGatewayWorld(store);
    admin = w.admin;
    browser = await launchBrowser();
    aliceToken = await developerWithToken(admin, 'eng/alice', 'developer');
    alice = new Client(w.replica.url, aliceToken);
    carolToken = await developerWithToken(admin, 'sec/carol', 'viewer');
    daveToken = await developerWithToken(admin, 'eng/dave', 'developer');
  });

  after(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await browser?.close();
    await w?.close();
    await store?.close();
    assert.deepEqual(problems, [], 'no page errors, console errors or CSP violations');
    assert.deepEqual(dialogs, [], 'no script from user text ran');
  });

  /** A signed-in page in its own browser context (cookie jar). */
  async function pageAs(token: string): Promise<Page> {
    const { context, page, problems: seen } = await openConsole(browser, w.replica.url);
    contexts.push(context);
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    // Collected at the end: a failure of one test should not hide the others'.
    const flush = () => problems.push(...seen.splice(0));
    page.on('close', flush);
    context.on('close', flush);
    await signIn(page, token);
    return page;
  }

  async function submit(client: Client, body: Record<string, unknown>): Promise<any> {
    const r = await client.post('/api/v1/access-requests', body);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  }

  const row = (page: Page, attr: string, id: string) => page.locator(`tr[data-${attr}="${id}"]`);

  test('sign in with a personal access token, see who is signed in, sign out; a wrong token shows the server’s message', async () => {
    const { context, page } = await openConsole(browser, w.replica.url);
    contexts.push(context);
    const res = await page.goto('/');
    assert.ok(res);
    const csp = res.headers()['content-security-policy'] ?? '';
    assert.match(csp, /script-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(res.headers()['x-content-type-options'], 'nosniff');

    await page.getByLabel('Personal access token').fill('reins_pat_not-a-real-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'sign-in needs a valid personal access token' }).waitFor();
    await screenshot(page, 'sign-in');

    await page.getByLabel('Personal access token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const whoami = page.getByTestId('whoami');
    await whoami.waitFor();
    assert.match((await whoami.textContent()) ?? '', /default\/admin\s*admin/);
    // The session is the cookie: a reload stays signed in.
    await page.reload();
    await whoami.waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to Reins' }).waitFor();
    await page.getByText('Signed out.').waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in to Reins' }).waitFor();
  });

  test('the tier selector saves at once and updates the badge; the blank option clears it and the badge shows the resolved T2', async () => {
    await agentWithKey(admin, 'eng/deploy-bot');
    const page = await pageAs(ADMIN_TOKEN);
    await page.goto('/identities');
    const bot = row(page, 'identity', 'eng/deploy-bot');
    const badge = bot.getByTestId('tier-badge');
    assert.equal((await badge.textContent())?.trim(), 'T2 Semi-autonomous (default)');

    await bot.getByLabel('Autonomy tier of eng/deploy-bot').selectOption('T3');
    await bot.getByTestId('tier-badge').filter({ hasText: /^T3 Highly autonomous$/ }).waitFor();
    assert.equal((await admin.get(`/api/v1/identities/detail?id=${enc('eng/deploy-bot')}`)).body.autonomyTier, 'T3');
    await screenshot(page, 'identities');

    await bot.getByLabel('Autonomy tier of eng/deploy-bot').selectOption('');
    await bot.getByTestId('tier-badge').filter({ hasText: /^T2 Semi-autonomous \(default\)$/ }).waitFor();
    const cleared = (await admin.get(`/api/v1/identities/detail?id=${enc('eng/deploy-bot')}`)).body;
    assert.equal(cleared.autonomyTier, '');
    assert.equal(cleared.effectiveTier, 'T2');
    // After a reload the badge still shows what the server holds.
    await page.reload();
    assert.equal((await row(page, 'identity', 'eng/deploy-bot').getByTestId('tier-badge').textContent())?.trim(), 'T2 Semi-autonomous (default)');
  });

  let approvedGrantId = '';

  test('approve one request and deny another; a justification with markup is shown as text and creates no element', async () => {
    const toApprove = await submit(alice, { type: 'exception', targetPolicy: 'autonomy-model-ceiling', justification: MARKUP });
    const toDeny = await submit(alice, { type: 'model_access', requestedModel: 'o3-pro', justification: 'Benchmarks for the\nquarterly review.' });
    const page = await pageAs(ADMIN_TOKEN);
    await page.goto('/approvals/pending');

    const marked = row(page, 'request', toApprove.id);
    const just = marked.locator('.justification');
    assert.equal(await just.textContent(), MARKUP);
    assert.equal(await just.locator('img, b').count(), 0, 'the markup made no element');
    assert.equal(await page.locator('img[src="x"]').count(), 0);
    await screenshot(page, 'approvals-pending');

    await marked.getByRole('button', { name: 'Approve' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Expiry').selectOption('3600');
    await screenshot(page, 'approve-dialog');
    await dialog.getByRole('button', { name: 'Approve' }).click();
    await page.getByText(/Approved the request \(policy autonomy-model-ceiling for eng\/alice\)\. It is now approved\./).waitFor();
    const approved = (await admin.get(`/api/v1/access-requests/${toApprove.id}`)).body;
    assert.equal(approved.state, 'approved');
    assert.ok(approved.grantId);
    approvedGrantId = approved.grantId;
    const grant = (await admin.get(`/api/v1/policy-exceptions/${approved.grantId}`)).body;
    assert.equal(grant.state, 'active');
    const hours = (Date.parse(grant.expiresAt) - Date.parse(grant.createdAt)) / 3_600_000;
    assert.ok(Math.abs(hours - 1) < 0.01, `the chosen expiry: ${hours} h`);

    const other = row(page, 'request', toDeny.id);
    await other.getByRole('button', { name: 'Deny' }).click();
    await page.getByRole('dialog').getByLabel('Reason').fill('Use o3 instead <until Q3>.');
    await page.getByRole('dialog').getByRole('button', { name: 'Deny' }).click();
    await page.getByText(/Denied the request \(model o3-pro for eng\/alice\)\. It is now denied\./).waitFor();
    const denied = (await admin.get(`/api/v1/access-requests/${toDeny.id}`)).body;
    assert.equal(denied.state, 'denied');
    assert.equal(denied.denialReason, 'Use o3 instead <until Q3>.');
    // The list is read again after the decision's answer: wait for the row to go, then check it went.
    await row(page, 'request', toDeny.id).waitFor({ state: 'detached' });
    assert.equal(await row(page, 'request', toDeny.id).count(), 0, 'decided requests leave Pending');

    // The request detail shows the same text as text.
    await page.goto(`/approvals/requests/${toApprove.id}`);
    await page.getByRole('heading', { name: 'Decisions' }).waitFor();
    assert.equal(await page.locator('.justification').textContent(), MARKUP);
    assert.equal(await page.locator('.justification img, .justification b').count(), 0);
    await screenshot(page, 'request-detail');
  });

  test('a budget top-up approved with "also raise the persisted budget rule" needs the permanent limit and shows the server’s warning', async () => {
    const topUp = await submit(alice, { type: 'budget_topup', requestedAmountUsd: 25, justification: 'Load test this week.' });
    const page = await pageAs(ADMIN_TOKEN);
    await page.goto('/approvals/pending');
    await row(page, 'request', topUp.id).getByRole('button', { name: 'Approve' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('also raise the persisted budget rule').check();
    const limit = dialog.getByLabel(/Permanent limit \(USD, absolute/);
    await limit.waitFor();
    assert.equal(await limit.getAttribute('required'), '');
    await dialog.getByRole('button', { name: 'Approve' }).click();
    // The browser refuses the empty required field; nothing was sent.
    assert.equal((await admin.get(`/api/v1/access-requests/${topUp.id}`)).body.state, 'pending');
    await limit.fill('150');
    await screenshot(page, 'approve-dialog-budget-top-up');
    await dialog.getByRole('button', { name: 'Approve' }).click();
    const warning = page.getByRole('status').filter({ hasText: 'The server warned:' });
    await warning.waitFor();
    const text = (await warning.textContent()) ?? '';
    assert.match(text, /budget rule/i);
    assert.equal((await admin.get(`/api/v1/access-requests/${topUp.id}`)).body.state, 'approved', 'the temporary grant is still made');
    await screenshot(page, 'approvals-warning');
  });

  test('a decision the server refuses shows the server’s message (the request was decided meanwhile)', async () => {
    const r = await submit(alice, { type: 'model_access', requestedModel: 'gpt-5-pro', justification: 'Eval.' });
    const page = await pageAs(ADMIN_TOKEN);
    await page.goto('/approvals/pending');
    await row(page, 'request', r.id).waitFor();
    // Another admin denies it first, through the API.
    assert.equal((await admin.post(`/api/v1/access-requests/${r.id}/deny`, { reason: 'no' })).status, 200);
    await row(page, 'request', r.id).getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Approve' }).click();
    const refused = await admin.post(`/api/v1/access-requests/${r.id}/approve`, {});
    assert.equal(refused.status, 409);
    await page.getByRole('dialog').getByRole('alert').filter({ hasText: refused.body.error.message }).waitFor();
  });

  test('co-sign: the admin’s approval escalates to Under Review; the named co-signer (a viewer) casts their own vote', async () => {
    const r = await submit(alice, { type: 'exception', targetPolicy: 'autonomy-tool-approval', justification: 'Release night.', requiredApprovers: ['sec/carol'] });
    const page = await pageAs(ADMIN_TOKEN);
    await page.goto('/approvals/pending');
    await row(page, 'request', r.id).getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Approve' }).click();
    await page.getByText(/It is now Under Review: waiting for the co-signers\./).waitFor();
    const reviewRow = row(page, 'request', r.id);
    await reviewRow.getByText('Under Review').waitFor();
    await reviewRow.getByText('waiting for:').waitFor();
    assert.equal(await reviewRow.getByRole('button', { name: 'Approve' }).count(), 0, 'the admin is not a co-signer: no vote for them');
    assert.equal((await admin.get(`/api/v1/access-requests/${r.id}`)).body.state, 'under_review');

    const carol = await pageAs(carolToken);
    await carol.goto('/approvals/pending');
    const mine = row(carol, 'request', r.id);
    await mine.getByRole('button', { name: 'Approve (your vote)' }).click();
    await screenshot(carol, 'co-sign-dialog');
    await carol.getByRole('dialog').getByRole('button', { name: 'Record my approval' }).click();
    await carol.getByText(/You approved the request .* It is now approved\./).waitFor();
    const done = (await admin.get(`/api/v1/access-requests/${r.id}`)).body;
    assert.equal(done.state, 'approved');
    assert.deepEqual(
      done.decisions.map((d: any) => [d.approver, d.decision]),
      [
        ['default/admin', 'approve'],
        ['sec/carol', 'approve'],
      ],
    );
  });

  test('revoke a grant: it leaves Granted and shows in History', async () => {
    assert.ok(approvedGrantId, 'the approval test made a grant');
    const page = await pageAs(ADMIN_TOKEN);
    await page.goto('/approvals/granted');
    const g = row(page, 'grant', approvedGrantId);
    await g.waitFor();
    await screenshot(page, 'approvals-granted');
    await g.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await page.getByText(/Revoked the grant of policy autonomy-model-ceiling to eng\/alice\./).waitFor();
    await g.waitFor({ state: 'detached' });
    const revoked = (await admin.get(`/api/v1/policy-exceptions/${approvedGrantId}`)).body;
    assert.equal(revoked.state, 'revoked');
    assert.equal(revoked.revokedBy, 'default/admin');
    await page.getByRole('tab', { name: 'History' }).click();
    await row(page, 'grant', approvedGrantId).getByText('Revoked').waitFor();
    await screenshot(page, 'approvals-history');
    await page.goto(`/approvals/grants/${approvedGrantId}`);
    await page.getByText('by default/admin').waitFor();
    await screenshot(page, 'grant-detail');
  });

  test('release a held call while a real SDK client waits: the call completes with the provider’s answer after the click', async () => {
    const created = await admin.post('/api/v1/policies', {
      name: 'review-gpt-4o',
      kind: 'approve',
      appliesTo: ['llm'],
      match: "object.llm.model == 'gpt-4o'",
      message: 'gpt-4o calls need a look from the platform team.',
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const key = await agentWithKey(admin, 'eng/held-bot');
    let settled = false;
    const call = openai(w.replica.url, key)
      .chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Summarise the incident <b>now</b>' }] })
      .finally(() => {
        settled = true;
      });
    call.catch(() => {});
    let entry: any;
    await waitFor(async () => {
      entry = (await admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.agentId === 'eng/held-bot');
      return entry !== undefined;
    }, 10_000);
    assert.ok(entry, 'the call was parked');

    const page = await pageAs(ADMIN_TOKEN);
    await page.goto('/approvals/pending');
    const held = row(page, 'held-call', entry.id);
    await held.getByText('review-gpt-4o').waitFor();
    await held.getByText('gpt-4o calls need a look from the platform team.').waitFor();
    assert.equal(await held.locator('.excerpt').textContent(), entry.promptExcerpt);
    assert.equal(await held.locator('.excerpt b').count(), 0);
    await held.getByText('agent key (no session)').waitFor();
    await screenshot(page, 'held-call');
    assert.equal(settled, false, 'the SDK call is still waiting');

    await held.getByRole('button', { name: 'Release' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Release' }).click();
    const answer = await call;
    assert.equal(answer.choices[0]?.message.content, 'Hello world');
    await page.getByText(/Released 1 call to model gpt-4o/).waitFor();
    await held.waitFor({ state: 'detached' });
    assert.equal((await admin.get(`/api/v1/held-calls/${entry.id}`)).body.state, 'released');
  });

  test('a viewer sees pending items, request detail and grant history with Approve, Deny, Revoke and Release disabled', async () => {
    const r = await submit(alice, { type: 'model_access', requestedModel: 'claude-opus', justification: 'Design review.' });
    const grant = await admin.post(`/api/v1/access-requests/${(await submit(alice, { type: 'model_access', requestedModel: 'gemini-pro', justification: 'Compare.' })).id}/approve`, {});
    assert.equal(grant.status, 200);
    const key = await agentWithKey(admin, 'eng/viewer-bot');
    const call = openai(w.replica.url, key).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'viewer cannot release this' }] });
    call.catch(() => {});
    let entry: any;
    await waitFor(async () => {
      entry = (await admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.agentId === 'eng/viewer-bot');
      return entry !== undefined;
    }, 10_000);

    const page = await pageAs(carolToken);
    await page.goto('/approvals/pending');
    for (const name of ['Approve', 'Deny']) {
      const button = row(page, 'request', r.id).getByRole('button', { name, exact: true });
      assert.equal(await button.isDisabled(), true, `${name} is disabled`);
      assert.match((await button.getAttribute('title')) ?? '', VIEWER_TITLE);
    }
    for (const name of ['Release', 'Deny']) {
      const button = row(page, 'held-call', entry.id).getByRole('button', { name, exact: true });
      assert.equal(await button.isDisabled(), true, `held call ${name} is disabled`);
      assert.match((await button.getAttribute('title')) ?? '', VIEWER_TITLE);
    }
    await screenshot(page, 'viewer-pending');

    await page.goto(`/approvals/requests/${r.id}`);
    await page.getByText('Design review.').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Approve', exact: true }).isDisabled(), true);
    assert.equal(await page.getByRole('button', { name: 'Deny', exact: true }).isDisabled(), true);

    await page.goto('/approvals/granted');
    const revoke = row(page, 'grant', grant.body.grant.id).getByRole('button', { name: 'Revoke' });
    assert.equal(await revoke.isDisabled(), true);
    assert.match((await revoke.getAttribute('title')) ?? '', VIEWER_TITLE);
    await page.getByRole('tab', { name: 'History' }).click();
    await row(page, 'grant', approvedGrantId).waitFor();

    await page.goto('/identities');
    assert.equal(await row(page, 'identity', 'eng/deploy-bot').getByLabel('Autonomy tier of eng/deploy-bot').isDisabled(), true);
    await page.goto('/settings/general/human-review');
    assert.equal(await page.getByRole('button', { name: 'Save' }).isDisabled(), true);

    await admin.post(`/api/v1/held-calls/${entry.id}/deny`, { note: 'cleanup' });
  });

  test('a developer sees only their own requests and no admin screens', async () => {
    const mine = await submit(new Client(w.replica.url, daveToken), { type: 'model_access', requestedModel: 'o4', justification: 'Dave’s own.' });
    const page = await pageAs(daveToken);
    await page.waitForURL('**/approvals/pending');
    await row(page, 'request', mine.id).waitFor();
    assert.equal(await page.locator('tr[data-request]').count(), 1, 'only the developer’s own request');
    assert.equal(await page.getByRole('button', { name: 'Approve', exact: true }).count(), 0);
    assert.equal(await page.getByRole('heading', { name: 'Held calls' }).count(), 0);
    const nav = page.getByRole('navigation', { name: 'Main' });
    for (const hidden of ['Identities', 'Policies', 'Audit log', 'Status and reconciliation', 'Settings']) {
      assert.equal(await nav.getByRole('link', { name: hidden }).count(), 0, `${hidden} is not offered`);
    }
    await page.goto('/identities');
    await page.getByText('This screen needs the admin or viewer role.').waitFor();
    await screenshot(page, 'developer-approvals');
  });

  test('every other screen renders: policies with the built-ins, audit log with filters, notifications, Settings › General › Human Review, rules', async () => {
    const page = await pageAs(ADMIN_TOKEN);
    await page.goto('/policies');
    await row(page, 'policy', 'autonomy-model-ceiling').getByText('built-in').waitFor();
    await screenshot(page, 'policies');

    await page.goto('/audit');
    await page.locator('table.audit tbody tr').first().waitFor();
    await page.getByLabel('Action').fill('access_request.approve');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.locator('table.audit tbody tr').first().getByText('access_request.approve').waitFor();
    await page.getByLabel('Action').fill('held_call.approve');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.locator('table.audit tbody tr').first().getByText('held_call.approve').waitFor();
    assert.equal(await page.locator('table.audit tbody tr').count(), 1);
    await screenshot(page, 'audit-log');

    await page.goto('/notifications');
    await page.getByText(/asks for/).first().waitFor();
    await screenshot(page, 'notifications');

    await page.goto('/settings/general/human-review');
    await page.getByLabel('Approval window for LLM requests (seconds)').fill('240');
    await page.getByLabel('Let it through and audit it (allow)').check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText(/^Saved\./).waitFor();
    const saved = (await admin.get('/api/v1/settings/human-review')).body;
    assert.deepEqual(saved, { llmApprovalWindowSeconds: 240, mcpApprovalWindowSeconds: 1800, timeoutOutcome: 'allow' });
    await screenshot(page, 'settings-human-review');

    await page.goto('/approvals/rules');
    await page.getByLabel('Name').fill('night releases');
    await page.getByLabel('Policy').selectOption('autonomy-tool-approval');
    await page.getByLabel('Required co-signers (identity ids)').fill('sec/carol');
    await page.getByRole('button', { name: 'Add rule' }).click();
    await page.locator('table.rules').getByText('night releases').waitFor();

    // The rules screen's rate limits: added through the form, listed, in force through the API.
    const form = page.getByRole('form', { name: 'New rate limit' });
    await form.getByLabel('Rate limit').fill('agents per minute');
    await form.getByLabel('Applies to').fill('eng');
    await form.getByLabel('Upstream').fill('openai');
    await form.getByLabel('Requests per minute').fill('60');
    await form.getByRole('button', { name: 'Add rate limit' }).click();
    const limitRow = page.locator('table.rate-limits tbody tr', { hasText: 'agents per minute' });
    await limitRow.getByText('60').waitFor();
    await limitRow.getByText('openai').waitFor();
    const stored = (await admin.get('/api/v1/rate-limits')).body.items.find((r: any) => r.name === 'agents per minute');
    assert.deepEqual({ scope: stored.scope, pattern: stored.pattern, upstream: stored.upstream, requestsPerMinute: stored.requestsPerMinute }, { scope: 'eng', pattern: '*', upstream: 'openai', requestsPerMinute: 60 });
    await screenshot(page, 'approvals-rules');
    // An upstream no providers entry names: the form shows the API's message naming the field, nothing is added.
    await form.getByLabel('Rate limit').fill('misspelt upstream');
    await form.getByLabel('Upstream').fill('opnai');
    await form.getByLabel('Requests per minute').fill('5');
    await form.getByRole('button', { name: 'Add rate limit' }).click();
    await form.getByText(/body\.upstream: no upstream is named opnai/).waitFor();
    // Deleted through its row's button and the confirmation.
    await limitRow.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await limitRow.waitFor({ state: 'detached' });
    assert.ok(!(await admin.get('/api/v1/rate-limits')).body.items.some((r: any) => r.name === 'agents per minute' || r.name === 'misspelt upstream'));

    await page.goto('/runtime');
    await page.getByTestId('runtime-disabled').waitFor();
    await screenshot(page, 'runtime-disabled');
  });
});
