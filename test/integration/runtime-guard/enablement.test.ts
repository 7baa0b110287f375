/**
 * Spec "Disabled shape": each reason from a replica started with that configuration and environment. All three
 * endpoints answer 200 with `enabled: false`, the exact reason and empty data fields; sensor ingest is refused
 * while the runtime guard is off for the deployment, and accepted on a replica that is merely inactive.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, describeEachStore, enc } from '../../helpers/harness.js';
import { item, mintSensorToken, report, startGuardReplica, writeKubeconfig, type GuardReplicaOptions } from './helpers.js';

const cases: Array<[string, GuardReplicaOptions, string, boolean]> = [
  [
    'SaaS fails closed even with the flag true',
    { config: { deployment: 'saas' } },
    'unavailable on vendor-hosted (SaaS) tenants',
    false,
  ],
  ['no cluster in the environment: the flag is irrelevant', { env: {} }, 'not running in a cluster', false],
  ['no runtimeGuard section', { runtimeGuard: { configured: false, enabled: false } }, 'the service is not configured', false],
  ['runtimeGuard.enabled: false', { runtimeGuard: { enabled: false } }, 'disabled by config', false],
  [
    // The real cluster side (kube/runtime-cluster.ts) against a kubeconfig whose server does not answer.
    'the cluster API is unreachable at start: inactive on this replica',
    { env: { KUBECONFIG: writeKubeconfig('http://127.0.0.1:1') } },
    'the service is enabled but inactive on this replica (no cluster API access or no shared store)',
    true,
  ],
];

describeEachStore('runtime guard disabled reasons', ({ store }) => {
  for (const [name, options, reason, acceptsIngest] of cases) {
    test(`${name}: 200, enabled false, "${reason}", empty fields`, async () => {
      const replica = await startGuardReplica(store(), options);
      try {
        const admin = new Client(replica.url, ADMIN_TOKEN);
        const status = await admin.get('/api/v1/runtime/status');
        assert.equal(status.status, 200);
        assert.deepEqual(status.body, {
          enabled: false,
          reason,
          crd: 'unknown',
          crdReason: '',
          bpfLsm: 'unknown',
          bpfLsmReason: '',
          nodes: [],
          rbacGaps: [],
          ingestLag: { lag: 0, perNode: [], scrapedAtUnix: 0, scrapeError: '' },
          probedAtUnix: 0,
        });

        const rec = await admin.get('/api/v1/runtime/reconciliation?window=6h');
        assert.equal(rec.status, 200);
        assert.equal(rec.body.enabled, false);
        assert.equal(rec.body.reason, reason);
        assert.deepEqual(rec.body.rows, []);
        assert.equal(rec.body.windowEndUnix - rec.body.windowStartUnix, 6 * 3600);
        assert.equal(rec.body.networkDetectorDisabled, false);

        const key = 'eng/Deployment/agent';
        const obs = await admin.get(`/api/v1/runtime/workloads/${enc(key)}/observations`);
        assert.equal(obs.status, 200);
        assert.equal(obs.body.enabled, false);
        assert.equal(obs.body.reason, reason);
        assert.equal(obs.body.workloadKey, key);
        assert.deepEqual(obs.body.groups, []);
        // Even a key the enabled endpoint would refuse: the feature being off is the answer.
        const odd = await admin.get(`/api/v1/runtime/workloads/${enc('not-a-key')}/observations`);
        assert.equal(odd.status, 200);
        assert.equal(odd.body.workloadKey, 'not-a-key');

        const sensor = new Client(replica.url, await mintSensorToken(admin));
        const sent = await sensor.post('/api/v1/runtime/sensor/reports', report('node-a', [item({ destIP: '162.159.140.245', observedAt: 1_800_000_000 })]));
        const statusSent = await sensor.post('/api/v1/runtime/sensor/status', { node: 'node-a', sensorAlive: true, bpfLsm: 'available', reason: '' });
        if (acceptsIngest) {
          // The store is shared: a replica that does answer reads what this one stored.
          assert.equal(sent.status, 200, JSON.stringify(sent.body));
          assert.deepEqual(sent.body, { stored: 1 });
          assert.equal(statusSent.status, 200);
        } else {
          assert.equal(sent.status, 409);
          assert.equal(sent.body.error.code, 'conflict');
          assert.ok(sent.body.error.message.includes(reason), sent.body.error.message);
          assert.equal(statusSent.status, 409);
        }
      } finally {
        await replica.close();
      }
    });
  }
});

describeEachStore('runtime guard enabled', ({ store }) => {
  let replica: Replica;
  before(async () => {
    const { FakeCluster, TestClock } = await import('./helpers.js');
    replica = await startGuardReplica(store(), { cluster: new FakeCluster(new TestClock()) });
  });
  after(async () => {
    await replica.close();
  });

  test('a started cluster side and a configured, enabled guard answer enabled with reason ""', async () => {
    const admin = new Client(replica.url, ADMIN_TOKEN);
    const status = await admin.get('/api/v1/runtime/status');
    assert.equal(status.status, 200);
    assert.equal(status.body.enabled, true);
    assert.equal(status.body.reason, '');
    assert.equal(replica.runtimeGuard.enablement.enabled, true);
  });
});
