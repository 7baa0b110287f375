/**
 * Policy evaluation: compiled policies + one policy object -> a Decision.
 *
 * Rules:
 * - Only enabled policies whose `appliesTo` includes `object.request.type` run, minus
 *   `options.exemptPolicies` (names a grant exempts the caller from).
 * - deny beats approve beats allow; audit never changes the outcome; no match -> allow.
 * - Among matched policies of the winning kind the first in the given order decides, preferring
 *   one that matched cleanly over one that matched by failing.
 * - Fail closed: an expression that errors (or is not a bool) counts as matched for deny,
 *   approve and audit policies and as not matched for allow policies. Every such failure is
 *   reported in `errors`. A broken guard therefore stops or parks calls instead of waving them
 *   through, and a broken allow policy never grants anything.
 */
import { runExpression, toActivation } from './cel.js';
import type { PolicyActivation } from './cel.js';
import { requestTypeBit } from './compile-policy.js';
import type { CompiledPolicy, MatchedPolicy } from './compile-policy.js';
import { ALLOW_WITHOUT_MATCH, emptyList } from './decision.js';
import type { Decision, PolicyEvaluationError } from './decision.js';
import type { PolicyObject } from './policy-object.js';

export interface EvaluateOptions {
  /** Policies to skip for this caller, for example those an active exception grant covers. */
  exemptPolicies?: ReadonlySet<string>;
}

/** A policy object with its CEL activation, built once per request and reusable. */
export interface PreparedPolicyObject {
  readonly object: PolicyObject;
  readonly activation: PolicyActivation;
}

export function preparePolicyObject(object: PolicyObject): PreparedPolicyObject {
  return { object, activation: toActivation(object) };
}

export type PolicyVerdict = 'matched' | 'not_matched' | 'failed';

/** Runs one policy's expression; a failure carries the error to report. */
export function runPolicy(
  policy: CompiledPolicy,
  activation: PolicyActivation,
): { verdict: PolicyVerdict; error?: PolicyEvaluationError } {
  const outcome = runExpression(policy.expression, activation);
  if (outcome === true) return MATCHED;
  if (outcome === false) return NOT_MATCHED;
  return { verdict: 'failed', error: { policy: policy.policy.name, ...outcome } };
}

const MATCHED = Object.freeze({ verdict: 'matched' as const });
const NOT_MATCHED = Object.freeze({ verdict: 'not_matched' as const });

/** Whether a policy takes part in evaluating this request at all. */
export function isApplicable(policy: CompiledPolicy, typeBit: number, options: EvaluateOptions | undefined): boolean {
  return (
    policy.policy.enabled &&
    (policy.appliesToMask & typeBit) !== 0 &&
    !(options?.exemptPolicies?.has(policy.policy.name) ?? false)
  );
}

export function evaluate(
  policies: readonly CompiledPolicy[],
  object: PolicyObject | PreparedPolicyObject,
  options?: EvaluateOptions,
): Decision {
  const prepared = 'activation' in object ? object : preparePolicyObject(object);
  const typeBit = requestTypeBit(prepared.object.request.type);

  let matched: MatchedPolicy[] | undefined;
  let errors: PolicyEvaluationError[] | undefined;
  let audit = false;
  let deny: CompiledPolicy | undefined;
  let denyFailed = false;
  let approve: CompiledPolicy | undefined;
  let approveFailed = false;
  let allow: CompiledPolicy | undefined;

  for (const policy of policies) {
    if (!isApplicable(policy, typeBit, options)) continue;
    const outcome = runExpression(policy.expression, prepared.activation);
    let failed = false;
    if (outcome === false) continue;
    if (outcome !== true) {
      failed = true;
      (errors ??= []).push({ policy: policy.policy.name, ...outcome });
      if (policy.policy.kind === 'allow') continue;
    }
    (matched ??= []).push(policy.asMatched);
    switch (policy.policy.kind) {
      case 'deny':
        if (deny === undefined || (denyFailed && !failed)) {
          deny = policy;
          denyFailed = failed;
        }
        break;
      case 'approve':
        if (approve === undefined || (approveFailed && !failed)) {
          approve = policy;
          approveFailed = failed;
        }
        break;
      case 'allow':
        allow ??= policy;
        break;
      case 'audit':
        audit = true;
        break;
    }
  }

  if (matched === undefined && errors === undefined) return ALLOW_WITHOUT_MATCH;
  const deciding = deny ?? approve ?? allow;
  const decision: Decision = {
    outcome: deny !== undefined ? 'deny' : approve !== undefined ? 'approve' : 'allow',
    ...(deciding === undefined ? {} : { decidingPolicy: deciding.asDeciding }),
    matched: matched ?? emptyList(),
    audit,
    errors: errors ?? emptyList(),
  };
  return decision;
}
