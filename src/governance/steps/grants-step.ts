import type { CallerGrants } from '../../approvals/grants.js';
import { callTime, type CallContext, type PipelineDeps, type StepEnv, type StepResult } from '../call-context.js';

/** The developer's grants (policy exemptions, extra models, budget top-ups); a promise only when not in memory. */
export function grantsStep<Call, D extends PipelineDeps>(ctx: CallContext<Call, D>, env: StepEnv<D>): StepResult {
  const developer = ctx.caller.developer;
  if (!developer) return undefined;
  const found = env.deps.grants.forDeveloper(developer.id, callTime(ctx), ctx.caller.project);
  if (found instanceof Promise) return found.then((grants) => void kept(ctx, grants));
  kept(ctx, found);
  return undefined;
}

function kept<Call, D extends PipelineDeps>(ctx: CallContext<Call, D>, grants: CallerGrants): void {
  ctx.grants = grants;
  if (grants.exemptPolicies.size > 0) ctx.exempted = [...grants.exemptPolicies];
}
