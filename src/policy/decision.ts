/**
 * A policy decision is data, never an exception. The gateway maps `outcome` to forwarding the
 * call (allow), refusing it in the client's protocol (deny) or parking it for a person (approve).
 */
import type { DecidingPolicy, MatchedPolicy, PolicyKind } from './compile-policy.js';

export type Outcome = 'allow' | 'deny' | 'approve';

export interface PolicyEvaluationError {
  /** The policy whose expression failed. */
  readonly policy: string;
  readonly message: string;
  readonly line?: number;
  readonly column?: number;
}

export interface Decision {
  readonly outcome: Outcome;
  /** The policy that decided the outcome; absent when no allow, deny or approve policy matched. */
  readonly decidingPolicy?: DecidingPolicy;
  /** Every policy that matched, in evaluation order, audit policies included. */
  readonly matched: readonly MatchedPolicy[];
  /** True when an audit policy matched: the call's audit event is flagged for review. */
  readonly audit: boolean;
  readonly errors: readonly PolicyEvaluationError[];
}

/** Deny beats approve beats allow; audit never decides. */
export const OUTCOME_PRECEDENCE: Readonly<Record<Exclude<PolicyKind, 'audit'>, number>> = Object.freeze({
  deny: 3,
  approve: 2,
  allow: 1,
});

const NOTHING: readonly never[] = Object.freeze([]);

/** The decision when nothing matched and nothing failed; shared, so the common case allocates nothing. */
export const ALLOW_WITHOUT_MATCH: Decision = Object.freeze({
  outcome: 'allow',
  matched: NOTHING,
  audit: false,
  errors: NOTHING,
});

export function emptyList<T>(): readonly T[] {
  return NOTHING;
}
