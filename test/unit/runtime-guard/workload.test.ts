import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { buildOwnerIndex, resolveWorkload } from '../../../src/runtime-guard/workload.js';
import type { ControllerFact, PodFact } from '../../../src/runtime-guard/types.js';

const replicaSets: ControllerFact[] = [
  { namespace: 'eng', name: 'web-5d9c', ownerReferences: [{ kind: 'Deployment', name: 'web', controller: true }] },
  { namespace: 'eng', name: 'bare-rs', ownerReferences: [] },
];
const jobs: ControllerFact[] = [
  { namespace: 'eng', name: 'nightly-29001', ownerReferences: [{ kind: 'CronJob', name: 'nightly', controller: true }] },
  { namespace: 'eng', name: 'migrate', ownerReferences: [] },
];
const owners = buildOwnerIndex({ replicaSets, jobs });

function pod(name: string, owner?: { kind: string; name: string; controller?: boolean }, containers: Array<[string, string]> = [['app', 'example/app:1']]): PodFact {
  return {
    namespace: 'eng',
    name,
    ip: '10.0.0.1',
    node: 'n',
    containers: containers.map(([n, image]) => ({ name: n, image })),
    ownerReferences: owner ? [{ controller: true, ...owner }] : [],
  };
}

describe('workload resolution', () => {
  const cases: Array<[string, PodFact, string, boolean]> = [
    ['a ReplicaSet owned by a Deployment gives the Deployment', pod('web-5d9c-x1', { kind: 'ReplicaSet', name: 'web-5d9c' }), 'eng/Deployment/web', true],
    ['a Job owned by a CronJob gives the CronJob', pod('nightly-29001-x', { kind: 'Job', name: 'nightly-29001' }), 'eng/CronJob/nightly', true],
    ['a StatefulSet is itself', pod('db-0', { kind: 'StatefulSet', name: 'db' }), 'eng/StatefulSet/db', true],
    ['a DaemonSet is itself', pod('agent-x', { kind: 'DaemonSet', name: 'node-agent' }), 'eng/DaemonSet/node-agent', true],
    ['a Job without a CronJob is itself', pod('migrate-q', { kind: 'Job', name: 'migrate' }), 'eng/Job/migrate', true],
    ['a ReplicaSet without an owner is itself', pod('bare-rs-1', { kind: 'ReplicaSet', name: 'bare-rs' }), 'eng/ReplicaSet/bare-rs', true],
    ['a bare pod falls back to pod level, unconfirmed', pod('scratch'), 'eng/Pod/scratch', false],
    ['a ReplicaSet missing from the facts gives pod level, never a name guess', pod('api-6f7d8-zz', { kind: 'ReplicaSet', name: 'api-6f7d8' }), 'eng/Pod/api-6f7d8-zz', false],
    ['a Job missing from the facts gives pod level', pod('report-28999-k', { kind: 'Job', name: 'report-28999' }), 'eng/Pod/report-28999-k', false],
    ['a mirror pod (owned by its Node) is pod level', pod('etcd-node-a', { kind: 'Node', name: 'node-a' }), 'eng/Pod/etcd-node-a', false],
    ['a pod named like a Deployment replica but with no owner stays a pod', pod('web-5d9c-x2'), 'eng/Pod/web-5d9c-x2', false],
  ];
  for (const [name, p, key, confirmed] of cases) {
    test(name, () => {
      const ref = resolveWorkload(p, owners);
      assert.equal(ref.workloadKey, key);
      assert.equal(`${ref.namespace}/${ref.kind}/${ref.name}`, key);
      assert.equal(ref.attributionConfirmed, confirmed);
    });
  }

  test('only the controlling owner reference counts', () => {
    const p: PodFact = {
      ...pod('web-5d9c-x3'),
      ownerReferences: [
        { kind: 'ConfigMap', name: 'not-a-controller' },
        { kind: 'ReplicaSet', name: 'web-5d9c', controller: true },
      ],
    };
    assert.equal(resolveWorkload(p, owners).workloadKey, 'eng/Deployment/web');
  });

  const sidecars: Array<[string, Array<[string, string]>, string]> = [
    ['istio-proxy next to the app', [['app', 'example/app:1'], ['istio-proxy', 'docker.io/istio/proxyv2:1.22.0']], 'pod-level (multi-container)'],
    ['linkerd proxy recognised by its image', [['app', 'example/app:1'], ['proxy', 'cr.l5d.io/linkerd/proxy:edge-24.1.1']], 'pod-level (multi-container)'],
    ['an OpenTelemetry collector sidecar', [['app', 'example/app:1'], ['otel-collector', 'otel/opentelemetry-collector-contrib:0.100.0']], 'pod-level (multi-container)'],
    ['a Datadog agent sidecar from a registry with a port', [['app', 'example/app:1'], ['dd', 'registry.local:5000/datadog/agent:7']], 'pod-level (multi-container)'],
    ['a vault agent', [['app', 'example/app:1'], ['vault-agent', 'hashicorp/vault:1.15']], 'pod-level (multi-container)'],
    ['an Envoy gateway alone in its pod (nothing to confuse it with)', [['envoy', 'envoyproxy/envoy:v1.30']], ''],
    ['two application containers, no known sidecar', [['app', 'example/app:1'], ['worker', 'example/worker:1']], ''],
  ];
  for (const [name, containers, note] of sidecars) {
    test(`attributionNote: ${name}`, () => {
      const ref = resolveWorkload(pod('web-5d9c-s', { kind: 'ReplicaSet', name: 'web-5d9c' }, containers), owners);
      assert.equal(ref.attributionNote, note);
      assert.equal(ref.workloadKey, 'eng/Deployment/web');
    });
  }

  test('a native sidecar (restartable init container) counts as a sidecar', () => {
    const p = { ...pod('web-5d9c-n', { kind: 'ReplicaSet', name: 'web-5d9c' }), sidecarInitContainers: [{ name: 'istio-proxy', image: 'istio/proxyv2:1.22' }] };
    assert.equal(resolveWorkload(p, owners).attributionNote, 'pod-level (multi-container)');
  });

  test('a bare pod with a sidecar is pod level and carries the note', () => {
    const ref = resolveWorkload(pod('scratch', undefined, [['app', 'a:1'], ['linkerd-proxy', 'x:1']]), owners);
    assert.equal(ref.workloadKey, 'eng/Pod/scratch');
    assert.equal(ref.attributionConfirmed, false);
    assert.equal(ref.attributionNote, 'pod-level (multi-container)');
  });
});
