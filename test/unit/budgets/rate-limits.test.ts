import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bindingRateLimits, validateRateLimit, type RateLimitRule } from '../../../src/budgets/rate-limits.js';

const rule = (id: string, scope: string, upstream = '*', pattern = '*'): RateLimitRule => ({ id, name: id, scope, pattern, upstream, requestsPerMinute: 1 });

describe('rate limits: which bind', () => {
  const rules = [rule('all', '*'), rule('eng', 'eng'), rule('eng-openai', 'eng', 'openai'), rule('alice', 'eng/alice', '*', 'claude-*'), rule('ops', 'ops')];

  test('the most specific scope binds, and at it a rule naming the upstream over one for every upstream', () => {
    const ids = (identityId: string, model: string, upstream: string) => bindingRateLimits(rules, { identityId, model, upstream }).map((r) => r.id);
    assert.deepEqual(ids('eng/bob', 'gpt-4o', 'openai'), ['eng-openai']);
    assert.deepEqual(ids('eng/bob', 'gpt-4o', 'vllm'), ['eng']);
    assert.deepEqual(ids('eng/alice', 'claude-sonnet-4-5', 'anthropic'), ['alice']);
    assert.deepEqual(ids('eng/alice', 'gpt-4o', 'openai'), ['eng-openai'], "alice's rule covers Claude only");
    assert.deepEqual(ids('qa/carol', 'gpt-4o', 'openai'), ['all']);
    assert.deepEqual(bindingRateLimits([], { identityId: 'eng/bob', model: 'x', upstream: 'openai' }), []);
  });

  test('a call whose model is unknown is bound only by every-model rules', () => {
    assert.deepEqual(bindingRateLimits([rule('claude', '*', '*', 'claude-*'), rule('any', '*')], { identityId: 'eng/bob', model: null, upstream: 'x' }).map((r) => r.id), ['any']);
  });
});

describe('rate limits: validation names the field', () => {
  const ok = { name: 'n', scope: 'eng', pattern: '*', requestsPerMinute: 5 };
  test('a good rule, upstream defaulting to *', () => {
    assert.deepEqual(validateRateLimit(ok), { ok: true, value: { ...ok, upstream: '*' } });
    assert.deepEqual(validateRateLimit({ ...ok, requestsPerMinute: undefined, tokensPerMinute: 1000, upstream: 'azure-eu' }), { ok: true, value: { name: 'n', scope: 'eng', pattern: '*', upstream: 'azure-eu', tokensPerMinute: 1000 } });
  });
  const bad: Array<[string, unknown, string]> = [
    ['not an object', [], 'name'],
    ['blank name', { ...ok, name: '  ' }, 'name'],
    ['bad scope', { ...ok, scope: 'Eng Team' }, 'scope'],
    ['pattern with a space', { ...ok, pattern: 'gpt 4' }, 'pattern'],
    ['bad upstream', { ...ok, upstream: 'Azure EU' }, 'upstream'],
    ['fractional requests', { ...ok, requestsPerMinute: 1.5 }, 'requestsPerMinute'],
    ['negative tokens', { ...ok, tokensPerMinute: -1 }, 'tokensPerMinute'],
    ['no limit at all', { name: 'n', scope: '*', pattern: '*' }, 'requestsPerMinute'],
  ];
  for (const [what, input, field] of bad) {
    test(`${what}: ${field}`, () => {
      const r = validateRateLimit(input);
      assert.equal(r.ok, false);
      assert.equal(!r.ok && r.field, field);
    });
  }
});
