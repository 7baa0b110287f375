import { enforcedRules, periodKey } from '../../budgets/budget-rules.js';
import { reserveBudget } from '../../budgets/budget-store.js';
import { estimateCost, type PriceTable } from '../../budgets/prices.js';
import { upstreamFallbackPrice, upstreamPrice } from '../../budgets/upstream-prices.js';
import type { LlmCall } from '../../planes/llm/types.js';
import type { Db } from '../../store/db.js';
import { callTime, type CallContext, type CallRefusal, type StepEnv, type StepResult } from '../call-context.js';
import type { GovernedCaller } from '../caller.js';
import type { ModelAccessDeps } from './model-access-step.js';

export interface BudgetDeps extends ModelAccessDeps {
  db: Db;
  prices: PriceTable;
  /** Each upstream's own `prices`, by name (over `prices`). */
  upstreamPrices?: ReadonlyMap<string, PriceTable>;
}

/**
 * The model's price and the budget rules that bind the call: a reservation of the estimated cost against each
 * (settled with the actual cost when the call is over). The only step that queries the store on an allowed call,
 * and only when a budget rule binds it.
 */
export function budgetStep<D extends BudgetDeps>(ctx: CallContext<LlmCall<GovernedCaller>, D>, env: StepEnv<D>): StepResult {
  const call = ctx.call;
  if (!call.metered || call.model === null) return undefined;
  const caller = ctx.caller;
  const listed = upstreamPrice(env.deps, call.upstream, call.provider, call.model);
  if (listed !== null) ctx.price = listed;
  else {
    // A model no price names (a new release, an in-house id) is never refused for that: it is costed with the
    // fallback, and its cost is marked estimated in the audit event.
    const fallback = upstreamFallbackPrice(env.deps, call.upstream, call.provider);
    ctx.price = fallback.price;
    ctx.fallbackPricedAs = fallback.pricedAs;
  }
  const binding = enforcedRules(env.deps.rules.value.budgetRules, { identityId: caller.identityId, model: call.model });
  if (binding.length === 0) return undefined;
  const estimate = estimateCost(ctx.price, { inputBytes: call.bodyBytes, maxTokens: call.maxTokens });
  const reservations = [];
  for (const rule of binding) {
    // Agent keys have no session, so session budgets bind only calls made with a personal access token.
    if (rule.period === 'session' && caller.sessionId === '') continue;
    const topUp = ctx.grants.budgetTopUps.filter((t) => t.ruleId === null || t.ruleId === rule.id).reduce((sum, t) => sum + t.amountUsd, 0);
    reservations.push({
      ruleId: rule.id,
      identityId: caller.identityId,
      periodKey: periodKey(rule.period, { sessionId: caller.sessionId, at: callTime(ctx) }),
      limitUsd: rule.limitUsd + topUp,
      amountUsd: estimate,
    });
  }
  if (reservations.length === 0) return undefined;
  ctx.reservations = reservations;
  return reserveBudget(env.deps.db, reservations).then((reserved): CallRefusal | undefined => {
    if (reserved.ok) return undefined;
    ctx.reservations = [];
    const rule = binding.find((r) => r.id === reserved.ruleId)!;
    return {
      reason: 'budget',
      message:
        `Reins refused this request: budget "${rule.name}" (${rule.period}, $${reserved.limitUsd.toFixed(2)} for ${rule.pattern}) is used up ` +
        `($${reserved.spentUsd.toFixed(2)} spent${reserved.reservedUsd > 0 ? `, $${reserved.reservedUsd.toFixed(2)} reserved by calls in flight` : ''}). ` +
        `To continue, ask for a budget top-up: request type budget_topup in Reins (console Security > Approvals, ` +
        `POST /api/v1/access-requests, or the request tool of the reins MCP server).`,
    };
  });
}
