import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { jsonTooDeep, MAX_JSON_DEPTH } from '../../../src/http/json-depth.js';

/** Nesting depth of a parsed JSON value, as the scanner counts it (arrays and objects). */
function depthOf(v: unknown): number {
  if (Array.isArray(v)) return 1 + Math.max(0, ...v.map(depthOf));
  if (v !== null && typeof v === 'object') return 1 + Math.max(0, ...Object.values(v).map(depthOf));
  return 0;
}

test('agrees with the parsed depth on any JSON, as a string and as UTF-8 bytes', () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 6 }), fc.integer({ min: 0, max: 7 }), (v, max) => {
      const text = JSON.stringify(v);
      const expected = depthOf(v) > max;
      assert.equal(jsonTooDeep(text, max), expected, text);
      assert.equal(jsonTooDeep(Buffer.from(text), max), expected, text);
    }),
    { numRuns: 500 },
  );
});

test('brackets, quotes and backslashes inside strings do not count', () => {
  const brackets = JSON.stringify({ s: '[[[[{{{{', t: 'a\\"[[[', u: '\\\\', v: '"]]]]' });
  assert.equal(jsonTooDeep(brackets, 1), false);
  assert.equal(jsonTooDeep(`{"k":"\\\\"}`, 1), false);
  assert.equal(jsonTooDeep(`{"k":"é[[["}`, 1), false);
  assert.equal(jsonTooDeep(Buffer.from(`{"k":"é[[[","l":[[1]]}`), 2), true);
});

test(`the limit is ${MAX_JSON_DEPTH}: at it passes, one more does not; 200,000 levels take one pass`, () => {
  const nested = (n: number) => '['.repeat(n) + ']'.repeat(n);
  assert.equal(jsonTooDeep(nested(MAX_JSON_DEPTH)), false);
  assert.equal(jsonTooDeep(nested(MAX_JSON_DEPTH + 1)), true);
  assert.equal(jsonTooDeep(Buffer.from(nested(200_000))), true);
  assert.equal(jsonTooDeep('{"unterminated'), false);
});
