/**
 * What openid-client verifies for Reins, proven against a real provider (`oidc-provider`): an ID token with another
 * nonce than the flow's, or signed with a key the provider's published JWKS does not hold under its `kid`, is refused;
 * a signing key rotated to one already published works at once. (The library also checks issuer, audience and
 * expiry; a correct provider cannot be made to issue such tokens, so those checks are not driven here.)
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { OidcConfig } from '../../../src/config/config.js';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, describeEachStore, enc, startTestReplica } from '../../helpers/harness.js';
import { browse, Jar, rsaJwk, startTestProvider, throughProvider, type TestProvider } from '../../helpers/oidc-provider.js';

describeEachStore('OIDC ID token checks against a real provider', ({ store }) => {
  let idp: TestProvider;
  let replica: Replica;
  let admin: Client;
  let oidc: OidcConfig;
  const key1 = rsaJwk('key-1');
  const key2 = rsaJwk('key-2');

  before(async () => {
    idp = await startTestProvider({ users: { alice: { email: 'alice@example.com', groups: ['devs'] } }, keys: [key1, key2] });
    oidc = {
      issuer: idp.issuer,
      clientId: idp.clientId,
      clientSecret: idp.clientSecret,
      redirectUrl: 'http://127.0.0.1:1/auth/oidc/callback',
      scopes: ['openid', 'email', 'profile', 'groups'],
      identity: { claim: 'email', namespace: 'people' },
      roles: { admin: [], viewer: [], developer: ['devs'] },
      groupsClaim: 'groups',
      maxSessionSeconds: 3600,
      displayName: 'Test IdP',
    };
    replica = await startTestReplica(store(), { auth: { oidc, tokenSignIn: 'all' } });
    oidc.redirectUrl = `${replica.url}/auth/oidc/callback`;
    idp.setRedirectUri(oidc.redirectUrl);
    admin = new Client(replica.url, ADMIN_TOKEN);
  });
  after(async () => {
    await replica?.close();
    await idp?.close();
  });

  /** A sign-in as alice; `tamper` may change the authorization URL the browser follows. Returns Reins' answer. */
  async function signIn(tamper: (authorization: URL) => void = () => {}) {
    const jar = new Jar();
    const start = await browse(jar, `${replica.url}/auth/oidc/login`);
    assert.equal(start.status, 302);
    const authorization = new URL(start.headers.get('location')!);
    tamper(authorization);
    const back = await throughProvider(jar, authorization.href, 'alice', oidc.redirectUrl);
    return browse(jar, back.href, { accept: 'application/json' });
  }

  test('an ID token with another nonce than the flow\'s is refused', async () => {
    const r = await signIn((u) => u.searchParams.set('nonce', 'not-the-flows-nonce'));
    assert.equal(r.status, 400);
    const body = (await r.json()) as any;
    assert.equal(body.error.code, 'sign_in_failed');
    assert.match(body.error.message, /nonce/);
    assert.equal((await admin.get(`/api/v1/identities/detail?id=${enc('people/alice')}`)).status, 404, 'no identity from a refused token');
  });

  test('a signing key rotated to one already published works at once', async () => {
    assert.equal((await signIn()).status, 303, 'signed with key-1; Reins now holds the JWKS with key-1 and key-2');
    idp.setKeys([key2, key1]);
    assert.equal((await signIn()).status, 303, 'signed with key-2');
    idp.setKeys([key2]);
    assert.equal((await signIn()).status, 303, 'key-1 retired');
  });

  test('an ID token signed with another key under a published kid is refused', async () => {
    idp.setKeys([rsaJwk('key-2')]);
    const r = await signIn();
    assert.equal(r.status, 400);
    const body = (await r.json()) as any;
    assert.equal(body.error.code, 'sign_in_failed');
    assert.match(body.error.message, /signature/i);
    idp.setKeys([key2]);
  });
});
