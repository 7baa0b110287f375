/**
 * The Access tokens screen in Chromium against a real replica: a developer mints a personal access token
 * for their tools, sees its secret once with the Claude Code and Codex set-up lines, the secret works on
 * the API, revoking it (after a confirmation) stops it at once; another developer and a viewer do not see
 * it, and an admin's screen lists only the admin's own tokens.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Replica } from '../../src/app/server.js';
import { ADMIN_TOKEN, Client, developerWithToken, openTestStore, startTestReplica, waitFor, WAIT_MS, type TestStore } from '../helpers/harness.js';
import { browserStoreKind, ensureConsoleBuilt, launchBrowser, openConsole, screenshot, signIn, skipWithoutBrowser } from './browser.js';

const kind = await browserStoreKind();

describe(`Access tokens screen in the browser [${kind}]`, { skip: skipWithoutBrowser }, () => {
  let store: TestStore;
  let replica: Replica;
  let browser: Browser;
  let admin: Client;
  let aliceToken: string; // developer
  let daveToken: string; // another developer
  let carolToken: string; // viewer
  const contexts: BrowserContext[] = [];
  const problems: string[] = [];

  before(async () => {
    await ensureConsoleBuilt();
    store = await openTestStore(kind);
    replica = await startTestReplica(store);
    admin = new Client(replica.url, ADMIN_TOKEN);
    browser = await launchBrowser();
    aliceToken = await developerWithToken(admin, 'eng/alice', 'developer');
    daveToken = await developerWithToken(admin, 'eng/dave', 'developer');
    carolToken = await developerWithToken(admin, 'sec/carol', 'viewer');
  });

  after(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await browser?.close();
    await replica?.close();
    await store?.close();
    assert.deepEqual(problems, [], 'no page errors, console errors or CSP violations');
  });

  async function pageAs(token: string): Promise<Page> {
    const { context, page, problems: seen } = await openConsole(browser, replica.url);
    contexts.push(context);
    const flush = () => problems.push(...seen.splice(0));
    page.on('close', flush);
    context.on('close', flush);
    await signIn(page, token);
    await page.getByRole('link', { name: 'Access tokens' }).click();
    await page.getByRole('heading', { name: 'Access tokens' }).waitFor();
    return page;
  }

  const me = (token: string) => new Client(replica.url, token).get('/api/v1/auth/me');

  test('a developer mints a token, sees the secret once, uses it, revokes it; others never see it', async () => {
    const page = await pageAs(aliceToken);
    await page.getByLabel('Token name').fill('claude-code laptop');
    await page.getByLabel('Expires', { exact: true }).selectOption('7');
    await page.getByRole('button', { name: 'Create token' }).click();

    const shown = page.getByTestId('new-token');
    await shown.waitFor();
    const secret = ((await page.getByTestId('new-token-secret').textContent()) ?? '').trim();
    assert.match(secret, /^reins_pat_/);
    const text = (await shown.textContent()) ?? '';
    assert.match(text, /only time it is shown/);
    assert.ok(text.includes(`ANTHROPIC_BASE_URL=${replica.url}/llm/anthropic`), text);
    assert.ok(text.includes(`ANTHROPIC_AUTH_TOKEN=${secret}`));
    assert.ok(text.includes(`base_url = "${replica.url}/llm/openai/v1"`));
    assert.ok(text.includes(`export REINS_TOKEN=${secret}`));
    await screenshot(page, 'access-tokens-created');

    // The secret is alice's on the API.
    const asNew = await me(secret);
    assert.equal(asNew.status, 200);
    assert.equal(asNew.body.id, 'eng/alice');

    // Listed with its expiry (about 7 days) and, now that it was used, when.
    const aliceTokens = async () => (await admin.get('/api/v1/tokens?identityId=eng%2Falice&kind=personal')).body.items as any[];
    const minted = (await aliceTokens()).find((t) => t.name === 'claude-code laptop');
    assert.ok(minted);
    // last_used_at is written after the call is answered.
    await waitFor(async () => (await aliceTokens()).find((t) => t.id === minted.id)?.lastUsedAt != null, WAIT_MS);
    const days = (Date.parse(minted.expiresAt) - Date.parse(minted.createdAt)) / 86_400_000;
    assert.ok(days > 6.9 && days < 7.1, `expires in ${days} days`);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    assert.equal(await page.getByTestId('new-token').count(), 0);
    await page.reload();
    const row = page.locator(`tr[data-token="${minted.id}"]`);
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /claude-code laptop/);
    assert.equal(await row.locator('td').nth(4).locator('time').count(), 1, 'last used is shown');
    assert.ok(!((await page.textContent('body')) ?? '').includes(secret), 'the secret is not shown again');

    // Another developer and a viewer see only their own.
    for (const other of [daveToken, carolToken]) {
      const p = await pageAs(other);
      await p.getByRole('heading', { name: 'Your tokens' }).waitFor();
      await p.locator('tr[data-token]').first().waitFor();
      assert.equal(await p.locator(`tr[data-token="${minted.id}"]`).count(), 0);
      assert.equal(await p.locator('tr[data-token-name="claude-code laptop"]').count(), 0);
      await p.close();
    }
    // An admin's screen is the admin's own tokens too, not everyone's.
    const adminPage = await pageAs(ADMIN_TOKEN);
    await adminPage.getByRole('heading', { name: 'Your tokens' }).waitFor();
    await adminPage.locator('.empty, tr[data-token]').first().waitFor();
    assert.equal(await adminPage.locator(`tr[data-token="${minted.id}"]`).count(), 0);
    await adminPage.close();

    // Revoke, after a confirmation that can be cancelled.
    await row.getByRole('button', { name: 'Revoke claude-code laptop' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('stops working at once').waitFor();
    await screenshot(page, 'access-tokens-revoke');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await me(secret)).status, 200, 'cancel revokes nothing');
    await row.getByRole('button', { name: 'Revoke claude-code laptop' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await row.locator('.state-revoked').waitFor();
    assert.equal((await me(secret)).status, 401);
    // alice's own session (another token) goes on.
    assert.equal((await me(aliceToken)).status, 200);
    await page.getByTestId('whoami').waitFor();
    await screenshot(page, 'access-tokens');
  });

  test('a date expiry, no expiry, and a missing name refused in the form', async () => {
    const page = await pageAs(daveToken);
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.getByRole('alert').filter({ hasText: 'Name the token' }).waitFor();

    await page.getByLabel('Token name').fill('codex desktop');
    await page.getByLabel('Expires', { exact: true }).selectOption('date');
    const date = new Date(Date.now() + 45 * 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel('Expiry date').fill(date);
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.getByTestId('new-token').waitFor();

    await page.getByLabel('Token name').fill('ci forever');
    await page.getByLabel('Expires', { exact: true }).selectOption('never');
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.getByTestId('new-token').filter({ hasText: 'ci forever' }).waitFor();

    const items = (await new Client(replica.url, daveToken).get('/api/v1/tokens')).body.items as any[];
    const dated = items.find((t) => t.name === 'codex desktop');
    const forever = items.find((t) => t.name === 'ci forever');
    // The end of the chosen day in the browser's time zone.
    const expires = new Date(dated.expiresAt);
    assert.ok(Math.abs(expires.getTime() - new Date(`${date}T23:59:59`).getTime()) < 86_400_000, dated.expiresAt);
    assert.equal(forever.expiresAt, null);
    await page.locator('tr[data-token-name="ci forever"]').getByText('no expiry').waitFor();
  });
});
