/**
 * CallContexts (call-context.ts), the planes' map of each call's context from its decision to its end: the end gives
 * the context once and forgets it. Why it forgets rather than leave that to its WeakMap: on this Node, V8's
 * young-generation collector keeps every entry of a WeakMap that lives in the old generation, so entries whose keys
 * are already garbage survive each young collection into the old generation and only a full collection frees them.
 * Measured in a child process with the same allocations: entries left in a WeakMap against calls ended through
 * CallContexts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { CallContexts } from '../../../src/governance/call-context.js';

const CALL_CONTEXT = new URL('../../../src/governance/call-context.ts', import.meta.url).href;

const SCRIPT = `
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { CallContexts } from '${CALL_CONTEXT}';
let majors = 0;
new PerformanceObserver((l) => { for (const e of l.getEntries()) if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++; }).observe({ entryTypes: ['gc'] });
const left = new WeakMap();
const contexts = new CallContexts();
const endEach = process.argv[1] === 'delete';
let i = 0;
function call() {
  const c = { id: i++, body: new Array(200).fill(i) };
  const ctx = { call: c, facts: new Array(300).fill('x') };
  if (endEach) {
    contexts.begin(c, ctx);
    contexts.end(c);
  } else left.set(c, ctx);
}
(function turn() {
  for (let k = 0; k < 50; k++) call();
  if (i < 200000) setImmediate(turn);
  else setTimeout(() => process.stdout.write(String(majors)), 50);
})();`;

function fullCollections(mode: 'leave' | 'delete'): number {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SCRIPT, mode], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  assert.equal(r.status, 0, r.stderr);
  return Number(r.stdout);
}

describe('CallContexts and the young collector', () => {
  test("a call's context is given back once at its end, and not again", () => {
    const contexts = new CallContexts<object, { n: number }>();
    const call = {};
    const ctx = { n: 1 };
    assert.equal(contexts.end(call), undefined, 'not begun');
    contexts.begin(call, ctx);
    assert.equal(contexts.end(call), ctx);
    assert.equal(contexts.end(call), undefined, 'forgotten at its end');
  });

  test('entries left to a long-lived WeakMap reach the old generation; calls ended through CallContexts do not', () => {
    const left = fullCollections('leave');
    const deleted = fullCollections('delete');
    assert.ok(left >= 5 && left > deleted * 3, `left in the map: ${left} full collections; deleted at the end: ${deleted}`);
  });
});
