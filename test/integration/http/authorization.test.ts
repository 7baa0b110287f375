/**
 * The authorization table of every control-plane route: no token, unknown token, agent key, sensor token,
 * developer, viewer, admin. One table, one loop: each row names its operation as the OpenAPI document does
 * (`METHOD /api/v1/path/{param}`) and the status each caller must get; owner-scoped routes have a second row
 * for another user's object. A test reads the document from the running replica and fails when an operation
 * has no row, so a route added later cannot skip the table. Fixtures (objects to read and decide) are created
 * once, before the table runs; rows run in order and each caller in the order of CALLERS, admin last, so an
 * admin row that changes a fixture (a decision, a deletion) runs after every caller that must be refused it.
 *
 * authorization-oidc.test.ts runs this same table with the developer, viewer and admin callers signed in to the
 * console through a real OpenID provider (cookie and CSRF token of an OIDC session instead of a personal access
 * token): `REINS_AUTHZ_CALLERS=oidc-sessions`, set by that file before it imports this one.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, WAIT_MS, agentWithKey, describeEachStore, developerWithToken, enc, waitFor, type Answer, type RequestOptions } from '../../helpers/harness.js';
import { openai, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';
import { signInThroughProvider, startTestProvider, type TestProvider } from '../../helpers/oidc-provider.js';

const CALLERS = ['none', 'unknown', 'agent', 'sensor', 'developer', 'viewer', 'admin'] as const;
type Caller = (typeof CALLERS)[number];
/** The callers an OIDC session can be; the others hold no session and are the token table's alone. */
const PEOPLE = ['developer', 'viewer', 'admin'] as const;
type Person = (typeof PEOPLE)[number];
const isPerson = (c: Caller): c is Person => (PEOPLE as readonly string[]).includes(c);
/** Developer, viewer and admin callers as console sessions signed in through an OpenID provider (see the top). */
const OIDC_SESSIONS = process.env.REINS_AUTHZ_CALLERS === 'oidc-sessions';

/** A console session as the console uses it: the session cookie on every call, and its CSRF token. */
class SessionClient extends Client {
  constructor(baseUrl: string, private readonly cookie: string, private readonly csrfToken: string) {
    super(baseUrl, null);
  }
  override request<T = any>(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<Answer<T>> {
    const headers = { cookie: `reins_session=${this.cookie}`, 'x-csrf-token': this.csrfToken, ...options.headers };
    return super.request<T>(method, path, body, { ...options, token: null, headers });
  }
}

interface Row {
  /** The operation as the OpenAPI document names it: `METHOD /api/v1/...` with `{param}` placeholders. */
  op: string;
  /** What the row checks, when the operation has more than one row (another user's object, one's own). */
  case?: string;
  /** The path to call; default: the operation's path (no parameters). */
  path?: (caller: Caller) => string | Promise<string>;
  body?: (caller: Caller) => unknown;
  expect: Record<Caller, number>;
  /** The call ends the caller's console session: with OIDC_SESSIONS, a person makes it from a session of its own. */
  endsSession?: true;
}

/** The control-plane operations of an OpenAPI document: every method of every `/api/v1/...` and `/auth/...` path. */
function controlPlaneOperations(doc: { paths: Record<string, Record<string, unknown>> }): string[] {
  const methods = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);
  return Object.entries(doc.paths)
    .filter(([path]) => path.startsWith('/api/v1/') || path.startsWith('/auth/'))
    .flatMap(([path, item]) => Object.keys(item).filter((m) => methods.has(m)).map((m) => `${m.toUpperCase()} ${path}`));
}

describeEachStore(OIDC_SESSIONS ? 'authorization table, people signed in through an OpenID provider' : 'authorization table', ({ store }) => {
  let w: GatewayWorld;
  let replica: Replica;
  let admin: Client;
  const tokens = {} as Record<Caller, string | null>;
  // OIDC_SESSIONS: the people's sessions, and the provider that signs them in (again for a row that ends a session).
  let idp: TestProvider | null = null;
  const sessions = {} as Record<Person, Client>;
  const as = (caller: Caller) => (OIDC_SESSIONS && isPerson(caller) ? sessions[caller] : admin.with(tokens[caller]));
  const signInPerson = async (caller: Person): Promise<Client> => {
    const s = await signInThroughProvider(replica.url, caller);
    return new SessionClient(replica.url, s.cookie, s.csrfToken);
  };
  let seq = 0;
  const fresh = (prefix: string) => `${prefix}-${++seq}`;
  // Fixtures, created once in `before`.
  const own = {} as Record<'developer' | 'viewer' | 'admin', { request: string }>;
  let otherRequest: string; // eng/dev2's access request, read by the others
  let toApprove: string; // eng/dev2's, approved by the admin row
  let toDeny: string; // eng/dev2's, denied by the admin row
  let toVote: string; // eng/dev2's, under review, naming eng/dev and ops/viewer as co-signers
  let otherGrant: string; // eng/dev2's active grant
  let ownGrant: string; // eng/dev's active grant
  let otherNotification: string; // one of eng/dev2's notifications
  let heldToApprove: string; // eng/dev2's held LLM calls
  let heldToDeny: string;
  const heldCalls: Promise<unknown>[] = [];

  before(async () => {
    if (OIDC_SESSIONS) {
      idp = await startTestProvider({
        users: {
          developer: { email: 'dev@example.com', groups: ['developers'] },
          viewer: { email: 'viewer@example.com', groups: ['auditors'] },
          admin: { email: 'admin@example.com', groups: ['admins'] },
        },
      });
    }
    const oidc = idp && {
      issuer: idp.issuer,
      clientId: idp.clientId,
      clientSecret: idp.clientSecret,
      redirectUrl: 'http://127.0.0.1:1/auth/oidc/callback', // set below, once the replica listens
      scopes: ['openid', 'email', 'profile', 'groups'],
      identity: { claim: 'email', namespace: 'people' },
      roles: { admin: ['admins'], viewer: ['auditors'], developer: ['developers'] },
      groupsClaim: 'groups',
      maxSessionSeconds: 3600,
      displayName: 'Test IdP',
    };
    w = await startGatewayWorld(store(), oidc ? { auth: { oidc, tokenSignIn: 'all' } } : {});
    replica = w.replica;
    admin = new Client(replica.url, ADMIN_TOKEN);
    if (oidc && idp) {
      oidc.redirectUrl = `${replica.url}/auth/oidc/callback`;
      idp.setRedirectUri(oidc.redirectUrl);
    }
    tokens.none = null;
    tokens.unknown = 'reins_pat_this-token-was-never-minted-000000';
    tokens.admin = ADMIN_TOKEN;
    tokens.developer = await developerWithToken(admin, 'eng/dev', 'developer');
    tokens.viewer = await developerWithToken(admin, 'ops/viewer', 'viewer');
    tokens.agent = await agentWithKey(admin, 'eng/bot');
    tokens.sensor = (await admin.post('/api/v1/runtime/sensor-tokens', { name: 'node-a' })).body.token;
    const other = admin.with(await developerWithToken(admin, 'eng/dev2', 'developer'));
    const ok = async (answer: Promise<{ status: number; body: any }>, status = 201) => {
      const r = await answer;
      assert.equal(r.status, status, JSON.stringify(r.body));
      return r.body;
    };
    if (OIDC_SESSIONS) {
      for (const caller of PEOPLE) {
        sessions[caller] = await signInPerson(caller);
        // The person's own token (minted from their session), for the rows that sign in with a token.
        tokens[caller] = (await ok(sessions[caller].post('/api/v1/tokens', { identityId: selfId[caller], name: 'authz' }))).token;
      }
    }
    await ok(admin.post('/api/v1/identities', { id: 'eng/target-agent', kind: 'agent' }));

    await ok(admin.post('/api/v1/policies', { ...policyBody(), name: 'authz-read' }));
    await ok(admin.post('/api/v1/policies', { ...policyBody(), name: 'authz-doomed' }));
    await ok(admin.post('/api/v1/budget-rules', { ...budgetBody(), name: 'authz-read' })).then((b) => (fixtures.budget = b.id));
    await ok(admin.post('/api/v1/budget-rules', { ...budgetBody(), name: 'authz-doomed' })).then((b) => (fixtures.budgetDoomed = b.id));
    await ok(admin.post('/api/v1/rate-limits', { ...rateLimitBody(), name: 'authz-read' })).then((b) => (fixtures.rateLimit = b.id));
    await ok(admin.post('/api/v1/rate-limits', { ...rateLimitBody(), name: 'authz-doomed' })).then((b) => (fixtures.rateLimitDoomed = b.id));
    await ok(admin.post('/api/v1/model-access', modelAccessBody())).then((b) => (fixtures.modelAccess = b.id));
    await ok(admin.post('/api/v1/model-access', modelAccessBody())).then((b) => (fixtures.modelAccessDoomed = b.id));
    await ok(admin.post('/api/v1/exception-rules', { ...exceptionRuleBody(), name: 'authz-read' })).then((b) => (fixtures.exceptionRule = b.id));
    await ok(admin.post('/api/v1/exception-rules', { ...exceptionRuleBody(), name: 'authz-doomed' })).then((b) => (fixtures.exceptionRuleDoomed = b.id));

    for (const caller of ['developer', 'viewer', 'admin'] as const) {
      own[caller] = { request: (await ok(as(caller).post('/api/v1/access-requests', requestBody()))).id };
    }
    otherRequest = (await ok(other.post('/api/v1/access-requests', requestBody()))).id;
    toApprove = (await ok(other.post('/api/v1/access-requests', requestBody()))).id;
    toDeny = (await ok(other.post('/api/v1/access-requests', requestBody()))).id;
    toVote = (await ok(other.post('/api/v1/access-requests', { ...requestBody(), requiredApprovers: [selfId.developer, selfId.viewer] }))).id;
    await ok(admin.post(`/api/v1/access-requests/${toVote}/approve`, {}), 200);
    const granted = (await ok(other.post('/api/v1/access-requests', requestBody()))).id;
    otherGrant = (await ok(admin.post(`/api/v1/access-requests/${granted}/approve`, {}), 200)).grant.id;
    ownGrant = (await ok(admin.post(`/api/v1/access-requests/${own.developer.request}/approve`, {}), 200)).grant.id;
    otherNotification = (await ok(other.get('/api/v1/notifications'), 200)).items[0].id;

    // Two held LLM calls of eng/dev2, waiting for a decision the admin rows give.
    await ok(admin.post('/api/v1/policies', {
      name: 'authz-hold',
      kind: 'approve',
      appliesTo: ['llm'],
      match: "object.llm.model == 'gpt-4o'",
      message: 'gpt-4o calls need a look.',
    }));
    const dev2Token = other.token!;
    for (const content of ['authz: hold me for approval', 'authz: hold me for denial']) {
      const call = openai(replica.url, dev2Token).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content }] });
      call.catch(() => undefined); // settled by the admin rows, or refused when the replica closes
      heldCalls.push(call);
    }
    const pending = async (content: string) => {
      let id: string | undefined;
      await waitFor(async () => {
        id = (await admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.promptExcerpt?.startsWith(content))?.id;
        return id !== undefined;
      }, WAIT_MS);
      assert.ok(id, `no pending held call for "${content}"`);
      return id;
    };
    heldToApprove = await pending('authz: hold me for approval');
    heldToDeny = await pending('authz: hold me for denial');
  });
  after(async () => {
    await w.close();
    await idp?.close();
    await Promise.allSettled(heldCalls);
  });

  const fixtures = {} as Record<'budget' | 'budgetDoomed' | 'rateLimit' | 'rateLimitDoomed' | 'modelAccess' | 'modelAccessDoomed' | 'exceptionRule' | 'exceptionRuleDoomed', string>;
  const policyBody = () => ({
    name: fresh('authz-policy'),
    kind: 'deny',
    appliesTo: ['egress'],
    match: "object.egress.host == 'never.authz.example'",
    message: 'never used',
  });
  const budgetBody = () => ({ name: fresh('authz-budget'), scope: 'authz/nobody', pattern: '*', limitUsd: 5, period: 'day' });
  const rateLimitBody = () => ({ name: fresh('authz-rate'), scope: 'authz/nobody', pattern: '*', upstream: 'openai', requestsPerMinute: 5 });
  const modelAccessBody = () => ({ scope: 'authz', models: ['gpt-4o-mini'], description: 'authorization table' });
  const exceptionRuleBody = () => ({ name: fresh('authz-rule'), policyName: 'autonomy-egress-allowlist', maxDurationSeconds: 3600 });
  const requestBody = () => ({ type: 'exception', targetPolicy: 'autonomy-model-ceiling', justification: 'authorization table' });

  const deny = { none: 401, unknown: 401, agent: 403, sensor: 403 } as const;
  const readers = (ok: number) => ({ ...deny, developer: 403, viewer: ok, admin: ok });
  const adminOnly = (ok: number) => ({ ...deny, developer: 403, viewer: 403, admin: ok });
  const anyDeveloper = (ok: number) => ({ ...deny, developer: ok, viewer: ok, admin: ok });
  const sensorOnly = (ok: number) => ({ none: 401, unknown: 401, agent: 403, sensor: ok, developer: 403, viewer: 403, admin: 403 });
  const everyone = (ok: number) => ({ none: ok, unknown: ok, agent: ok, sensor: ok, developer: ok, viewer: ok, admin: ok });
  const selfId: Record<Caller, string> = {
    none: 'eng/dev',
    unknown: 'eng/dev',
    agent: 'eng/bot',
    sensor: 'eng/dev',
    developer: OIDC_SESSIONS ? 'people/dev' : 'eng/dev',
    viewer: OIDC_SESSIONS ? 'people/viewer' : 'ops/viewer',
    admin: OIDC_SESSIONS ? 'people/admin' : 'default/admin',
  };
  /** The caller's own first notification (callers without a credential get eng/dev's, refused before it is read). */
  const ownNotification = async (caller: Caller) => {
    const reader = caller === 'developer' || caller === 'viewer' || caller === 'admin' ? caller : 'developer';
    const items = (await as(reader).get('/api/v1/notifications')).body.items;
    assert.ok(items.length > 0, `${reader} has a notification`);
    return `/api/v1/notifications/${items[0].id}/read`;
  };

  const rows: Row[] = [
    // Identities and credentials
    { op: 'GET /api/v1/identities', expect: readers(200) },
    { op: 'POST /api/v1/identities', body: () => ({ id: `eng/${fresh('new')}`, kind: 'agent' }), expect: adminOnly(201) },
    { op: 'POST /api/v1/identities', case: 'an agent with owners', body: () => ({ id: `eng/${fresh('owned')}`, kind: 'agent', owners: ['eng/*'] }), expect: adminOnly(201) },
    { op: 'GET /api/v1/identities/detail', case: 'another identity', path: () => `/api/v1/identities/detail?id=${enc('eng/target-agent')}`, expect: readers(200) },
    { op: 'GET /api/v1/identities/detail', case: 'oneself', path: (c) => `/api/v1/identities/detail?id=${enc(selfId[c])}`, expect: anyDeveloper(200) },
    {
      op: 'DELETE /api/v1/identities',
      path: async () => {
        const id = `eng/${fresh('doomed')}`;
        await admin.post('/api/v1/identities', { id, kind: 'agent' });
        return `/api/v1/identities?id=${enc(id)}`;
      },
      expect: adminOnly(200),
    },
    { op: 'PUT /api/v1/identities/autonomy-tier', path: () => `/api/v1/identities/autonomy-tier?id=${enc('eng/target-agent')}`, body: () => ({ tier: 'T3' }), expect: adminOnly(200) },
    { op: 'PUT /api/v1/identities/owners', path: () => `/api/v1/identities/owners?id=${enc('eng/target-agent')}`, body: () => ({ owners: ['eng/dev'] }), expect: adminOnly(200) },
    { op: 'POST /api/v1/tokens', case: 'for another identity', body: () => ({ identityId: 'eng/target-agent', name: 'x' }), expect: adminOnly(201) },
    { op: 'POST /api/v1/tokens', case: 'for oneself', body: (c) => ({ identityId: selfId[c], name: 'self' }), expect: anyDeveloper(201) },
    { op: 'GET /api/v1/tokens', expect: anyDeveloper(200) },
    { op: 'GET /api/v1/tokens', case: "another identity's", path: () => `/api/v1/tokens?identityId=${enc('eng/target-agent')}`, expect: adminOnly(200) },
    {
      op: 'DELETE /api/v1/tokens/{id}',
      case: "another identity's",
      path: async () => {
        const minted = await admin.post('/api/v1/tokens', { identityId: 'eng/target-agent', name: fresh('victim') });
        return `/api/v1/tokens/${minted.body.id}`;
      },
      // Someone else's token is reported absent, so token ids cannot be probed.
      expect: { ...deny, developer: 404, viewer: 404, admin: 200 },
    },
    {
      op: 'DELETE /api/v1/tokens/{id}',
      case: 'one of one\'s own',
      path: async (c) => {
        const minter = c === 'viewer' || c === 'admin' ? c : 'developer';
        const minted = await as(minter).post('/api/v1/tokens', { identityId: selfId[minter], name: fresh('mine') });
        return `/api/v1/tokens/${minted.body.id}`;
      },
      expect: anyDeveloper(200),
    },
    { op: 'POST /api/v1/runtime/sensor-tokens', body: () => ({ name: fresh('sensor') }), expect: adminOnly(201) },
    {
      op: 'POST /api/v1/auth/session',
      // Public: the credential is the token in the body, and only a personal access token signs in.
      body: (c) => ({ token: tokens[c] ?? 'reins_pat_this-token-was-never-minted-000000' }),
      expect: { none: 401, unknown: 401, agent: 401, sensor: 401, developer: 200, viewer: 200, admin: 200 },
    },
    { op: 'DELETE /api/v1/auth/session', expect: everyone(200), endsSession: true },
    { op: 'GET /api/v1/auth/me', expect: anyDeveloper(200) },
    { op: 'GET /api/v1/auth/sign-in-options', expect: everyone(200) },
    // OpenID Connect sign-in: public; 404 for everyone where it is not configured. Configured (OIDC_SESSIONS), a
    // returnTo off the console is 400 and a callback without the browser's flow is 400, whoever calls; the flow
    // itself: test/integration/identity/oidc-sign-in.test.ts.
    { op: 'GET /auth/oidc/login', path: () => `/auth/oidc/login?returnTo=${enc('https://evil.example/')}`, expect: everyone(OIDC_SESSIONS ? 400 : 404) },
    { op: 'GET /auth/oidc/callback', path: () => '/auth/oidc/callback?code=c&state=s', expect: everyone(OIDC_SESSIONS ? 400 : 404) },
    // A bearer credential has no session to end: the answer only clears the cookie.
    { op: 'POST /auth/logout', expect: everyone(200), endsSession: true },

    // Audit
    { op: 'GET /api/v1/audit-events', expect: readers(200) },

    // Policies
    { op: 'GET /api/v1/policies', expect: readers(200) },
    { op: 'POST /api/v1/policies', body: () => policyBody(), expect: adminOnly(201) },
    { op: 'POST /api/v1/policies/evaluate', body: () => ({ object: { request: { type: 'egress' }, egress: { host: 'api.example.com' } } }), expect: readers(200) },
    { op: 'GET /api/v1/policies/{name}', path: () => '/api/v1/policies/authz-read', expect: readers(200) },
    { op: 'PUT /api/v1/policies/{name}', path: () => '/api/v1/policies/authz-read', body: () => ({ ...policyBody(), name: 'authz-read' }), expect: adminOnly(200) },
    { op: 'DELETE /api/v1/policies/{name}', path: () => '/api/v1/policies/authz-doomed', expect: adminOnly(200) },

    // Budget and model-access rules, spend
    { op: 'GET /api/v1/budget-rules', expect: readers(200) },
    { op: 'POST /api/v1/budget-rules', body: () => budgetBody(), expect: adminOnly(201) },
    { op: 'GET /api/v1/budget-rules/{id}', path: () => `/api/v1/budget-rules/${fixtures.budget}`, expect: readers(200) },
    { op: 'PUT /api/v1/budget-rules/{id}', path: () => `/api/v1/budget-rules/${fixtures.budget}`, body: () => ({ ...budgetBody(), limitUsd: 6 }), expect: adminOnly(200) },
    { op: 'DELETE /api/v1/budget-rules/{id}', path: () => `/api/v1/budget-rules/${fixtures.budgetDoomed}`, expect: adminOnly(200) },
    { op: 'GET /api/v1/rate-limits', expect: readers(200) },
    { op: 'POST /api/v1/rate-limits', body: () => rateLimitBody(), expect: adminOnly(201) },
    { op: 'GET /api/v1/rate-limits/{id}', path: () => `/api/v1/rate-limits/${fixtures.rateLimit}`, expect: readers(200) },
    { op: 'PUT /api/v1/rate-limits/{id}', path: () => `/api/v1/rate-limits/${fixtures.rateLimit}`, body: () => ({ ...rateLimitBody(), tokensPerMinute: 600 }), expect: adminOnly(200) },
    { op: 'DELETE /api/v1/rate-limits/{id}', path: () => `/api/v1/rate-limits/${fixtures.rateLimitDoomed}`, expect: adminOnly(200) },
    { op: 'GET /api/v1/budget-rules/{id}/usage', path: () => `/api/v1/budget-rules/${fixtures.budget}/usage`, expect: readers(200) },
    { op: 'GET /api/v1/model-access', expect: readers(200) },
    { op: 'POST /api/v1/model-access', body: () => modelAccessBody(), expect: adminOnly(201) },
    { op: 'GET /api/v1/model-access/{id}', path: () => `/api/v1/model-access/${fixtures.modelAccess}`, expect: readers(200) },
    { op: 'PUT /api/v1/model-access/{id}', path: () => `/api/v1/model-access/${fixtures.modelAccess}`, body: () => modelAccessBody(), expect: adminOnly(200) },
    { op: 'DELETE /api/v1/model-access/{id}', path: () => `/api/v1/model-access/${fixtures.modelAccessDoomed}`, expect: adminOnly(200) },
    { op: 'GET /api/v1/spend', expect: anyDeveloper(200) },
    { op: 'GET /api/v1/spend', case: "another identity's", path: () => `/api/v1/spend?identity=${enc('eng/dev2')}`, expect: readers(200) },

    // Approvals: requests (developers see their own and those naming them; someone else's is reported absent)
    { op: 'POST /api/v1/access-requests', body: () => requestBody(), expect: anyDeveloper(201) },
    { op: 'GET /api/v1/access-requests', expect: anyDeveloper(200) },
    { op: 'GET /api/v1/access-requests/{id}', case: "another developer's", path: () => `/api/v1/access-requests/${otherRequest}`, expect: { ...deny, developer: 404, viewer: 200, admin: 200 } },
    {
      op: 'GET /api/v1/access-requests/{id}',
      case: "one's own",
      path: (c) => `/api/v1/access-requests/${own[c === 'viewer' || c === 'admin' ? c : 'developer'].request}`,
      expect: anyDeveloper(200),
    },
    // Deciding is the admin's (viewers are refused by the decision core, audited); a developer cannot see the request at all.
    { op: 'POST /api/v1/access-requests/{id}/approve', case: "another developer's", path: () => `/api/v1/access-requests/${toApprove}/approve`, body: () => ({}), expect: { ...deny, developer: 404, viewer: 403, admin: 200 } },
    { op: 'POST /api/v1/access-requests/{id}/approve', case: "one's own", path: (c) => `/api/v1/access-requests/${own[c === 'viewer' || c === 'admin' ? c : 'developer'].request}/approve`, body: () => ({}), expect: { ...deny, developer: 403, viewer: 403, admin: 403 } },
    { op: 'POST /api/v1/access-requests/{id}/deny', case: "another developer's", path: () => `/api/v1/access-requests/${toDeny}/deny`, body: () => ({ reason: 'no' }), expect: { ...deny, developer: 404, viewer: 403, admin: 200 } },
    // Votes are the named co-signers' (any role); anyone else is refused, and a developer not named cannot see the request.
    { op: 'POST /api/v1/access-requests/{id}/votes', case: 'naming the caller as a co-signer', path: () => `/api/v1/access-requests/${toVote}/votes`, body: () => ({ decision: 'approve' }), expect: { ...deny, developer: 200, viewer: 200, admin: 403 } },
    { op: 'POST /api/v1/access-requests/{id}/votes', case: "another developer's, not naming the caller", path: () => `/api/v1/access-requests/${otherRequest}/votes`, body: () => ({ decision: 'approve' }), expect: { ...deny, developer: 404, viewer: 403, admin: 403 } },

    // Approvals: grants
    { op: 'GET /api/v1/policy-exceptions', expect: anyDeveloper(200) },
    { op: 'GET /api/v1/policy-exceptions/history', expect: anyDeveloper(200) },
    { op: 'GET /api/v1/policy-exceptions/{id}', case: "another developer's", path: () => `/api/v1/policy-exceptions/${otherGrant}`, expect: { ...deny, developer: 404, viewer: 200, admin: 200 } },
    { op: 'GET /api/v1/policy-exceptions/{id}', case: "the developer's own", path: () => `/api/v1/policy-exceptions/${ownGrant}`, expect: anyDeveloper(200) },
    // Revoking is the admin's: the decision core refuses anyone else with 403 (audited), whoever owns the grant.
    { op: 'DELETE /api/v1/policy-exceptions/{id}', case: "the developer's own", path: () => `/api/v1/policy-exceptions/${ownGrant}`, expect: adminOnly(200) },
    { op: 'DELETE /api/v1/policy-exceptions/{id}', case: "another developer's", path: () => `/api/v1/policy-exceptions/${otherGrant}`, expect: adminOnly(200) },
    // Refused by role before the grant is looked up, so a developer cannot tell an existing id from a missing one.
    { op: 'DELETE /api/v1/policy-exceptions/{id}', case: 'an unknown grant', path: () => '/api/v1/policy-exceptions/gr_never-granted', expect: adminOnly(404) },

    // Approvals: exception rules
    { op: 'GET /api/v1/exception-rules', expect: readers(200) },
    { op: 'POST /api/v1/exception-rules', body: () => exceptionRuleBody(), expect: adminOnly(201) },
    { op: 'GET /api/v1/exception-rules/{id}', path: () => `/api/v1/exception-rules/${fixtures.exceptionRule}`, expect: readers(200) },
    { op: 'PUT /api/v1/exception-rules/{id}', path: () => `/api/v1/exception-rules/${fixtures.exceptionRule}`, body: () => exceptionRuleBody(), expect: adminOnly(200) },
    { op: 'DELETE /api/v1/exception-rules/{id}', path: () => `/api/v1/exception-rules/${fixtures.exceptionRuleDoomed}`, expect: adminOnly(200) },

    // Notifications: one's own only; someone else's is reported absent, to admins too.
    { op: 'GET /api/v1/notifications', expect: anyDeveloper(200) },
    { op: 'POST /api/v1/notifications/{id}/read', case: "one's own", path: ownNotification, expect: anyDeveloper(200) },
    { op: 'POST /api/v1/notifications/{id}/read', case: "another developer's", path: () => `/api/v1/notifications/${otherNotification}/read`, expect: { ...deny, developer: 404, viewer: 404, admin: 404 } },

    // Held calls: admins and viewers read; deciding is the admin's (the decision core refuses the others, audited).
    { op: 'GET /api/v1/held-calls', expect: readers(200) },
    { op: 'GET /api/v1/held-calls/{id}', path: () => `/api/v1/held-calls/${heldToApprove}`, expect: readers(200) },
    { op: 'POST /api/v1/held-calls/{id}/approve', path: () => `/api/v1/held-calls/${heldToApprove}/approve`, body: () => ({}), expect: adminOnly(200) },
    { op: 'POST /api/v1/held-calls/{id}/deny', path: () => `/api/v1/held-calls/${heldToDeny}/deny`, body: () => ({ note: 'not now' }), expect: adminOnly(200) },
    { op: 'GET /api/v1/settings/human-review', expect: readers(200) },
    { op: 'PUT /api/v1/settings/human-review', body: () => ({ llmApprovalWindowSeconds: 300, mcpApprovalWindowSeconds: 1800, timeoutOutcome: 'deny' }), expect: adminOnly(200) },

    // Runtime guard. Ingest is for sensor tokens only; with the guard off (as here) a sensor's report is a 409.
    { op: 'POST /api/v1/runtime/sensor/reports', body: () => ({ node: 'node-a', sentAtUnix: 1_700_000_000, observations: [] }), expect: sensorOnly(409) },
    { op: 'POST /api/v1/runtime/sensor/status', body: () => ({ node: 'node-a', sensorAlive: true, bpfLsm: 'unknown', reason: '' }), expect: sensorOnly(409) },
    { op: 'GET /api/v1/runtime/status', expect: readers(200) },
    { op: 'GET /api/v1/runtime/reconciliation', expect: readers(200) },
    { op: 'GET /api/v1/runtime/workloads/{key}/observations', path: () => `/api/v1/runtime/workloads/${enc('eng/Deployment/agent')}/observations`, expect: readers(200) },

    // Not in the document (hidden): its own description.
    { op: 'GET /api/v1/openapi.json', expect: everyone(200) },
  ];

  test('every control-plane operation of the OpenAPI document has a row in the table', async () => {
    const r = await admin.with(null).get('/api/v1/openapi.json');
    assert.equal(r.status, 200);
    const documented = controlPlaneOperations(r.body);
    assert.ok(documented.length > 50, `the document lists ${documented.length} control-plane operations`);
    const covered = new Set(rows.map((row) => row.op));
    const missing = documented.filter((op) => !covered.has(op));
    assert.deepEqual(missing, [], `operations without a row in the authorization table:\n  ${missing.join('\n  ')}`);
    // And no row names an operation the server does not have (a renamed route would leave a stale row).
    const known = new Set([...documented, 'GET /api/v1/openapi.json']);
    assert.deepEqual(rows.map((row) => row.op).filter((op) => !known.has(op)), []);
  });

  for (const row of rows) {
    const name = row.case ? `${row.op} (${row.case})` : row.op;
    for (const caller of OIDC_SESSIONS ? PEOPLE : CALLERS) {
      test(`${name}: ${caller} -> ${row.expect[caller]}`, async () => {
        const path = row.path ? await row.path(caller) : row.op.slice(row.op.indexOf(' ') + 1);
        const client = OIDC_SESSIONS && row.endsSession && isPerson(caller) ? await signInPerson(caller) : as(caller);
        const r = await client.request(row.op.slice(0, row.op.indexOf(' ')), path, row.body?.(caller));
        assert.equal(r.status, row.expect[caller], JSON.stringify(r.body));
        if (r.status >= 400) {
          assert.equal(typeof r.body.error.code, 'string');
          assert.equal(typeof r.body.error.message, 'string');
        }
      });
    }
  }

  test('the held calls the table decided are over: released and stopped', async () => {
    const [released, stopped] = await Promise.allSettled(heldCalls);
    assert.equal(released?.status, 'fulfilled');
    assert.equal(stopped?.status, 'rejected');
  });

  test('sign-in accepts personal access tokens only', async () => {
    for (const caller of CALLERS) {
      const token = tokens[caller];
      if (!token) continue;
      const r = await admin.with(null).post('/api/v1/auth/session', { token });
      const expected = caller === 'developer' || caller === 'viewer' || caller === 'admin' ? 200 : 401;
      assert.equal(r.status, expected, caller);
    }
  });

  test('a malformed Authorization header is 401, not 500', async () => {
    for (const header of ['Basic abc', 'Bearer', 'Bearer a b', 'token', '']) {
      const r = await admin.get('/api/v1/identities', { token: null, headers: { authorization: header } });
      assert.equal(r.status, 401, header);
    }
  });
});
