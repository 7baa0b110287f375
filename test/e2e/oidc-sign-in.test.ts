/**
 * "Sign in with <provider>" in Chromium, the real redirect flow: the console's button, the provider's (oidc-provider,
 * test/helpers/oidc-provider.ts) login and consent pages, back to the screen the person started from, signed in with
 * the role their groups give; a personal access token minted on the Access tokens screen; then sign-out ends the session and goes to the provider's logout page. The console's
 * own pages must show no page error, console error or CSP violation (the provider's pages are not Reins').
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import type { Replica } from '../../src/app/server.js';
import type { OidcConfig } from '../../src/config/config.js';
import { Client, openTestStore, startTestReplica, type TestStore } from '../helpers/harness.js';
import { startTestProvider, type TestProvider } from '../helpers/oidc-provider.js';
import { browserStoreKind, ensureConsoleBuilt, launchBrowser, openConsole, screenshot, skipWithoutBrowser } from './browser.js';

const kind = await browserStoreKind();

describe(`console sign-in with an OpenID provider in the browser [${kind}]`, { skip: skipWithoutBrowser }, () => {
  let store: TestStore;
  let idp: TestProvider;
  let replica: Replica;
  let browser: Browser;

  before(async () => {
    await ensureConsoleBuilt();
    store = await openTestStore(kind);
    idp = await startTestProvider({ users: { alice: { email: 'alice@example.com', name: 'Alice', groups: ['reins-admins'] } } });
    const oidc: OidcConfig = {
      issuer: idp.issuer,
      clientId: idp.clientId,
      clientSecret: idp.clientSecret,
      redirectUrl: 'http://127.0.0.1:1/auth/oidc/callback',
      scopes: ['openid', 'email', 'profile', 'groups'],
      identity: { claim: 'email', namespace: 'people' },
      roles: { admin: ['reins-admins'], viewer: [], developer: [] },
      groupsClaim: 'groups',
      maxSessionSeconds: 3600,
      displayName: 'Test IdP',
    };
    replica = await startTestReplica(store, { auth: { oidc, tokenSignIn: 'all' } });
    oidc.redirectUrl = `${replica.url}/auth/oidc/callback`;
    idp.setRedirectUri(oidc.redirectUrl);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await replica?.close();
    await idp?.close();
    await store?.close();
  });

  test('the button signs in through the provider and lands on the screen it started from; sign-out ends it', async () => {
    const { context, page, problems } = await openConsole(browser, replica.url);
    try {
      await page.goto('/audit');
      await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
      // The provider's own pages (development interactions): login, then consent.
      await page.locator('input[name="login"]').fill('alice');
      await page.locator('input[name="password"]').fill('any');
      await page.locator('button[type="submit"]').click();
      await page.locator('button[type="submit"]', { hasText: 'Continue' }).click();
      await page.getByTestId('whoami').waitFor();
      assert.match(await page.getByTestId('whoami').innerText(), /people\/alice\s+admin/);
      assert.equal(new URL(page.url()).pathname, '/audit');
      await screenshot(page, 'oidc-signed-in');

      // Her own token for her tools, minted from the session the provider signed in: it is people/alice on the API.
      await page.getByRole('link', { name: 'Access tokens' }).click();
      await page.getByLabel('Token name').fill('claude-code');
      await page.getByRole('button', { name: 'Create token' }).click();
      await page.getByTestId('new-token').waitFor();
      const secret = ((await page.getByTestId('new-token-secret').textContent()) ?? '').trim();
      assert.match(secret, /^reins_pat_/);
      const asToken = await new Client(replica.url, secret).get('/api/v1/auth/me');
      assert.equal(asToken.status, 200);
      assert.equal(asToken.body.id, 'people/alice');
      await page.getByRole('button', { name: 'I have copied it' }).click();
      const consoleProblems = problems.filter((p) => !p.includes(idp.issuer) && !/fonts\.googleapis|ERR_NAME_NOT_RESOLVED|net::ERR/.test(p));

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL((url) => url.href.startsWith(idp.issuer));
      const cookies = await context.cookies(replica.url);
      assert.equal(cookies.some((c) => c.name === 'reins_session'), false, 'the session cookie is cleared');
      assert.deepEqual(consoleProblems, []);
    } finally {
      await context.close();
    }
  });
});
