import { scopeCovers } from '../../budgets/budget-rules.js';
import { globMatches } from '../../budgets/prices.js';
import type { GatewayRules } from '../../budgets/gateway-rules.js';
import type { LlmCall } from '../../planes/llm/types.js';
import type { CallContext, PipelineDeps, StepEnv, StepResult } from '../call-context.js';
import type { GovernedCaller } from '../caller.js';
import { withNote } from '../policy-refusal.js';

export interface ModelAccessDeps extends PipelineDeps {
  rules: GatewayRules;
}

/** The model-access rules that cover the caller, widened by its grants' extra models (LLM calls naming a model). */
export function modelAccessStep<D extends ModelAccessDeps>(ctx: CallContext<LlmCall<GovernedCaller>, D>, env: StepEnv<D>): StepResult {
  const model = ctx.call.model;
  if (model === null) return undefined;
  const caller = ctx.caller;
  const covering = env.deps.rules.value.modelAccess.filter((r) => scopeCovers(r.scope, caller.identityId));
  if (covering.length === 0) return undefined;
  if (covering.some((r) => r.models.some((glob) => globMatches(glob, model))) || ctx.grants.extraModels.some((glob) => globMatches(glob, model))) return undefined;
  const message = withNote(
    env,
    caller,
    `Reins refused this request: ${caller.identityId} may not use model ${model} (allowed: ${[...new Set(covering.flatMap((r) => r.models))].join(', ')}). ` +
      `Use an allowed model, or ask for access: request type model_access in Reins (console Security > Approvals, ` +
      `POST /api/v1/access-requests, or the request tool of the reins MCP server).`,
    { model },
  );
  return typeof message === 'string' ? { reason: 'model_access', message } : message.then((m) => ({ reason: 'model_access', message: m }));
}
