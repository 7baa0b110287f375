/**
 * OpenID Connect sign-in against a real provider (`oidc-provider`, test/helpers/oidc-provider.ts), driven over HTTP
 * through its login and consent pages: identities created just in time with the role their groups give, the role
 * re-evaluated at every sign-in (audited with the group that caused it), refusals without a partial account,
 * tampered state and replayed codes refused, and the session cookie working on the API like token sign-in's.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { OidcConfig } from '../../../src/config/config.js';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, describeEachStore, developerWithToken, enc, startTestReplica } from '../../helpers/harness.js';
import { browse, Jar, startTestProvider, throughProvider, type TestProvider } from '../../helpers/oidc-provider.js';

describeEachStore('OIDC sign-in through a real OpenID provider', ({ store }) => {
  let idp: TestProvider;
  let replica: Replica;
  let admin: Client;
  let oidc: OidcConfig;

  before(async () => {
    idp = await startTestProvider({
      users: {
        alice: { email: 'Alice@example.com', name: 'Alice', groups: ['reins-admins', 'developers'] },
        bob: { email: 'bob@example.com', groups: ['security-auditors', 'developers'] },
        carol: { email: 'carol@example.com', groups: ['marketing'] },
        dave: { email: 'dave@example.com', groups: ['developers'] },
        erin: { email: 'erin@example.com', groups: ['developers'] },
        frank: { email: 'frank@example.com', groups: ['developers'] },
        frank2: { email: 'frank@elsewhere.example', groups: ['developers'] },
        grace: { email: 'grace+test@example.com', groups: ['developers'] },
        ann: { email: 'ann@example.com', groups: ['reins-admins'] },
        vic: { email: 'vic@example.com', groups: ['security-auditors'] },
        dev: { email: 'dev@example.com', groups: ['developers'] },
        hank: { email: 'hank@example.com', groups: ['developers'] },
        ivy: { email: 'ivy@example.com', groups: ['reins-admins'] },
        kim: { email: 'kim@example.com', groups: ['reins-admins'] },
        leo: { email: 'leo@example.com', groups: ['developers'] },
      },
    });
    oidc = {
      issuer: idp.issuer,
      clientId: idp.clientId,
      clientSecret: idp.clientSecret,
      redirectUrl: 'http://127.0.0.1:1/auth/oidc/callback', // replaced below, once the replica listens
      scopes: ['openid', 'email', 'profile', 'groups'],
      identity: { claim: 'email', namespace: 'people' },
      roles: { admin: ['reins-admins'], viewer: ['security-auditors'], developer: ['developers'] },
      groupsClaim: 'groups',
      maxSessionSeconds: 3600,
      displayName: 'Test IdP',
    };
    replica = await startTestReplica(store(), { auth: { oidc, tokenSignIn: 'admins' } });
    // The callback's URL needs the replica's port (0 until it listens); the replica reads it at the first sign-in.
    oidc.redirectUrl = `${replica.url}/auth/oidc/callback`;
    idp.setRedirectUri(oidc.redirectUrl);
    admin = new Client(replica.url, ADMIN_TOKEN);
  });
  after(async () => {
    await replica?.close();
    await idp?.close();
  });

  /** Starts sign-in at Reins, signs in at the provider as `login`, and returns the provider's redirect back. */
  async function toCallback(login: string, returnTo = '/approvals') {
    const jar = new Jar();
    const start = await browse(jar, `${replica.url}/auth/oidc/login?returnTo=${enc(returnTo)}`);
    assert.equal(start.status, 302, await start.text());
    const authorization = start.headers.get('location')!;
    assert.ok(authorization.startsWith(`${idp.issuer}/`), authorization);
    const params = new URL(authorization).searchParams;
    assert.equal(params.get('code_challenge_method'), 'S256');
    assert.ok(params.get('state') && params.get('nonce') && params.get('code_challenge'), authorization);
    const back = await throughProvider(jar, authorization, login, oidc.redirectUrl);
    return { jar, back };
  }

  async function signIn(login: string, returnTo = '/approvals') {
    const { jar, back } = await toCallback(login, returnTo);
    const done = await browse(jar, back.href);
    return { jar, back, done };
  }

  const withCookie = (jar: Jar, extra: Record<string, string> = {}) => ({ token: null, headers: { cookie: `reins_session=${jar.get(replica.url, 'reins_session')}`, ...extra } });
  const identity = async (id: string) => (await admin.get(`/api/v1/identities/detail?id=${enc(id)}`)).body;
  const events = async (action: string, id: string) =>
    ((await admin.get(`/api/v1/audit-events?action=${action}&identity=${enc(id)}`)).body.items ?? []) as any[];

  test('the console learns that OIDC sign-in is offered', async () => {
    const r = await new Client(replica.url).get('/api/v1/auth/sign-in-options');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { token: true, tokenSignIn: 'admins', oidc: { displayName: 'Test IdP', issuer: idp.issuer, loginUrl: '/auth/oidc/login' } });
  });

  test('auth.tokenSignIn: admins keeps token sign-in for break-glass admins only', async () => {
    const anon = new Client(replica.url);
    assert.equal((await anon.post('/api/v1/auth/session', { token: ADMIN_TOKEN })).status, 200);
    const devToken = await developerWithToken(admin, 'eng/token-only', 'developer');
    const r = await anon.post('/api/v1/auth/session', { token: devToken });
    assert.equal(r.status, 403);
    assert.match(r.body.error.message, /auth\.tokenSignIn/);
    assert.equal((await admin.with(devToken).get('/api/v1/auth/me')).status, 200, 'the token itself still works on the API');
  });

  test('auth.tokenSignIn: off closes token sign-in to everyone, admins included; tokens keep working on the API', async () => {
    const off = await startTestReplica(store(), { auth: { oidc: { ...oidc }, tokenSignIn: 'off' } });
    try {
      const anon = new Client(off.url);
      const r = await anon.post('/api/v1/auth/session', { token: ADMIN_TOKEN });
      assert.equal(r.status, 403, JSON.stringify(r.body));
      assert.match(r.body.error.message, /auth\.tokenSignIn: off/);
      assert.equal(r.headers.getSetCookie().some((c) => c.startsWith('reins_session=')), false);
      const options = (await anon.get('/api/v1/auth/sign-in-options')).body;
      assert.equal(options.token, false);
      assert.equal(options.tokenSignIn, 'off');
      assert.equal((await new Client(off.url, ADMIN_TOKEN).get('/api/v1/identities')).status, 200, 'the token itself still works on the API');
    } finally {
      await off.close();
    }
  });

  test('a first sign-in creates the identity with the mapped role and a session cookie that works on the API', async () => {
    const { jar, done } = await signIn('alice');
    assert.equal(done.status, 303, await done.text());
    assert.equal(done.headers.get('location'), '/approvals');
    const setCookie = done.headers.getSetCookie().find((c) => c.startsWith('reins_session='))!;
    assert.match(setCookie, /HttpOnly/i);
    assert.match(setCookie, /SameSite=Strict/i);
    assert.equal(jar.get(replica.url, 'reins_oidc'), undefined, 'the transaction cookie is cleared');

    const me = await admin.get('/api/v1/auth/me', withCookie(jar));
    assert.equal(me.status, 200, JSON.stringify(me.body));
    assert.equal(me.body.id, 'people/alice');
    assert.equal(me.body.role, 'admin');
    assert.equal(me.body.via, 'session');
    assert.equal((await identity('people/alice')).role, 'admin');
    assert.equal((await identity('people/alice')).displayName, 'Alice');

    // Like a token session: reads pass, a state change needs the CSRF token.
    assert.equal((await admin.get('/api/v1/identities', withCookie(jar))).status, 200);
    const noCsrf = await admin.post('/api/v1/identities', { id: 'eng/by-alice', kind: 'agent' }, withCookie(jar));
    assert.equal(noCsrf.status, 403);
    assert.equal(noCsrf.body.error.code, 'csrf_required');
    const created = await admin.post('/api/v1/identities', { id: 'eng/by-alice', kind: 'agent' }, withCookie(jar, { 'x-csrf-token': me.body.csrfToken }));
    assert.equal(created.status, 201, JSON.stringify(created.body));

    const createdEvents = (await events('identity.create', 'people/alice')).filter((e) => e.subject === 'people/alice');
    assert.equal(createdEvents.length, 1);
    assert.deepEqual(createdEvents[0].actor, { kind: 'system', id: 'system:oidc' });
    assert.equal(createdEvents[0].data.role, 'admin');
    assert.equal(createdEvents[0].data.group, 'reins-admins');
    assert.equal(createdEvents[0].data.claim, 'groups');
    const sessions = await events('session.create', 'people/alice');
    assert.equal(sessions[0]?.data.via, 'oidc');
  });

  test('the authorization table holds for OIDC sessions as for token sessions of the same role (every GET of the API)', async () => {
    const doc = (await new Client(replica.url).get('/api/v1/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const reads = Object.entries(doc.paths)
      .filter(([path, item]) => path.startsWith('/api/v1/') && !path.includes('{') && 'get' in item)
      .map(([path]) => path);
    assert.ok(reads.length > 15, `${reads.length} read routes`);
    const tokens = {
      admin: ADMIN_TOKEN,
      viewer: await developerWithToken(admin, 'ops/table-viewer', 'viewer'),
      developer: await developerWithToken(admin, 'eng/table-dev', 'developer'),
    };
    for (const [login, role] of [['ann', 'admin'], ['vic', 'viewer'], ['dev', 'developer']] as const) {
      const { jar, done } = await signIn(login);
      assert.equal(done.status, 303);
      for (const path of reads) {
        const bySession = await admin.get(path, withCookie(jar));
        const byToken = await admin.with(tokens[role]).get(path);
        assert.equal(bySession.status, byToken.status, `${role} GET ${path}: session ${bySession.status}, token ${byToken.status}`);
      }
    }
  });

  test('two first sign-ins of one person at once make one identity', async () => {
    const a = await toCallback('hank');
    const b = await toCallback('hank');
    const [ra, rb] = await Promise.all([browse(a.jar, a.back.href), browse(b.jar, b.back.href)]);
    assert.deepEqual([ra.status, rb.status], [303, 303]);
    const created = (await events('identity.create', 'people/hank')).filter((e) => e.subject === 'people/hank');
    assert.equal(created.length, 1);
  });

  test('viewer before developer: a group named for viewers wins over the developers group', async () => {
    const { done } = await signIn('bob');
    assert.equal(done.status, 303);
    assert.equal((await identity('people/bob')).role, 'viewer');
  });

  test('a tampered state is refused and creates nothing', async () => {
    const { jar, back } = await toCallback('erin');
    back.searchParams.set('state', `${back.searchParams.get('state')}x`);
    const r = await browse(jar, back.href);
    assert.equal(r.status, 400);
    assert.match(r.headers.get('content-type') ?? '', /text\/html/);
    assert.match(await r.text(), /state/);
    assert.equal((await admin.get(`/api/v1/identities/detail?id=${enc('people/erin')}`)).status, 404);
    // The transaction was used up: the untampered answer cannot be played afterwards either.
    back.searchParams.set('state', back.searchParams.get('state')!.slice(0, -1));
    const again = await browse(jar, back.href, { accept: 'application/json' });
    assert.equal(again.status, 400);
    assert.equal(((await again.json()) as any).error.code, 'sign_in_failed');
  });

  test('a callback without the browser\'s transaction cookie is refused', async () => {
    const { back } = await toCallback('erin');
    const r = await browse(new Jar(), back.href, { accept: 'application/json' });
    assert.equal(r.status, 400);
    const body = (await r.json()) as any;
    assert.equal(body.error.code, 'sign_in_failed');
  });

  test('a replayed code is refused, also inside a new sign-in of the same browser', async () => {
    const first = await signIn('dave');
    assert.equal(first.done.status, 303);
    // The same answer again: the transaction is gone.
    const replay = await browse(first.jar, first.back.href, { accept: 'application/json' });
    assert.equal(replay.status, 400);
    // The used code slipped into a fresh sign-in (its own state and cookie): the provider refuses the code.
    const jar = first.jar;
    const start = await browse(jar, `${replica.url}/auth/oidc/login`);
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    const forged = new URL(first.back.href);
    forged.searchParams.set('state', state);
    const r = await browse(jar, forged.href, { accept: 'application/json' });
    assert.equal(r.status, 400);
    const body = (await r.json()) as any;
    assert.equal(body.error.code, 'sign_in_failed');
    assert.match(body.error.message, /invalid_grant/);
  });

  test('a person in no mapped group is refused with a page, and gets no account', async () => {
    const { done } = await signIn('carol');
    assert.equal(done.status, 403);
    const page = await done.text();
    assert.match(page, /none of the groups/);
    assert.match(page, /No Reins account or session was created/);
    assert.equal(done.headers.getSetCookie().some((c) => c.startsWith('reins_session=') && !/Expires=Thu, 01 Jan 1970/i.test(c)), false);
    assert.equal((await admin.get(`/api/v1/identities/detail?id=${enc('people/carol')}`)).status, 404);
    const refused = await events('session.refused', 'people/carol');
    assert.equal(refused.length, 1);
    assert.equal(refused[0].outcome, 'refused');
    assert.deepEqual(refused[0].data.groups, ['marketing']);
  });

  test('a demoted person loses admin at the next sign-in, audited with the claim; removed from every group, their sessions end', async () => {
    const first = await signIn('alice');
    assert.equal((await admin.get('/api/v1/auth/me', withCookie(first.jar))).body.role, 'admin');
    idp.users.get('alice')!.groups = ['developers'];
    const second = await signIn('alice');
    assert.equal(second.done.status, 303);
    assert.equal((await admin.get('/api/v1/auth/me', withCookie(second.jar))).body.role, 'developer');
    // The role is the identity's: the earlier session is demoted too.
    assert.equal((await admin.get('/api/v1/auth/me', withCookie(first.jar))).body.role, 'developer');
    assert.equal((await admin.get('/api/v1/identities', withCookie(first.jar))).status, 403);
    const changes = await events('identity.role_change', 'people/alice');
    assert.equal(changes.length, 1);
    assert.equal(changes[0].data.oldRole, 'admin');
    assert.equal(changes[0].data.newRole, 'developer');
    assert.equal(changes[0].data.claim, 'groups');
    assert.equal(changes[0].data.group, 'developers');
    assert.deepEqual(changes[0].data.groups, ['developers']);

    // A token alice minted for her tools while she was let in.
    const csrf = (await admin.get('/api/v1/auth/me', withCookie(second.jar))).body.csrfToken;
    const minted = await admin.post('/api/v1/tokens', { identityId: 'people/alice', name: 'claude-code' }, withCookie(second.jar, { 'x-csrf-token': csrf }));
    assert.equal(minted.status, 201, JSON.stringify(minted.body));
    assert.equal((await admin.with(minted.body.token).get('/api/v1/auth/me')).status, 200);

    idp.users.get('alice')!.groups = [];
    const third = await signIn('alice');
    assert.equal(third.done.status, 403);
    assert.equal((await admin.get('/api/v1/auth/me', withCookie(second.jar))).status, 401, 'the provider no longer lets alice in: her console sessions end');
    assert.equal((await admin.with(minted.body.token).get('/api/v1/auth/me')).status, 401, '... and her personal access tokens stop working');
    const refused = (await events('session.refused', 'people/alice'))[0];
    assert.equal(refused.data.tokensRevoked, 1);
    assert.equal((await identity('people/alice')).role, 'developer');
  });

  test('a token identity and an OIDC session are one identity; another account mapping to it is refused', async () => {
    assert.equal((await admin.post('/api/v1/identities', { id: 'people/frank', kind: 'developer', role: 'viewer' })).status, 201);
    const { jar, done } = await signIn('frank');
    assert.equal(done.status, 303);
    const me = await admin.get('/api/v1/auth/me', withCookie(jar));
    assert.equal(me.body.id, 'people/frank');
    assert.equal(me.body.role, 'developer');
    const other = await signIn('frank2');
    assert.equal(other.done.status, 403);
    assert.match(await other.done.text(), /belongs to another account/);
  });

  test('a claim that makes no valid identity name is refused, never rewritten', async () => {
    const { done } = await signIn('grace');
    assert.equal(done.status, 403);
    assert.match(await done.text(), /does not make a valid identity name/);
  });

  test('one person across a token and a provider session is one identity: she cannot approve her own request', async () => {
    const { jar, done } = await signIn('ivy');
    assert.equal(done.status, 303, await done.text());
    const me = (await admin.get('/api/v1/auth/me', withCookie(jar))).body;
    assert.equal(me.id, 'people/ivy');
    // Her own token for her tools, minted from her provider session.
    const minted = await admin.post('/api/v1/tokens', { identityId: 'people/ivy', name: 'laptop' }, withCookie(jar, { 'x-csrf-token': me.csrfToken }));
    assert.equal(minted.status, 201, JSON.stringify(minted.body));
    const ivy = admin.with(minted.body.token as string);
    const req = await ivy.post('/api/v1/access-requests', { type: 'model_access', requestedModel: 'gpt-5-pro', justification: 'evaluation' });
    assert.equal(req.status, 201, JSON.stringify(req.body));
    // The request was filed with the token; approving it from the provider session is the same person.
    const approve = await admin.post(`/api/v1/access-requests/${req.body.id}/approve`, {}, withCookie(jar, { 'x-csrf-token': me.csrfToken }));
    assert.equal(approve.status, 403, JSON.stringify(approve.body));
    assert.equal(approve.body.error.code, 'self_approval');
    assert.equal((await admin.get(`/api/v1/access-requests/${req.body.id}`)).body.state, 'pending');
  });

  test('returnTo must be a console path', async () => {
    for (const bad of ['//evil.example.com/x', 'https://evil.example.com/', '/api/v1/identities', '/\\evil.example.com', 'approvals', '/.//evil.example.com/x']) {
      const r = await new Client(replica.url).get(`/auth/oidc/login?returnTo=${enc(bad)}`);
      assert.equal(r.status, 400, bad);
      assert.equal(r.body.error.code, 'invalid_request');
      assert.match(r.body.error.message, /returnTo/);
    }
  });

  test('sign-out ends the session (CSRF needed) and names the provider\'s logout page', async () => {
    const { jar } = await signIn('dave');
    const me = await admin.get('/api/v1/auth/me', withCookie(jar));
    assert.equal(me.status, 200);
    assert.equal((await admin.post('/auth/logout', undefined, withCookie(jar))).status, 403);
    const out = await admin.post('/auth/logout', undefined, withCookie(jar, { 'x-csrf-token': me.body.csrfToken }));
    assert.equal(out.status, 200, JSON.stringify(out.body));
    assert.equal(out.body.status, 'signed_out');
    assert.ok(String(out.body.providerLogoutUrl).startsWith(`${idp.issuer}/`), out.body.providerLogoutUrl);
    assert.equal((await admin.get('/api/v1/auth/me', withCookie(jar))).status, 401);
  });

  /** The session's expiry in the store, and the cookie's, in seconds from now. */
  async function lifetimes(jar: Jar, done: Response) {
    const cookie = done.headers.getSetCookie().find((c) => c.startsWith('reins_session='))!;
    const cookieExpires = /Expires=([^;]+)/i.exec(cookie)?.[1];
    assert.ok(cookieExpires, cookie);
    const me = (await admin.get('/api/v1/auth/me', withCookie(jar))).body;
    const r = await replica.db.query<{ left: number }>(
      `SELECT EXTRACT(EPOCH FROM expires_at - now())::float8 AS left FROM console_sessions WHERE csrf_token = $1`,
      [me.csrfToken],
    );
    return { store: Number(r.rows[0]!.left), cookie: (Date.parse(cookieExpires) - Date.now()) / 1000, csrfToken: me.csrfToken as string };
  }

  test('a provider session lives at most auth.oidc.maxSessionSeconds (and never longer than sessions.ttlSeconds), then ends', async () => {
    // This replica: sessions.ttlSeconds 12 h (the default), auth.oidc.maxSessionSeconds 3600.
    const { jar, done } = await signIn('kim');
    assert.equal(done.status, 303, await done.text());
    const life = await lifetimes(jar, done);
    // Bounds wide enough for a loaded machine, narrow enough that 12 h (43200) could not pass.
    assert.ok(life.store > 3600 - 300 && life.store <= 3600, `the session expires in ${life.store} s`);
    assert.ok(life.cookie > 3600 - 300 && life.cookie <= 3601, `the cookie expires in ${life.cookie} s`);
    assert.equal((await admin.get('/api/v1/auth/me', withCookie(jar))).body.role, 'admin');
    // The lifetime passes (the store's clock moved instead of the test waiting an hour): the session ends, whatever the
    // provider now says; a person removed from reins-admins meanwhile gets their current groups at the next sign-in.
    await replica.db.query(`UPDATE console_sessions SET expires_at = now() - interval '1 second' WHERE csrf_token = $1`, [life.csrfToken]);
    const after = await admin.get('/api/v1/auth/me', withCookie(jar));
    assert.equal(after.status, 401, JSON.stringify(after.body));
    assert.equal((await admin.get('/api/v1/identities', withCookie(jar))).status, 401);
  });

  test('the callback may reach another replica (the flow lives in the store); that replica\'s shorter sessions.ttlSeconds bounds the session', async () => {
    // Another replica on the same store, behind the same callback URL, with sessions of 10 minutes.
    const other = await startTestReplica(store(), { auth: { oidc: { ...oidc }, tokenSignIn: 'admins' }, sessions: { ttlSeconds: 600 } });
    try {
      const { jar, back } = await toCallback('kim');
      // A load balancer sends the provider's redirect to the other replica; the browser's cookies go with it.
      const onOther = new URL(`${back.pathname}${back.search}`, other.url);
      jar.set(other.url, 'reins_oidc', jar.get(replica.url, 'reins_oidc')!);
      const done = await browse(jar, onOther.href);
      assert.equal(done.status, 303, await done.text());
      const cookie = done.headers.getSetCookie().find((c) => c.startsWith('reins_session='))!;
      const value = /^reins_session=([^;]+)/.exec(cookie)![1]!;
      const me = await new Client(replica.url).get('/api/v1/auth/me', { headers: { cookie: `reins_session=${value}` } });
      assert.equal(me.status, 200, 'the session works on every replica');
      const r = await replica.db.query<{ left: number }>(`SELECT EXTRACT(EPOCH FROM expires_at - now())::float8 AS left FROM console_sessions WHERE csrf_token = $1`, [me.body.csrfToken]);
      const left = Number(r.rows[0]!.left);
      assert.ok(left > 600 - 300 && left <= 600, `the session expires in ${left} s`);
    } finally {
      await other.close();
    }
  });

  test('the provider refusing the sign-in (access_denied: cancelled there, or the person is disabled) gets a page and no account', async () => {
    const jar = new Jar();
    const start = await browse(jar, `${replica.url}/auth/oidc/login?returnTo=/approvals`);
    assert.equal(start.status, 302);
    // At the provider's login page, the person does not sign in: the provider answers the flow with error=access_denied.
    let url = start.headers.get('location')!;
    let abort: string | undefined;
    for (let step = 0; step < 5 && !abort; step++) {
      const res = await browse(jar, url);
      const location = res.headers.get('location');
      if (location) url = new URL(location, url).href;
      else abort = /href="([^"]*\/abort)"/.exec(await res.text())?.[1];
    }
    assert.ok(abort, 'the provider offers to abort the sign-in');
    let back: URL | null = null;
    url = new URL(abort, url).href;
    for (let step = 0; step < 5 && !back; step++) {
      const res = await browse(jar, url);
      url = new URL(res.headers.get('location')!, url).href;
      if (url.startsWith(oidc.redirectUrl)) back = new URL(url);
    }
    assert.equal(back?.searchParams.get('error'), 'access_denied', back?.href);
    const done = await browse(jar, back!.href);
    assert.equal(done.status, 403);
    assert.match(done.headers.get('content-type') ?? '', /text\/html/);
    const page = await done.text();
    assert.match(page, /refused the sign-in: access_denied/);
    assert.match(page, /No Reins account or session was created/);
    assert.equal(done.headers.getSetCookie().some((c) => c.startsWith('reins_session=') && !/Expires=Thu, 01 Jan 1970/i.test(c)), false);
    assert.equal((await admin.get(`/api/v1/identities/detail?id=${enc('people/leo')}`)).status, 404);
  });
});
