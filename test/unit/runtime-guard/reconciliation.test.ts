import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { CLUSTER_FACTS_MAX_AGE_SECONDS, EGRESS_NAT_MIN_RESOLVED_NAMES } from '../../../src/runtime-guard/reconciliation.js';
import type { FindingKind, Observation, Rung, SuppressReason } from '../../../src/runtime-guard/types.js';
import { AGENT, IP, NOW, T, WINDOW, call, conn, destOf, dns, makeFacts, observation, rowOf, run } from './fixtures.js';

describe('suppression reasons', () => {
  const cases: Array<{
    name: string;
    observations: Observation[];
    destName: string;
    kind: FindingKind;
    reason: SuppressReason;
    rung: Rung;
  }> = [
    { name: 'coredns: the kube-dns ClusterIP', observations: [conn('agent-7d9f-a', IP.kubeDns)], destName: 'kube-dns.kube-system.svc.cluster.local', kind: 'internal', reason: 'coredns', rung: 'R2' },
    { name: 'coredns: NodeLocal DNSCache 169.254.20.10', observations: [conn('agent-7d9f-a', '169.254.20.10')], destName: 'ip:169.254.20.10 (unattributed)', kind: 'internal', reason: 'coredns', rung: 'R6' },
    { name: 'coredns: the cluster DNS name', observations: [dns('agent-7d9f-a', 'kube-dns.kube-system.svc.cluster.local', IP.kubeDns)], destName: 'kube-dns.kube-system.svc.cluster.local', kind: 'internal', reason: 'coredns', rung: 'R0' },
    { name: 'cluster-apiserver: the default/kubernetes ClusterIP', observations: [conn('agent-7d9f-a', IP.apiServerClusterIP)], destName: 'kubernetes.default.svc.cluster.local', kind: 'internal', reason: 'cluster-apiserver', rung: 'R2' },
    { name: 'cluster-apiserver: an EndpointSlice address outside pod and node ranges', observations: [conn('agent-7d9f-a', IP.apiServerEndpoint)], destName: 'kubernetes.default.svc.cluster.local', kind: 'internal', reason: 'cluster-apiserver', rung: 'R2' },
    { name: 'cluster-apiserver: kubernetes.default.svc', observations: [dns('agent-7d9f-a', 'kubernetes.default.svc')], destName: 'kubernetes.default.svc', kind: 'internal', reason: 'cluster-apiserver', rung: 'R0' },
    { name: 'in-cluster: another workload\'s pod IP', observations: [conn('agent-7d9f-a', '10.244.1.3')], destName: 'pod:eng/db-0', kind: 'internal', reason: 'in-cluster', rung: 'R2' },
    { name: 'in-cluster: a Service ClusterIP', observations: [conn('agent-7d9f-a', IP.ordersClusterIP)], destName: 'orders.shop.svc.cluster.local', kind: 'internal', reason: 'in-cluster', rung: 'R2' },
    { name: 'in-cluster: a *.svc.cluster.local name', observations: [dns('agent-7d9f-a', 'orders.shop.svc.cluster.local', IP.ordersClusterIP)], destName: 'orders.shop.svc.cluster.local', kind: 'internal', reason: 'in-cluster', rung: 'R0' },
    { name: 'in-cluster: a short <svc>.<ns> name of a known Service', observations: [dns('agent-7d9f-a', 'orders.shop')], destName: 'orders.shop', kind: 'internal', reason: 'in-cluster', rung: 'R0' },
    { name: 'node-or-link-local: a node address', observations: [conn('agent-7d9f-a', IP.node)], destName: 'node:node-a', kind: 'internal', reason: 'node-or-link-local', rung: 'R2' },
    { name: 'node-or-link-local: 169.254.0.0/16 other than IMDS', observations: [conn('agent-7d9f-a', '169.254.1.1')], destName: 'ip:169.254.1.1 (unattributed)', kind: 'internal', reason: 'node-or-link-local', rung: 'R6' },
    { name: 'node-or-link-local: loopback', observations: [conn('agent-7d9f-a', '127.0.0.1')], destName: 'ip:127.0.0.1 (unattributed)', kind: 'internal', reason: 'node-or-link-local', rung: 'R6' },
    { name: 'service-gateway: the service\'s own ClusterIP', observations: [conn('agent-7d9f-a', IP.reinsClusterIP)], destName: 'reins.reins.svc.cluster.local', kind: 'internal', reason: 'service-gateway', rung: 'R2' },
    { name: 'service-gateway: the service\'s own pod behind its EndpointSlice', observations: [conn('agent-7d9f-a', IP.reinsPod)], destName: 'reins.reins.svc.cluster.local', kind: 'internal', reason: 'service-gateway', rung: 'R2' },
    { name: 'service-gateway: <svc>.<ns>.svc.cluster.local', observations: [dns('agent-7d9f-a', 'reins.reins.svc.cluster.local', IP.reinsClusterIP)], destName: 'reins.reins.svc.cluster.local', kind: 'internal', reason: 'service-gateway', rung: 'R0' },
    { name: 'service-gateway: <svc>.<ns>.svc', observations: [dns('agent-7d9f-a', 'reins.reins.svc')], destName: 'reins.reins.svc', kind: 'internal', reason: 'service-gateway', rung: 'R0' },
    { name: 'service-gateway: <svc>.<ns>', observations: [dns('agent-7d9f-a', 'reins.reins')], destName: 'reins.reins', kind: 'internal', reason: 'service-gateway', rung: 'R0' },
    { name: 'reverse-dns: in-addr.arpa', observations: [dns('agent-7d9f-a', '10.0.96.10.in-addr.arpa')], destName: '10.0.96.10.in-addr.arpa', kind: 'internal', reason: 'reverse-dns', rung: 'R0' },
    { name: 'reverse-dns: ip6.arpa', observations: [dns('agent-7d9f-a', '1.0.0.0.ip6.arpa')], destName: '1.0.0.0.ip6.arpa', kind: 'internal', reason: 'reverse-dns', rung: 'R0' },
    { name: 'search-domain-expansion: <name>.<ns>.svc.cluster.local', observations: [dns('agent-7d9f-a', 'api.openai.com.eng.svc.cluster.local')], destName: 'api.openai.com', kind: 'internal', reason: 'search-domain-expansion', rung: 'R0' },
    { name: 'search-domain-expansion: <name>.svc.cluster.local', observations: [dns('agent-7d9f-a', 'api.openai.com.svc.cluster.local')], destName: 'api.openai.com', kind: 'internal', reason: 'search-domain-expansion', rung: 'R0' },
    { name: 'search-domain-expansion: <name>.cluster.local', observations: [dns('agent-7d9f-a', 'api.anthropic.com.cluster.local')], destName: 'api.anthropic.com', kind: 'internal', reason: 'search-domain-expansion', rung: 'R0' },
    { name: 'search-domain-expansion: AWS ec2.internal', observations: [dns('agent-7d9f-a', 'api.openai.com.ec2.internal')], destName: 'api.openai.com', kind: 'internal', reason: 'search-domain-expansion', rung: 'R0' },
    { name: 'search-domain-expansion: AWS <region>.compute.internal', observations: [dns('agent-7d9f-a', 'api.openai.com.eu-west-1.compute.internal')], destName: 'api.openai.com', kind: 'internal', reason: 'search-domain-expansion', rung: 'R0' },
    { name: 'search-domain-expansion: GCP c.<project>.internal', observations: [dns('agent-7d9f-a', 'api.openai.com.c.my-project.internal')], destName: 'api.openai.com', kind: 'internal', reason: 'search-domain-expansion', rung: 'R0' },
    { name: 'sidecar-control-plane: the istiod Service by IP', observations: [conn('agent-7d9f-a', IP.istiodClusterIP)], destName: 'istiod.istio-system.svc.cluster.local', kind: 'internal', reason: 'sidecar-control-plane', rung: 'R2' },
    { name: 'sidecar-control-plane: istiod by name', observations: [dns('agent-7d9f-a', 'istiod.istio-system.svc')], destName: 'istiod.istio-system.svc', kind: 'internal', reason: 'sidecar-control-plane', rung: 'R0' },
    { name: 'sidecar-control-plane: a telemetry intake', observations: [dns('agent-7d9f-a', 'trace.agent.datadoghq.com', '3.233.146.1')], destName: 'trace.agent.datadoghq.com', kind: 'infra', reason: 'sidecar-control-plane', rung: 'R0' },
    { name: 'package-registry: npm, resolved and connected', observations: [dns('agent-7d9f-a', 'registry.npmjs.org', IP.npm), conn('agent-7d9f-a', IP.npm)], destName: 'registry.npmjs.org', kind: 'infra', reason: 'package-registry', rung: 'R0' },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const row = rowOf(run(c.observations), AGENT);
      const d = destOf(row, c.destName);
      assert.deepEqual(
        { kind: d.kind, suppressed: d.suppressed, suppressReason: d.suppressReason, rung: d.rung },
        { kind: c.kind, suppressed: true, suppressReason: c.reason, rung: c.rung },
      );
      assert.equal(row.bypassedDestinations, 0);
      assert.equal(row.m, 0);
      assert.equal(row.dnsOnly, false);
    });
  }

  test('a search-domain expansion folds onto the real name and never adds a destination', () => {
    const row = rowOf(
      run([
        dns('agent-7d9f-a', 'api.openai.com.eng.svc.cluster.local'),
        dns('agent-7d9f-a', 'api.openai.com.svc.cluster.local'),
        dns('agent-7d9f-a', 'api.openai.com.cluster.local'),
        dns('agent-7d9f-a', 'api.openai.com.ec2.internal'),
        dns('agent-7d9f-a', 'api.openai.com', IP.openai),
      ]),
      AGENT,
    );
    assert.equal(row.bypassedDestinations, 1);
    assert.equal(row.m, 1);
    assert.deepEqual(
      row.destinations.map((d) => [d.destName, d.suppressReason, d.count]),
      [
        ['api.openai.com', '', 1],
        ['api.openai.com', 'search-domain-expansion', 4],
      ],
    );
  });

  test('expansions of a name outside the catalogue fold onto it when the workload asked it, and are no finding', () => {
    const row = rowOf(run([dns('agent-7d9f-a', 'github.com.eng.svc.cluster.local'), dns('agent-7d9f-a', 'github.com', IP.github)]), AGENT);
    assert.deepEqual(row.destinations, []);
  });
});

describe('finding kinds', () => {
  test('provider: an AI provider reached outside governance counts', () => {
    const row = rowOf(run([dns('agent-7d9f-a', 'api.openai.com', IP.openai), conn('agent-7d9f-a', IP.openai)]), AGENT);
    const d = destOf(row, 'api.openai.com');
    assert.equal(d.kind, 'provider');
    assert.equal(d.suppressed, false);
    assert.equal(d.suppressReason, '');
    assert.equal(row.bypassedDestinations, 1);
  });

  test('infra: a package registry is suppressed but stays in the list', () => {
    const row = rowOf(run([dns('agent-7d9f-a', 'pypi.org', '151.101.0.223')]), AGENT);
    assert.equal(destOf(row, 'pypi.org').kind, 'infra');
    assert.equal(row.destinations.length, 1);
  });

  test('imds: 169.254.169.254 is never suppressed and never counted', () => {
    const row = rowOf(run([conn('agent-7d9f-a', '169.254.169.254', { count: 7 })]), AGENT);
    const d = destOf(row, 'ip:169.254.169.254 (unattributed)');
    assert.deepEqual({ kind: d.kind, suppressed: d.suppressed, suppressReason: d.suppressReason, count: d.count }, { kind: 'imds', suppressed: false, suppressReason: '', count: 7 });
    assert.equal(row.bypassedDestinations, 0);
    assert.equal(row.m, 0);
  });

  test('imds: the GCP metadata name resolves and connects as one IMDS destination', () => {
    const row = rowOf(run([dns('agent-7d9f-a', 'metadata.google.internal', '169.254.169.254'), conn('agent-7d9f-a', '169.254.169.254')]), AGENT);
    assert.deepEqual(
      row.destinations.map((d) => [d.destName, d.kind, d.source, d.suppressed]),
      [['metadata.google.internal', 'imds', 'network', false]],
    );
    assert.equal(row.bypassedDestinations, 0);
  });

  test('imds: a provider name answered for 169.254.169.254 neither counts the metadata request nor hides it', () => {
    const row = rowOf(run([dns('agent-7d9f-a', 'api.openai.com', '169.254.169.254'), conn('agent-7d9f-a', '169.254.169.254', { count: 4 })]), AGENT);
    assert.deepEqual(
      row.destinations.map((d) => [d.destName, d.kind, d.source, d.count]),
      [
        ['api.openai.com', 'provider', 'dns', 1],
        ['ip:169.254.169.254 (unattributed)', 'imds', 'network', 4],
      ],
    );
    assert.equal(row.m, 1);
  });

  test('imds stays unsuppressed even when the network detector stands down', () => {
    const row = rowOf(run([conn('agent-7d9f-a', '169.254.169.254')], { facts: makeFacts({ complete: false }) }), 'eng/Deployment/agent');
    const d = destOf(row, 'ip:169.254.169.254 (unattributed)');
    assert.equal(d.suppressed, false);
    assert.equal(d.kind, 'imds');
  });

  test('internal: a deterministic cluster rule', () => {
    const row = rowOf(run([conn('agent-7d9f-a', IP.ordersPod)]), AGENT);
    assert.equal(destOf(row, 'pod:shop/orders-1').kind, 'internal');
  });

  test('a name outside the catalogue is no finding, and neither is a connection its answer explains', () => {
    const row = rowOf(run([dns('agent-7d9f-a', 'github.com', IP.github), conn('agent-7d9f-a', IP.github)]), AGENT);
    assert.deepEqual(row.destinations, []);
    assert.equal(row.bypassedDestinations, 0);
  });
});

describe('identity ladder', () => {
  test('R0: a connection to an address the pod\'s own DNS answer gave takes that name', () => {
    const d = destOf(rowOf(run([dns('agent-7d9f-a', 'api.anthropic.com', IP.anthropic), conn('agent-7d9f-a', IP.anthropic)]), AGENT), 'api.anthropic.com');
    assert.deepEqual({ rung: d.rung, confidence: d.confidence, destIP: d.destIP, source: d.source }, { rung: 'R0', confidence: 0.95, destIP: IP.anthropic, source: 'network' });
  });

  test('R2: an address known from cluster facts', () => {
    const d = destOf(rowOf(run([conn('agent-7d9f-a', IP.ordersClusterIP)]), AGENT), 'orders.shop.svc.cluster.local');
    assert.deepEqual({ rung: d.rung, confidence: d.confidence }, { rung: 'R2', confidence: 0.98 });
  });

  test('R2 outranks R0 for the same name: the cluster facts win', () => {
    const row = rowOf(run([dns('agent-7d9f-a', 'orders.shop.svc.cluster.local', IP.ordersClusterIP), conn('agent-7d9f-a', IP.ordersClusterIP)]), AGENT);
    assert.equal(row.destinations.length, 1);
    assert.equal(row.destinations[0]?.rung, 'R2');
  });

  test('R6: no identity, still a real counted finding', () => {
    const row = rowOf(run([conn('agent-7d9f-a', IP.unknown)]), AGENT);
    const d = destOf(row, `ip:${IP.unknown} (unattributed)`);
    assert.deepEqual(
      { rung: d.rung, confidence: d.confidence, kind: d.kind, suppressed: d.suppressed, destIP: d.destIP },
      { rung: 'R6', confidence: 0, kind: 'provider', suppressed: false, destIP: IP.unknown },
    );
    assert.equal(row.bypassedDestinations, 1);
    assert.equal(row.m, 1);
  });

  test('rungs R1, R3, R4 and R5 are never produced', () => {
    const result = run([
      dns('agent-7d9f-a', 'api.openai.com', IP.openai),
      conn('agent-7d9f-a', IP.openai),
      conn('agent-7d9f-a', IP.unknown),
      conn('agent-7d9f-a', IP.ordersPod),
      conn('agent-7d9f-b', '169.254.169.254'),
    ]);
    const rungs = new Set(result.rows.flatMap((r) => r.destinations.map((d) => d.rung)));
    assert.deepEqual([...rungs].sort(), ['R0', 'R2', 'R6']);
  });

  test('an R6 address later explained by a DNS answer upgrades and merges', () => {
    const row = rowOf(run([conn('agent-7d9f-a', IP.openai, { observedAt: T - 100 }), dns('agent-7d9f-a', 'api.openai.com', IP.openai, { observedAt: T })]), AGENT);
    assert.deepEqual(row.destinations.map((d) => [d.destName, d.rung, d.source]), [['api.openai.com', 'R0', 'network']]);
    assert.equal(row.bypassedDestinations, 1);
  });

  test('a later unresolved connection never downgrades an earlier resolved identity', () => {
    const row = rowOf(
      run([
        dns('agent-7d9f-a', 'api.openai.com', IP.openai, { observedAt: T - 100 }),
        conn('agent-7d9f-a', IP.openai, { observedAt: T - 90 }),
        conn('agent-7d9f-a', IP.openai, { observedAt: T + 100 }),
        // The other replica reuses a cached answer from before the window: same destination, not a second one.
        conn('agent-7d9f-b', IP.openai, { observedAt: T + 200 }),
      ]),
      AGENT,
    );
    assert.deepEqual(row.destinations.map((d) => [d.destName, d.rung, d.count]), [['api.openai.com', 'R0', 3]]);
    assert.equal(row.bypassedDestinations, 1);
  });

  test('an address answered for a provider and another name is named after the provider', () => {
    const row = rowOf(run([dns('agent-7d9f-a', 'cdn.example.net', IP.openai), dns('agent-7d9f-a', 'api.openai.com', IP.openai), conn('agent-7d9f-a', IP.openai)]), AGENT);
    assert.equal(destOf(row, 'api.openai.com').source, 'network');
  });

  test('a name the sensor itself reported on a connection is used', () => {
    const row = rowOf(run([conn('agent-7d9f-a', IP.unknown, { destName: 'api.groq.com' })]), AGENT);
    assert.equal(destOf(row, 'api.groq.com').rung, 'R0');
  });
});

describe('counting', () => {
  test('destinations are a set: duplicates and connection reuse do not add to bypassedDestinations', () => {
    const row = rowOf(
      run([
        dns('agent-7d9f-a', 'api.openai.com', IP.openai, { count: 3 }),
        dns('agent-7d9f-a', 'API.OPENAI.COM.', IP.openai),
        conn('agent-7d9f-a', IP.openai, { count: 5 }),
        conn('agent-7d9f-a', IP.openai, { count: 2, behavior: 'tcp-connect-v2' }),
        dns('agent-7d9f-b', 'api.openai.com', IP.openai),
        dns('agent-7d9f-a', 'api.anthropic.com', IP.anthropic, { count: 2 }),
      ]),
      AGENT,
    );
    assert.equal(row.bypassedDestinations, 2);
    // m: every kernel event to unsuppressed providers, connections and resolutions alike.
    assert.equal(row.m, 3 + 1 + 5 + 2 + 1 + 2);
    const openai = destOf(row, 'api.openai.com');
    assert.equal(openai.count, 7, 'connection count when the source is network');
    assert.deepEqual(openai.behaviors, ['dns-query', 'tcp-connect', 'tcp-connect-v2']);
    assert.equal(destOf(row, 'api.anthropic.com').count, 2, 'resolution count when the source is dns');
  });

  test('only dns and network observations inside the window feed the reconciliation', () => {
    const result = run([
      dns('agent-7d9f-a', 'api.openai.com', IP.openai, { observedAt: WINDOW.windowStartUnix - 1 }),
      conn('agent-7d9f-a', IP.unknown, { observedAt: WINDOW.windowEndUnix + 1 }),
      observation({ family: 'exec', podName: 'db-0', destName: '/usr/bin/curl' }),
      observation({ family: 'open', podName: 'db-0', destName: '/etc/passwd' }),
      observation({ family: 'other', podName: 'db-0' }),
      dns('agent-7d9f-a', 'api.mistral.ai', '', { observedAt: WINDOW.windowStartUnix }),
    ]);
    // Every workload has a row (issue 18 item 5); only the agent's carries evidence.
    assert.deepEqual(result.rows.filter((r) => r.destinations.length > 0).map((r) => r.workloadKey), [AGENT]);
    assert.deepEqual(rowOf(result, 'eng/StatefulSet/db').destinations, []);
    assert.deepEqual(rowOf(result, AGENT).destinations.map((d) => d.destName), ['api.mistral.ai']);
  });

  test('the service\'s own previous pod is dropped before counting', () => {
    const result = run([
      dns('reins-4a-old', 'api.openai.com', IP.openai, { namespace: 'reins' }),
      conn('reins-4a-old', IP.openai, { namespace: 'reins' }),
      conn('reins-5f-new', IP.anthropic, { namespace: 'reins' }),
      // A sibling replica of the service's Deployment not yet listed as one of its pods.
      conn('reins-5f-other', IP.anthropic, { namespace: 'reins', podIP: '10.244.9.3' }),
    ], {
      facts: makeFacts({
        pods: [
          ...makeFacts().pods,
          { namespace: 'reins', name: 'reins-5f-other', ip: '10.244.9.3', node: 'node-a', containers: [{ name: 'reins', image: 'reins:1' }], ownerReferences: [{ kind: 'ReplicaSet', name: 'reins-5f', controller: true }] },
        ],
      }),
    });
    assert.deepEqual(result.rows.filter((r) => r.namespace === 'reins'), []);
    assert.equal(result.networkDetectorDisabled, false);
  });

  test('an unnamed observation from a previous pod\'s address is dropped too', () => {
    const result = run([conn('', IP.openai, { namespace: 'reins', podIP: '10.244.9.1' })]);
    assert.deepEqual(result.rows.filter((r) => r.namespace === 'reins'), []);
  });

  test('n joins governed calls of every type to the workload by name', () => {
    const row = rowOf(
      run([dns('agent-7d9f-a', 'api.openai.com', IP.openai)], {
        governedCalls: [
          call('llm', 'eng/agent'),
          call('mcp', 'eng/agent'),
          call('egress', 'eng/agent', 'api.openai.com'),
          call('llm', 'ENG/Agent'),
          call('llm', 'eng/other'),
          call('llm', 'shop/agent'),
          call('llm', 'eng/agent', undefined, WINDOW.windowStartUnix - 5),
        ],
      }),
      AGENT,
    );
    assert.equal(row.n, 4);
    assert.equal(row.joinMethod, 'name-based');
  });

  test('an egress call to the host signals split traffic and never clears the finding', () => {
    const row = rowOf(
      run([dns('agent-7d9f-a', 'api.openai.com', IP.openai), conn('agent-7d9f-a', IP.openai)], {
        governedCalls: [call('egress', 'eng/agent', 'api.openai.com:443'), call('egress', 'eng/agent', 'API.openai.com'), call('llm', 'eng/agent')],
      }),
      AGENT,
    );
    const d = destOf(row, 'api.openai.com');
    assert.equal(d.governedCalls, 2);
    assert.equal(d.suppressed, false);
    assert.equal(row.bypassedDestinations, 1);
    assert.equal(row.m, 2);
    assert.equal(row.n, 3);
  });

  test('governedCalls is 0 on every destination when the egress plane is not enabled', () => {
    const row = rowOf(
      run([dns('agent-7d9f-a', 'api.openai.com', IP.openai), conn('agent-7d9f-a', IP.unknown), dns('agent-7d9f-a', 'pypi.org')], {
        egressPlaneEnabled: false,
        governedCalls: [call('egress', 'eng/agent', 'api.openai.com'), call('egress', 'eng/agent', IP.unknown), call('egress', 'eng/agent', 'pypi.org')],
      }),
      AGENT,
    );
    assert.deepEqual(row.destinations.map((d) => d.governedCalls), [0, 0, 0]);
    assert.equal(row.n, 3);
  });

  test('an egress call to an unattributed address is matched by address', () => {
    const row = rowOf(run([conn('agent-7d9f-a', IP.unknown)], { governedCalls: [call('egress', 'eng/agent', IP.unknown)] }), AGENT);
    assert.equal(destOf(row, `ip:${IP.unknown} (unattributed)`).governedCalls, 1);
  });
});

describe('row flags', () => {
  const cases: Array<{ name: string; observations: Observation[]; dnsOnly: boolean; bypassed: number }> = [
    { name: 'dnsOnly is true when all unsuppressed evidence is DNS', observations: [dns('agent-7d9f-a', 'api.openai.com', IP.openai), dns('agent-7d9f-a', 'api.x.ai')], dnsOnly: true, bypassed: 2 },
    { name: 'dnsOnly is false when one destination is connection-backed', observations: [dns('agent-7d9f-a', 'api.openai.com'), conn('agent-7d9f-a', IP.unknown)], dnsOnly: false, bypassed: 2 },
    { name: 'dnsOnly is false when the row has only suppressed evidence', observations: [dns('agent-7d9f-a', 'pypi.org'), conn('agent-7d9f-a', IP.kubeDns)], dnsOnly: false, bypassed: 0 },
    { name: 'dnsOnly is false when the row has no finding at all', observations: [dns('agent-7d9f-a', 'github.com', IP.github)], dnsOnly: false, bypassed: 0 },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const row = rowOf(run(c.observations), AGENT);
      assert.equal(row.dnsOnly, c.dnsOnly);
      assert.equal(row.bypassedDestinations, c.bypassed);
      if (c.dnsOnly === false && c.bypassed > 0) assert.ok(row.m > 0, 'a connection-backed finding has non-zero m');
    });
  }

  test('attributionConfirmed is true for a resolved Deployment', () => {
    const row = rowOf(run([dns('agent-7d9f-a', 'api.openai.com')]), AGENT);
    assert.equal(row.attributionConfirmed, true);
    assert.deepEqual([row.namespace, row.kind, row.name], ['eng', 'Deployment', 'agent']);
  });

  test('attributionConfirmed is false for a bare pod, which keeps its full count', () => {
    const row = rowOf(run([dns('scratch', 'api.openai.com', '', { count: 4 })]), 'eng/Pod/scratch');
    assert.equal(row.attributionConfirmed, false);
    assert.equal(row.m, 4);
  });

  test('attributionConfirmed is false for a pod missing from the cluster facts', () => {
    const row = rowOf(run([dns('ghost-1', 'api.openai.com')]), 'eng/Pod/ghost-1');
    assert.equal(row.attributionConfirmed, false);
  });

  test('attributionNote says pod-level (multi-container) when a mesh sidecar shares the pod', () => {
    const result = run([dns('meshy-5c-a', 'api.openai.com'), dns('agent-7d9f-a', 'api.openai.com')]);
    assert.equal(rowOf(result, 'eng/Deployment/meshy').attributionNote, 'pod-level (multi-container)');
    assert.equal(rowOf(result, AGENT).attributionNote, '');
  });
});

describe('network detector stand-down', () => {
  const evidence = [dns('agent-7d9f-a', 'api.openai.com', IP.openai), conn('agent-7d9f-a', IP.openai), conn('agent-7d9f-a', IP.unknown), conn('agent-7d9f-a', IP.ordersPod)];

  const causes: Array<{ name: string; facts: ReturnType<typeof makeFacts> | null; mention: RegExp }> = [
    { name: 'cluster facts missing', facts: null, mention: /no cluster facts could be read/ },
    { name: 'cluster facts incomplete', facts: makeFacts({ complete: false }), mention: /incomplete/ },
    { name: 'cluster facts stale', facts: makeFacts({ fetchedAtUnix: NOW - CLUSTER_FACTS_MAX_AGE_SECONDS - 1 }), mention: /stale/ },
  ];
  for (const c of causes) {
    test(`${c.name}: network evidence is suppressed cluster-facts-unavailable, DNS findings are unaffected`, () => {
      const result = run(evidence, { facts: c.facts });
      assert.equal(result.networkDetectorDisabled, true);
      assert.match(result.disabledReason, c.mention);
      assert.match(result.disabledReason, /cluster facts/);
      assert.doesNotMatch(result.disabledReason, /NAT/);
      const row = result.rows[0]!;
      const network = row.destinations.filter((d) => d.source === 'network');
      assert.ok(network.length >= 2);
      for (const d of network) assert.equal(d.suppressReason, 'cluster-facts-unavailable');
      const dnsFinding = row.destinations.find((d) => d.destName === 'api.openai.com' && d.source === 'dns');
      assert.deepEqual([dnsFinding?.suppressed, dnsFinding?.count], [false, 1]);
      assert.equal(row.bypassedDestinations, 1);
      assert.equal(row.m, 1);
      assert.equal(row.dnsOnly, true);
    });
  }

  test('facts exactly at the freshness bound are still usable', () => {
    assert.equal(run(evidence, { facts: makeFacts({ fetchedAtUnix: NOW - CLUSTER_FACTS_MAX_AGE_SECONDS }) }).networkDetectorDisabled, false);
  });

  function natObservations(): Observation[] {
    const names = ['api.openai.com', 'api.anthropic.com', 'api.mistral.ai', 'github.com', 'pypi.org', 'api.groq.com'];
    const out: Observation[] = names.slice(0, EGRESS_NAT_MIN_RESOLVED_NAMES).map((n, i) => dns('agent-7d9f-a', n, `198.51.100.${i + 1}`));
    // Every external connection goes to the NAT gateway's address, which no answer gave.
    out.push(conn('agent-7d9f-a', '100.64.0.1', { count: 40 }), conn('agent-7d9f-b', '100.64.0.1', { count: 12 }), conn('agent-7d9f-a', IP.ordersPod));
    return out;
  }

  test('egress NAT detected: network evidence is suppressed egress-nat-detector-disabled, DNS findings unaffected', () => {
    const result = run(natObservations());
    assert.equal(result.networkDetectorDisabled, true);
    assert.match(result.disabledReason, /egress NAT/);
    assert.match(result.disabledReason, /100\.64\.0\.1/);
    assert.doesNotMatch(result.disabledReason, /cluster facts/);
    const row = rowOf(result, AGENT);
    for (const d of row.destinations.filter((x) => x.source === 'network')) assert.equal(d.suppressReason, 'egress-nat-detector-disabled');
    assert.equal(destOf(row, 'ip:100.64.0.1 (unattributed)').suppressed, true);
    assert.equal(row.bypassedDestinations, 3, 'the three provider names resolved still count');
    assert.equal(row.dnsOnly, true);
  });

  test('egress NAT is not assumed when a connected address appears in a DNS answer', () => {
    const observations = natObservations();
    observations.push(dns('agent-7d9f-b', 'api.cohere.com', '100.64.0.1'));
    assert.equal(run(observations).networkDetectorDisabled, false);
  });

  test('egress NAT is not assumed when connections spread over more than two external addresses', () => {
    const observations = natObservations();
    observations.push(conn('agent-7d9f-a', '100.64.0.2'), conn('agent-7d9f-a', '100.64.0.3'));
    assert.equal(run(observations).networkDetectorDisabled, false);
  });

  test('egress NAT is not assumed from too few resolved names', () => {
    const observations = natObservations().filter((o) => o.destName !== 'api.openai.com');
    const result = run(observations);
    assert.equal(result.networkDetectorDisabled, false);
    assert.equal(result.disabledReason, '');
    assert.equal(destOf(rowOf(result, AGENT), 'ip:100.64.0.1 (unattributed)').suppressed, false);
  });

  test('cluster facts unavailable wins over egress NAT', () => {
    const result = run(natObservations(), { facts: makeFacts({ complete: false }) });
    assert.match(result.disabledReason, /cluster facts/);
    assert.ok(result.rows.flatMap((r) => r.destinations).every((d) => d.suppressReason !== 'egress-nat-detector-disabled'));
  });
});

describe('ordering', () => {
  test('rows: bypassedDestinations descending, then m descending, then workload key', () => {
    const result = run([
      dns('db-0', 'api.openai.com', '', { count: 1 }),
      dns('scratch', 'api.openai.com', '', { count: 9 }),
      dns('agent-7d9f-a', 'api.openai.com'),
      dns('agent-7d9f-a', 'api.anthropic.com'),
      dns('orders-1', 'pypi.org', '', { namespace: 'shop' }),
      dns('meshy-5c-a', 'api.openai.com', '', { count: 9 }),
    ]);
    assert.deepEqual(
      result.rows.map((r) => [r.workloadKey, r.bypassedDestinations, r.m]),
      [
        [AGENT, 2, 2],
        ['eng/Deployment/meshy', 1, 9],
        ['eng/Pod/scratch', 1, 9],
        ['eng/StatefulSet/db', 1, 1],
        ['shop/Deployment/orders', 0, 0],
      ],
    );
  });

  test('destinations: counted findings first, then IMDS, then suppressed; connection-backed before DNS-only', () => {
    const row = rowOf(
      run([
        dns('agent-7d9f-a', 'pypi.org'),
        conn('agent-7d9f-a', IP.kubeDns, { count: 50 }),
        conn('agent-7d9f-a', '169.254.169.254'),
        dns('agent-7d9f-a', 'api.x.ai', '', { count: 30 }),
        conn('agent-7d9f-a', IP.unknown),
        dns('agent-7d9f-a', 'api.groq.com', '', { count: 2 }),
      ]),
      AGENT,
    );
    assert.deepEqual(row.destinations.map((d) => d.destName), [
      `ip:${IP.unknown} (unattributed)`,
      'api.x.ai',
      'api.groq.com',
      'ip:169.254.169.254 (unattributed)',
      'pypi.org',
      'kube-dns.kube-system.svc.cluster.local',
    ]);
  });
});

describe('issue 18: no evasion by Service, IPv6, the own Service by resolved name', () => {
  // A Service without a selector whose EndpointSlice points at a provider address, and one at an address inside a
  // node's pod CIDR (a pod the facts do not list yet).
  const proxyFacts = makeFacts({
    nodes: [{ name: 'node-a', addresses: [IP.node], podCIDRs: ['10.244.3.0/24'] }],
    services: [...makeFacts().services, { namespace: 'eng', name: 'llm-proxy', clusterIPs: ['10.96.5.5'] }, { namespace: 'eng', name: 'llm-headless', clusterIPs: ['None'] }],
    endpointSlices: [
      ...makeFacts().endpointSlices,
      { namespace: 'eng', serviceName: 'llm-proxy', endpoints: [{ addresses: [IP.openai, '10.244.3.3'] }] },
      { namespace: 'eng', serviceName: 'llm-headless', endpoints: [{ addresses: [IP.anthropic] }] },
    ],
  });

  test('an EndpointSlice address outside the cluster ranges stays external: provider, counted, named after the Service', () => {
    const row = rowOf(run([conn('agent-7d9f-a', IP.openai)], { facts: proxyFacts }), AGENT);
    const dest = destOf(row, 'llm-proxy.eng.svc.cluster.local');
    assert.equal(dest.kind, 'provider');
    assert.equal(dest.suppressed, false);
    assert.equal(dest.rung, 'R2');
    assert.equal(dest.destIP, IP.openai);
    assert.equal(row.bypassedDestinations, 1);
  });

  test("the ClusterIP of a Service with an external endpoint is that endpoint's front (kube-proxy translates after the sensor sees it): counted", () => {
    const row = rowOf(run([dns('agent-7d9f-a', 'llm-proxy.eng.svc.cluster.local', '10.96.5.5'), conn('agent-7d9f-a', '10.96.5.5', { count: 3 })], { facts: proxyFacts }), AGENT);
    const dest = destOf(row, 'llm-proxy.eng.svc.cluster.local', false);
    assert.equal(dest.kind, 'provider');
    assert.equal(dest.source, 'network');
    assert.equal(dest.destIP, '10.96.5.5');
    assert.equal(dest.count, 3);
    assert.equal(row.bypassedDestinations, 1);
    // A Service whose endpoints are all inside the cluster keeps its ClusterIP in-cluster.
    const quiet = rowOf(run([conn('agent-7d9f-a', IP.ordersClusterIP)]), AGENT);
    assert.equal(quiet.bypassedDestinations, 0);
  });

  test('a DNS-named provider address behind a selector-less Service keeps the provider name', () => {
    const row = rowOf(run([dns('agent-7d9f-a', 'api.openai.com', IP.openai), conn('agent-7d9f-a', IP.openai)], { facts: proxyFacts }), AGENT);
    const dest = destOf(row, 'api.openai.com');
    assert.equal(dest.source, 'network');
    assert.equal(dest.suppressed, false);
    assert.equal(row.bypassedDestinations, 1);
  });

  test('an EndpointSlice address inside a node pod CIDR stays in-cluster', () => {
    const row = rowOf(run([conn('agent-7d9f-a', '10.244.3.3')], { facts: proxyFacts }), AGENT);
    const dest = destOf(row, 'llm-proxy.eng.svc.cluster.local');
    assert.equal(dest.suppressReason, 'in-cluster');
    assert.equal(row.bypassedDestinations, 0);
  });

  test('a headless Service name answered with an external address does not make the connection in-cluster', () => {
    const row = rowOf(
      run([dns('agent-7d9f-a', 'llm-headless.eng.svc.cluster.local', IP.anthropic), conn('agent-7d9f-a', IP.anthropic)], { facts: proxyFacts }),
      AGENT,
    );
    const dest = destOf(row, 'llm-headless.eng.svc.cluster.local', false);
    assert.equal(dest.kind, 'provider');
    assert.equal(dest.source, 'network');
    assert.equal(row.bypassedDestinations, 1);
  });

  test('IPv6: a connection to an IPv6 address yields no row and no destination', () => {
    const result = run([conn('db-0', '2606:4700::6810:85e5'), conn('agent-7d9f-a', '2606:4700::6810:85e5'), dns('agent-7d9f-a', 'orders.shop')]);
    assert.equal(result.rows.some((r) => r.workloadKey === 'eng/StatefulSet/db' && r.destinations.length > 0), false);
    const row = rowOf(result, AGENT);
    assert.equal(row.destinations.some((d) => d.destName.includes('2606')), false);
    assert.equal(row.bypassedDestinations, 0);
  });

  test('IPv6: a DNS answer whose first address is IPv6 gives no destIP, the question still counts', () => {
    const row = rowOf(run([dns('agent-7d9f-a', 'api.openai.com', '2606:4700::6810:85e5'), conn('agent-7d9f-a', '2606:4700::6810:85e5')]), AGENT);
    const dest = destOf(row, 'api.openai.com');
    assert.equal(dest.destIP, '');
    assert.equal(dest.source, 'dns');
    assert.equal(row.dnsOnly, true);
  });

  test('a provider name answered with the own Service address is service-gateway, not counted', () => {
    const row = rowOf(run([dns('agent-7d9f-a', 'api.openai.com', IP.reinsClusterIP), conn('agent-7d9f-a', IP.reinsClusterIP)]), AGENT);
    const dest = destOf(row, 'api.openai.com');
    assert.equal(dest.suppressed, true);
    assert.equal(dest.suppressReason, 'service-gateway');
    assert.equal(row.bypassedDestinations, 0);
    assert.equal(row.m, 0);
    assert.equal(row.dnsOnly, false);
  });

  test('the same provider name also answered with its real address stays counted', () => {
    const row = rowOf(run([dns('agent-7d9f-a', 'api.openai.com', IP.reinsClusterIP), dns('agent-7d9f-b', 'api.openai.com', IP.openai)]), AGENT);
    const dest = destOf(row, 'api.openai.com');
    assert.equal(dest.suppressed, false);
    assert.equal(row.bypassedDestinations, 1);
  });
});

describe('issue 18: every workload has a row', () => {
  test('workloads without evidence get a quiet row; system namespaces and the service itself do not', () => {
    const facts = makeFacts({
      pods: [
        ...makeFacts().pods,
        { namespace: 'kube-system', name: 'coredns-1', ip: '10.244.0.2', node: 'node-a', containers: [{ name: 'coredns', image: 'coredns:1' }], ownerReferences: [] },
        { namespace: 'ops', name: 'fluent-x1', ip: '10.244.0.3', node: 'node-a', containers: [{ name: 'app', image: 'fluent:1' }], ownerReferences: [{ kind: 'DaemonSet', name: 'fluent', controller: true }] },
      ],
      // A Deployment scaled to zero (only its ReplicaSet is left), a CronJob between runs, a bare Job.
      replicaSets: [...makeFacts().replicaSets, { namespace: 'eng', name: 'idle-55', ownerReferences: [{ kind: 'Deployment', name: 'idle', controller: true }] }],
      jobs: [
        { namespace: 'eng', name: 'nightly-29000', ownerReferences: [{ kind: 'CronJob', name: 'nightly', controller: true }] },
        { namespace: 'eng', name: 'migrate', ownerReferences: [] },
      ],
    });
    const result = run([conn('agent-7d9f-a', IP.openai)], { facts, governedCalls: [call('llm', 'eng/db')] });
    assert.deepEqual(result.rows.map((r) => r.workloadKey), [
      AGENT,
      'eng/CronJob/nightly',
      'eng/Deployment/idle',
      'eng/Deployment/meshy',
      'eng/Job/migrate',
      'eng/Pod/scratch',
      'eng/StatefulSet/db',
      'ops/DaemonSet/fluent',
      'shop/Deployment/orders',
    ]);
    const db = rowOf(result, 'eng/StatefulSet/db');
    assert.deepEqual(
      { m: db.m, n: db.n, bypassed: db.bypassedDestinations, dnsOnly: db.dnsOnly, destinations: db.destinations, confirmed: db.attributionConfirmed },
      { m: 0, n: 1, bypassed: 0, dnsOnly: false, destinations: [], confirmed: true },
    );
    assert.equal(rowOf(result, 'eng/Pod/scratch').attributionConfirmed, false);
    assert.equal(rowOf(result, 'eng/Deployment/meshy').attributionNote, 'pod-level (multi-container)');
  });

  test('without cluster facts only observed workloads have rows', () => {
    const result = run([conn('agent-7d9f-a', IP.openai)], { facts: null });
    assert.deepEqual(result.rows.map((r) => r.workloadKey), ['eng/Pod/agent-7d9f-a']);
  });
});

describe('issue 18: one row per workload across rollouts', () => {
  test('a pod gone with its ReplicaSet attributes to the Deployment it was remembered with: one row', () => {
    const facts = makeFacts({ podOwners: [{ namespace: 'eng', name: 'agent-6c1-old01', kind: 'Deployment', workload: 'agent' }] });
    const result = run([conn('agent-6c1-old01', IP.openai), conn('agent-7d9f-a', IP.anthropic)], { facts });
    const agentRows = result.rows.filter((r) => r.name.startsWith('agent'));
    assert.deepEqual(agentRows.map((r) => r.workloadKey), [AGENT]);
    const row = rowOf(result, AGENT);
    assert.equal(row.bypassedDestinations, 2);
    assert.equal(row.attributionConfirmed, true);
    assert.equal(row.attributionNote, '');
  });

  test('a pod never seen is attributed by name to a known ReplicaSet, Job or CronJob, marked inferred', () => {
    const facts = makeFacts({
      jobs: [
        { namespace: 'eng', name: 'nightly-29000100', ownerReferences: [{ kind: 'CronJob', name: 'nightly', controller: true }] },
        { namespace: 'eng', name: 'migrate', ownerReferences: [] },
      ],
    });
    const result = run([conn('agent-7d9f-zq8x2', IP.openai), conn('nightly-29000000-ab12c', IP.openai), conn('migrate-x9y8z', IP.openai)], { facts });
    assert.equal(rowOf(result, AGENT).bypassedDestinations, 1);
    // The live pods confirm the Deployment: the row says so whatever the order of evidence.
    assert.equal(rowOf(result, AGENT).attributionConfirmed, true);
    // The CronJob is known through another of its Jobs: its row is confirmed, the gone pod's evidence joins it.
    const cron = rowOf(result, 'eng/CronJob/nightly');
    assert.equal(cron.attributionConfirmed, true);
    assert.equal(cron.bypassedDestinations, 1);
    assert.equal(rowOf(result, 'eng/Job/migrate').bypassedDestinations, 1);
    assert.equal(result.rows.some((r) => r.kind === 'Pod' && r.name !== 'scratch'), false);
  });

  test('a row made only by inferred evidence says so in attributionNote', () => {
    const facts = makeFacts({ replicaSets: [...makeFacts().replicaSets, { namespace: 'kube-system', name: 'metrics-7f', ownerReferences: [{ kind: 'Deployment', name: 'metrics', controller: true }] }] });
    const row = rowOf(run([conn('metrics-7f-abcde', IP.openai, { namespace: 'kube-system' })], { facts }), 'kube-system/Deployment/metrics');
    assert.equal(row.attributionNote, 'owner inferred from pod name');
    assert.equal(row.attributionConfirmed, false);
    assert.equal(row.bypassedDestinations, 1);
  });

  test("the service's own previous pod found by its name is dropped", () => {
    const result = run([conn('reins-5f-k2j4m', IP.openai, { namespace: 'reins' })]);
    assert.deepEqual(result.rows.filter((r) => r.namespace === 'reins'), []);
  });

  test('a name that matches no known owner stays pod level', () => {
    const result = run([conn('unknown-7d9f-zq8x2', IP.openai)]);
    const row = rowOf(result, 'eng/Pod/unknown-7d9f-zq8x2');
    assert.equal(row.attributionConfirmed, false);
    assert.equal(row.attributionNote, '');
  });
});
