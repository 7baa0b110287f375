/**
 * The audit record of a governed call, for every plane (../audit/call-events.ts): the decision event when the call
 * is allowed or parked, before anything is forwarded, and the end event (`…_end`) when it is over, joined by
 * `data.callId`; a call refused at once is one event holding the decision and its outcome. Events are queued for
 * the batched writer, never awaited: no store round trip before forwarding.
 */
import type { AuditInput } from '../audit/audit.js';
import { endActionOf, newCallId } from '../audit/call-events.js';
import type { CallContext, PipelineDeps, StepEnv } from './call-context.js';
import { callerActor, callerSubject } from './caller.js';

/** How a call ended, as the planes report it (the union of what LLM, MCP and egress tell). */
export interface CallEndResult {
  status: number;
  end: string;
  durationMs: number;
  isError?: boolean | undefined;
  bytesUp?: number | undefined;
  bytesDown?: number | undefined;
  /** Egress allowed by policy but refused on the address it is or resolved to (egress.deniedNetworks). */
  deniedAddress?: { address: string; network: string; message: string } | undefined;
  /** LLM: the model the provider's answer names (`gen_ai.response.model` of the call's span). */
  responseModel?: string | undefined;
}


/** The facts and the decision: the decision event of an allowed or parked call, or the one event of a refused call. */
function decisionData<Call, D extends PipelineDeps>(ctx: CallContext<Call, D>, callId: string): Record<string, unknown> {
  const caller = ctx.caller;
  const d = ctx.decision;
  // Not `{ ...facts, agent, … }`: on Node 20's V8 every property added to an object that a leading spread made
  // (in the literal or assigned afterwards) takes a slow path, about 0.7 µs each: 10 µs per call here.
  // Object.assign onto a fresh literal keeps the fast path.
  const data: Record<string, unknown> = Object.assign({ callId }, ctx.plane.decisionFacts(ctx.call));
  data.agent = { id: caller.agentId, tier: ctx.tier, explicitTier: ctx.explicitTier };
  data.developer = caller.developer?.id ?? null;
  data.session = caller.sessionId === '' ? null : caller.sessionId;
  data.tokenId = caller.tokenId;
  data.decision = d?.outcome ?? (ctx.refusal ? 'deny' : 'allow');
  data.policy = d?.decidingPolicy?.name ?? null;
  data.matched = d?.matched.map((m) => m.name) ?? [];
  data.flagged = d?.audit ?? false;
  if (d && d.errors.length > 0) data.policyErrors = d.errors;
  if (ctx.exempted.length) {
    data.exemptedBy = 'grant';
    data.exempted = ctx.exempted;
  }
  // The W3C trace the call belongs to (call-telemetry.ts): the caller's, or the one Reins started when exporting spans.
  if (ctx.trace !== null) data.trace = ctx.trace;
  return data;
}

/** Queues the decision event of an allowed call, or of a call parked for a person (`heldEntryId`); once per call. */
export function recordDecision<Call, D extends PipelineDeps>(ctx: CallContext<Call, D>, env: StepEnv<D>, heldEntryId: string | null): void {
  if (ctx.callId !== null) return;
  ctx.callId = newCallId();
  const data = decisionData(ctx, ctx.callId);
  if (heldEntryId !== null) data.held = { entryId: heldEntryId };
  const caller = ctx.caller;
  enqueue(env, { type: ctx.plane.type, action: ctx.plane.action(ctx.call), actor: callerActor(caller), outcome: 'ok', subject: callerSubject(caller), host: ctx.plane.host(ctx.call), data });
}

/** How a call ended, as the audit event's outcome and the completed-call counter see it. */
export function endOutcome(result: CallEndResult): 'ok' | 'refused' | 'error' {
  if (result.end === 'refused' || result.end === 'address_denied') return 'refused';
  return result.end === 'upstream_unreachable' || result.status >= 400 || result.isError ? 'error' : 'ok';
}

/**
 * The call is over: its end event, or, for a call refused at once, its one event. `extra` adds what only one
 * plane knows (the LLM's usage, cost and budgets) to the event's data.
 */
export function recordEnd<Call, D extends PipelineDeps>(ctx: CallContext<Call, D>, env: StepEnv<D>, result: CallEndResult, extra?: (data: Record<string, unknown>) => void): void {
  const plane = ctx.plane;
  const caller = ctx.caller;
  const outcome = endOutcome(result);
  const addressDenied = result.end === 'address_denied';
  env.deps.onCompleted?.(plane.label(ctx.call), outcome, addressDenied ? 'address_denied' : (ctx.refusal?.reason ?? null));
  const decided = ctx.callId;
  let data: Record<string, unknown>;
  if (decided === null) data = decisionData(ctx, newCallId());
  else {
    // The decision event is queued already: the end repeats only the facts and the session, then adds the outcome.
    data = Object.assign({ callId: decided }, plane.endFacts(ctx.call));
    data.session = caller.sessionId === '' ? null : caller.sessionId;
  }
  if (ctx.held) data.held = ctx.held;
  if (ctx.refusal) data.refusal = ctx.refusal;
  else if (addressDenied && result.deniedAddress) {
    const { address, network, message } = result.deniedAddress;
    data.refusal = { reason: 'address_denied', message, address, network };
  }
  data.status = result.status;
  data.end = result.end;
  data.durationMs = Math.round(result.durationMs * 1000) / 1000;
  if (result.isError !== undefined) data.isError = result.isError;
  if (result.bytesUp !== undefined) {
    data.bytesUp = result.bytesUp;
    data.bytesDown = result.bytesDown ?? 0;
  }
  if (extra) extra(data);
  const telemetry = env.deps.telemetry;
  if (telemetry) {
    try {
      telemetry.ended(ctx, result, outcome, data);
    } catch (err) {
      env.deps.onError?.(err as Error, 'call telemetry');
    }
  }
  const action = plane.action(ctx.call);
  enqueue(env, {
    type: plane.type,
    action: decided === null ? action : endActionOf(action),
    actor: callerActor(caller),
    outcome,
    subject: callerSubject(caller),
    host: plane.host(ctx.call),
    data,
  });
}

function enqueue(env: StepEnv<PipelineDeps>, event: AuditInput): void {
  try {
    void env.deps.audit.enqueue(event);
  } catch (err) {
    env.deps.onError?.(err as Error, 'audit enqueue');
  }
}
