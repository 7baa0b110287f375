/**
 * The index hands the engine one observation per distinct tuple (counts summed, latest observedAt) instead of
 * every stored row. The engine must answer exactly the same for both.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ObservationIndex } from '../../../src/runtime-guard/observation-index.js';
import { reconcile, RowMemo } from '../../../src/runtime-guard/reconciliation.js';
import type { ClusterFacts, GovernedCall, Observation, PodFact } from '../../../src/runtime-guard/types.js';
import { call, IP, makeFacts, NOW, observation, WINDOW } from './fixtures.js';

const pods: Array<[string, string, string]> = [
  ['eng', 'agent-7d9f-a', '10.244.1.1'],
  ['eng', 'agent-7d9f-b', '10.244.1.2'],
  ['eng', 'scratch', '10.244.1.5'],
  ['shop', 'orders-1', IP.ordersPod],
  ['eng', '', '10.244.1.3'],
  ['reins', 'reins-5f-new', IP.reinsPod],
];
const names = ['api.openai.com', 'api.anthropic.com', 'api.openai.com.eng.svc.cluster.local', 'github.com', 'pypi.org', 'orders.shop.svc.cluster.local', ''];
const addresses = [IP.openai, IP.anthropic, IP.github, IP.unknown, IP.kubeDns, '169.254.169.254', ''];

const rawArb: fc.Arbitrary<Observation> = fc
  .record({
    pod: fc.constantFrom(...pods),
    family: fc.constantFrom('dns' as const, 'network' as const, 'exec' as const, 'open' as const),
    name: fc.constantFrom(...names),
    ip: fc.constantFrom(...addresses),
    behavior: fc.constantFrom('dns-query', 'tcp-connect', 'udp-send'),
    subject: fc.constantFrom('/usr/bin/python3', '/bin/curl'),
    count: fc.integer({ min: 1, max: 1000 }),
    at: fc.integer({ min: WINDOW.windowStartUnix - 50, max: WINDOW.windowEndUnix + 50 }),
  })
  .map(({ pod, family, name, ip, behavior, subject, count, at }) =>
    observation({ family, namespace: pod[0], podName: pod[1], podIP: pod[2], destName: name, destIP: ip, behavior, subject, count, observedAt: at }),
  );
// Governed calls of a window as the store reads them: summed per (type, identity, host).
const callArb: fc.Arbitrary<GovernedCall> = fc
  .record({
    type: fc.constantFrom('llm' as const, 'mcp' as const, 'egress' as const),
    identity: fc.constantFrom('eng/agent', 'eng/scratch', 'shop/orders'),
    host: fc.constantFrom('api.openai.com', 'api.openai.com:443', IP.anthropic),
    at: fc.integer({ min: WINDOW.windowStartUnix, max: WINDOW.windowEndUnix }),
  })
  .map(({ type, identity, host, at }) => (type === 'egress' ? call(type, identity, host, at) : call(type, identity, undefined, at)));

function sumCalls(calls: GovernedCall[]): GovernedCall[] {
  const byKey = new Map<string, GovernedCall>();
  for (const c of calls) {
    const key = `${c.type}\u0000${c.identityId}\u0000${c.host ?? ''}`;
    const prev = byKey.get(key);
    if (prev) byKey.set(key, { ...prev, count: (prev.count ?? 1) + 1, atUnix: Math.max(prev.atUnix, c.atUnix) });
    else byKey.set(key, { ...c, count: 1 });
  }
  return [...byKey.values()];
}

test('the engine answers the same for the index aggregate as for the raw rows, and for summed governed calls', () => {
  fc.assert(
    fc.property(
      fc.array(rawArb, { maxLength: 120 }),
      fc.array(callArb, { maxLength: 20 }),
      fc.constantFrom(makeFacts(), makeFacts({ complete: false })),
      (raw, calls, facts) => {
        const index = new ObservationIndex();
        for (const o of raw) index.add(o);
        const base = { facts, window: WINDOW, egressPlaneEnabled: true, nowUnix: NOW };
        const fromRaw = reconcile({ ...base, observations: raw, governedCalls: calls });
        const fromIndex = reconcile({ ...base, observations: index.aggregate(WINDOW), governedCalls: sumCalls(calls) });
        assert.deepEqual(fromIndex, fromRaw);
      },
    ),
    { numRuns: 300 },
  );
});

test('rows repeating a tuple become one observation: counts summed, an observedAt inside the window', () => {
  const index = new ObservationIndex();
  const base = { family: 'network' as const, destIP: IP.openai };
  index.add(observation({ ...base, count: 2, observedAt: WINDOW.windowStartUnix + 10 }));
  index.add(observation({ ...base, count: 3, observedAt: WINDOW.windowStartUnix + 30 }));
  index.add(observation({ ...base, count: 50, observedAt: WINDOW.windowEndUnix + 1 }));
  index.add(observation({ ...base, family: 'exec', count: 1, observedAt: WINDOW.windowStartUnix + 20 }));
  const out = index.aggregate(WINDOW);
  assert.equal(out.length, 1);
  assert.equal(out[0]!.count, 5);
  // The latest row inside when the sum read the rows; a time inside the window either way (all the engine reads).
  assert.ok(out[0]!.observedAt >= WINDOW.windowStartUnix + 30 && out[0]!.observedAt <= WINDOW.windowEndUnix, String(out[0]!.observedAt));
  assert.equal(index.tupleCount, 2);
  assert.equal(index.size, 4);
});

test('select keeps the rows as stored; eviction drops old rows and the tuples nobody uses', () => {
  const index = new ObservationIndex();
  index.add(observation({ destIP: IP.openai, observedAt: 100 }));
  index.add(observation({ destIP: IP.openai, observedAt: 200, count: 4 }));
  index.add(observation({ destIP: IP.anthropic, observedAt: 150 }));
  index.add(observation({ family: 'exec', destName: '/bin/sh', observedAt: 300 }));
  const all = { windowStartUnix: 0, windowEndUnix: 1000 };
  assert.deepEqual(index.select(all, (t) => t.destIP === IP.openai).map((o) => [o.observedAt, o.count]), [[100, 1], [200, 4]]);
  assert.equal(index.evictBefore(160), 2);
  assert.equal(index.size, 2);
  assert.equal(index.tupleCount, 2);
  assert.equal(index.oldestObservedAt, 200);
  assert.deepEqual(index.select(all, () => true).map((o) => [o.family, o.observedAt]), [['network', 200], ['exec', 300]]);
  // A tuple seen again after eviction is interned anew, once.
  index.add(observation({ destIP: IP.anthropic, observedAt: 400 }));
  index.add(observation({ destIP: IP.anthropic, observedAt: 410 }));
  assert.equal(index.tupleCount, 3);
  assert.equal(index.aggregate(all).find((o) => o.destIP === IP.anthropic)!.count, 2);
});

test('window sums over hours of rows equal the sums of the rows inside, for any window (read inside or from the totals)', () => {
  const HOUR = 3600;
  const rowArb = fc.record({
    pod: fc.constantFrom(...pods),
    ip: fc.constantFrom(IP.openai, IP.anthropic, IP.github),
    family: fc.constantFrom('dns' as const, 'network' as const, 'exec' as const),
    count: fc.integer({ min: 1, max: 1000 }),
    at: fc.integer({ min: NOW - 26 * HOUR, max: NOW + 2 * HOUR }),
  });
  fc.assert(
    fc.property(
      fc.array(rowArb, { maxLength: 200 }),
      fc.integer({ min: NOW - 27 * HOUR, max: NOW }),
      fc.integer({ min: 0, max: 28 * HOUR }),
      fc.option(fc.integer({ min: NOW - 30 * HOUR, max: NOW }), { nil: undefined }),
      (rows, start, length, evictBefore) => {
        const index = new ObservationIndex();
        const held: Observation[] = [];
        for (const r of rows) {
          const o = observation({ family: r.family, namespace: r.pod[0], podName: r.pod[1], podIP: r.pod[2], destIP: r.ip, count: r.count, observedAt: r.at });
          index.add(o);
          held.push(o);
        }
        const kept = evictBefore === undefined ? held : held.filter((o) => o.observedAt >= evictBefore);
        if (evictBefore !== undefined) index.evictBefore(evictBefore);
        const window = { windowStartUnix: start, windowEndUnix: start + length };
        const expected = new Map<string, number>();
        for (const o of kept) {
          if (o.family === 'exec' || o.observedAt < window.windowStartUnix || o.observedAt > window.windowEndUnix) continue;
          const key = `${o.family}|${o.podName}|${o.podIP}|${o.destIP}`;
          expected.set(key, (expected.get(key) ?? 0) + o.count);
        }
        const got = new Map<string, number>();
        for (const o of index.aggregate(window)) {
          assert.ok(o.observedAt >= window.windowStartUnix && o.observedAt <= window.windowEndUnix, `observedAt ${o.observedAt} outside the window`);
          got.set(`${o.family}|${o.podName}|${o.podIP}|${o.destIP}`, o.count);
        }
        assert.deepEqual(got, expected);
      },
    ),
    { numRuns: 400 },
  );
});

test('adds and evictions interleaved (rows dropped where they lie, arrays compacted, tuples collected) agree with the rows kept', () => {
  const HOUR = 3600;
  const rowArb = fc.record({
    pod: fc.constantFrom(...pods),
    ip: fc.constantFrom(IP.openai, IP.anthropic, IP.github),
    family: fc.constantFrom('dns' as const, 'network' as const, 'exec' as const),
    count: fc.integer({ min: 1, max: 1000 }),
    at: fc.integer({ min: NOW - 26 * HOUR, max: NOW + 2 * HOUR }),
  });
  const stepArb = fc.oneof(
    fc.record({ add: fc.array(rowArb, { minLength: 1, maxLength: 40 }) }),
    fc.record({ evict: fc.integer({ min: NOW - 27 * HOUR, max: NOW + 2 * HOUR }) }),
  );
  const key = (o: Observation) => `${o.family}|${o.namespace}|${o.podName}|${o.podIP}|${o.destIP}`;
  fc.assert(
    fc.property(fc.array(stepArb, { maxLength: 12 }), fc.integer({ min: 0, max: 8 }), (steps, compactAfterDead) => {
      const index = new ObservationIndex(compactAfterDead);
      let held: Observation[] = [];
      for (const step of steps) {
        if ('add' in step) {
          for (const r of step.add) {
            const o = observation({ family: r.family, namespace: r.pod[0], podName: r.pod[1], podIP: r.pod[2], destIP: r.ip, count: r.count, observedAt: r.at });
            index.add(o);
            held.push(o);
          }
        } else {
          const before = held.length;
          held = held.filter((o) => o.observedAt >= step.evict);
          assert.equal(index.evictBefore(step.evict), before - held.length);
        }
        assert.equal(index.size, held.length);
        assert.equal(index.tupleCount, new Set(held.map(key)).size);
        assert.equal(index.oldestObservedAt, held.length ? Math.min(...held.map((o) => o.observedAt)) : Infinity);
        const all = { windowStartUnix: NOW - 30 * HOUR, windowEndUnix: NOW + 3 * HOUR };
        assert.deepEqual(
          index.select(all, () => true).map((o) => `${key(o)}@${o.observedAt}x${o.count}`),
          held.map((o) => `${key(o)}@${o.observedAt}x${o.count}`),
        );
        for (const window of [all, { windowStartUnix: NOW - 24 * HOUR, windowEndUnix: NOW }, { windowStartUnix: NOW - HOUR, windowEndUnix: NOW }]) {
          const expected = new Map<string, number>();
          for (const o of held) {
            if (o.family === 'exec' || o.observedAt < window.windowStartUnix || o.observedAt > window.windowEndUnix) continue;
            expected.set(key(o), (expected.get(key(o)) ?? 0) + o.count);
          }
          const got = new Map<string, number>();
          for (const o of index.aggregate(window)) got.set(key(o), o.count);
          assert.deepEqual(got, expected);
        }
      }
    }),
    { numRuns: 300 },
  );
});

/**
 * Facts a cluster moves between: the same facts as new arrays, and the changes a real cluster makes every few seconds,
 * which the row memo's classifier carries over (Classifier.successor) instead of starting afresh.
 */
function churnedFacts(): ClusterFacts[] {
  const base = makeFacts();
  const without = (name: string): PodFact[] => base.pods.filter((p) => p.name !== name);
  const podFact = (namespace: string, name: string, ip: string, owner?: { kind: string; name: string }): PodFact => ({
    namespace,
    name,
    ip,
    node: 'node-a',
    containers: [{ name: 'app', image: 'example/app:1' }],
    ownerReferences: owner ? [{ ...owner, controller: true }] : [],
  });
  return [
    // The same facts, new arrays: carried over with nothing changed.
    makeFacts(),
    // A pod deleted after its observations: attributed by its name to the ReplicaSet it had (inferred).
    makeFacts({ pods: without('agent-7d9f-b') }),
    // A new pod on an address workloads connect to: that destination becomes in-cluster.
    makeFacts({ pods: [...base.pods, podFact('eng', 'gh-mirror', IP.github)] }),
    // A pod whose owner changed (a ReplicaSet the facts do not list): its workload changes.
    makeFacts({ pods: [...without('agent-7d9f-a'), podFact('eng', 'agent-7d9f-a', '10.244.1.1', { kind: 'ReplicaSet', name: 'agent-other' })] }),
    // A pod deleted whose address was a destination: that address is external again.
    makeFacts({ pods: without('orders-1') }),
    // A selector-less Service's EndpointSlice names an external address.
    makeFacts({ endpointSlices: [...base.endpointSlices, { namespace: 'shop', serviceName: 'orders', endpoints: [{ addresses: [IP.unknown] }] }] }),
    // A new Service: names are classified anew (the classifier starts afresh).
    makeFacts({ services: [...base.services, { namespace: 'shop', name: 'pypi', clusterIPs: ['10.96.5.5'] }] }),
    // The scratch pod counted as one of the service's own.
    makeFacts({ selfPods: [...base.selfPods, { namespace: 'eng', name: 'scratch', ip: '10.244.1.5' }] }),
  ];
}

test('answers with a row memo equal fresh answers, over a sequence of index changes, governed calls, facts and windows', () => {
  const factsA = makeFacts();
  const factsB = makeFacts({ complete: false });
  const churned = churnedFacts();
  const stepArb = fc.record({
    add: fc.array(rawArb, { maxLength: 15 }),
    evict: fc.option(fc.integer({ min: WINDOW.windowStartUnix - 50, max: WINDOW.windowEndUnix }), { nil: undefined }),
    calls: fc.array(callArb, { maxLength: 6 }),
    facts: fc.constantFrom(factsA, factsA, factsA, factsB, ...churned),
    egress: fc.constantFrom(true, true, false),
    shift: fc.integer({ min: -40, max: 40 }),
  });
  fc.assert(
    fc.property(fc.array(rawArb, { maxLength: 80 }), fc.array(stepArb, { minLength: 1, maxLength: 8 }), (initial, steps) => {
      const index = new ObservationIndex(0);
      for (const o of initial) index.add(o);
      const memo = new RowMemo();
      for (const step of steps) {
        for (const o of step.add) index.add(o);
        if (step.evict !== undefined) index.evictBefore(step.evict);
        const window = { windowStartUnix: WINDOW.windowStartUnix + step.shift, windowEndUnix: WINDOW.windowEndUnix + step.shift };
        const base = { facts: step.facts, window, egressPlaneEnabled: step.egress, nowUnix: NOW, governedCalls: sumCalls(step.calls) };
        // The index's aggregate is rewritten by its next call: the fresh answer gets a copy of it.
        const observations = index.aggregate(window);
        const fresh = reconcile({ ...base, observations: observations.map((o) => ({ ...o })) });
        const memoised = reconcile({ ...base, observations }, memo);
        assert.deepEqual(memoised, fresh);
      }
    }),
    { numRuns: 600 },
  );
});

test('a row memo hands out a new row when only a count changed, and the same row when nothing did', () => {
  const index = new ObservationIndex();
  const memo = new RowMemo();
  const base = { facts: makeFacts(), window: WINDOW, egressPlaneEnabled: true, nowUnix: NOW, governedCalls: [] };
  const o = observation({ family: 'network', destIP: IP.openai, observedAt: WINDOW.windowStartUnix + 10, count: 2 });
  index.add(o);
  const first = reconcile({ ...base, observations: index.aggregate(WINDOW) }, memo);
  const again = reconcile({ ...base, observations: index.aggregate(WINDOW) }, memo);
  const agent = (r: typeof first) => r.rows.find((row) => row.destinations.length > 0)!;
  assert.equal(agent(again), agent(first), 'unchanged input: the same row object');
  index.add({ ...o, count: 5, observedAt: WINDOW.windowStartUnix + 20 });
  const more = reconcile({ ...base, observations: index.aggregate(WINDOW) }, memo);
  assert.notEqual(agent(more), agent(first));
  assert.equal(agent(more).destinations[0]!.count, 7);
});

test('when the facts change, a row memo keeps the rows they do not touch and rebuilds those that read a changed address', () => {
  const index = new ObservationIndex();
  const memo = new RowMemo();
  const facts = makeFacts();
  const base = { window: WINDOW, egressPlaneEnabled: true, nowUnix: NOW, governedCalls: [] };
  index.add(observation({ family: 'network', podName: 'agent-7d9f-a', podIP: '10.244.1.1', destIP: IP.github, observedAt: WINDOW.windowStartUnix + 10 }));
  index.add(observation({ family: 'network', namespace: 'shop', podName: 'orders-1', podIP: IP.ordersPod, destIP: IP.openai, observedAt: WINDOW.windowStartUnix + 10 }));
  const row = (r: ReturnType<typeof reconcile>, key: string) => r.rows.find((x) => x.workloadKey === key)!;
  const first = reconcile({ ...base, facts, observations: index.aggregate(WINDOW) }, memo);
  assert.equal(row(first, 'eng/Deployment/agent').destinations[0]!.kind, 'provider', 'github.com by its address alone: unnamed, counted');

  // A new pod elsewhere: both rows are the same objects.
  const scaled = { ...facts, pods: [...facts.pods, { ...facts.pods[4]!, name: 'scratch-2', ip: '10.244.1.77' }] };
  const second = reconcile({ ...base, facts: scaled, observations: index.aggregate(WINDOW) }, memo);
  assert.equal(row(second, 'eng/Deployment/agent'), row(first, 'eng/Deployment/agent'));
  assert.equal(row(second, 'shop/Deployment/orders'), row(first, 'shop/Deployment/orders'));

  // A pod on the address agent connects to: agent's row is rebuilt (the destination is in-cluster now), orders' kept.
  const mirrored = { ...scaled, pods: [...scaled.pods, { ...facts.pods[4]!, name: 'gh-mirror', ip: IP.github }] };
  const third = reconcile({ ...base, facts: mirrored, observations: index.aggregate(WINDOW) }, memo);
  assert.notEqual(row(third, 'eng/Deployment/agent'), row(first, 'eng/Deployment/agent'));
  assert.deepEqual(
    row(third, 'eng/Deployment/agent').destinations.map((d) => [d.destName, d.suppressReason]),
    [[`pod:eng/gh-mirror`, 'in-cluster']],
  );
  assert.equal(row(third, 'shop/Deployment/orders'), row(first, 'shop/Deployment/orders'));
  assert.deepEqual(third, reconcile({ ...base, facts: mirrored, observations: index.aggregate(WINDOW).map((o) => ({ ...o })) }));
});

test('a classifier prepared ahead of an answer is the one the answer uses, and the answer is the same', () => {
  const index = new ObservationIndex();
  index.add(observation({ family: 'network', podName: 'agent-7d9f-a', podIP: '10.244.1.1', destIP: IP.openai, observedAt: WINDOW.windowStartUnix + 10 }));
  const memo = new RowMemo();
  const facts = makeFacts();
  memo.prepare(facts);
  const prepared = memo.classifierFor(facts);
  assert.ok(prepared.podsNumbered >= facts.pods.length - 1, 'every pod of the facts resolved ahead');
  const base = { window: WINDOW, egressPlaneEnabled: true, nowUnix: NOW, governedCalls: [] };
  const answer = reconcile({ ...base, facts: { ...facts }, observations: index.aggregate(WINDOW) }, memo);
  assert.equal(memo.classifierFor(facts), prepared);
  assert.deepEqual(answer, reconcile({ ...base, facts, observations: index.aggregate(WINDOW).map((o) => ({ ...o })) }));
});
