import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CLUSTER_FACTS_MAX_AGE_SECONDS } from '../../../src/runtime-guard/reconciliation.js';
import type { Observation, ReconciliationResult } from '../../../src/runtime-guard/types.js';
import { IP, NOW, T, WINDOW, makeFacts, observation, run } from './fixtures.js';

const pods: Array<[string, string]> = [
  ['eng', 'agent-7d9f-a'],
  ['eng', 'agent-7d9f-b'],
  ['eng', 'db-0'],
  ['eng', 'scratch'],
  ['eng', 'meshy-5c-a'],
  ['shop', 'orders-1'],
  ['reins', 'reins-4a-old'],
  ['eng', 'ghost-1'],
];
const names = [
  'api.openai.com',
  'API.OpenAI.com.',
  'api.anthropic.com',
  'api.openai.com.eng.svc.cluster.local',
  'api.openai.com.cluster.local',
  'github.com',
  'github.com.eng.svc.cluster.local',
  'pypi.org',
  'orders.shop.svc.cluster.local',
  'reins.reins.svc.cluster.local',
  '10.0.96.10.in-addr.arpa',
  'metadata.google.internal',
  'istiod.istio-system.svc',
];
const addresses = [IP.openai, IP.anthropic, IP.github, IP.npm, IP.unknown, '198.51.100.7', IP.kubeDns, IP.ordersPod, IP.reinsClusterIP, IP.node, '169.254.169.254', '169.254.1.1', ''];

const observationArb: fc.Arbitrary<Observation> = fc
  .record({
    pod: fc.constantFrom(...pods),
    family: fc.constantFrom('dns' as const, 'network' as const, 'exec' as const),
    name: fc.constantFrom(...names),
    ip: fc.constantFrom(...addresses),
    sensorName: fc.constantFrom('', '', '', 'api.groq.com'),
    behavior: fc.constantFrom('dns-query', 'tcp-connect', 'udp-send'),
    count: fc.integer({ min: 1, max: 5 }),
    at: fc.integer({ min: WINDOW.windowStartUnix - 100, max: WINDOW.windowEndUnix + 100 }),
  })
  .map(({ pod, family, name, ip, sensorName, behavior, count, at }) =>
    observation({
      family,
      namespace: pod[0],
      podName: pod[1],
      destName: family === 'dns' ? name : family === 'network' ? sensorName : '/bin/sh',
      destIP: ip,
      behavior,
      count,
      observedAt: at,
    }),
  );

const factsArb = fc.constantFrom(makeFacts(), makeFacts({ complete: false }), makeFacts({ fetchedAtUnix: NOW - CLUSTER_FACTS_MAX_AGE_SECONDS - 60 }));

/** Each row's set of counted destinations and its headline. */
function headline(result: ReconciliationResult): Record<string, { bypassed: number; counted: string[] }> {
  const out: Record<string, { bypassed: number; counted: string[] }> = {};
  for (const row of result.rows) {
    const counted = row.destinations.filter((d) => !d.suppressed && d.kind === 'provider').map((d) => d.destName).sort();
    out[row.workloadKey] = { bypassed: row.bypassedDestinations, counted };
  }
  return out;
}

/** Repeats every observation 1..3 times and shuffles the whole list by the given keys. */
function duplicateAndShuffle(observations: Observation[], repeats: number[], keys: number[]): Observation[] {
  const expanded = observations.flatMap((o, i) => Array.from({ length: repeats[i % Math.max(1, repeats.length)] ?? 1 }, () => ({ ...o })));
  return expanded
    .map((o, i) => ({ o, k: keys[i % Math.max(1, keys.length)] ?? 0, i }))
    .sort((a, b) => a.k - b.k || b.i - a.i)
    .map(({ o }) => o);
}

describe('reconciliation properties', () => {
  test('duplicating and reordering events never changes bypassedDestinations (nor the counted set)', () => {
    fc.assert(
      fc.property(
        fc.array(observationArb, { maxLength: 40 }),
        fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 40 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 120 }),
        factsArb,
        (observations, repeats, keys, facts) => {
          const before = run(observations, { facts });
          const after = run(duplicateAndShuffle(observations, repeats, keys), { facts });
          assert.deepEqual(headline(after), headline(before));
          assert.equal(after.networkDetectorDisabled, before.networkDetectorDisabled);
        },
      ),
      { numRuns: 300 },
    );
  });

  test('reordering alone never changes the result at all', () => {
    fc.assert(
      fc.property(fc.array(observationArb, { maxLength: 40 }), fc.array(fc.nat(), { minLength: 1, maxLength: 40 }), factsArb, (observations, keys, facts) => {
        const shuffled = duplicateAndShuffle(observations, [1], keys);
        assert.deepEqual(run(shuffled, { facts }), run(observations, { facts }));
      }),
      { numRuns: 300 },
    );
  });

  test('a row with no unsuppressed evidence has m = 0, bypassedDestinations 0 and dnsOnly false', () => {
    fc.assert(
      fc.property(fc.array(observationArb, { maxLength: 40 }), factsArb, (observations, facts) => {
        for (const row of run(observations, { facts }).rows) {
          const unsuppressed = row.destinations.filter((d) => !d.suppressed);
          const counted = unsuppressed.filter((d) => d.kind === 'provider');
          // 0 always means the set was empty.
          assert.equal(row.bypassedDestinations, counted.length);
          if (unsuppressed.length === 0) {
            assert.deepEqual([row.m, row.bypassedDestinations, row.dnsOnly], [0, 0, false]);
          }
          if (counted.length === 0) assert.equal(row.m, 0);
          if (row.dnsOnly) assert.ok(unsuppressed.every((d) => d.source === 'dns'));
          assert.ok(row.destinations.every((d) => d.kind !== 'imds' || !d.suppressed), 'IMDS is never suppressed');
          assert.ok(row.destinations.every((d) => ['R0', 'R2', 'R6'].includes(d.rung)));
        }
      }),
      { numRuns: 300 },
    );
  });

  test('observations of the service\'s own pods never produce a row', () => {
    fc.assert(
      fc.property(fc.array(observationArb, { maxLength: 30 }), (observations) => {
        const own = observations.map((o) => ({ ...o, namespace: 'reins', podName: 'reins-4a-old', observedAt: T }));
        assert.deepEqual(run(own).rows.filter((r) => r.namespace === 'reins' || r.destinations.length > 0), []);
      }),
      { numRuns: 100 },
    );
  });
});
