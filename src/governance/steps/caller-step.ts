import type { CallContext, PipelineDeps, StepEnv, StepResult } from '../call-context.js';
import { callerTier } from '../caller.js';

/** Who is calling: the agent's tier at this moment, and what is wrong with the Reins headers, if anything. */
export function callerStep<Call, D extends PipelineDeps>(ctx: CallContext<Call, D>, env: StepEnv<D>): StepResult {
  const caller = ctx.caller;
  const tier = callerTier(caller, env.deps.tiers);
  ctx.tier = tier.autonomyTier;
  ctx.explicitTier = tier.explicit;
  const problem = caller.problem;
  if (!problem) return undefined;
  const message = `Reins refused this request: ${problem.message}.`;
  return problem.reason === 'agent_not_bound' && problem.agent !== undefined ? { reason: problem.reason, message, agent: problem.agent } : { reason: problem.reason, message };
}
