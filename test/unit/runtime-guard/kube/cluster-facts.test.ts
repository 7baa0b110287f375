import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  clusterDnsSettings,
  controllerFact,
  currentSelfPods,
  parseResolvConf,
  parseSelfService,
  podRecord,
} from '../../../../src/runtime-guard/kube/cluster-facts.js';
import type { EndpointSliceFact, PodFact } from '../../../../src/runtime-guard/types.js';
import { buildOwnerIndex } from '../../../../src/runtime-guard/workload.js';
import { kube } from '../../../fakes/fake-kube-api.js';

describe('pod facts from a Pod object', () => {
  test('IP, node, containers, controller owner; several IPs only when there are several', () => {
    const record = podRecord(kube.pod({ namespace: 'eng', name: 'agent-1', ip: '10.244.1.1', node: 'node-b', owner: { kind: 'ReplicaSet', name: 'agent-7d4' } }));
    assert.deepEqual(record.fact, {
      namespace: 'eng',
      name: 'agent-1',
      ip: '10.244.1.1',
      node: 'node-b',
      containers: [{ name: 'app', image: 'example/app:1' }],
      ownerReferences: [{ kind: 'ReplicaSet', name: 'agent-7d4', controller: true }],
    });
    assert.equal(record.phase, 'Running');
    assert.equal(record.sensorPort, null);
    const dual = podRecord(kube.pod({ namespace: 'eng', name: 'dual', ip: '10.244.1.2', ips: ['10.244.1.2', 'fd00::2'] }));
    assert.deepEqual(dual.fact.ips, ['10.244.1.2', 'fd00::2']);
  });

  test('native sidecars: init containers with restartPolicy Always, and only those', () => {
    const record = podRecord(
      kube.pod({
        namespace: 'eng',
        name: 'meshed',
        ip: '10.244.1.3',
        initContainers: [{ name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.22', restartPolicy: 'Always' }, { name: 'migrate' }],
      }),
    );
    assert.deepEqual(record.fact.sidecarInitContainers, [{ name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.22' }]);
  });

  test('a pending pod has no IP yet; a sensor pod carries its metrics port', () => {
    const pending = podRecord(kube.pod({ namespace: 'eng', name: 'p', phase: 'Pending' }));
    assert.equal(pending.fact.ip, '');
    const sensor = podRecord(
      kube.pod({ namespace: 'reins', name: 's', ip: '10.244.2.2', labels: { 'app.kubernetes.io/name': 'reins-sensor' }, containers: [{ name: 's', ports: [{ name: 'metrics', containerPort: 2112 }] }] }),
    );
    assert.equal(sensor.sensorPort, 2112);
  });

  test('controllers keep their owners only', () => {
    assert.deepEqual(controllerFact(kube.job({ namespace: 'eng', name: 'nightly-1', owner: { kind: 'CronJob', name: 'nightly' } })), {
      namespace: 'eng',
      name: 'nightly-1',
      ownerReferences: [{ kind: 'CronJob', name: 'nightly', controller: true }],
    });
  });
});

describe('the service\'s own pods', () => {
  const pod = (namespace: string, name: string, ip: string, owner?: { kind: string; name: string }): PodFact => ({
    namespace,
    name,
    ip,
    node: 'node-a',
    containers: [{ name: 'app', image: 'reins:1' }],
    ownerReferences: owner ? [{ ...owner, controller: true }] : [],
  });
  const slice = (namespace: string, serviceName: string, pods: Array<[string, string]>): EndpointSliceFact => ({
    namespace,
    serviceName,
    endpoints: pods.map(([name, ip]) => ({ addresses: [ip], targetRef: { kind: 'Pod', name, namespace } })),
  });
  const owners = buildOwnerIndex({
    replicaSets: [
      { namespace: 'reins', name: 'reins-new', ownerReferences: [{ kind: 'Deployment', name: 'reins', controller: true }] },
      { namespace: 'reins', name: 'reins-old', ownerReferences: [{ kind: 'Deployment', name: 'reins', controller: true }] },
      { namespace: 'reins', name: 'other-1', ownerReferences: [{ kind: 'Deployment', name: 'other', controller: true }] },
    ],
    jobs: [],
  });
  const self = { namespace: 'reins', name: 'reins' };

  test('pods behind the self Service and every pod of their workload (a replica not yet ready), nothing else', () => {
    const pods = [
      pod('reins', 'reins-new-a', '10.0.0.1', { kind: 'ReplicaSet', name: 'reins-new' }),
      pod('reins', 'reins-old-b', '10.0.0.2', { kind: 'ReplicaSet', name: 'reins-old' }),
      pod('reins', 'other-1-c', '10.0.0.3', { kind: 'ReplicaSet', name: 'other-1' }),
      pod('eng', 'reins-new-x', '10.0.0.4', { kind: 'ReplicaSet', name: 'reins-new' }),
    ];
    const { pods: current, workloadKeys } = currentSelfPods(self, pods, [slice('reins', 'reins', [['reins-new-a', '10.0.0.1']])], owners);
    assert.deepEqual([...current.keys()].sort(), ['reins/reins-new-a', 'reins/reins-old-b']);
    assert.deepEqual([...workloadKeys], ['reins/Deployment/reins']);
    assert.deepEqual(current.get('reins/reins-old-b'), { namespace: 'reins', name: 'reins-old-b', ip: '10.0.0.2' });
  });

  test('a bare pod behind the Service is itself only: an unconfirmed owner never widens the set', () => {
    const pods = [pod('reins', 'bare', '10.0.0.5'), pod('reins', 'bare-2', '10.0.0.6')];
    const { pods: current } = currentSelfPods(self, pods, [slice('reins', 'reins', [['bare', '10.0.0.5']])], owners);
    assert.deepEqual([...current.keys()], ['reins/bare']);
  });

  test('another Service\'s endpoints are not the service\'s', () => {
    const pods = [pod('reins', 'other-1-c', '10.0.0.3', { kind: 'ReplicaSet', name: 'other-1' })];
    const { pods: current } = currentSelfPods(self, pods, [slice('reins', 'other', [['other-1-c', '10.0.0.3']])], owners);
    assert.equal(current.size, 0);
  });

  test('selfService must be namespace/name', () => {
    assert.deepEqual(parseSelfService('reins/reins'), { namespace: 'reins', name: 'reins' });
    for (const bad of ['', 'reins', '/reins', 'reins/']) assert.equal(parseSelfService(bad), null, bad);
  });
});

describe('resolv.conf of a pod', () => {
  const text = [
    '# generated by kubelet',
    'search reins.svc.cluster.local svc.cluster.local cluster.local corp.example.com ec2.internal',
    'nameserver 10.96.0.10',
    'options ndots:5',
  ].join('\n');

  test('nameservers and the search list', () => {
    assert.deepEqual(parseResolvConf(text), {
      nameservers: ['10.96.0.10'],
      search: ['reins.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example.com', 'ec2.internal'],
    });
  });

  test('the svc. entry names the cluster domain; what follows the cluster entries is the node\'s', () => {
    assert.deepEqual(clusterDnsSettings(parseResolvConf(text).search), { clusterDomain: 'cluster.local', searchDomains: ['corp.example.com', 'ec2.internal'] });
    const custom = clusterDnsSettings(['reins.svc.k8s.acme', 'svc.k8s.acme', 'k8s.acme']);
    assert.deepEqual(custom, { clusterDomain: 'k8s.acme', searchDomains: [] });
  });

  test('a pod without the cluster DNS policy (dnsPolicy: Default) names no cluster domain', () => {
    assert.deepEqual(clusterDnsSettings(parseResolvConf('search corp.example.com\nnameserver 10.0.0.2\n').search), { searchDomains: [] });
  });
});
