import { evaluate, preparePolicyObject } from '../../policy/engine.js';
import { createPolicyObject } from '../../policy/policy-object.js';
import type { CallContext, PipelineDeps, StepEnv, StepResult } from '../call-context.js';
import { callerSections } from '../caller.js';
import { refusalMessage, withNote } from '../policy-refusal.js';

/**
 * The policies, on the plane's policy object (memoised by every field it is built from, decision-memo.ts). A deny
 * refuses here; an approve is the hold step's to act on.
 */
export function policyStep<Call, D extends PipelineDeps>(ctx: CallContext<Call, D>, env: StepEnv<D>): StepResult {
  const policies = env.deps.policies.policies;
  const exempt = ctx.grants.exemptPolicies;
  const decision = env.decisions.recall(policies, exempt.size > 0 ? null : ctx.plane.memoKey(ctx), () => {
    const sections = callerSections(ctx.caller, env.deps.tiers, { autonomyTier: ctx.tier, explicit: ctx.explicitTier });
    const object = createPolicyObject(
      Object.assign({ request: { type: ctx.plane.type }, agent: sections.agent, developer: sections.developer, session: sections.session }, ctx.plane.section(ctx)),
    );
    return evaluate(policies, preparePolicyObject(object), { exemptPolicies: exempt });
  });
  ctx.decision = decision;
  const p = decision.decidingPolicy;
  if (decision.outcome !== 'deny' || !p) return undefined;
  // The developer's latest request that could lift it: an exception to the policy, or access to the model.
  const model = ctx.plane.refusedModel?.(ctx.call) ?? null;
  const message = withNote(env, ctx.caller, refusalMessage(p.name, p.message), model === null ? { policy: p.name } : { policy: p.name, model });
  return typeof message === 'string' ? { reason: 'policy', message } : message.then((m) => ({ reason: 'policy', message: m }));
}
