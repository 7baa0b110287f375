import { bindingRateLimits } from '../../budgets/rate-limits.js';
import { admitRate, type RateLimit } from '../../budgets/rate-limit-store.js';
import type { LlmCall } from '../../planes/llm/types.js';
import type { CallContext, CallRefusal, StepEnv, StepResult } from '../call-context.js';
import type { GovernedCaller } from '../caller.js';
import type { BudgetDeps } from './budget-step.js';

/**
 * The rate limits that bind the call (per identity, model and upstream): one admission per rule in the shared
 * store, refused with the seconds until the minute's counter starts afresh. Token counts and model listings are
 * not limited (they cost nothing). Queries the store only when a rule binds the call.
 */
export function rateLimitStep<D extends BudgetDeps>(ctx: CallContext<LlmCall<GovernedCaller>, D>, env: StepEnv<D>): StepResult {
  const call = ctx.call;
  const rules = env.deps.rules.value.rateLimits;
  if (!call.metered || rules.length === 0) return undefined;
  const identityId = ctx.caller.identityId;
  const binding = bindingRateLimits(rules, { identityId, model: call.model, upstream: call.upstream });
  if (binding.length === 0) return undefined;
  return admitRate(env.deps.db, identityId, binding).then((admitted): CallRefusal | undefined => {
    if (admitted.ok) {
      ctx.rateAdmissions = admitted.admissions;
      return undefined;
    }
    const rule = binding.find((r) => r.id === admitted.ruleId)!;
    return { reason: 'rate_limit', message: rateLimitMessage(rule, admitted.over, identityId, admitted.retryAfterSeconds), retryAfterSeconds: admitted.retryAfterSeconds };
  });
}

/** The one refusal a client should retry: it says so, and when. */
function rateLimitMessage(rule: RateLimit, over: 'requests' | 'tokens', identityId: string, wait: number): string {
  const limit = over === 'requests' ? `${rule.requestsPerMinute} requests per minute` : `${rule.tokensPerMinute} tokens per minute`;
  const where = `${rule.pattern === '*' ? 'any model' : rule.pattern}${rule.upstream === '*' ? '' : ` on ${rule.upstream}`}`;
  return (
    `Reins rate-limited this request: rate limit "${rule.name}" (${limit} for ${where}) is reached for ${identityId} this minute. ` +
    `Retry this one after ${wait} s, when the next minute's count starts: unlike Reins' other refusals, it is temporary.`
  );
}
