import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, test } from 'node:test';
import type { AuditInput } from '../../../src/audit/audit.js';
import { clientAddress, CredentialThrottle, OTHER_ADDRESSES } from '../../../src/identity/credential-throttle.js';

function setup(options: { limit?: number; windowSeconds?: number; maxAddresses?: number } = {}) {
  let now = 1_000_000;
  const events: AuditInput[] = [];
  const throttle = new CredentialThrottle({
    limit: options.limit ?? 3,
    windowSeconds: options.windowSeconds ?? 60,
    ...(options.maxAddresses !== undefined ? { maxAddresses: options.maxAddresses } : {}),
    audit: (e) => events.push(e),
    now: () => now,
  });
  return { throttle, events, advance: (ms: number) => (now += ms), data: (i: number) => events[i]!.data as Record<string, any> };
}

describe('failed-credential throttle', () => {
  test('an address gets Retry-After once it reached the limit, until its window ends; other addresses are unaffected', () => {
    const { throttle, advance } = setup({ limit: 3, windowSeconds: 60 });
    for (let i = 0; i < 2; i++) throttle.failed('192.0.2.1', 'control', 'bad token');
    assert.equal(throttle.retryAfter('192.0.2.1'), null, 'under the limit');
    throttle.failed('192.0.2.1', 'llm', 'bad token');
    assert.equal(throttle.retryAfter('192.0.2.1'), 60);
    assert.equal(throttle.retryAfter('::ffff:192.0.2.1'), 60, 'an IPv4-mapped spelling is the same client');
    assert.equal(throttle.retryAfter('192.0.2.2'), null);
    advance(59_500);
    assert.equal(throttle.retryAfter('192.0.2.1'), 1, 'never 0: the client waits at least a second');
    advance(500);
    assert.equal(throttle.retryAfter('192.0.2.1'), null, 'the window is over');
    throttle.failed('192.0.2.1', 'control', 'bad token');
    assert.equal(throttle.retryAfter('192.0.2.1'), null, 'a new window counts from zero');
  });

  test('audit: the first failure of a window, then one summary at its end; never one event per attempt', () => {
    const { throttle, events, advance, data } = setup({ limit: 3, windowSeconds: 60 });
    throttle.failed('192.0.2.1', 'sign-in', 'unknown, revoked or expired token');
    assert.equal(events.length, 1);
    assert.deepEqual(
      { type: events[0]!.type, action: events[0]!.action, outcome: events[0]!.outcome, actor: events[0]!.actor },
      { type: 'control', action: 'auth.failed', outcome: 'refused', actor: { kind: 'system', name: 'credential-throttle' } },
    );
    assert.deepEqual(data(0), { address: '192.0.2.1', plane: 'sign-in', reason: 'unknown, revoked or expired token', windowSeconds: 60 });
    for (let i = 0; i < 199; i++) throttle.failed('192.0.2.1', i % 2 ? 'llm' : 'egress', 'bad');
    for (let i = 0; i < 50; i++) throttle.retryAfter('192.0.2.1');
    assert.equal(events.length, 1, '200 failures and 50 throttled attempts: still one event');
    advance(30_000);
    throttle.sweep();
    assert.equal(events.length, 1, 'the window is still open');
    advance(30_000);
    throttle.sweep();
    assert.equal(events.length, 2);
    assert.equal(data(1).summary, true);
    assert.deepEqual({ failures: data(1).failures, throttled: data(1).throttled, planes: data(1).planes }, { failures: 200, throttled: 50, planes: { 'sign-in': 1, egress: 100, llm: 99 } });
    assert.equal(throttle.tracked, 0, 'ended windows are forgotten');
  });

  test('a single failure has no summary; a window ended by a new failure is summarised then', () => {
    const { throttle, events, advance, data } = setup({ limit: 3, windowSeconds: 10 });
    throttle.failed('192.0.2.1', 'control', 'bad');
    advance(10_000);
    throttle.sweep();
    assert.equal(events.length, 1, 'one failure: its first event said it all');
    throttle.failed('192.0.2.1', 'control', 'bad');
    throttle.failed('192.0.2.1', 'control', 'bad');
    advance(10_000);
    throttle.failed('192.0.2.1', 'mcp', 'bad');
    assert.deepEqual(events.map((e) => (e.data as any).summary ?? false), [false, false, true, false]);
    assert.equal(data(2).failures, 2);
    assert.equal(data(3).plane, 'mcp');
  });

  test('memory is bounded: past maxAddresses, new addresses share one overflow entry, audited once, never throttled', () => {
    const { throttle, events, data } = setup({ limit: 2, maxAddresses: 3 });
    for (let a = 1; a <= 3; a++) throttle.failed(`192.0.2.${a}`, 'control', 'bad');
    for (let a = 4; a <= 100; a++) for (let i = 0; i < 3; i++) throttle.failed(`192.0.2.${a}`, 'control', 'bad');
    assert.equal(throttle.tracked, 3);
    assert.equal(events.length, 4, 'three addresses and the overflow entry');
    assert.equal(data(3).address, OTHER_ADDRESSES);
    assert.equal(throttle.retryAfter('192.0.2.50'), null, 'untracked addresses are not throttled together');
    throttle.close();
    const overflow = events.find((e) => (e.data as any).summary && (e.data as any).address === OTHER_ADDRESSES);
    assert.equal((overflow?.data as any).failures, 97 * 3);
  });

  test('close summarises the open windows', () => {
    const { throttle, events } = setup();
    throttle.failed('192.0.2.1', 'control', 'bad');
    throttle.failed('192.0.2.1', 'control', 'bad');
    throttle.close();
    assert.equal(events.length, 2);
    assert.equal(throttle.tracked, 0);
  });

  test('the client address: the socket peer, or the leftmost X-Forwarded-For behind trustProxy (as Fastify computes request.ip)', () => {
    const req = (xff?: string) => ({ headers: xff ? { 'x-forwarded-for': xff } : {}, socket: { remoteAddress: '10.0.0.9' } }) as unknown as IncomingMessage;
    assert.equal(clientAddress(req('203.0.113.7, 10.0.0.2'), true), '203.0.113.7');
    assert.equal(clientAddress(req('203.0.113.7'), false), '10.0.0.9');
    assert.equal(clientAddress(req(), true), '10.0.0.9');
  });
});
