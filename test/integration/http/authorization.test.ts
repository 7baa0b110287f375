/**
 * The authorization table of every route of the foundation: no token, unknown token, agent key, sensor
 * token, developer, viewer, admin. One row per route; each cell is the status that caller must get.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, agentWithKey, describeEachStore, developerWithToken, enc, startTestReplica } from '../../helpers/harness.js';

const CALLERS = ['none', 'unknown', 'agent', 'sensor', 'developer', 'viewer', 'admin'] as const;
type Caller = (typeof CALLERS)[number];

interface Row {
  route: string;
  method: string;
  path: (caller: Caller) => string | Promise<string>;
  body?: (caller: Caller) => unknown;
  expect: Record<Caller, number>;
}

describeEachStore('authorization table', ({ store }) => {
  let replica: Replica;
  let admin: Client;
  const tokens = {} as Record<Caller, string | null>;
  let seq = 0;
  const fresh = (prefix: string) => `${prefix}-${++seq}`;

  before(async () => {
    replica = await startTestReplica(store());
    admin = new Client(replica.url, ADMIN_TOKEN);
    tokens.none = null;
    tokens.unknown = 'reins_pat_this-token-was-never-minted-000000';
    tokens.admin = ADMIN_TOKEN;
    tokens.developer = await developerWithToken(admin, 'eng/dev', 'developer');
    tokens.viewer = await developerWithToken(admin, 'ops/viewer', 'viewer');
    tokens.agent = await agentWithKey(admin, 'eng/bot');
    tokens.sensor = (await admin.post('/api/v1/runtime/sensor-tokens', { name: 'node-a' })).body.token;
    await admin.post('/api/v1/identities', { id: 'eng/target-agent', kind: 'agent' });
  });
  after(() => replica.close());

  const deny = { none: 401, unknown: 401, agent: 403, sensor: 403 } as const;
  const selfId: Record<Caller, string> = {
    none: 'eng/dev',
    unknown: 'eng/dev',
    agent: 'eng/bot',
    sensor: 'eng/dev',
    developer: 'eng/dev',
    viewer: 'ops/viewer',
    admin: 'default/admin',
  };

  const rows: Row[] = [
    { route: 'list identities', method: 'GET', path: () => '/api/v1/identities', expect: { ...deny, developer: 403, viewer: 200, admin: 200 } },
    {
      route: 'create identity',
      method: 'POST',
      path: () => '/api/v1/identities',
      body: () => ({ id: `eng/${fresh('new')}`, kind: 'agent' }),
      expect: { ...deny, developer: 403, viewer: 403, admin: 201 },
    },
    {
      route: "read another identity's detail",
      method: 'GET',
      path: () => `/api/v1/identities/detail?id=${enc('eng/target-agent')}`,
      expect: { ...deny, developer: 403, viewer: 200, admin: 200 },
    },
    {
      route: 'read own identity detail',
      method: 'GET',
      path: (c) => `/api/v1/identities/detail?id=${enc(selfId[c])}`,
      expect: { ...deny, developer: 200, viewer: 200, admin: 200 },
    },
    {
      route: 'delete identity',
      method: 'DELETE',
      path: async () => {
        const id = `eng/${fresh('doomed')}`;
        await admin.post('/api/v1/identities', { id, kind: 'agent' });
        return `/api/v1/identities?id=${enc(id)}`;
      },
      expect: { ...deny, developer: 403, viewer: 403, admin: 200 },
    },
    {
      route: 'set autonomy tier',
      method: 'PUT',
      path: () => `/api/v1/identities/autonomy-tier?id=${enc('eng/target-agent')}`,
      body: () => ({ tier: 'T3' }),
      expect: { ...deny, developer: 403, viewer: 403, admin: 200 },
    },
    {
      route: "set an agent's owners",
      method: 'PUT',
      path: () => `/api/v1/identities/owners?id=${enc('eng/target-agent')}`,
      body: () => ({ owners: ['eng/dev'] }),
      expect: { ...deny, developer: 403, viewer: 403, admin: 200 },
    },
    {
      route: 'create an agent with owners',
      method: 'POST',
      path: () => '/api/v1/identities',
      body: () => ({ id: `eng/${fresh('owned')}`, kind: 'agent', owners: ['eng/*'] }),
      expect: { ...deny, developer: 403, viewer: 403, admin: 201 },
    },
    {
      route: 'mint a token for another identity',
      method: 'POST',
      path: () => '/api/v1/tokens',
      body: () => ({ identityId: 'eng/target-agent', name: 'x' }),
      expect: { ...deny, developer: 403, viewer: 403, admin: 201 },
    },
    {
      route: 'mint a token for oneself',
      method: 'POST',
      path: () => '/api/v1/tokens',
      body: (c) => ({ identityId: selfId[c], name: 'self' }),
      expect: { ...deny, developer: 201, viewer: 201, admin: 201 },
    },
    { route: 'list tokens', method: 'GET', path: () => '/api/v1/tokens', expect: { ...deny, developer: 200, viewer: 200, admin: 200 } },
    {
      route: "list another identity's tokens",
      method: 'GET',
      path: () => `/api/v1/tokens?identityId=${enc('eng/target-agent')}`,
      expect: { ...deny, developer: 403, viewer: 403, admin: 200 },
    },
    {
      route: "revoke another identity's token",
      method: 'DELETE',
      path: async () => {
        const minted = await admin.post('/api/v1/tokens', { identityId: 'eng/target-agent', name: fresh('victim') });
        return `/api/v1/tokens/${minted.body.id}`;
      },
      // Someone else's token is reported absent, so token ids cannot be probed.
      expect: { ...deny, developer: 404, viewer: 404, admin: 200 },
    },
    {
      route: 'mint a sensor token',
      method: 'POST',
      path: () => '/api/v1/runtime/sensor-tokens',
      body: () => ({ name: fresh('sensor') }),
      expect: { ...deny, developer: 403, viewer: 403, admin: 201 },
    },
    { route: 'who am I', method: 'GET', path: () => '/api/v1/auth/me', expect: { ...deny, developer: 200, viewer: 200, admin: 200 } },
    { route: 'audit events', method: 'GET', path: () => '/api/v1/audit-events', expect: { ...deny, developer: 403, viewer: 200, admin: 200 } },
    {
      route: 'sign out (public)',
      method: 'DELETE',
      path: () => '/api/v1/auth/session',
      expect: { none: 200, unknown: 200, agent: 200, sensor: 200, developer: 200, viewer: 200, admin: 200 },
    },
    {
      route: 'openapi description (public)',
      method: 'GET',
      path: () => '/api/v1/openapi.json',
      expect: { none: 200, unknown: 200, agent: 200, sensor: 200, developer: 200, viewer: 200, admin: 200 },
    },
  ];

  for (const row of rows) {
    for (const caller of CALLERS) {
      test(`${row.route}: ${caller} -> ${row.expect[caller]}`, async () => {
        const client = admin.with(tokens[caller]);
        const r = await client.request(row.method, await row.path(caller), row.body?.(caller));
        assert.equal(r.status, row.expect[caller], JSON.stringify(r.body));
        if (r.status >= 400) {
          assert.equal(typeof r.body.error.code, 'string');
          assert.equal(typeof r.body.error.message, 'string');
        }
      });
    }
  }

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
