import type { DecidingPolicy } from '../../policy/compile-policy.js';
import { heldCallDedupeKey, type HeldCallIdentity, type LlmCallIdentity, type McpCallIdentity } from '../../held-calls/dedupe-key.js';
import type { HoldOutcome, HoldRequest } from '../../held-calls/registry.js';
import { recordDecision } from '../audit-record.js';
import type { CallContext, CallRefusal, PipelineDeps, StepEnv, StepResult } from '../call-context.js';
import type { GovernedCaller } from '../caller.js';
import { withNote } from '../policy-refusal.js';

/**
 * An approve outcome parks the call until a person decides (held-calls/), when the plane parks calls and held
 * calls are on; otherwise it refuses in the plane's words. The hold is the decision: the decision event is queued
 * when the call is parked, and how the hold ended goes with the end event (ctx.held). A call let through must
 * still come from a caller who may send it.
 */
export function holdStep<Call, D extends PipelineDeps>(ctx: CallContext<Call, D>, env: StepEnv<D>): StepResult {
  const decision = ctx.decision;
  const p = decision?.decidingPolicy;
  if (decision?.outcome !== 'approve' || !p) return undefined;
  const plane = ctx.plane;
  const hold = plane.hold;
  if (!hold) return { reason: 'approval_required', message: plane.words.notParked(p) };
  if (!hold.applies(ctx.call)) return undefined;
  const held = env.deps.held;
  if (!held) return { reason: 'approval_required', message: plane.words.notParked(p) };
  const cannot = hold.cannotHold?.(ctx.call, p) ?? null;
  if (cannot !== null) return { reason: 'approval_required', message: cannot };
  ctx.beforeHold?.onHeld?.();
  const telemetry = env.deps.telemetry;
  const since = telemetry?.holdStarted(ctx) ?? 0;
  return held
    .hold(hold.request(ctx, p, env.deps), (entry) => {
      recordDecision(ctx, env, entry.id);
      ctx.onParked?.(entry);
    })
    .then(
      (outcome) => {
        telemetry?.holdEnded(ctx, since, outcome.outcome);
        // A retry that claimed a release its first attempt left (registry.claimRelease) was never parked.
        if (outcome.outcome === 'released' && outcome.claimed) recordDecision(ctx, env, outcome.entryId);
        return afterHold(ctx, env, p, outcome);
      },
      (err: unknown) => {
        telemetry?.holdEnded(ctx, since, 'error');
        throw err;
      },
    );
}

async function afterHold<Call, D extends PipelineDeps>(ctx: CallContext<Call, D>, env: StepEnv<D>, p: DecidingPolicy, held: HoldOutcome): Promise<CallRefusal | undefined> {
  ctx.held = held.outcome === 'timed_out' ? { entryId: held.entryId, outcome: held.outcome, letThrough: held.allow } : { entryId: held.entryId, outcome: held.outcome };
  const words = ctx.plane.words;
  if (held.outcome === 'stopped' && held.decidedBy.startsWith('system:')) {
    return { reason: 'policy', message: `Reins stopped this held ${words.noun} before anyone decided: ${held.note}.` };
  }
  if (held.outcome === 'stopped') {
    const message =
      `Reins policy "${p.name}" stopped this ${words.noun} after review: ${p.message} Reviewer's note: "${held.note}". ` +
      `If you need it, request an exception to ${p.name} ${words.exceptionVia}.`;
    return { reason: 'policy', message: words.noteAfterReview ? await withNote(env, ctx.caller, message, { policy: p.name }) : message };
  }
  if (held.outcome === 'timed_out' && !held.allow) {
    return {
      reason: 'approval_required',
      message: `Reins policy "${p.name}" held this ${words.noun} for approval and no reviewer acted in time, so it was not ${words.sent}: ${p.message}${words.timedOutAdvice}`,
    };
  }
  // Released or let through: a credential revoked or an identity deleted while it waited stops it.
  const revoked = await env.deps.credentials.revokedSince(ctx.caller.tokenId, ctx.caller.agentId);
  if (revoked) return { reason: 'credential_revoked', message: `Reins did not ${words.send} this held ${words.noun}: ${revoked}.` };
  return undefined;
}

type Common = 'agentId' | 'developerId' | 'sessionId' | 'policyName';

/** What a plane adds to a hold request: what the call is, and what tells it apart for the dedupe key. */
export interface HeldCallParts {
  tool: string | null;
  model: string | null;
  promptExcerpt: string | null;
  identity: Omit<LlmCallIdentity, Common> | Omit<McpCallIdentity, Common>;
}

/** A hold request: who asks and the deciding policy as every plane fills them, and what the plane adds. */
export function holdRequest(caller: GovernedCaller, p: DecidingPolicy, parts: HeldCallParts): HoldRequest {
  const developerId = caller.developer?.id ?? null;
  const sessionId = caller.sessionId === '' ? null : caller.sessionId;
  const identity = Object.assign({ agentId: caller.agentId, developerId, sessionId, policyName: p.name }, parts.identity) as HeldCallIdentity;
  const request: HoldRequest = {
    kind: parts.identity.kind,
    requester: developerId,
    agentId: caller.agentId,
    sessionId,
    tool: parts.tool,
    model: parts.model,
    policyName: p.name,
    policyMessage: p.message,
    promptExcerpt: parts.promptExcerpt,
    dedupeKey: heldCallDedupeKey(identity),
  };
  if (p.approvalWindowSeconds !== undefined) request.approvalWindowSeconds = p.approvalWindowSeconds;
  return request;
}
