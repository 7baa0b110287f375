/**
 * The governance pipeline every plane calls: a governed call's context (call-context.ts) goes through its plane's
 * steps in order, each a small function over the same context (agentgateway's per-policy `apply`):
 *
 *   audit room -> caller -> [LLM: request body] -> grants -> policies -> [LLM: model access] -> hold -> [LLM: budget]
 *   -> audit record (the decision event of an allowed call; the end event when the plane reports the call over)
 *
 * The first refusal stops it (ctx.refusal); a call that passes every step is allowed and its decision event is
 * queued before anything is forwarded. A plane's differences are data in its PlaneSpec (llm-governance.ts,
 * plane-governance.ts): which steps apply, the policy section, the audit facts, the wording of refusals.
 *
 * Every await is a trip through the microtask queue on the hot path, so the runner awaits nothing a step did not
 * hand it: with the credential cached, grants in memory, room in the audit queue and nothing held or budgeted,
 * run() returns the context itself, not a promise.
 */
import { recordDecision } from './audit-record.js';
import type { CallContext, CallRefusal, PipelineDeps, StepEnv } from './call-context.js';
import { DecisionMemo } from './decision-memo.js';

export class GovernancePipeline<D extends PipelineDeps> implements StepEnv<D> {
  readonly decisions = new DecisionMemo();

  constructor(readonly deps: D) {}

  /** Decides the call: the context with `refusal` null (allowed) or set; a promise only when a step had to wait. */
  run<Call>(ctx: CallContext<Call, D>): CallContext<Call, D> | Promise<CallContext<Call, D>> {
    this.deps.telemetry?.start(ctx);
    return this.from(ctx, 0);
  }

  private from<Call>(ctx: CallContext<Call, D>, first: number): CallContext<Call, D> | Promise<CallContext<Call, D>> {
    const steps = ctx.plane.steps;
    for (let i = first; i < steps.length; i++) {
      const result = steps[i]!(ctx, this);
      if (result === undefined) continue;
      if (result instanceof Promise) {
        const next = i + 1;
        return result.then((refusal) => (refusal === undefined ? this.from(ctx, next) : this.refused(ctx, refusal)));
      }
      return this.refused(ctx, result);
    }
    this.deps.telemetry?.decided(ctx);
    // Recorded before the call is forwarded (queued, not awaited): a replica that stops mid-call still leaves it.
    recordDecision(ctx, this, null);
    return ctx;
  }

  private refused<Call>(ctx: CallContext<Call, D>, refusal: CallRefusal): CallContext<Call, D> {
    ctx.refusal = refusal;
    this.deps.telemetry?.decided(ctx);
    return ctx;
  }
}
