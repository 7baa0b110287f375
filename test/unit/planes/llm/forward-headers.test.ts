/** Which headers the LLM gateway sends upstream and passes back (planes/llm/forward.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AnswerHeaders, downstreamHeaders, upstreamHeaders } from '../../../../src/planes/llm/forward.js';

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

test('downstream: cookies and hop-by-hop headers are dropped; content-length kept only for a body passed byte for byte', () => {
  const upstream = { 'content-type': 'application/json', 'content-length': '42', 'set-cookie': ['a=b'], connection: 'keep-alive', 'x-request-id': 'r1', 'alt-svc': 'h3=":443"' };
  assert.deepEqual(downstreamHeaders(upstream), { 'content-type': 'application/json', 'x-request-id': 'r1' });
  assert.deepEqual(downstreamHeaders(upstream, true), { 'content-length': '42', 'content-type': 'application/json', 'x-request-id': 'r1' });
});

test('downstream: a header the upstream lists in Connection is dropped', () => {
  assert.deepEqual(downstreamHeaders({ connection: 'close, x-hop', 'x-hop': '1', 'x-keep': '2' }), { 'x-keep': '2' });
});

/** Raw headers as undici's dispatcher hands them over: names and values in bytes, in the order they came. */
const raw = (...pairs: string[]): Buffer[] => pairs.map((p) => Buffer.from(p, 'latin1'));

test('answer headers: the same choice as downstreamHeaders, read from the raw list in one pass', () => {
  const answer = raw('Content-Type', 'application/json', 'Content-Length', '42', 'Set-Cookie', 'a=b', 'Connection', 'keep-alive', 'X-Request-Id', 'r1', 'Alt-Svc', 'h3=":443"');
  assert.deepEqual(new AnswerHeaders(answer).forClient, ['content-type', 'application/json', 'x-request-id', 'r1']);
  assert.deepEqual(new AnswerHeaders(answer, true).forClient, ['content-type', 'application/json', 'content-length', '42', 'x-request-id', 'r1']);
  const read = new AnswerHeaders(answer);
  // The gateway reads every header, the ones the client does not get included.
  assert.deepEqual(
    ['content-type', 'content-length', 'set-cookie', 'connection', 'x-request-id', 'alt-svc', 'x-absent'].map((n) => read.get(n)),
    ['application/json', '42', 'a=b', 'keep-alive', 'r1', 'h3=":443"', undefined],
  );
});

test('answer headers: a repeated name stays one line each for the client; get gives the first', () => {
  const got = new AnswerHeaders(raw('Link', '<a>; rel=next', 'link', '<b>; rel=prev', 'LINK', '<c>; rel=last'));
  assert.deepEqual(got.forClient, ['link', '<a>; rel=next', 'link', '<b>; rel=prev', 'link', '<c>; rel=last']);
  assert.equal(got.get('link'), '<a>; rel=next');
});

test('answer headers: names listed in Connection (over several lines) are dropped; Object.prototype names are plain headers', () => {
  const got = new AnswerHeaders(raw('Connection', 'close, X-Hop', 'X-Hop', '1', 'Connection', 'x-other', 'X-Other', '3', 'X-Keep', '2', 'constructor', 'c', '__proto__', 'p', 'toString', 't'));
  assert.deepEqual(got.forClient, ['x-keep', '2', 'constructor', 'c', '__proto__', 'p', 'tostring', 't']);
  assert.equal(got.get('constructor'), 'c');
  assert.equal(got.get('__proto__'), 'p');
  assert.equal(got.get('hasOwnProperty'), undefined);
});

test('answer headers: values are bytes as latin1, as undici and Node read them', () => {
  const got = new AnswerHeaders([Buffer.from('x-name'), Buffer.from([0x63, 0x61, 0x66, 0xe9])]);
  assert.equal(got.get('x-name'), 'caf\u00e9');
});
