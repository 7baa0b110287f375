/** Which headers the LLM gateway sends upstream (planes/llm/forward.ts); what comes back: test/unit/shared/answer-headers.test.ts. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { upstreamHeaders } from '../../../../src/planes/llm/forward.js';

test('upstream: the credential replaces the client\'s, whatever header its SDK used', () => {
  const out = upstreamHeaders(
    { authorization: 'Bearer rk_reins_secret', 'x-api-key': 'rk_other', 'content-type': 'application/json' },
    { authorization: 'Bearer sk-provider' },
  );
  assert.deepEqual(out, { 'content-type': 'application/json', 'accept-encoding': 'identity', authorization: 'Bearer sk-provider' });
});

test('upstream: a configured header wins over the client\'s of the same name', () => {
  const out = upstreamHeaders({ 'anthropic-version': '2023-01-01', 'user-agent': 'sdk' }, { 'anthropic-version': '2023-06-01' });
  assert.equal(out['anthropic-version'], '2023-06-01');
  assert.equal(out['user-agent'], 'sdk');
});

test('upstream: hop-by-hop, Connection-listed, Reins\' own, cookies, pseudo-headers and the client\'s encoding stay here', () => {
  const out = upstreamHeaders(
    {
      connection: 'keep-alive, x-trace-hop',
      'x-trace-hop': '1',
      'keep-alive': 'timeout=5',
      'transfer-encoding': 'chunked',
      host: 'reins.local',
      'content-length': '12',
      te: 'trailers',
      upgrade: 'h2c',
      'x-reins-session': 's1',
      'x-reins-agent': 'eng/bot',
      cookie: 'reins_session=abc',
      ':path': '/llm/openai/v1/chat/completions',
      'accept-encoding': 'gzip, br',
      expect: '100-continue',
      'openai-beta': 'assistants=v2',
    },
    {},
  );
  assert.deepEqual(out, { 'openai-beta': 'assistants=v2', 'accept-encoding': 'identity' });
});

test('upstream: a header sent twice is joined; an undefined one is left out', () => {
  const out = upstreamHeaders({ 'x-custom': ['a', 'b'], 'x-missing': undefined }, {});
  assert.equal(out['x-custom'], 'a, b');
  assert.equal('x-missing' in out, false);
});
