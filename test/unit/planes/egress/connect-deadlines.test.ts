import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConnectDeadlines } from '../../../../src/planes/egress/connect-deadlines.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a deadline fires once, no earlier than asked and within the sweep resolution after', async () => {
  const deadlines = new ConnectDeadlines(20);
  const fired: number[] = [];
  const started = performance.now();
  deadlines.add({}, 60, () => fired.push(performance.now() - started));
  await sleep(30);
  // A busy machine may wake this test only after the deadline: then it may have fired, never before 60 ms.
  if (performance.now() - started < 60) assert.deepEqual(fired, []);
  await sleep(150);
  assert.equal(fired.length, 1);
  assert.ok(fired[0]! >= 60, `fired after ${fired[0]} ms`);
  assert.equal(deadlines.size, 0);
});

test('a cancelled deadline never fires, and the sweep stops when nothing waits', async () => {
  const deadlines = new ConnectDeadlines(10);
  const key = {};
  let fired = 0;
  deadlines.add(key, 30, () => fired++);
  deadlines.add({}, 30, () => fired++);
  deadlines.cancel(key);
  await sleep(100);
  assert.equal(fired, 1);
  assert.equal((deadlines as unknown as { sweep: unknown }).sweep, null, 'no interval left running');
});

test('close drops every deadline', async () => {
  const deadlines = new ConnectDeadlines(10);
  let fired = 0;
  deadlines.add({}, 20, () => fired++);
  deadlines.close();
  await sleep(60);
  assert.equal(fired, 0);
});
