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
