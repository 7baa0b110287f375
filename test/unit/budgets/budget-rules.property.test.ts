import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  BUDGET_PERIODS,
  enforcedRules,
  matchingRule,
  patternCovers,
  scopeCovers,
  scopeSpecificity,
  validateBudgetRule,
  type BudgetRule,
} from '../../../src/budgets/budget-rules.js';
import { compareGlobSpecificity } from '../../../src/budgets/prices.js';

const identities = ['eng/alice', 'eng/bob', 'ops/alice', 'ops/carol'];
const models = ['claude-sonnet-4-5', 'claude-haiku-4-5', 'gpt-4o', 'gpt-4o-mini'];
const scopes = ['*', 'eng', 'ops', ...identities];
const patterns = ['*', '**', 'claude-*', 'gpt-*', 'gpt-4o*', '*-4-5', 'claude-sonnet-4-5', '*mini', 'gpt-4o'];

const ruleArb: fc.Arbitrary<BudgetRule> = fc.record({
  id: fc.uuid(),
  name: fc.constant('rule'),
  scope: fc.constantFrom(...scopes),
  pattern: fc.constantFrom(...patterns),
  limitUsd: fc.integer({ min: 0, max: 100 }),
  period: fc.constantFrom(...BUDGET_PERIODS),
});
const rulesArb = fc.array(ruleArb, { maxLength: 12 });
const callArb = fc.record({
  identityId: fc.constantFrom(...identities),
  model: fc.option(fc.constantFrom(...models), { nil: null, freq: 6 }),
});

function covers(rule: BudgetRule, call: { identityId: string; model: string | null }): boolean {
  return scopeCovers(rule.scope, call.identityId) && patternCovers(rule.pattern, call.model);
}

describe('enforcedRules, for any rules and any call', () => {
  test('never returns a rule that does not cover the call', () => {
    fc.assert(fc.property(rulesArb, callArb, (rules, call) => enforcedRules(rules, call).every((r) => covers(r, call))));
  });

  test('returns, per period, exactly the covering rules of the most specific scope', () => {
    fc.assert(
      fc.property(rulesArb, callArb, (rules, call) => {
        const bound = new Set(enforcedRules(rules, call));
        for (const period of BUDGET_PERIODS) {
          const covering = rules.filter((r) => r.period === period && covers(r, call));
          const top = Math.max(-1, ...covering.map((r) => scopeSpecificity(r.scope)));
          for (const r of covering) assert.equal(bound.has(r), scopeSpecificity(r.scope) === top);
        }
      }),
    );
  });

  test('binds something in every period that has a covering rule', () => {
    fc.assert(
      fc.property(rulesArb, callArb, (rules, call) => {
        const bound = enforcedRules(rules, call);
        return BUDGET_PERIODS.every((p) => rules.some((r) => r.period === p && covers(r, call)) === bound.some((r) => r.period === p));
      }),
    );
  });

  test('a covering rule for the identity itself takes every broader rule of its period out', () => {
    fc.assert(
      fc.property(rulesArb, callArb, fc.constantFrom(...BUDGET_PERIODS), (rules, call, period) => {
        const own: BudgetRule = { id: 'own', name: 'own', scope: call.identityId, pattern: '*', limitUsd: 1, period };
        const bound = enforcedRules([...rules, own], call);
        return bound.filter((r) => r.period === period).every((r) => r.scope === call.identityId);
      }),
    );
  });

  test('does not depend on the order of the rules', () => {
    fc.assert(
      fc.property(rulesArb, callArb, fc.infiniteStream(fc.nat()), (rules, call, seeds) => {
        const shuffled = rules.map((r) => [seeds.next().value as number, r] as const).sort((a, b) => a[0] - b[0]).map(([, r]) => r);
        const a = new Set(enforcedRules(rules, call));
        const b = new Set(enforcedRules(shuffled, call));
        return a.size === b.size && [...a].every((r) => b.has(r));
      }),
    );
  });
});

describe('matchingRule, for any rules and any top-up', () => {
  test('a matched rule covers the requester and the model, and no covering rule has a more specific scope', () => {
    fc.assert(
      fc.property(rulesArb, callArb, (rules, call) => {
        const match = matchingRule(rules, call);
        if (!('rule' in match)) return true;
        const covering = rules.filter((r) => covers(r, call));
        return covers(match.rule, call) && covering.every((r) => scopeSpecificity(r.scope) <= scopeSpecificity(match.rule.scope));
      }),
    );
  });

  test('a matched rule has the most specific pattern of its scope, and no other rule ties with it', () => {
    fc.assert(
      fc.property(rulesArb, callArb, (rules, call) => {
        const match = matchingRule(rules, call);
        if (!('rule' in match)) return true;
        const peers = rules.filter((r) => r !== match.rule && covers(r, call) && r.scope === match.rule.scope);
        return peers.every((r) => compareGlobSpecificity(match.rule.pattern, r.pattern) < 0);
      }),
    );
  });

  test('missing exactly when no rule covers; ambiguous candidates are two or more tied covering rules', () => {
    fc.assert(
      fc.property(rulesArb, callArb, (rules, call) => {
        const match = matchingRule(rules, call);
        const anyCovering = rules.some((r) => covers(r, call));
        if ('rule' in match) return anyCovering;
        if (match.problem === 'missing') return !anyCovering && match.candidates.length === 0;
        const [first] = match.candidates;
        return (
          match.candidates.length >= 2 &&
          match.candidates.every((r) => covers(r, call) && r.scope === first!.scope && compareGlobSpecificity(r.pattern, first!.pattern) === 0)
        );
      }),
    );
  });

  test('the matched rule is one of the rules that bind the requester\'s calls to that model, so raising it raises their limit', () => {
    fc.assert(
      fc.property(rulesArb, callArb, (rules, call) => {
        const match = matchingRule(rules, call);
        return !('rule' in match) || enforcedRules(rules, call).includes(match.rule);
      }),
    );
  });
});

describe('validateBudgetRule, for any input', () => {
  test('never throws, and what it accepts it returns unchanged', () => {
    fc.assert(
      fc.property(
        fc.record({
          name: fc.oneof(fc.string({ maxLength: 110 }), fc.integer()),
          scope: fc.oneof(fc.constantFrom(...scopes, 'Eng', 'eng-', 'a/b/c', ''), fc.string({ maxLength: 10 })),
          pattern: fc.oneof(fc.constantFrom(...patterns), fc.string({ maxLength: 210 })),
          limitUsd: fc.oneof(fc.double(), fc.constant('5')),
          period: fc.oneof(fc.constantFrom(...BUDGET_PERIODS), fc.string({ maxLength: 6 })),
        }),
        (input) => {
          const result = validateBudgetRule(input);
          if (!result.ok) return ['name', 'scope', 'pattern', 'limitUsd', 'period'].includes(result.field);
          const v = result.value;
          return v.name === input.name && v.scope === input.scope && v.pattern === input.pattern && v.limitUsd === input.limitUsd && v.period === input.period;
        },
      ),
    );
  });

  test('an accepted namespace or identity scope covers some identity', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9-]{1,8}(\/[a-z0-9._-]{1,8})?$/), (scope) => {
        const result = validateBudgetRule({ name: 'n', scope, pattern: '*', limitUsd: 1, period: 'day' });
        if (!result.ok) return true;
        const identity = scope.includes('/') ? scope : `${scope}/x`;
        return scopeCovers(scope, identity);
      }),
    );
  });
});
