/**
 * What openid-client verifies for Reins, proven against a real provider (`oidc-provider`): an ID token with another
 * nonce than the flow's, or signed with a key the provider's published JWKS does not hold under its `kid`, is refused;
 * a signing key rotated to one already published works at once. A correct provider does not issue an expired ID token,
 * one for another audience or from another issuer, or one whose signature does not match its claims: for those the
 * provider's own token endpoint answer is tampered with on its way to Reins (`tamperIdToken`, as a proxy on that hop
 * would), re-signed with the provider's published key so that only the one claim is wrong; each is refused with no
 * session, no cookie and no identity.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { OidcConfig } from '../../../src/config/config.js';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, describeEachStore, enc, startTestReplica, WAIT_MS, waitFor } from '../../helpers/harness.js';
import { browse, decodeJwt, Jar, rsaJwk, signJwt, startTestProvider, throughProvider, type TestProvider } from '../../helpers/oidc-provider.js';

describeEachStore('OIDC ID token checks against a real provider', ({ store }) => {
  let idp: TestProvider;
  let replica: Replica;
  let admin: Client;
  let oidc: OidcConfig;
  const key1 = rsaJwk('key-1');
  const key2 = rsaJwk('key-2');

  before(async () => {
    idp = await startTestProvider({ users: {
        alice: { email: 'alice@example.com', groups: ['devs'] },
        // One person per tampered token: none of them may end up with an identity.
        bob: { email: 'bob@example.com', groups: ['devs'] },
        carol: { email: 'carol@example.com', groups: ['devs'] },
        dave: { email: 'dave@example.com', groups: ['devs'] },
        erin: { email: 'erin@example.com', groups: ['devs'] },
      }, keys: [key1, key2] });
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

  /** A sign-in as `login`; `tamper` may change the authorization URL the browser follows. Returns Reins' answer. */
  async function signIn(tamper: (authorization: URL) => void = () => {}, login = 'alice') {
    const jar = new Jar();
    const start = await browse(jar, `${replica.url}/auth/oidc/login`);
    assert.equal(start.status, 302);
    const authorization = new URL(start.headers.get('location')!);
    tamper(authorization);
    const back = await throughProvider(jar, authorization.href, login, oidc.redirectUrl);
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

  /**
   * A sign-in whose ID token `rewrite` changes between the provider's token endpoint and Reins. Asserts the refusal
   * every such token must get: 400 sign_in_failed naming `reason`, no session cookie, no identity, no session.create.
   */
  async function refusedWithTamperedToken(login: string, rewrite: (idToken: string) => string, reason: RegExp) {
    let tampered = 0;
    idp.tamperIdToken((t) => {
      tampered++;
      return rewrite(t);
    });
    let r: Response;
    try {
      r = await signIn(undefined, login);
    } finally {
      idp.tamperIdToken(null);
    }
    assert.equal(tampered, 1, 'the token endpoint answered once, with the tampered ID token');
    assert.equal(r.status, 400);
    assert.equal(r.headers.getSetCookie().some((c) => c.startsWith('reins_session=') && !/Expires=Thu, 01 Jan 1970/i.test(c)), false, 'no session cookie');
    const body = (await r.json()) as any;
    assert.equal(body.error.code, 'sign_in_failed');
    assert.match(body.error.message, reason);
    assert.equal((await admin.get(`/api/v1/identities/detail?id=${enc(`people/${login}`)}`)).status, 404, 'no identity from a refused token');
    const created = (await admin.get(`/api/v1/audit-events?action=session.create&identity=${enc(`people/${login}`)}`)).body.items ?? [];
    assert.deepEqual(created, [], 'no session');
    // Counted and audited like a refused token sign-in: the failed-credential throttle's `auth.failed` (its first
    // failure of the address's window is an event of its own; later ones are summed when the window ends).
    const audited = await waitFor(async () => {
      const items = (await admin.get('/api/v1/audit-events?action=auth.failed')).body.items ?? [];
      return items.some((e: any) => e.data.plane === 'sign-in' && /OpenID Connect callback/.test(e.data.reason));
    }, WAIT_MS);
    assert.ok(audited >= 0, 'the failed sign-in is audited (auth.failed, plane sign-in)');
  }

  /** The provider's ID token with `change` applied to its claims, signed again with the provider's signing key. */
  const resigned = (change: (claims: Record<string, unknown>) => void) => (idToken: string) => {
    const { header, payload } = decodeJwt(idToken);
    const signing = [key1, key2].find((k) => k.kid === header.kid);
    assert.ok(signing, `the provider signed with a key of its JWKS (kid ${String(header.kid)})`);
    change(payload);
    return signJwt(payload, signing, { typ: header.typ });
  };

  test('a wrongly-signed ID token (claims changed after the provider signed them) is refused', async () => {
    // First the same path untampered, so that a refusal below is the signature's doing and not the proxy's.
    await signsInThroughTheTamperingPath();
    await refusedWithTamperedToken('bob', (t) => {
      const { header, payload, signature } = decodeJwt(t);
      const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
      return `${b64(header)}.${b64({ ...payload, groups: ['reins-admins'], email: 'mallory@example.com' })}.${signature}`;
    }, /signature verification failed/);
  });

  test('an expired ID token is refused', async () => {
    const now = Math.floor(Date.now() / 1000);
    // Well beyond openid-client's clock tolerance (30 s).
    await refusedWithTamperedToken('carol', resigned((c) => Object.assign(c, { iat: now - 7200, exp: now - 3600 })), /ID token claim "exp"/);
  });

  test('an ID token for another audience is refused', async () => {
    await refusedWithTamperedToken('dave', resigned((c) => Object.assign(c, { aud: 'another-client', azp: 'another-client' })), /ID token claim "aud"/);
  });

  test('an ID token from another issuer is refused', async () => {
    await refusedWithTamperedToken('erin', resigned((c) => Object.assign(c, { iss: 'https://login.attacker.example' })), /ID token claim "iss"/);
  });

  /** The tampering path with a token re-signed unchanged: accepted, so the refusals above are the claims'. */
  async function signsInThroughTheTamperingPath() {
    idp.tamperIdToken(resigned(() => {}));
    try {
      const r = await signIn();
      assert.equal(r.status, 303, `an unchanged re-signed token signs in (${r.status})`);
    } finally {
      idp.tamperIdToken(null);
    }
  }
});
