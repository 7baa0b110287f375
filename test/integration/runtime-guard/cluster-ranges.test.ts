/**
 * Issue 18, item 1 (the cluster's ranges), end to end on the fake Kubernetes API server, through the real informers
 * and GET /api/v1/runtime/reconciliation:
 * - the Service CIDRs come from ServiceCIDR objects (networking.k8s.io/v1, listed and watched) when the API server
 *   serves them, and are derived from the ClusterIPs when it answers 404 (before Kubernetes 1.33);
 * - an EndpointSlice address inside them is in-cluster, one outside them is classified by its address;
 * - a cluster DNS Service (k8s-app=kube-dns) whose endpoint is outside the cluster's ranges does not make that
 *   address cluster DNS: a connection to it is a counted provider finding.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Replica } from '../../../src/app/server.js';
import { kube, startFakeKubeApi, type FakeKubeApi } from '../../fakes/fake-kube-api.js';
import { Client, describeEachStore, WAIT_MS, waitFor } from '../../helpers/harness.js';
import { item, report } from './helpers.js';
import { seedCluster, startGuardOnApi } from './kube-helpers.js';

const OPENAI = '162.159.140.245';
const now = () => Math.floor(Date.now() / 1000);

function helpers(get: () => { admin: Client; replica: Replica }) {
  async function reconciliationWhen(what: string, check: (body: any) => boolean): Promise<any> {
    let last: any;
    const ok = await waitFor(async () => {
      last = (await get().admin.get('/api/v1/runtime/reconciliation')).body;
      return check(last);
    }, WAIT_MS, 100);
    assert.ok(ok >= 0, `${what}; last answer: ${JSON.stringify(last?.rows)}`);
    return last;
  }
  const destination = (body: any, key: string, ip: string) =>
    body.rows.find((r: any) => r.workloadKey === key)?.destinations.find((d: any) => d.destIP === ip);
  const facts = () => (get().replica.runtimeGuard as any)['cluster']?.facts();
  return { reconciliationWhen, destination, facts };
}

describeEachStore('runtime guard: Service CIDRs from ServiceCIDR objects; cluster DNS inside the ranges only', ({ store }) => {
  let api: FakeKubeApi;
  let replica: Replica;
  let admin: Client;
  let sensor: Client;
  const { reconciliationWhen, destination, facts } = helpers(() => ({ admin, replica }));

  before(async () => {
    api = await startFakeKubeApi({ crdServed: true });
    seedCluster(api);
    api.upsert('servicecidrs', kube.serviceCidr({ name: 'kubernetes', cidrs: ['10.96.0.0/16'] }));
    // A selector-less Service pointing inside the Service range at an address no Service holds, and one at 10.200.0.5.
    api.upsert('services', kube.service({ namespace: 'eng', name: 'vip', clusterIP: '10.96.5.5' }));
    api.upsert('endpointslices', kube.endpointSlice({ namespace: 'eng', service: 'vip', endpoints: [{ address: '10.96.200.1' }] }));
    api.upsert('services', kube.service({ namespace: 'eng', name: 'vip2', clusterIP: '10.96.5.6' }));
    api.upsert('endpointslices', kube.endpointSlice({ namespace: 'eng', service: 'vip2', endpoints: [{ address: '10.200.0.5' }] }));
    // A second cluster DNS Service whose endpoint is a public provider address.
    api.upsert('services', kube.service({ namespace: 'kube-system', name: 'upstream-dns', clusterIP: '10.96.0.53', labels: { 'k8s-app': 'kube-dns' } }));
    api.upsert('endpointslices', kube.endpointSlice({ namespace: 'kube-system', service: 'upstream-dns', endpoints: [{ address: OPENAI }] }));
    ({ replica, admin, sensor } = await startGuardOnApi(store(), api));
  });
  after(async () => {
    await replica?.close();
    await api?.close();
  });

  test('the ServiceCIDR ranges are the cluster\'s; a cluster DNS endpoint outside them is classified by its address', async () => {
    assert.deepEqual(facts()?.serviceCIDRs, ['10.96.0.0/16']);
    const sent = await sensor.post(
      '/api/v1/runtime/sensor/reports',
      report('node-a', [
        item({ podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', destIP: '10.96.200.1', observedAt: now() }),
        item({ podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', destIP: '10.200.0.5', observedAt: now() }),
        item({ podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', destIP: OPENAI, count: 2, observedAt: now() }),
        item({ podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', destIP: '10.96.0.53', observedAt: now() }),
      ]),
    );
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const body = await reconciliationWhen('the agent row with four destinations', (b) => destination(b, 'eng/Deployment/agent', '10.96.0.53') !== undefined);
    const key = 'eng/Deployment/agent';
    // Inside the ServiceCIDR: the Service's endpoint, in-cluster.
    assert.deepEqual(
      [destination(body, key, '10.96.200.1').destName, destination(body, key, '10.96.200.1').suppressReason],
      ['vip.eng.svc.cluster.local', 'in-cluster'],
    );
    // Outside every range: external, named after the Service, counted.
    const outside = destination(body, key, '10.200.0.5');
    assert.deepEqual([outside.destName, outside.kind, outside.suppressed], ['vip2.eng.svc.cluster.local', 'provider', false]);
    // The cluster DNS Service's ClusterIP is cluster DNS; its public endpoint is not.
    assert.equal(destination(body, key, '10.96.0.53').suppressReason, 'coredns');
    const provider = destination(body, key, OPENAI);
    assert.deepEqual([provider.kind, provider.suppressed, provider.count], ['provider', false, 2]);
    assert.equal(body.rows.find((r: any) => r.workloadKey === key).bypassedDestinations, 2);
  });

  test('a ServiceCIDR added later (watch) widens the ranges', async () => {
    api.upsert('servicecidrs', kube.serviceCidr({ name: 'extra', cidrs: ['10.200.0.0/16'] }));
    const body = await reconciliationWhen(
      'the endpoint in the new range in-cluster',
      (b) => destination(b, 'eng/Deployment/agent', '10.200.0.5')?.suppressReason === 'in-cluster',
    );
    assert.deepEqual(facts()?.serviceCIDRs, ['10.200.0.0/16', '10.96.0.0/16']);
    assert.equal(body.rows.find((r: any) => r.workloadKey === 'eng/Deployment/agent').bypassedDestinations, 1);
  });
});

describeEachStore('runtime guard: an API server without ServiceCIDRs (404): the range derived from ClusterIPs', ({ store }) => {
  let api: FakeKubeApi;
  let replica: Replica;
  let admin: Client;
  let sensor: Client;
  const { reconciliationWhen, destination, facts } = helpers(() => ({ admin, replica }));

  before(async () => {
    api = await startFakeKubeApi({ crdServed: true, serviceCidrsServed: false });
    seedCluster(api);
    // ClusterIPs 10.96.0.1, 10.96.0.10, 10.96.7.7 (seedCluster) and 10.96.5.5: the narrowest prefix is 10.96.0.0/21.
    api.upsert('services', kube.service({ namespace: 'eng', name: 'vip', clusterIP: '10.96.5.5' }));
    api.upsert('endpointslices', kube.endpointSlice({ namespace: 'eng', service: 'vip', endpoints: [{ address: '10.96.6.6' }] }));
    api.upsert('services', kube.service({ namespace: 'eng', name: 'far', clusterIP: '10.96.5.6' }));
    api.upsert('endpointslices', kube.endpointSlice({ namespace: 'eng', service: 'far', endpoints: [{ address: '10.96.200.1' }] }));
    // startGuardOnApi waits for usable facts: a 404 for ServiceCIDRs leaves them complete.
    ({ replica, admin, sensor } = await startGuardOnApi(store(), api));
  });
  after(async () => {
    await replica?.close();
    await api?.close();
  });

  test('the facts stay complete, serviceCIDRs absent; inside the derived prefix in-cluster, outside it external', async () => {
    assert.ok(api.requests.some((r) => r.path === '/apis/networking.k8s.io/v1/servicecidrs' && r.status === 404), 'the ServiceCIDRs were asked for');
    assert.equal(facts()?.serviceCIDRs, undefined);
    assert.equal(facts()?.complete, true);
    const sent = await sensor.post(
      '/api/v1/runtime/sensor/reports',
      report('node-a', [
        item({ podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', destIP: '10.96.6.6', observedAt: now() }),
        item({ podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', destIP: '10.96.200.1', observedAt: now() }),
      ]),
    );
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const body = await reconciliationWhen('both destinations', (b) => destination(b, 'eng/Deployment/agent', '10.96.200.1') !== undefined);
    assert.equal(body.networkDetectorDisabled, false);
    assert.deepEqual(
      [destination(body, 'eng/Deployment/agent', '10.96.6.6').destName, destination(body, 'eng/Deployment/agent', '10.96.6.6').suppressReason],
      ['vip.eng.svc.cluster.local', 'in-cluster'],
    );
    const far = destination(body, 'eng/Deployment/agent', '10.96.200.1');
    assert.deepEqual([far.destName, far.kind, far.suppressed], ['far.eng.svc.cluster.local', 'provider', false]);
  });
});
