/**
 * Who may call the runtime guard's routes (spec Authentication 4, Errors 7), and the `window` parameter through
 * HTTP (spec Errors 2: default 1h, clamped to 5m..24h, unparseable falls back to 1h without an error).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, agentWithKey, Client, describeEachStore, developerWithToken, enc } from '../../helpers/harness.js';
import { FakeCluster, item, mintSensorToken, report, startGuardReplica, TestClock } from './helpers.js';

const READ_PATHS = ['/api/v1/runtime/status', '/api/v1/runtime/reconciliation', `/api/v1/runtime/workloads/${enc('eng/Deployment/agent')}/observations`];

describeEachStore('runtime guard access', ({ store }) => {
  let replica: Replica;
  const clock = new TestClock();
  const tokens: Record<string, string | null> = {};
  before(async () => {
    replica = await startGuardReplica(store(), { cluster: new FakeCluster(clock), clock });
    const admin = new Client(replica.url, ADMIN_TOKEN);
    tokens.admin = ADMIN_TOKEN;
    tokens.viewer = await developerWithToken(admin, 'ops/vera', 'viewer');
    tokens.developer = await developerWithToken(admin, 'eng/dana', 'developer');
    tokens.agent = await agentWithKey(admin, 'eng/bot');
    tokens.sensor = await mintSensorToken(admin);
    tokens.none = null;
  });
  after(async () => {
    await replica.close();
  });

  const expectRead: Record<string, number> = { admin: 200, viewer: 200, developer: 403, agent: 403, sensor: 403, none: 401 };
  for (const [who, status] of Object.entries(expectRead)) {
    test(`the three read-only endpoints: ${who} → ${status}`, async () => {
      const client = new Client(replica.url, tokens[who]!);
      for (const path of READ_PATHS) {
        const r = await client.get(path);
        assert.equal(r.status, status, `${path}: ${JSON.stringify(r.body)}`);
        if (status !== 200) assert.ok(r.body.error.code, 'an error body');
      }
    });
  }

  const expectIngest: Record<string, number> = { admin: 403, viewer: 403, developer: 403, agent: 403, sensor: 200, none: 401 };
  for (const [who, status] of Object.entries(expectIngest)) {
    test(`the two sensor ingest routes: ${who} → ${status}`, async () => {
      const client = new Client(replica.url, tokens[who]!);
      const sent = await client.post('/api/v1/runtime/sensor/reports', report('node-a', [item({ destIP: '162.159.140.245', observedAt: clock.unix })]));
      assert.equal(sent.status, status, JSON.stringify(sent.body));
      const statusSent = await client.post('/api/v1/runtime/sensor/status', { node: 'node-a', sensorAlive: true, bpfLsm: 'unknown', reason: '' });
      assert.equal(statusSent.status, status, JSON.stringify(statusSent.body));
    });
  }

  const windows: Array<[string | undefined, number]> = [
    [undefined, 3600],
    ['15m', 900],
    ['6h', 6 * 3600],
    ['24h', 86_400],
    ['1h30m', 5400],
    ['1m', 300],
    ['0', 300],
    ['-2h', 300],
    ['48h', 86_400],
    ['7d', 86_400],
    ['abc', 3600],
    ['', 3600],
    ['15', 3600],
  ];
  for (const [window, seconds] of windows) {
    test(`window ${window === undefined ? '(absent)' : JSON.stringify(window)} → ${seconds} s, without an error`, async () => {
      const admin = new Client(replica.url, ADMIN_TOKEN);
      const q = window === undefined ? '' : `?window=${enc(window)}`;
      for (const path of [READ_PATHS[1], READ_PATHS[2]]) {
        const r = await admin.get(`${path}${q}`);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.windowEndUnix, clock.unix);
        assert.equal(r.body.windowEndUnix - r.body.windowStartUnix, seconds);
      }
    });
  }

  test('window given twice: unparseable, so 1h without an error', async () => {
    const r = await new Client(replica.url, ADMIN_TOKEN).get('/api/v1/runtime/reconciliation?window=6h&window=2h');
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.windowEndUnix - r.body.windowStartUnix, 3600);
  });

  test('an unknown query parameter is a 400 naming it', async () => {
    const r = await new Client(replica.url, ADMIN_TOKEN).get('/api/v1/runtime/reconciliation?windw=1h');
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /windw/);
  });
});
