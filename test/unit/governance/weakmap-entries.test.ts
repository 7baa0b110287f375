/**
 * Why the planes delete each call's context from their WeakMap at the call's end (call-context.ts, newCallContext):
 * on this Node, V8's young-generation collector keeps every entry of a WeakMap that lives in the old generation, so
 * entries whose keys are already garbage survive each young collection into the old generation and only a full
 * collection frees them. Measured in a child process with the same allocations, entries left against entries deleted.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

const SCRIPT = `
const { PerformanceObserver, constants } = require('node:perf_hooks');
let majors = 0;
new PerformanceObserver((l) => { for (const e of l.getEntries()) if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++; }).observe({ entryTypes: ['gc'] });
const contexts = new WeakMap();
const deleteAtEnd = process.argv[1] === 'delete';
let i = 0;
function call() {
  const c = { id: i++, body: new Array(200).fill(i) };
  contexts.set(c, { call: c, facts: new Array(300).fill('x') });
  if (deleteAtEnd) contexts.delete(c);
}
(function turn() {
  for (let k = 0; k < 50; k++) call();
  if (i < 200000) setImmediate(turn);
  else setTimeout(() => process.stdout.write(String(majors)), 50);
})();`;

function fullCollections(mode: 'leave' | 'delete'): number {
  const r = spawnSync(process.execPath, ['-e', SCRIPT, mode], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  assert.equal(r.status, 0, r.stderr);
  return Number(r.stdout);
}

describe('WeakMap entries and the young collector', () => {
  test('entries left to a long-lived WeakMap reach the old generation; entries deleted at the end do not', () => {
    const left = fullCollections('leave');
    const deleted = fullCollections('delete');
    assert.ok(left >= 5 && left > deleted * 3, `left in the map: ${left} full collections; deleted at the end: ${deleted}`);
  });
});
