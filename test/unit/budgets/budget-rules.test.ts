import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  enforcedRules,
  matchingRule,
  patternCovers,
  periodKey,
  scopeCovers,
  scopeSpecificity,
  validateBudgetRule,
  type BudgetPeriod,
  type BudgetRule,
} from '../../../src/budgets/budget-rules.js';

let nextId = 0;
function rule(scope: string, pattern: string, period: BudgetPeriod, limitUsd = 10, id?: string): BudgetRule {
  const ruleId = id ?? `r${++nextId}`;
  return { id: ruleId, name: `${scope} ${pattern} ${period}`, scope, pattern, limitUsd, period };
}

const ids = (rules: BudgetRule[]): string[] => rules.map((r) => r.id);

describe('scopes', () => {
  test('an identity is more specific than a namespace, which is more specific than everyone', () => {
    assert.equal(scopeSpecificity('eng/alice'), 2);
    assert.equal(scopeSpecificity('eng'), 1);
    assert.equal(scopeSpecificity('*'), 0);
  });

  const cases: Array<[scope: string, identity: string, covers: boolean]> = [
    ['*', 'eng/alice', true],
    ['*', 'not an id', true],
    ['eng', 'eng/alice', true],
    ['eng', 'eng/build-bot.v2', true],
    ['eng', 'engineering/alice', false],
    ['eng', 'eng-ops/alice', false],
    ['eng', 'ops/alice', false],
    ['eng', 'eng', false],
    ['eng', 'eng/Alice', false], // not a valid id: only `*` covers it
    ['eng/alice', 'eng/alice', true],
    ['eng/alice', 'eng/alice2', false],
    ['eng/alice', 'ops/alice', false],
    ['ops/alice', 'eng/alice', false],
  ];
  for (const [scope, identity, covers] of cases) {
    test(`scope ${JSON.stringify(scope)} ${covers ? 'covers' : 'does not cover'} ${JSON.stringify(identity)}`, () => {
      assert.equal(scopeCovers(scope, identity), covers);
    });
  }

  test('a call or top-up without a model is covered only by patterns that cover every model', () => {
    assert.equal(patternCovers('*', null), true);
    assert.equal(patternCovers('**', undefined), true);
    assert.equal(patternCovers('claude-*', null), false);
    assert.equal(patternCovers('*-mini', undefined), false);
    assert.equal(patternCovers('claude-*', 'claude-haiku-4-5'), true);
    assert.equal(patternCovers('claude-*', 'gpt-4o'), false);
  });
});

describe('enforcedRules', () => {
  const alice = { identityId: 'eng/alice', model: 'claude-sonnet-4-5' };

  test('a person\'s own rule replaces the namespace\'s and everyone\'s rule of that period', () => {
    const everyone = rule('*', '*', 'day', 5);
    const eng = rule('eng', '*', 'day', 20);
    const own = rule('eng/alice', '*', 'day', 100);
    assert.deepEqual(enforcedRules([everyone, eng, own], alice), [own]);
  });

  test('a namespace rule replaces everyone\'s rule of that period', () => {
    const everyone = rule('*', '*', 'day', 5);
    const eng = rule('eng', '*', 'day', 20);
    assert.deepEqual(enforcedRules([everyone, eng], alice), [eng]);
  });

  test('each period is decided on its own', () => {
    const everyoneMonth = rule('*', '*', 'month', 500);
    const engSession = rule('eng', '*', 'session', 2);
    const ownDay = rule('eng/alice', '*', 'day', 100);
    const engDay = rule('eng', '*', 'day', 20);
    assert.deepEqual(ids(enforcedRules([everyoneMonth, engSession, ownDay, engDay], alice)), ids([everyoneMonth, engSession, ownDay]));
  });

  test('a more specific rule whose pattern does not cover the model leaves the broader rule binding', () => {
    const eng = rule('eng', '*', 'day', 20);
    const ownGpt = rule('eng/alice', 'gpt-*', 'day', 100);
    assert.deepEqual(enforcedRules([eng, ownGpt], alice), [eng]);
    assert.deepEqual(enforcedRules([eng, ownGpt], { identityId: 'eng/alice', model: 'gpt-4o' }), [ownGpt]);
  });

  test('several rules of the most specific scope with different patterns all bind', () => {
    const all = rule('eng/alice', '*', 'day', 100);
    const claude = rule('eng/alice', 'claude-*', 'day', 30);
    const sonnet = rule('eng/alice', '*sonnet*', 'day', 10);
    const eng = rule('eng', 'claude-*', 'day', 1);
    assert.deepEqual(enforcedRules([all, eng, claude, sonnet], alice), [all, claude, sonnet]);
  });

  test('duplicates at the same level all bind (the stricter one stops the call first)', () => {
    const a = rule('eng', '*', 'day', 20);
    const b = rule('eng', '*', 'day', 5);
    assert.deepEqual(enforcedRules([a, b], alice), [a, b]);
  });

  test('rules of another identity or namespace never bind', () => {
    const bob = rule('eng/bob', '*', 'day', 1);
    const ops = rule('ops', '*', 'day', 1);
    const opsAlice = rule('ops/alice', '*', 'day', 1);
    assert.deepEqual(enforcedRules([bob, ops, opsAlice], alice), []);
  });

  test('with no covering rule, nothing binds', () => {
    assert.deepEqual(enforcedRules([], alice), []);
    assert.deepEqual(enforcedRules([rule('*', 'gpt-*', 'day')], alice), []);
  });

  test('a call without a model is bound only by every-model rules', () => {
    const ownClaude = rule('eng/alice', 'claude-*', 'day', 100);
    const eng = rule('eng', '*', 'day', 20);
    assert.deepEqual(enforcedRules([ownClaude, eng], { identityId: 'eng/alice', model: null }), [eng]);
  });

  test('keeps the order the rules were given in', () => {
    const rules = [rule('*', '*', 'month'), rule('eng', '*', 'session'), rule('eng/alice', 'claude-*', 'day'), rule('eng/alice', '*', 'day')];
    assert.deepEqual(enforcedRules(rules, alice), rules);
    assert.deepEqual(enforcedRules([...rules].reverse(), alice), [...rules].reverse());
  });

  test('keeps the caller\'s own rule type', () => {
    const rows = [{ ...rule('eng', '*', 'day'), version: 3 }];
    const bound = enforcedRules(rows, alice);
    assert.equal(bound[0]?.version, 3);
  });
});

describe('matchingRule (the rule a top-up raises)', () => {
  const alice = { identityId: 'eng/alice', model: 'claude-sonnet-4-5' };

  test('the most specific scope covering the requester wins', () => {
    const everyone = rule('*', '*', 'session');
    const eng = rule('eng', '*', 'session');
    const own = rule('eng/alice', '*', 'session');
    assert.deepEqual(matchingRule([everyone, eng, own], alice), { rule: own });
    assert.deepEqual(matchingRule([everyone, eng], alice), { rule: eng });
    assert.deepEqual(matchingRule([everyone], alice), { rule: everyone });
  });

  test('scope comes before pattern: a person\'s `*` rule beats the namespace\'s exact-model rule', () => {
    const engExact = rule('eng', 'claude-sonnet-4-5', 'session');
    const own = rule('eng/alice', '*', 'session');
    assert.deepEqual(matchingRule([engExact, own], alice), { rule: own });
  });

  test('missing when no rule covers both the requester and the model', () => {
    assert.deepEqual(matchingRule([], alice), { problem: 'missing', candidates: [] });
    assert.deepEqual(matchingRule([rule('eng/bob', '*', 'session'), rule('eng', 'gpt-*', 'session')], alice), {
      problem: 'missing',
      candidates: [],
    });
  });

  test('ambiguous when two rules have the same scope and pattern', () => {
    const a = rule('eng', 'claude-*', 'session');
    const b = rule('eng', 'claude-*', 'session');
    const broader = rule('*', '*', 'session');
    assert.deepEqual(matchingRule([a, broader, b], alice), { problem: 'ambiguous', candidates: [a, b] });
  });

  test('at the same scope, the more specific pattern wins', () => {
    const all = rule('eng/alice', '*', 'session');
    const claude = rule('eng/alice', 'claude-*', 'session');
    const sonnet = rule('eng/alice', 'claude-sonnet-*', 'session');
    assert.deepEqual(matchingRule([all, claude, sonnet], alice), { rule: sonnet });
    assert.deepEqual(matchingRule([all, claude], alice), { rule: claude });
    // Fewer wildcards break a tie in the literal part.
    const prefix = rule('eng/alice', 'claude-sonnet-4-5*', 'session');
    const infix = rule('eng/alice', '*claude-sonnet-4-5*', 'session');
    assert.deepEqual(matchingRule([infix, prefix], alice), { rule: prefix });
  });

  test('ambiguous when different patterns at the same scope are equally specific', () => {
    const a = rule('eng', 'claude-*', 'session');
    const b = rule('eng', '*net-4-5', 'session');
    assert.deepEqual(matchingRule([a, b], alice), { problem: 'ambiguous', candidates: [a, b] });
  });

  test('patterns of equal meaning are the same pattern: `claude-*` and `claude-**` are ambiguous', () => {
    const a = rule('eng', 'claude-*', 'session');
    const b = rule('eng', 'claude-**', 'session');
    assert.deepEqual(matchingRule([a, b], alice), { problem: 'ambiguous', candidates: [a, b] });
  });

  test('a top-up without a model matches only a rule with pattern `*`', () => {
    const ownClaude = rule('eng/alice', 'claude-*', 'session');
    const eng = rule('eng', '*', 'session');
    assert.deepEqual(matchingRule([ownClaude, eng], { identityId: 'eng/alice' }), { rule: eng });
    assert.deepEqual(matchingRule([ownClaude, eng], { identityId: 'eng/alice', model: null }), { rule: eng });
    assert.deepEqual(matchingRule([ownClaude], { identityId: 'eng/alice' }), { problem: 'missing', candidates: [] });
  });

  test('without a period, rules of every period count, as docs/api.md words it: same scope and pattern is ambiguous', () => {
    const session = rule('eng/alice', '*', 'session');
    const day = rule('eng/alice', '*', 'day');
    assert.deepEqual(matchingRule([session, day], alice), { problem: 'ambiguous', candidates: [session, day] });
  });

  test('with a period, only rules of that period count', () => {
    const session = rule('eng', '*', 'session');
    const ownDay = rule('eng/alice', '*', 'day');
    assert.deepEqual(matchingRule([session, ownDay], { ...alice, period: 'session' }), { rule: session });
    assert.deepEqual(matchingRule([session, ownDay], { ...alice, period: 'day' }), { rule: ownDay });
    assert.deepEqual(matchingRule([session, ownDay], { ...alice, period: 'month' }), { problem: 'missing', candidates: [] });
  });
});

describe('periodKey', () => {
  const at = new Date('2026-11-21T05:53:00Z');

  test('a session rule counts per session', () => {
    assert.equal(periodKey('session', { sessionId: 'sess-42', at }), 'session:sess-42');
  });

  test('day and month are UTC', () => {
    assert.equal(periodKey('day', { sessionId: null, at }), 'day:2026-11-21');
    assert.equal(periodKey('month', { sessionId: null, at }), 'month:2026-11');
    // 23:30 in New York on 30 November is already 1 December in UTC.
    const late = new Date('2026-11-30T23:30:00-05:00');
    assert.equal(periodKey('day', { sessionId: 's', at: late }), 'day:2026-12-01');
    assert.equal(periodKey('month', { sessionId: 's', at: late }), 'month:2026-12');
  });

  test('pads months, days and years', () => {
    assert.equal(periodKey('day', { sessionId: null, at: new Date('2028-02-29T00:00:00Z') }), 'day:2028-02-29');
    assert.equal(periodKey('day', { sessionId: null, at: new Date('2027-01-01T00:00:00Z') }), 'day:2027-01-01');
    assert.equal(periodKey('month', { sessionId: null, at: new Date(Date.UTC(999, 0, 5)) }), 'month:0999-01');
  });

  test('the last millisecond of a day and the first of the next are different windows', () => {
    assert.equal(periodKey('day', { sessionId: null, at: new Date('2026-12-31T23:59:59.999Z') }), 'day:2026-12-31');
    assert.equal(periodKey('day', { sessionId: null, at: new Date('2027-01-01T00:00:00.000Z') }), 'day:2027-01-01');
  });

  test('a session rule for a call without a session is a programming error', () => {
    assert.throws(() => periodKey('session', { sessionId: null, at }), RangeError);
    assert.throws(() => periodKey('session', { sessionId: '', at }), RangeError);
  });

  test('an invalid date is a programming error', () => {
    assert.throws(() => periodKey('day', { sessionId: null, at: new Date('nope') }), RangeError);
  });
});

describe('validateBudgetRule', () => {
  const valid = { name: 'Claude per session', scope: 'eng', pattern: 'claude-*', limitUsd: 25, period: 'session' };

  test('accepts a rule and returns only its five fields', () => {
    assert.deepEqual(validateBudgetRule({ ...valid, id: 'client-chosen', extra: true }), { ok: true, value: valid });
  });

  const accepted: Array<[string, Record<string, unknown>]> = [
    ['scope "*"', { scope: '*' }],
    ['an identity scope', { scope: 'eng/alice' }],
    ['an agent identity scope', { scope: 'eng/build-bot.v2' }],
    ['a 63-character namespace', { scope: `a${'b'.repeat(61)}c` }],
    ['a pattern "*"', { pattern: '*' }],
    ['a Bedrock id pattern', { pattern: '*anthropic.claude-sonnet-4-5-20250929-v1:0' }],
    ['a 200-character pattern', { pattern: 'x'.repeat(200) }],
    ['a limit of 0 (no spending)', { limitUsd: 0 }],
    ['the highest limit', { limitUsd: 1e9 }],
    ['a fractional limit', { limitUsd: 0.05 }],
    ['a 100-character name counted in characters', { name: '€'.repeat(99) + '🙂' }],
    ['period "day"', { period: 'day' }],
    ['period "month"', { period: 'month' }],
  ];
  for (const [what, change] of accepted) {
    test(`accepts ${what}`, () => {
      const result = validateBudgetRule({ ...valid, ...change });
      assert.equal(result.ok, true, JSON.stringify(result));
    });
  }

  test('stores a limit of -0 as 0', () => {
    const result = validateBudgetRule({ ...valid, limitUsd: -0 });
    assert.ok(result.ok);
    assert.ok(Object.is(result.value.limitUsd, 0));
  });

  const refused: Array<[string, Record<string, unknown>, string]> = [
    ['an empty name', { name: '' }, 'name'],
    ['a blank name', { name: '   ' }, 'name'],
    ['a 101-character name', { name: 'n'.repeat(101) }, 'name'],
    ['a missing name', { name: undefined }, 'name'],
    ['a name that is not a string', { name: 42 }, 'name'],
    ['an empty scope', { scope: '' }, 'scope'],
    ['an upper-case namespace', { scope: 'Eng' }, 'scope'],
    ['a namespace ending in "-"', { scope: 'eng-' }, 'scope'],
    ['a namespace starting with "-"', { scope: '-eng' }, 'scope'],
    ['a 64-character namespace', { scope: 'a'.repeat(64) }, 'scope'],
    ['a namespace with "_"', { scope: 'eng_ops' }, 'scope'],
    ['an identity without a name', { scope: 'eng/' }, 'scope'],
    ['an id with two slashes', { scope: 'eng/alice/x' }, 'scope'],
    ['a scope glob', { scope: 'eng*' }, 'scope'],
    ['"**" as scope', { scope: '**' }, 'scope'],
    ['a scope that is not a string', { scope: ['eng'] }, 'scope'],
    ['an empty pattern', { pattern: '' }, 'pattern'],
    ['a pattern with a space', { pattern: 'claude *' }, 'pattern'],
    ['a pattern with a tab', { pattern: 'claude\t*' }, 'pattern'],
    ['a pattern with a no-break space', { pattern: 'claude\u00a0*' }, 'pattern'],
    ['a 201-character pattern', { pattern: 'x'.repeat(201) }, 'pattern'],
    ['a pattern that is not a string', { pattern: null }, 'pattern'],
    ['a negative limit', { limitUsd: -1 }, 'limitUsd'],
    ['a limit above 1e9', { limitUsd: 1e9 + 1 }, 'limitUsd'],
    ['a NaN limit', { limitUsd: Number.NaN }, 'limitUsd'],
    ['an infinite limit', { limitUsd: Number.POSITIVE_INFINITY }, 'limitUsd'],
    ['a limit as a string', { limitUsd: '25' }, 'limitUsd'],
    ['a missing limit', { limitUsd: undefined }, 'limitUsd'],
    ['period "week"', { period: 'week' }, 'period'],
    ['period "Day"', { period: 'Day' }, 'period'],
    ['a missing period', { period: undefined }, 'period'],
  ];
  for (const [what, change, field] of refused) {
    test(`refuses ${what}, naming ${field}`, () => {
      const result = validateBudgetRule({ ...valid, ...change });
      assert.equal(result.ok, false);
      assert.ok(!result.ok && result.field === field, JSON.stringify(result));
      assert.ok(!result.ok && result.message.length > 0);
    });
  }

  test('names the first bad field in the order name, scope, pattern, limitUsd, period', () => {
    const result = validateBudgetRule({ name: 'ok', scope: 'BAD', pattern: '', limitUsd: -1, period: 'x' });
    assert.deepEqual(result.ok ? null : result.field, 'scope');
  });

  test('refuses what is not an object', () => {
    for (const input of [null, undefined, 'rule', 42, [valid]]) {
      assert.equal(validateBudgetRule(input).ok, false);
    }
  });
});
