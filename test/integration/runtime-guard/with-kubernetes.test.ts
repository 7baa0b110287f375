/**
 * The runtime guard end to end with its real cluster side: KUBECONFIG names the fake Kubernetes API server, the
 * replica starts kube/runtime-cluster.ts (informers, lease, capability probe), sensors report through the ingest
 * routes, an agent's egress calls go through the replica's forward proxy, and the three endpoints answer from all
 * of it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ProxyAgent, fetch } from 'undici';
import { startRuntimeCluster } from '../../../src/runtime-guard/kube/runtime-cluster.js';
import type { Replica } from '../../../src/app/server.js';
import { kube, startFakeKubeApi, type FakeKubeApi } from '../../fakes/fake-kube-api.js';
import { ADMIN_TOKEN, agentWithKey, Client, describeEachStore, enc, WAIT_MS, waitFor } from '../../helpers/harness.js';
import { item, mintSensorToken, recordedCounter, report, startGuardReplica, startMetricsServer } from './helpers.js';
import { FAST, seedCluster } from './kube-helpers.js';
import { DEFAULT_DENIED_NETWORKS } from '../../../src/shared/networks.js';

const OPENAI = '162.159.140.245';

describeEachStore('runtime guard with the Kubernetes API', ({ store }) => {
  let api: FakeKubeApi;
  let replica: Replica;
  let admin: Client;
  let sensor: Client;
  let metrics: Awaited<ReturnType<typeof startMetricsServer>>;
  const now = () => Math.floor(Date.now() / 1000);

  before(async () => {
    api = await startFakeKubeApi({ crdServed: true });
    seedCluster(api);
    api.denyAccess({ group: 'runtime.reins.dev', resource: 'runtimepolicies', verb: 'delete', namespace: '' });
    metrics = await startMetricsServer();
    metrics.text = recordedCounter({ 'node-a': 0 });
    replica = await startGuardReplica(store(), {
      env: { KUBECONFIG: api.kubeconfigPath },
      runtimeGuard: { sensor: { metricsTargets: [metrics.url], scrapeIntervalSeconds: 1 } },
      config: { egress: { port: 0, deniedNetworks: [...DEFAULT_DENIED_NETWORKS] } },
      cluster: (input) => startRuntimeCluster({ ...input, ...FAST }),
    });
    admin = new Client(replica.url, ADMIN_TOKEN);
    sensor = new Client(replica.url, await mintSensorToken(admin));
    // Informers synced (facts complete and fresh) and the first probe done.
    const ready = await waitFor(async () => {
      const [status, rec] = await Promise.all([admin.get('/api/v1/runtime/status'), admin.get('/api/v1/runtime/reconciliation')]);
      return status.body.probedAtUnix > 0 && rec.body.networkDetectorDisabled === false;
    }, WAIT_MS, 50);
    assert.ok(ready >= 0, 'the cluster side became ready');
  });
  after(async () => {
    await replica?.close();
    await api?.close();
    await metrics?.close();
  });

  test('status: the CRD probe, the RBAC gaps, the nodes from the cluster, and the lag scraped by the leader', async () => {
    assert.equal(replica.runtimeGuard.enablement.enabled, true);
    // The access reviews of the first probe may go unanswered on a loaded machine; the probe asks again soon.
    const reviewed = await waitFor(async () => (await admin.get('/api/v1/runtime/status')).body.rbacGaps.length > 0, WAIT_MS, 100);
    assert.ok(reviewed >= 0, 'the access reviews were answered');
    let status = (await admin.get('/api/v1/runtime/status')).body;
    assert.equal(status.enabled, true);
    assert.equal(status.crd, 'available');
    assert.ok(status.probedAtUnix > 0);
    assert.deepEqual(status.rbacGaps, [{ group: 'runtime.reins.dev', resource: 'runtimepolicies', verb: 'delete', namespace: '' }]);
    // Both nodes of the cluster are listed; neither has a sensor status yet: unknown, never clean.
    assert.deepEqual(status.nodes.map((n: any) => [n.node, n.bpfLsm]), [['node-a', 'unknown'], ['node-b', 'unknown']]);
    assert.equal(status.bpfLsm, 'unknown');

    await sensor.post('/api/v1/runtime/sensor/status', { node: 'node-a', sensorAlive: true, bpfLsm: 'available', reason: 'bpf in lsm' });
    await sensor.post('/api/v1/runtime/sensor/status', { node: 'node-b', sensorAlive: true, bpfLsm: 'available', reason: 'bpf in lsm' });
    status = (await admin.get('/api/v1/runtime/status')).body;
    assert.equal(status.bpfLsm, 'available');

    // The leader (this replica, through the Lease) scrapes on its own every second.
    await sensor.post('/api/v1/runtime/sensor/reports', report('node-a', [item({ podName: 'agent-7d4-aaaaa', destIP: '10.96.0.10', observedAt: now() })]));
    metrics.text = recordedCounter({ 'node-a': 4, 'node-b': 0 });
    const scraped = await waitFor(async () => (await admin.get('/api/v1/runtime/status')).body.ingestLag.lag === 3, WAIT_MS, 100);
    assert.ok(scraped >= 0, 'the lag was scraped');
    const lag = (await admin.get('/api/v1/runtime/status')).body.ingestLag;
    assert.ok(lag.scrapedAtUnix > 0);
    assert.equal(lag.scrapeError, '');
    assert.deepEqual(lag.perNode, [
      { node: 'node-a', recorded: 4, stored: 1, lag: 3 },
      { node: 'node-b', recorded: 0, stored: 0, lag: 0 },
    ]);
  });

  test('reconciliation: workloads from the cluster facts, governed calls from egress audit events, self pods dropped', async () => {
    const key = await agentWithKey(admin, 'eng/agent');
    const proxy = new ProxyAgent({ uri: replica.egressUrl!.replace('http://', `http://agent:${key}@`), proxyTunnel: false });
    for (let i = 0; i < 2; i++) await fetch('http://api.openai.com/v1/models', { dispatcher: proxy }).then((r) => r.text()).catch(() => {});
    await proxy.close();
    // Two calls, two decision events (counted); an allowed one also gets an end event (not counted).
    const audited = async () => {
      const items = (await admin.get(`/api/v1/audit-events?type=egress&identity=${enc('eng/agent')}`)).body.items;
      const decisions = items.filter((e: any) => e.action === 'egress.request');
      const open = decisions.filter((d: any) => d.data.end === undefined && !items.some((e: any) => e.action === 'egress.request_end' && e.data.callId === d.data.callId));
      return decisions.length >= 2 && open.length === 0;
    };
    assert.ok((await waitFor(audited, WAIT_MS)) >= 0);

    const t = now();
    const sent = await sensor.post(
      '/api/v1/runtime/sensor/reports',
      report('node-a', [
        item({ family: 'dns', behavior: 'dns-query', podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', destName: 'api.openai.com', destIP: OPENAI, observedAt: t }),
        item({ podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', destIP: OPENAI, count: 2, observedAt: t }),
        item({ family: 'dns', behavior: 'dns-query', podName: 'nightly-1-bbbbb', podIP: '10.244.1.2', destName: 'api.anthropic.com', observedAt: t }),
        item({ podName: 'reins-5f6-ccccc', podIP: '10.244.9.9', namespace: 'reins', destIP: OPENAI, observedAt: t }),
      ]),
    );
    assert.equal(sent.status, 200);
    await new Promise((r) => setTimeout(r, 1100)); // the window ends at a whole second
    const rec = (await admin.get('/api/v1/runtime/reconciliation')).body;
    assert.equal(rec.networkDetectorDisabled, false, rec.disabledReason);
    const rows = Object.fromEntries(rec.rows.map((r: any) => [r.workloadKey, r]));
    assert.deepEqual(Object.keys(rows).sort(), ['eng/CronJob/nightly', 'eng/Deployment/agent']);
    const agent = rows['eng/Deployment/agent'];
    assert.equal(agent.bypassedDestinations, 1);
    assert.equal(agent.n, 2);
    assert.equal(agent.m, 3);
    assert.equal(agent.attributionConfirmed, true);
    const openai = agent.destinations.find((d: any) => d.destName === 'api.openai.com');
    assert.equal(openai.governedCalls, 2);
    assert.equal(openai.source, 'network');
    assert.equal(rows['eng/CronJob/nightly'].dnsOnly, true);
    // The in-cluster DNS connection of the first test is suppressed (coredns, R2 from the facts).
    const coredns = agent.destinations.find((d: any) => d.suppressReason === 'coredns');
    assert.equal(coredns.rung, 'R2');
  });

  test('a pod added through a watch event is attributed to its Deployment', async () => {
    api.upsert('pods', kube.pod({ namespace: 'eng', name: 'agent-7d4-ddddd', ip: '10.244.1.7', owner: { kind: 'ReplicaSet', name: 'agent-7d4' } }));
    await sensor.post('/api/v1/runtime/sensor/reports', report('node-b', [item({ podName: 'agent-7d4-ddddd', podIP: '10.244.1.7', destIP: '160.79.104.10', observedAt: now() })]));
    const attributed = await waitFor(async () => {
      const obs = (await admin.get(`/api/v1/runtime/workloads/${enc('eng/Deployment/agent')}/observations`)).body;
      return obs.groups.length > 0 && obs.groups[1].items.some((i: any) => i.podName === 'agent-7d4-ddddd');
    }, WAIT_MS, 50);
    assert.ok(attributed >= 0, 'the new pod counts for eng/Deployment/agent');
  });
});
