import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  compareGlobSpecificity,
  globMatches,
  globMatchesAll,
  globSpecificity,
} from '../../../src/budgets/prices.js';

/** The obvious definition, for comparison: `*` is `.*`, everything else literal. */
function reference(pattern: string, value: string): boolean {
  const source = pattern
    .split('*')
    .map((piece) => piece.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[\\s\\S]*');
  return new RegExp(`^${source}$`).test(value);
}

describe('globMatches', () => {
  const cases: Array<[pattern: string, value: string, expected: boolean]> = [
    ['gpt-4o', 'gpt-4o', true],
    ['gpt-4o', 'gpt-4o-mini', false],
    ['gpt-4o*', 'gpt-4o', true], // `*` matches nothing too
    ['gpt-4o*', 'gpt-4o-2024-08-06', true],
    ['*', '', true],
    ['*', 'anything at all', true],
    ['', '', true],
    ['', 'x', false],
    ['claude-*', 'claude-sonnet-4-5', true],
    ['claude-*', 'Claude-sonnet-4-5', false], // case-sensitive
    ['*-sonnet-*', 'claude-3-7-sonnet-20250219', true],
    ['*anthropic.claude-haiku-4-5*', 'us.anthropic.claude-haiku-4-5-20251001-v1:0', true],
    ['*anthropic.claude-haiku-4-5*', 'arn:aws:bedrock:eu-west-1::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0', true],
    ['a*b*c', 'abc', true],
    ['a*b*c', 'aXbYc', true],
    ['a*b*c', 'acb', false],
    ['a*a', 'a', false], // prefix and suffix may not overlap
    ['a*a', 'aa', true],
    ['ab*ba', 'aba', false],
    ['a**b', 'ab', true],
    ['*x*', 'abc', false],
    // Regex metacharacters are literal.
    ['gpt-4.1', 'gpt-401', false],
    ['gpt-4.1', 'gpt-4.1', true],
    ['a+b', 'aab', false],
    ['(a|b)', '(a|b)', true],
    ['model?', 'model', false],
    ['[abc]', 'a', false],
    ['v1:0', 'v1:0', true],
  ];
  for (const [pattern, value, expected] of cases) {
    test(`${JSON.stringify(pattern)} ${expected ? 'matches' : 'does not match'} ${JSON.stringify(value)}`, () => {
      assert.equal(globMatches(pattern, value), expected);
    });
  }

  test('agrees with the regular-expression definition on random patterns and values', () => {
    const alphabet = fc.constantFrom('a', 'b', '-', '.');
    const pattern = fc.array(fc.oneof(alphabet, fc.constant('*')), { maxLength: 8 }).map((cs) => cs.join(''));
    const value = fc.array(alphabet, { maxLength: 12 }).map((cs) => cs.join(''));
    fc.assert(
      fc.property(pattern, value, (p, v) => globMatches(p, v) === reference(p, v)),
      { numRuns: 5000 },
    );
  });

  test('a value built from the pattern always matches it', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 5 }).map((s) => s.replaceAll('*', '')), { minLength: 1, maxLength: 6 }), fc.array(fc.string({ maxLength: 4 }), { maxLength: 6 }), (pieces, fills) => {
        const pattern = pieces.join('*');
        const value = pieces.map((piece, i) => (i === 0 ? piece : (fills[i - 1] ?? '') + piece)).join('');
        return globMatches(pattern, value);
      }),
    );
  });

  test('stays linear on inputs that make backtracking matchers explode', () => {
    const started = performance.now();
    const value = 'a'.repeat(200_000);
    assert.equal(globMatches(`${'*a'.repeat(100)}*b`, value), false);
    assert.equal(globMatches(`${'a*'.repeat(100)}b`, value), false);
    assert.equal(globMatches(`*${'a'.repeat(100)}*${'a'.repeat(100)}*`, value), true);
    // The regular-expression equivalent of the first pattern would not finish.
    assert.ok(performance.now() - started < 1000, `took ${performance.now() - started} ms`);
  });
});

describe('glob specificity', () => {
  test('counts the literal part and the runs of `*`', () => {
    assert.deepEqual(globSpecificity('claude-*'), { literalLength: 7, wildcards: 1 });
    assert.deepEqual(globSpecificity('*'), { literalLength: 0, wildcards: 1 });
    assert.deepEqual(globSpecificity('**'), { literalLength: 0, wildcards: 1 });
    assert.deepEqual(globSpecificity('*a**b*'), { literalLength: 2, wildcards: 3 });
    assert.deepEqual(globSpecificity('gpt-4o'), { literalLength: 6, wildcards: 0 });
  });

  test('prefers the longer literal part, then fewer wildcards', () => {
    const ordered = ['claude-sonnet-4-5', 'claude-sonnet-*', '*claude-sonnet*', 'claude-*', '', '*'];
    const shuffled = [...ordered].reverse();
    assert.deepEqual(shuffled.sort(compareGlobSpecificity), ordered);
    assert.ok(compareGlobSpecificity('gpt-4o', 'gpt-4o*') < 0);
    assert.ok(compareGlobSpecificity('*gpt-4o*', 'gpt-4o*') > 0);
    assert.equal(compareGlobSpecificity('claude-*', '*-sonnet'), 0);
    assert.equal(compareGlobSpecificity('a*', 'a**'), 0);
  });

  test('is a consistent order: antisymmetric and transitive', () => {
    const glob = fc.array(fc.constantFrom('a', 'b', '*'), { maxLength: 6 }).map((cs) => cs.join(''));
    fc.assert(
      fc.property(glob, glob, glob, (a, b, c) => {
        const sign = (n: number): number => Math.sign(n) + 0;
        if (sign(compareGlobSpecificity(a, b)) !== -sign(compareGlobSpecificity(b, a))) return false;
        if (compareGlobSpecificity(a, b) <= 0 && compareGlobSpecificity(b, c) <= 0) return compareGlobSpecificity(a, c) <= 0;
        return true;
      }),
    );
  });

  test('only patterns made of `*` match every model', () => {
    assert.equal(globMatchesAll('*'), true);
    assert.equal(globMatchesAll('***'), true);
    assert.equal(globMatchesAll(''), false);
    assert.equal(globMatchesAll('*-*'), false);
    assert.equal(globMatchesAll('claude-*'), false);
  });
});
