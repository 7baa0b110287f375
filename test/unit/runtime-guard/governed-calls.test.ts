import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GovernedCallIndex } from '../../../src/runtime-guard/governed-calls.js';

test('calls are summed per (type, identity, host) inside the window, both ends included, with their latest second', () => {
  const index = new GovernedCallIndex();
  index.add('egress', 'eng/agent', 'api.openai.com', 100);
  index.add('egress', 'eng/agent', 'api.openai.com', 150);
  index.add('egress', 'eng/agent', 'api.openai.com', 201);
  index.add('egress', 'eng/agent', 'pypi.org', 120);
  index.add('llm', 'eng/agent', null, 99);
  index.add('llm', 'eng/agent', null, 200);
  index.add('mcp', 'eng/other', null, 130);
  const calls = index.aggregate({ windowStartUnix: 100, windowEndUnix: 200 });
  const key = (c: { type: string; identityId?: string; host?: string }) => `${c.type} ${c.identityId} ${c.host ?? '-'}`;
  assert.deepEqual(
    calls.map((c) => [key(c), c.count, c.atUnix]).sort(),
    [
      ['egress eng/agent api.openai.com', 2, 150],
      ['egress eng/agent pypi.org', 1, 120],
      ['llm eng/agent -', 1, 200],
      ['mcp eng/other -', 1, 130],
    ],
  );
  assert.equal(calls.find((c) => c.type === 'llm')!.host, undefined);
});

test('eviction drops old events only', () => {
  const index = new GovernedCallIndex();
  for (let at = 0; at < 10; at++) index.add('llm', 'a/b', null, at);
  index.evictBefore(5);
  assert.equal(index.size, 5);
  assert.equal(index.aggregate({ windowStartUnix: 0, windowEndUnix: 100 })[0]!.count, 5);
});

test('events of one tuple in one second share an entry: memory follows distinct tuples per second, not the call rate', () => {
  const index = new GovernedCallIndex();
  for (let second = 1000; second < 1010; second++) {
    for (let i = 0; i < 1000; i++) {
      index.add('egress', 'eng/busy', 'api.openai.com', second);
      index.add('llm', 'eng/busy', null, second);
    }
  }
  assert.equal(index.size, 20_000);
  assert.equal(index.entryCount, 20, 'one entry per tuple and second');
  const calls = index.aggregate({ windowStartUnix: 1002, windowEndUnix: 1004 });
  assert.deepEqual(calls.map((c) => [c.type, c.count, c.atUnix]).sort(), [
    ['egress', 3000, 1004],
    ['llm', 3000, 1004],
  ]);
  index.evictBefore(1008);
  assert.equal(index.size, 4000);
  index.add('llm', 'eng/busy', null, 1009);
  assert.equal(index.entryCount, 4, 'after eviction an event of the latest second still joins its entry');
});

test('sums match one event per entry for any order of arrival and any window', () => {
  // A seeded generator: the same cases every run.
  let seed = 42;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const tuples: ['egress' | 'llm' | 'mcp', string, string | null][] = [
    ['egress', 'a/x', 'h1'],
    ['egress', 'a/x', 'h2'],
    ['llm', 'a/x', null],
    ['mcp', 'b/y', null],
  ];
  const index = new GovernedCallIndex();
  const events: { t: number; at: number }[] = [];
  let clock = 5000;
  for (let i = 0; i < 5000; i++) {
    clock += random() < 0.05 ? 1 : 0;
    // Now and then an event commits late, seconds behind the others.
    const at = random() < 0.05 ? clock - Math.floor(random() * 20) : clock;
    const t = Math.floor(random() * tuples.length);
    const [type, identity, host] = tuples[t]!;
    index.add(type, identity, host, at);
    events.push({ t, at });
  }
  assert.ok(index.entryCount < events.length / 2, `${index.entryCount} entries for ${events.length} events`);
  for (let k = 0; k < 50; k++) {
    const a = 4990 + Math.floor(random() * (clock - 4980));
    const b = a + Math.floor(random() * 100);
    const expected = new Map<number, { count: number; latest: number }>();
    for (const e of events) {
      if (e.at < a || e.at > b) continue;
      const x = expected.get(e.t) ?? { count: 0, latest: 0 };
      x.count += 1;
      x.latest = Math.max(x.latest, e.at);
      expected.set(e.t, x);
    }
    const got = index.aggregate({ windowStartUnix: a, windowEndUnix: b });
    assert.equal(got.length, expected.size, `window ${a}-${b}`);
    for (const c of got) {
      const t = tuples.findIndex(([type, identity, host]) => type === c.type && identity === c.identityId && (host ?? undefined) === c.host);
      assert.deepEqual({ count: c.count, latest: c.atUnix }, expected.get(t), `window ${a}-${b}, ${c.type} ${c.host ?? ''}`);
    }
  }
});
