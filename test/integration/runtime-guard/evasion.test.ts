/**
 * Issue 18, items 1 to 3, end to end: the cluster facts come from the fake Kubernetes API server through the real
 * informers, observations through the real ingest route, the answer from GET /api/v1/runtime/reconciliation.
 * - a Service without a selector whose EndpointSlice lists a provider address does not make it in-cluster, nor its
 *   ClusterIP (the address the sensor sees before kube-proxy translates it);
 * - IPv6 yields no row and no destIP;
 * - a provider name resolved to the service's own Service is the governed shape (service-gateway).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Replica } from '../../../src/app/server.js';
import { kube, startFakeKubeApi, type FakeKubeApi } from '../../fakes/fake-kube-api.js';
import { Client, describeEachStore, WAIT_MS, waitFor } from '../../helpers/harness.js';
import { item, report } from './helpers.js';
import { seedCluster, startGuardOnApi } from './kube-helpers.js';

const OPENAI = '162.159.140.245';
const ANTHROPIC = '160.79.104.10';
const V6 = '2606:4700::6810:85e5';

describeEachStore('runtime guard: no evasion by Service, IPv6, the own Service by resolved name', ({ store }) => {
  let api: FakeKubeApi;
  let replica: Replica;
  let admin: Client;
  let sensor: Client;
  const now = () => Math.floor(Date.now() / 1000);

  /** The reconciliation once `check` holds for it (the window ends at a whole second, the facts arrive by watch). */
  async function reconciliationWhen(what: string, check: (body: any) => boolean): Promise<any> {
    let last: any;
    const ok = await waitFor(async () => {
      last = (await admin.get('/api/v1/runtime/reconciliation')).body;
      return check(last);
    }, WAIT_MS, 100);
    assert.ok(ok >= 0, `${what}; last answer: ${JSON.stringify(last)}`);
    return last;
  }
  const rowOf = (body: any, key: string) => body.rows.find((r: any) => r.workloadKey === key);

  before(async () => {
    api = await startFakeKubeApi({ crdServed: true });
    seedCluster(api);
    // Node b allocates its pods from 10.244.3.0/24 (spec.podCIDRs): part of the cluster's own ranges.
    api.upsert('nodes', { ...kube.node({ name: 'node-b', addresses: ['192.168.1.11'] }), spec: { podCIDRs: ['10.244.3.0/24'] } });
    // A Service without a selector whose EndpointSlice points at a public AI provider address, and one at a pod
    // address of node b's range that the facts do not list.
    api.upsert('services', kube.service({ namespace: 'eng', name: 'llm-proxy', clusterIP: '10.96.5.5' }));
    api.upsert('endpointslices', kube.endpointSlice({ namespace: 'eng', service: 'llm-proxy', endpoints: [{ address: OPENAI }] }));
    api.upsert('services', kube.service({ namespace: 'eng', name: 'cache', clusterIP: '10.96.5.6' }));
    api.upsert('endpointslices', kube.endpointSlice({ namespace: 'eng', service: 'cache', endpoints: [{ address: '10.244.3.3' }] }));
    // A headless Service without a selector: its name answers with the provider address itself.
    api.upsert('services', kube.service({ namespace: 'eng', name: 'claude', clusterIPs: [] }));
    api.upsert('endpointslices', kube.endpointSlice({ namespace: 'eng', service: 'claude', endpoints: [{ address: ANTHROPIC }] }));
    ({ replica, admin, sensor } = await startGuardOnApi(store(), api));
  });
  after(async () => {
    await replica?.close();
    await api?.close();
  });

  test('a selector-less Service pointing at a provider address: the connection is a counted provider finding', async () => {
    const t = now();
    const sent = await sensor.post(
      '/api/v1/runtime/sensor/reports',
      report('node-a', [
        item({ podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', destIP: OPENAI, count: 2, observedAt: t }),
        item({ podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', destIP: '10.244.3.3', observedAt: t }),
        item({ family: 'dns', behavior: 'dns-query', podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', destName: 'claude.eng.svc.cluster.local', destIP: ANTHROPIC, observedAt: t }),
        item({ podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', destIP: ANTHROPIC, observedAt: t }),
      ]),
    );
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const body = await reconciliationWhen('the agent row with its findings', (b) => (rowOf(b, 'eng/Deployment/agent')?.bypassedDestinations ?? 0) >= 2);
    const agent = rowOf(body, 'eng/Deployment/agent');
    const proxy = agent.destinations.find((d: any) => d.destIP === OPENAI);
    assert.equal(proxy.destName, 'llm-proxy.eng.svc.cluster.local');
    assert.equal(proxy.kind, 'provider');
    assert.equal(proxy.suppressed, false);
    assert.equal(proxy.count, 2);
    // The headless name answered with the provider address: counted, by the address.
    const headless = agent.destinations.find((d: any) => d.destIP === ANTHROPIC);
    assert.equal(headless.destName, 'claude.eng.svc.cluster.local');
    assert.equal(headless.kind, 'provider');
    assert.equal(headless.suppressed, false);
    assert.equal(agent.bypassedDestinations, 2);
    // An endpoint inside node b's pod CIDR stays in-cluster.
    const cache = agent.destinations.find((d: any) => d.destIP === '10.244.3.3');
    assert.equal(cache.destName, 'cache.eng.svc.cluster.local');
    assert.equal(cache.suppressReason, 'in-cluster');
  });

  test("a connection to that Service's ClusterIP (kube-proxy translates it after the sensor sees it) is counted too", async () => {
    api.upsert('pods', kube.pod({ namespace: 'eng', name: 'front', ip: '10.244.1.51' }));
    const t = now();
    const sent = await sensor.post(
      '/api/v1/runtime/sensor/reports',
      report('node-a', [
        item({ family: 'dns', behavior: 'dns-query', podName: 'front', podIP: '10.244.1.51', destName: 'llm-proxy.eng.svc.cluster.local', destIP: '10.96.5.5', observedAt: t }),
        item({ podName: 'front', podIP: '10.244.1.51', destIP: '10.96.5.5', count: 3, observedAt: t }),
        // The cache Service's endpoints are in the cluster: its ClusterIP stays in-cluster.
        item({ podName: 'front', podIP: '10.244.1.51', destIP: '10.96.5.6', observedAt: t }),
      ]),
    );
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const body = await reconciliationWhen('the front row with its finding', (b) => rowOf(b, 'eng/Pod/front')?.bypassedDestinations === 1);
    const row = rowOf(body, 'eng/Pod/front');
    const proxy = row.destinations.find((d: any) => d.destIP === '10.96.5.5');
    assert.equal(proxy.destName, 'llm-proxy.eng.svc.cluster.local');
    assert.equal(proxy.kind, 'provider');
    assert.equal(proxy.source, 'network');
    assert.equal(proxy.suppressed, false);
    assert.equal(proxy.count, 3);
    assert.equal(row.destinations.find((d: any) => d.destIP === '10.96.5.6').suppressReason, 'in-cluster');
  });

  test('IPv6: a connection to an IPv6 address yields no row; an IPv6 answer gives no destIP', async () => {
    const t = now();
    const sent = await sensor.post(
      '/api/v1/runtime/sensor/reports',
      report('node-a', [
        // A pod the facts do not know, with IPv6 evidence only: it would be a pod-level row.
        item({ podName: 'v6only-1', podIP: '10.244.1.40', destIP: V6, count: 5, observedAt: t }),
        item({ family: 'dns', behavior: 'dns-query', podName: 'nightly-1-bbbbb', podIP: '10.244.1.2', destName: 'api.openai.com', destIP: V6, observedAt: t }),
        item({ podName: 'nightly-1-bbbbb', podIP: '10.244.1.2', destIP: V6, observedAt: t }),
      ]),
    );
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const body = await reconciliationWhen('the CronJob row with its DNS finding', (b) => rowOf(b, 'eng/CronJob/nightly')?.destinations.length > 0);
    assert.equal(rowOf(body, 'eng/Pod/v6only-1'), undefined);
    const nightly = rowOf(body, 'eng/CronJob/nightly');
    assert.deepEqual(
      nightly.destinations.map((d: any) => [d.destName, d.destIP, d.source]),
      [['api.openai.com', '', 'dns']],
    );
    assert.equal(nightly.dnsOnly, true);
  });

  test('a provider name resolved to the service\'s own Service is service-gateway, not counted', async () => {
    api.upsert('pods', kube.pod({ namespace: 'eng', name: 'rewritten', ip: '10.244.1.50' }));
    const t = now();
    const sent = await sensor.post(
      '/api/v1/runtime/sensor/reports',
      report('node-a', [
        item({ family: 'dns', behavior: 'dns-query', podName: 'rewritten', podIP: '10.244.1.50', destName: 'api.openai.com', destIP: '10.96.7.7', count: 4, observedAt: t }),
        item({ podName: 'rewritten', podIP: '10.244.1.50', destIP: '10.96.7.7', count: 4, observedAt: t }),
      ]),
    );
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const body = await reconciliationWhen('the pod row with two destinations', (b) => rowOf(b, 'eng/Pod/rewritten')?.destinations.length === 2);
    const row = rowOf(body, 'eng/Pod/rewritten');
    assert.equal(row.bypassedDestinations, 0);
    assert.equal(row.m, 0);
    assert.equal(row.dnsOnly, false);
    for (const d of row.destinations) assert.equal(d.suppressReason, 'service-gateway', JSON.stringify(d));
    assert.ok(row.destinations.some((d: any) => d.destName === 'api.openai.com' && d.source === 'dns'));
  });
});
