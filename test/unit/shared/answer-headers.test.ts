/** Which of an upstream answer's headers a forwarding plane gives its client, and what it reads of them (shared/answer-headers.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AnswerHeaders, listedInConnection } from '../../../src/shared/answer-headers.js';

/** Raw headers as undici's dispatcher hands them over: names and values in bytes, in the order they came. */
const raw = (...pairs: string[]): Buffer[] => pairs.map((p) => Buffer.from(p, 'latin1'));

test('answer headers: cookies and hop-by-hop headers are dropped; content-length kept only for a body passed byte for byte', () => {
  const answer = raw('Content-Type', 'application/json', 'Content-Length', '42', 'Set-Cookie', 'a=b', 'Connection', 'keep-alive', 'X-Request-Id', 'r1', 'Alt-Svc', 'h3=":443"');
  assert.deepEqual(new AnswerHeaders(answer).forClient(false), ['content-type', 'application/json', 'x-request-id', 'r1']);
  assert.deepEqual(new AnswerHeaders(answer).forClient(true), ['content-type', 'application/json', 'content-length', '42', 'x-request-id', 'r1']);
  const read = new AnswerHeaders(answer);
  // The gateway reads every header, the ones the client does not get included.
  assert.deepEqual(
    ['content-type', 'content-length', 'set-cookie', 'connection', 'x-request-id', 'alt-svc', 'x-absent'].map((n) => read.get(n)),
    ['application/json', '42', 'a=b', 'keep-alive', 'r1', 'h3=":443"', undefined],
  );
});

test('answer headers: a repeated name stays one line each for the client; get gives the first', () => {
  const got = new AnswerHeaders(raw('Link', '<a>; rel=next', 'link', '<b>; rel=prev', 'LINK', '<c>; rel=last'));
  assert.deepEqual(got.forClient(true), ['link', '<a>; rel=next', 'link', '<b>; rel=prev', 'link', '<c>; rel=last']);
  assert.equal(got.get('link'), '<a>; rel=next');
});

test('answer headers: names listed in Connection (over several lines) are dropped; Object.prototype names are plain headers', () => {
  const got = new AnswerHeaders(raw('Connection', 'close, X-Hop', 'X-Hop', '1', 'Connection', 'x-other', 'X-Other', '3', 'X-Keep', '2', 'constructor', 'c', '__proto__', 'p', 'toString', 't'));
  assert.deepEqual(got.forClient(true), ['x-keep', '2', 'constructor', 'c', '__proto__', 'p', 'tostring', 't']);
  assert.equal(got.get('constructor'), 'c');
  assert.equal(got.get('__proto__'), 'p');
  assert.equal(got.get('hasOwnProperty'), undefined);
});

test('answer headers: values are bytes as latin1, as undici and Node read them', () => {
  const got = new AnswerHeaders([Buffer.from('x-name'), Buffer.from([0x63, 0x61, 0x66, 0xe9])]);
  assert.equal(got.get('x-name'), 'caf\u00e9');
});

test('connection-listed names: lower-case and trimmed, over repeated values; none for keep-alive or close alone', () => {
  assert.deepEqual([...listedInConnection('close, X-Hop ,,x-other')], ['close', 'x-hop', 'x-other']);
  assert.deepEqual([...listedInConnection(['keep-alive', 'X-A'])], ['keep-alive', 'x-a']);
  assert.equal(listedInConnection('keep-alive').size, 0);
  assert.equal(listedInConnection(undefined).size, 0);
});
