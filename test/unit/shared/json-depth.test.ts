import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MAX_JSON_DEPTH, nestedTooDeep } from '../../../src/shared/json-depth.js';

/** Nesting depth of a parsed JSON value, recursively (arrays and objects; scalars are 0). */
function depthOf(v: unknown): number {
  if (Array.isArray(v)) return 1 + Math.max(0, ...v.map(depthOf));
  if (v !== null && typeof v === 'object') return 1 + Math.max(0, ...Object.values(v).map(depthOf));
  return 0;
}

test('agrees with the recursive depth on any JSON value and limit', () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 6 }), fc.integer({ min: 0, max: 7 }), (v, max) => {
      assert.equal(nestedTooDeep(v, max), depthOf(v) > max, JSON.stringify(v));
    }),
    { numRuns: 500 },
  );
});

test('brackets inside strings do not count', () => {
  assert.equal(nestedTooDeep(JSON.parse(JSON.stringify({ s: '[[[[{{{{', t: 'a\\"[[[' })), 1), false);
});

test(`the limit is ${MAX_JSON_DEPTH}: at it passes, one more does not; 200,000 levels are no problem`, () => {
  const nested = (n: number) => JSON.parse('['.repeat(n) + ']'.repeat(n)) as unknown;
  assert.equal(nestedTooDeep(nested(MAX_JSON_DEPTH)), false);
  assert.equal(nestedTooDeep(nested(MAX_JSON_DEPTH + 1)), true);
  assert.equal(nestedTooDeep(nested(200_000)), true);
  assert.equal(nestedTooDeep(JSON.parse(`{"a":${'{"b":'.repeat(200_000)}1${'}'.repeat(200_000)}}`)), true);
  assert.equal(nestedTooDeep('scalar'), false);
});
