// Rate limits: which rules bind a call, and validation of a rule as the HTTP layer receives it. Pure: plain data
// in, plain data out. Scopes and model globs are the budget rules' (budget-rules.ts); the counters are the store's
// (rate-limit-store.ts).
import { isScope, patternCovers, scopeCovers, scopeSpecificity, ANY_SCOPE } from './budget-rules.js';
import { UPSTREAM_NAME } from '../config/config.js';

export interface RateLimitRuleInput {
  name: string;
  /** `*`, a namespace (`eng`) or an identity id (`eng/alice`): each identity it covers has its own counter. */
  scope: string;
  /** A model glob (`*`, `gpt-4o*`). */
  pattern: string;
  /** An upstream's name (`openai`, `vllm`) or `*`, every upstream. */
  upstream: string;
  requestsPerMinute?: number;
  tokensPerMinute?: number;
}

export interface RateLimitRule extends RateLimitRuleInput {
  id: string;
}

export interface RateLimitSubject {
  identityId: string;
  model: string | null;
  upstream: string;
}

function covers(rule: RateLimitRuleInput, subject: RateLimitSubject): boolean {
  return (
    (rule.upstream === ANY_SCOPE || rule.upstream === subject.upstream) &&
    scopeCovers(rule.scope, subject.identityId) &&
    patternCovers(rule.pattern, subject.model)
  );
}

/**
 * The rules that bind a call: among those covering its identity, model and upstream, the most specific scope
 * (identity, then namespace, then `*`, as for budgets), and at that scope a rule naming the call's upstream over
 * one for every upstream. A rule for `eng/alice` therefore replaces the `eng` and `*` rules for Alice, so raising
 * a person's own limit really raises it. Several rules left (different patterns) all bind.
 */
export function bindingRateLimits<R extends RateLimitRuleInput>(rules: readonly R[], subject: RateLimitSubject): R[] {
  let top = -1;
  let covering: R[] = [];
  for (const rule of rules) {
    if (!covers(rule, subject)) continue;
    const level = scopeSpecificity(rule.scope) * 2 + (rule.upstream === ANY_SCOPE ? 0 : 1);
    if (level > top) {
      top = level;
      covering = [rule];
    } else if (level === top) covering.push(rule);
  }
  return covering;
}

export type RateLimitField = 'name' | 'scope' | 'pattern' | 'upstream' | 'requestsPerMinute' | 'tokensPerMinute';
export type RateLimitValidation = { ok: true; value: RateLimitRuleInput } | { ok: false; field: RateLimitField; message: string };

export const RATE_LIMIT_LIMITS = { nameMaxChars: 100, patternMaxChars: 200, requestsMax: 10_000_000, tokensMax: 1e12 } as const;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fail(field: RateLimitField, message: string): RateLimitValidation {
  return { ok: false, field, message };
}

/** A rule body (POST, PUT) checked field by field; the first fault is the answer. Other fields are not copied. */
export function validateRateLimit(input: unknown): RateLimitValidation {
  if (!isRecord(input)) return fail('name', 'a rate limit is an object with name, scope, pattern, and requestsPerMinute or tokensPerMinute');
  const { name, scope, pattern, requestsPerMinute, tokensPerMinute } = input;
  const upstream = input.upstream ?? ANY_SCOPE;
  if (typeof name !== 'string' || name.trim() === '' || [...name].length > RATE_LIMIT_LIMITS.nameMaxChars) {
    return fail('name', `name must be 1 to ${RATE_LIMIT_LIMITS.nameMaxChars} characters, not only spaces`);
  }
  if (typeof scope !== 'string' || !isScope(scope)) return fail('scope', 'scope must be "*", a namespace such as "eng", or an identity id such as "eng/alice"');
  if (typeof pattern !== 'string' || pattern.length === 0 || [...pattern].length > RATE_LIMIT_LIMITS.patternMaxChars || /\s/u.test(pattern)) {
    return fail('pattern', `pattern must be a model glob of 1 to ${RATE_LIMIT_LIMITS.patternMaxChars} characters without spaces, "*" matching any run of characters`);
  }
  if (typeof upstream !== 'string' || (upstream !== ANY_SCOPE && !new RegExp(UPSTREAM_NAME).test(upstream))) {
    return fail('upstream', 'upstream must be "*" (every upstream) or an upstream name as in providers (lowercase letters, digits and "-")');
  }
  const count = (v: unknown, max: number) => v === undefined || v === null || (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max);
  if (!count(requestsPerMinute, RATE_LIMIT_LIMITS.requestsMax)) return fail('requestsPerMinute', `requestsPerMinute must be an integer from 0 to ${RATE_LIMIT_LIMITS.requestsMax}`);
  if (!count(tokensPerMinute, RATE_LIMIT_LIMITS.tokensMax)) return fail('tokensPerMinute', `tokensPerMinute must be an integer from 0 to ${RATE_LIMIT_LIMITS.tokensMax}`);
  const value: RateLimitRuleInput = { name, scope, pattern, upstream };
  if (typeof requestsPerMinute === 'number') value.requestsPerMinute = requestsPerMinute;
  if (typeof tokensPerMinute === 'number') value.tokensPerMinute = tokensPerMinute;
  if (value.requestsPerMinute === undefined && value.tokensPerMinute === undefined) {
    return fail('requestsPerMinute', 'a rate limit sets requestsPerMinute, tokensPerMinute or both');
  }
  return { ok: true, value };
}
