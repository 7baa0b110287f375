// Budget rules: which of them bind a call, which one a top-up request matches, the window a rule's
// spend is counted in, and validation of a rule as the HTTP layer receives it. Pure: plain data in,
// plain data out. The semantics are written out in README.md.
import { parseIdentityId, IDENTITY_ID_RULE } from '../shared/ids.js';
import { compareGlobSpecificity, globMatches, globMatchesAll } from './prices.js';

export const BUDGET_PERIODS = ['session', 'day', 'month'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

export interface BudgetRule {
  id: string;
  name: string;
  /** `*`, a namespace (`eng`) or an identity id (`eng/alice`). */
  scope: string;
  /** A model glob (`*`, `claude-*`). */
  pattern: string;
  limitUsd: number;
  period: BudgetPeriod;
}

/** A rule as a client sends it; the id is the server's. */
export type BudgetRuleInput = Omit<BudgetRule, 'id'>;

/** Identity 2 > namespace 1 > everyone 0. */
export type ScopeSpecificity = 0 | 1 | 2;

export const ANY_SCOPE = '*';

export function scopeSpecificity(scope: string): ScopeSpecificity {
  if (scope === ANY_SCOPE) return 0;
  return scope.includes('/') ? 2 : 1;
}

/**
 * Whether a rule's scope takes in an identity: `*` everyone, a namespace the identities in it, an
 * identity id that identity alone. An identity id that is not valid is covered by `*` only.
 */
export function scopeCovers(scope: string, identityId: string): boolean {
  if (scope === ANY_SCOPE) return true;
  if (scope.includes('/')) return scope === identityId;
  return parseIdentityId(identityId)?.namespace === scope;
}

/**
 * Whether a rule's pattern takes in a model. An absent model (a top-up that names none, a call whose
 * model could not be read) is taken in only by a pattern that takes in every model (`*`): a rule for
 * `claude-*` says nothing about spending that is not known to be on Claude.
 */
export function patternCovers(pattern: string, model: string | null | undefined): boolean {
  if (model === null || model === undefined) return globMatchesAll(pattern);
  return globMatches(pattern, model);
}

export interface BudgetSubject {
  identityId: string;
  model?: string | null;
}

function covers(rule: BudgetRule, subject: BudgetSubject): boolean {
  return scopeCovers(rule.scope, subject.identityId) && patternCovers(rule.pattern, subject.model);
}

/**
 * The rules that bind a call, in the order given. Each period is decided on its own: among the rules of
 * that period that cover the identity and the model, only those of the most specific scope bind. A rule
 * for `eng/alice` therefore replaces the `eng` and `*` rules of its period for Alice (for the models it
 * covers), so raising a person's own rule really raises their limit instead of being capped by the
 * namespace's. Several rules at that level with different patterns all bind; so do duplicates. No
 * covering rule in a period means no limit in that period.
 */
export function enforcedRules<R extends BudgetRule>(rules: readonly R[], call: BudgetSubject): R[] {
  const covering = rules.filter((rule) => covers(rule, call));
  const top = new Map<BudgetPeriod, ScopeSpecificity>();
  for (const rule of covering) {
    const level = scopeSpecificity(rule.scope);
    if (level > (top.get(rule.period) ?? -1)) top.set(rule.period, level);
  }
  return covering.filter((rule) => scopeSpecificity(rule.scope) === top.get(rule.period));
}

export interface TopUpSubject extends BudgetSubject {
  /**
   * When given, only rules of this period count. docs/api.md matches on scope and pattern alone, so without
   * it a session rule and a day rule with the same scope and pattern are ambiguous.
   */
  period?: BudgetPeriod;
}

export type MatchingRule<R extends BudgetRule> =
  | { rule: R }
  | { problem: 'missing'; candidates: R[] }
  | { problem: 'ambiguous'; candidates: R[] };

/**
 * A top-up's matching rule (docs/api.md, Approvals): among the rules whose scope covers the requester and
 * whose pattern covers the requested model, those of the most specific scope; among those, the one with
 * the most specific pattern (longer literal part, then fewer `*`). `missing` when no rule covers;
 * `ambiguous`, with the tied rules as candidates, when more than one is left: two rules with the same
 * scope and pattern (the spec's case), or different patterns that are equally specific (`claude-*` and
 * `*-sonnet` for `claude-sonnet`), where picking one would raise a limit nobody chose.
 *
 * A top-up without a model counts only rules whose pattern is `*` (see `patternCovers`): it asks for
 * more spending on anything, which only an every-model rule governs.
 */
export function matchingRule<R extends BudgetRule>(rules: readonly R[], request: TopUpSubject): MatchingRule<R> {
  const covering = rules.filter(
    (rule) => (request.period === undefined || rule.period === request.period) && covers(rule, request),
  );
  if (covering.length === 0) return { problem: 'missing', candidates: [] };
  const level = covering.reduce((max, rule) => Math.max(max, scopeSpecificity(rule.scope)), 0);
  const atLevel = covering.filter((rule) => scopeSpecificity(rule.scope) === level);
  const sorted = [...atLevel].sort((a, b) => compareGlobSpecificity(a.pattern, b.pattern));
  const best = sorted.filter((rule) => compareGlobSpecificity(rule.pattern, sorted[0]!.pattern) === 0);
  if (best.length > 1) return { problem: 'ambiguous', candidates: best };
  return { rule: best[0]! };
}

export interface PeriodContext {
  /** The call's developer session; agent keys have none (null or ''). */
  sessionId: string | null;
  at: Date;
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/**
 * The window a rule's spend is counted in: `session:<id>`, `day:YYYY-MM-DD` or `month:YYYY-MM`, days and
 * months in UTC. Counters are keyed by rule, the credential's identity and this window, so a session value two
 * developers both send is two windows (a session is scoped to its developer). A session rule has no window
 * for a call without a session (an agent key; docs/api.md gives them none): the caller skips session rules for
 * such calls, and asking anyway throws, as does an invalid Date. Both are programming errors, not decisions.
 */
export function periodKey(period: BudgetPeriod, context: PeriodContext): string {
  if (period === 'session') {
    if (context.sessionId === null || context.sessionId === '') {
      throw new RangeError('periodKey: a session budget needs a session; skip session rules for calls without one');
    }
    return `session:${context.sessionId}`;
  }
  const at = context.at;
  if (Number.isNaN(at.getTime())) throw new RangeError('periodKey: invalid date');
  const month = `${pad(at.getUTCFullYear(), 4)}-${pad(at.getUTCMonth() + 1, 2)}`;
  return period === 'month' ? `month:${month}` : `day:${month}-${pad(at.getUTCDate(), 2)}`;
}

// ---------------------------------------------------------------------------------------------------
// Validation

export type BudgetRuleField = 'name' | 'scope' | 'pattern' | 'limitUsd' | 'period';

export type BudgetRuleValidation =
  | { ok: true; value: BudgetRuleInput }
  | { ok: false; field: BudgetRuleField; message: string };

export const BUDGET_RULE_LIMITS = {
  nameMaxChars: 100,
  patternMaxChars: 200,
  limitUsdMax: 1e9,
} as const;

/** `*`, a namespace or an identity id: what a budget or model-access rule's scope may be. */
export function isScope(scope: string): boolean {
  return scope === ANY_SCOPE || isNamespace(scope) || parseIdentityId(scope) !== null;
}

/**
 * A namespace scope follows the identity id's namespace rule, so that a scope accepted here can cover
 * an identity; checked by the same parser the identity ids go through.
 */
function isNamespace(scope: string): boolean {
  return !scope.includes('/') && parseIdentityId(`${scope}/x`) !== null;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fail(field: BudgetRuleField, message: string): BudgetRuleValidation {
  return { ok: false, field, message };
}

/**
 * A rule body (POST, PUT) checked field by field in the order name, scope, pattern, limitUsd, period;
 * the first fault is the answer. Fields other than these five (an `id` included) are not copied.
 */
export function validateBudgetRule(input: unknown): BudgetRuleValidation {
  if (!isRecord(input)) return fail('name', 'a budget rule is an object with name, scope, pattern, limitUsd and period');
  const { name, scope, pattern, limitUsd, period } = input;

  // Length in characters (code points), as a person counts them, not UTF-16 units.
  const nameChars = typeof name === 'string' ? [...name].length : 0;
  if (typeof name !== 'string' || name.trim() === '' || nameChars > BUDGET_RULE_LIMITS.nameMaxChars) {
    return fail('name', `name must be 1 to ${BUDGET_RULE_LIMITS.nameMaxChars} characters, not only spaces`);
  }
  if (typeof scope !== 'string' || !isScope(scope)) {
    return fail(
      'scope',
      `scope must be "*", a namespace (lowercase letters, digits and "-", at most 63, starting and ending with a letter or digit) or an identity id; ${IDENTITY_ID_RULE}`,
    );
  }
  if (
    typeof pattern !== 'string' ||
    pattern.length === 0 ||
    [...pattern].length > BUDGET_RULE_LIMITS.patternMaxChars ||
    /\s/u.test(pattern)
  ) {
    return fail('pattern', `pattern must be a model glob of 1 to ${BUDGET_RULE_LIMITS.patternMaxChars} characters without spaces, "*" matching any run of characters`);
  }
  if (typeof limitUsd !== 'number' || !Number.isFinite(limitUsd) || limitUsd < 0 || limitUsd > BUDGET_RULE_LIMITS.limitUsdMax) {
    return fail('limitUsd', `limitUsd must be a number of USD from 0 to ${BUDGET_RULE_LIMITS.limitUsdMax}`);
  }
  if (typeof period !== 'string' || !(BUDGET_PERIODS as readonly string[]).includes(period)) {
    return fail('period', `period must be one of ${BUDGET_PERIODS.map((p) => `"${p}"`).join(', ')}`);
  }
  // `-0` passes the range check; store it as 0.
  return { ok: true, value: { name, scope, pattern, limitUsd: limitUsd === 0 ? 0 : limitUsd, period: period as BudgetPeriod } };
}
