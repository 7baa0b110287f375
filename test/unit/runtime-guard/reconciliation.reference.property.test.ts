/**
 * The optimised engine against the engine as it was before its performance work (reference-reconciliation.ts): the
 * same answer, byte for byte (JSON with its key order), on random inputs covering every rule: search-domain
 * expansions, sensor names, special addresses, nameless pods, the service's own pods, stand-downs (facts missing,
 * incomplete, stale; egress NAT), governed calls, odd counts. Also with the engine's per-facts memos kept across
 * calls (facts alternating between snapshots, new facts objects over the same arrays) and fed through the
 * ObservationIndex (its pod-by-pod order).
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ObservationIndex } from '../../../src/runtime-guard/observation-index.js';
import { CLUSTER_FACTS_MAX_AGE_SECONDS, reconcile } from '../../../src/runtime-guard/reconciliation.js';
import { warmUpAnswerPath } from '../../../src/runtime-guard/warm-up.js';
import type { ClusterFacts, GovernedCall, Observation, ReconcileInput } from '../../../src/runtime-guard/types.js';
import { IP, NOW, WINDOW, makeFacts, observation } from './fixtures.js';
import { reconcile as referenceReconcile } from './reference-reconciliation.js';

const pods: Array<[string, string, string]> = [
  ['eng', 'agent-7d9f-a', ''],
  ['eng', 'agent-7d9f-b', ''],
  ['eng', 'db-0', ''],
  ['eng', 'scratch', ''],
  ['eng', 'meshy-5c-a', ''],
  ['shop', 'orders-1', ''],
  ['reins', 'reins-4a-old', ''],
  ['reins', 'reins-5f-new', ''],
  ['eng', 'ghost-1', ''],
  // Gone from the facts: named like a pod of a known ReplicaSet, of the service's own, remembered.
  ['eng', 'agent-7d9f-zq8x2', ''],
  ['reins', 'reins-5f-k2j4m', ''],
  ['eng', 'agent-6c1-ab3cd', ''],
  // Nameless pods: matched by address (a known pod, the service's previous pod, an unknown one).
  ['eng', '', '10.244.1.1'],
  ['reins', '', '10.244.9.1'],
  ['eng', '', '10.244.77.7'],
];
const names = [
  'api.openai.com',
  'API.OpenAI.com.',
  'api.anthropic.com',
  'bedrock-runtime.us-east-1.amazonaws.com',
  'api.openai.com.eng.svc.cluster.local',
  'api.openai.com.cluster.local',
  'api.openai.com.ec2.internal',
  'api.openai.com.corp.example',
  'github.com',
  'GitHub.com',
  'github.com.eng.svc.cluster.local',
  'github.com.corp.example',
  'pypi.org',
  'pypi.org.svc.cluster.local',
  'orders.shop.svc.cluster.local',
  'orders.shop',
  'llm-proxy.eng.svc.cluster.local',
  'reins.reins.svc.cluster.local',
  'reins.reins',
  'kubernetes.default.svc',
  'kube-dns.kube-system.svc.cluster.local',
  '10.0.96.10.in-addr.arpa',
  'metadata.google.internal',
  'istiod.istio-system.svc',
  'trace.agent.datadoghq.com',
  'localhost',
  'db',
  '',
  '.',
  '198.51.100.7',
];
const addresses = [
  IP.openai,
  IP.anthropic,
  IP.github,
  IP.npm,
  IP.unknown,
  '198.51.100.7',
  '198.51.100.8',
  IP.kubeDns,
  IP.ordersPod,
  IP.ordersClusterIP,
  IP.reinsClusterIP,
  IP.reinsPod,
  IP.istiodClusterIP,
  IP.apiServerEndpoint,
  IP.node,
  '169.254.169.254',
  '169.254.20.10',
  '169.254.1.1',
  '127.0.0.1',
  'fe80::1',
  '2606:4700::6810:85e5',
  '104.18.33.45',
  '10.244.3.3',
  '',
];

const observationArb: fc.Arbitrary<Observation> = fc
  .record({
    pod: fc.constantFrom(...pods),
    family: fc.constantFrom('dns' as const, 'dns' as const, 'network' as const, 'network' as const, 'exec' as const),
    name: fc.constantFrom(...names),
    ip: fc.constantFrom(...addresses),
    sensorName: fc.constantFrom('', '', '', '', 'api.groq.com', 'github.com', 'API.OPENAI.COM', 'pypi.org.'),
    behavior: fc.constantFrom('dns-query', 'tcp-connect', 'udp-send', ''),
    count: fc.oneof(fc.integer({ min: 1, max: 5 }), fc.constantFrom(0, -1, 2.5, Number.NaN)),
    at: fc.integer({ min: WINDOW.windowStartUnix - 100, max: WINDOW.windowEndUnix + 100 }),
  })
  .map(({ pod, family, name, ip, sensorName, behavior, count, at }) =>
    observation({
      family,
      namespace: pod[0],
      podName: pod[1],
      podIP: pod[2],
      destName: family === 'dns' ? name : family === 'network' ? sensorName : '/bin/sh',
      destIP: ip,
      behavior,
      count,
      observedAt: at,
    }),
  );

/** Egress NAT: many names answered with public addresses, every connection to one or two gateway addresses. */
const natArb: fc.Arbitrary<Observation[]> = fc
  .record({
    gateways: fc.subarray(['198.51.100.7', '198.51.100.8', IP.unknown], { minLength: 1, maxLength: 3 }),
    names: fc.integer({ min: 3, max: 7 }),
    answerGateway: fc.boolean(),
    pod: fc.constantFrom('agent-7d9f-a', 'db-0', 'scratch'),
  })
  .map(({ gateways, names: count, answerGateway, pod }) => {
    const out: Observation[] = [];
    for (let i = 0; i < count; i++) {
      out.push(observation({ family: 'dns', behavior: 'dns-query', podName: pod, destName: `svc${i}.example.com`, destIP: `203.0.113.${100 + i}` }));
    }
    if (answerGateway) out.push(observation({ family: 'dns', behavior: 'dns-query', podName: pod, destName: 'gw.example.com', destIP: gateways[0]! }));
    for (const gateway of gateways) out.push(observation({ family: 'network', behavior: 'tcp-connect', podName: pod, destIP: gateway, count: 4 }));
    return out;
  });

const callArb: fc.Arbitrary<GovernedCall> = fc
  .record({
    type: fc.constantFrom('llm' as const, 'mcp' as const, 'egress' as const),
    identityId: fc.constantFrom('eng/agent', 'ENG/Agent', 'eng/db', 'eng/scratch', 'shop/orders', 'eng/agent-7d9f-a', '', 'eng/meshy'),
    host: fc.constantFrom(undefined, 'api.openai.com', 'API.OpenAI.com:443', 'api.openai.com.', IP.openai, `[${'fe80::1'}]:443`, 'github.com'),
    atUnix: fc.integer({ min: WINDOW.windowStartUnix - 100, max: WINDOW.windowEndUnix + 100 }),
    count: fc.constantFrom(undefined, 1, 3, 0, 2.5),
  })
  .map(({ host, count, ...rest }) => ({ ...rest, ...(host !== undefined ? { host } : {}), ...(count !== undefined ? { count } : {}) }));

// Snapshots the memo must tell apart: the same arrays in new objects, changed small fields, other arrays.
const base = makeFacts();
const snapshots: Array<ClusterFacts | null> = [
  base,
  { ...base },
  makeFacts(),
  makeFacts({ complete: false }),
  makeFacts({ fetchedAtUnix: NOW - CLUSTER_FACTS_MAX_AGE_SECONDS - 60 }),
  { ...base, searchDomains: ['corp.example'] },
  { ...base, clusterDomain: 'k8s.example' },
  { ...base, selfPods: [] },
  { ...base, selfService: null },
  { ...base, clusterDnsAddresses: ['198.51.100.8'] },
  { ...base, pods: base.pods.filter((p) => p.name !== 'db-0') },
  { ...base, podOwners: [{ namespace: 'eng', name: 'agent-6c1-ab3cd', kind: 'Deployment', workload: 'agent' }, { namespace: 'eng', name: 'ghost-1', kind: 'Deployment', workload: 'ghost' }] },
  { ...base, replicaSets: base.replicaSets.filter((r) => r.name !== 'agent-7d9f') },
  // A Service without a selector: one endpoint outside the cluster's ranges (a provider address), one inside a node's pod CIDR.
  {
    ...base,
    nodes: [{ name: 'node-a', addresses: [IP.node], podCIDRs: ['10.244.3.0/24'] }],
    endpointSlices: [
      ...base.endpointSlices,
      { namespace: 'eng', serviceName: 'llm-proxy', endpoints: [{ addresses: ['104.18.33.45', IP.openai, '10.244.3.3'] }] },
    ],
  },
  null,
];
const factsArb = fc.constantFrom(...snapshots);

const inputArb: fc.Arbitrary<ReconcileInput> = fc
  .record({
    observations: fc.array(observationArb, { maxLength: 60 }),
    nat: fc.option(natArb, { nil: undefined }),
    facts: factsArb,
    governedCalls: fc.array(callArb, { maxLength: 20 }),
    egressPlaneEnabled: fc.boolean(),
  })
  .map(({ observations, nat, ...rest }) => ({ observations: [...observations, ...(nat ?? [])], window: WINDOW, nowUnix: NOW, ...rest }));

function same(input: ReconcileInput): void {
  // Byte for byte: the optimised answer serializes exactly as the reference's.
  assert.equal(JSON.stringify(reconcile(input)), JSON.stringify(referenceReconcile(input)));
}

describe('the optimised engine answers as the reference engine', () => {
  test('on random inputs, with the memos carried from call to call', () => {
    fc.assert(fc.property(inputArb, same), { numRuns: 1500 });
  });

  test('through the ObservationIndex (pod by pod, rows summed per slot)', () => {
    fc.assert(
      fc.property(inputArb, (raw) => {
        // Stored counts are whole numbers from 1 (ingest checks them; the index keeps them unsigned).
        const input = { ...raw, observations: raw.observations.map((o) => ({ ...o, count: Number.isInteger(o.count) && o.count >= 1 ? o.count : 1 })) };
        const index = new ObservationIndex();
        for (const o of input.observations) index.add(o);
        const aggregated = index.aggregate(input.window);
        const viaIndex = JSON.stringify(reconcile({ ...input, observations: aggregated }));
        assert.equal(viaIndex, JSON.stringify(referenceReconcile(input)));
      }),
      { numRuns: 500 },
    );
  });

  test('egress NAT: the stand-down fires and stays off exactly when the reference says', () => {
    fc.assert(
      fc.property(natArb, fc.array(observationArb, { maxLength: 5 }), (nat, noise) => {
        same({ observations: [...nat, ...noise], facts: base, governedCalls: [], window: WINDOW, egressPlaneEnabled: true, nowUnix: NOW });
      }),
      { numRuns: 300 },
    );
  });

  test('the start-up warm-up leaves no trace in the answers', () => {
    const input: ReconcileInput = {
      observations: [
        observation({ family: 'dns', behavior: 'dns-query', destName: 'api.openai.com', destIP: IP.openai }),
        observation({ family: 'network', destIP: IP.openai, count: 3 }),
      ],
      facts: base,
      governedCalls: [],
      window: WINDOW,
      egressPlaneEnabled: true,
      nowUnix: NOW,
    };
    const before = JSON.stringify(reconcile(input));
    warmUpAnswerPath(3);
    assert.equal(JSON.stringify(reconcile(input)), before);
    same(input);
  });
});
