import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { groupObservations } from '../../../src/runtime-guard/reconciliation.js';
import { observation } from './fixtures.js';

describe('observations grouped by family', () => {
  const table: Array<[string, string, boolean, boolean]> = [
    ['dns', 'Names resolved (DNS)', false, true],
    ['network', 'Destinations reached (network)', false, true],
    ['open', 'Paths opened (file)', true, false],
    ['exec', 'Binaries executed (exec)', true, false],
    ['other', 'Other observations', false, false],
  ];

  test('every family appears once, in the spec\'s order, with its heading and flags', () => {
    const groups = groupObservations([]);
    assert.deepEqual(
      groups.map((g) => [g.family, g.heading, g.needsBpfLsm, g.feedsBypassedDestinations]),
      table,
    );
    assert.ok(groups.every((g) => g.items.length === 0));
  });

  test('items land in their family, newest first, with the spec\'s item fields only', () => {
    const groups = groupObservations([
      observation({ family: 'exec', destName: '/usr/bin/curl', observedAt: 10 }),
      observation({ family: 'dns', destName: 'api.openai.com', observedAt: 5 }),
      observation({ family: 'exec', destName: '/bin/sh', observedAt: 20 }),
      observation({ family: 'open', destName: '/etc/shadow', observedAt: 7 }),
    ]);
    const exec = groups.find((g) => g.family === 'exec')!;
    assert.deepEqual(exec.items.map((i) => i.destName), ['/bin/sh', '/usr/bin/curl']);
    assert.deepEqual(Object.keys(exec.items[0]!).sort(), ['behavior', 'count', 'destIP', 'destName', 'mode', 'namespace', 'node', 'observedAt', 'podName', 'result', 'rule', 'subject']);
    assert.equal(groups.find((g) => g.family === 'dns')!.items.length, 1);
    assert.equal(groups.find((g) => g.family === 'network')!.items.length, 0);
  });

  test('an unknown family value is shown under Other observations rather than lost', () => {
    const stray = { ...observation({}), family: 'bpf-map' } as unknown as Parameters<typeof groupObservations>[0][number];
    assert.equal(groupObservations([stray]).find((g) => g.family === 'other')!.items.length, 1);
  });
});
