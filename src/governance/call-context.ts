/**
 * The one object a governed call's governance works on (pipeline.ts): every plane builds one per call, every step
 * reads and fills it, and the audit record (audit-record.ts) is written from it. A plane's differences are data in
 * its `PlaneSpec`: which steps apply, the policy object's section, the audit facts, how a refusal is worded.
 *
 * Every field is set when the context is made (newCallContext), so all contexts share one shape and V8 keeps the
 * property accesses on its fast path; the arrays are shared empty ones until a step has something to put there.
 */
import type { AuditWriter } from '../audit/audit-writer.js';
import type { GrantLookup, CallerGrants } from '../approvals/grants.js';
import { NO_GRANTS } from '../approvals/grants.js';
import type { RequestNotes } from '../approvals/request-notes.js';
import type { ModelPrice } from '../budgets/prices.js';
import type { Reservation } from '../budgets/budget-store.js';
import type { RateAdmission } from '../budgets/rate-limit-store.js';
import type { HeldCallRegistry, HoldRequest, ParkedEntry } from '../held-calls/registry.js';
import type { TierCache } from '../identity/tier-cache.js';
import type { DecidingPolicy } from '../policy/compile-policy.js';
import type { Decision } from '../policy/decision.js';
import type { AutonomyTier, PolicyObjectInput } from '../policy/policy-object.js';
import type { PolicySet } from '../policy/policy-set.js';
import type { GovernedCaller } from './caller.js';
import type { CredentialCache } from './credential-cache.js';
import type { DecisionMemo } from './decision-memo.js';
import type { Span } from '@opentelemetry/api';

/** Why Reins refuses a call itself (the LLM plane's `RefusalReason`; MCP and egress use a subset). */
export type CallRefusalReason = 'policy' | 'approval_required' | 'model_access' | 'budget' | 'rate_limit' | 'bad_request' | 'agent_not_bound' | 'credential_revoked';

/** A step's refusal: the reason, and the whole sentence the person sees. `agent` only for agent_not_bound. */
export interface CallRefusal {
  reason: CallRefusalReason;
  message: string;
  agent?: string;
  /** rate_limit only: the seconds until the minute's counter starts afresh (the answer's retry-after). */
  retryAfterSeconds?: number;
}

/** How a hold ended, as the end event records it. */
export interface HeldRecord {
  entryId: string;
  outcome: string;
  letThrough?: boolean;
}

/** What every plane's governance needs; the LLM plane adds rules, prices and the store (llm-governance.ts). */
export interface PipelineDeps {
  tiers: TierCache;
  policies: PolicySet;
  credentials: CredentialCache;
  audit: AuditWriter;
  grants: GrantLookup;
  /** What a refusal says about the developer's own request for the same policy or model (approvals). */
  notes?: RequestNotes;
  /** Parks calls an approve policy holds; absent: such calls are refused with the policy's message. */
  held?: HeldCallRegistry;
  onTokenUse?: (tokenId: string) => void;
  onError?: (err: Error, what: string) => void;
  /** Counts each completed call by label (the LLM provider, else the plane) and outcome (ok, refused, error). */
  onCompleted?: (label: string, outcome: string, refusal: string | null) => void;
  /** Latency, token and cost metrics, held-call gauges, trace context and OpenTelemetry spans (call-telemetry.ts). */
  telemetry?: CallTelemetryHooks;
}

/** The call's place in a distributed trace, as the decision event records it (`data.trace`). */
export interface CallTrace {
  traceId: string;
  /** Reins' own span, when spans are exported; null otherwise. */
  spanId: string | null;
  /** The caller's span (from its `traceparent`); null when Reins started the trace. */
  parentSpanId: string | null;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
/** Where the pipeline reports a call's progress: CallTelemetry (call-telemetry.ts). */
export interface CallTelemetryHooks {
  /** The call enters governance. */
  start(ctx: CallContext<any, any>): void;
  /** Allowed or refused. */
  decided(ctx: CallContext<any, any>): void;
  /** Parked for a person; returns the clock reading holdEnded takes. */
  holdStarted(ctx: CallContext<any, any>): number;
  holdEnded(ctx: CallContext<any, any>, since: number, outcome: string): void;
  /** The call is over; `data` is its audit event's data (usage, cost, callId). */
  ended(ctx: CallContext<any, any>, result: { status: number; end: string; responseModel?: string | undefined }, outcome: string, data: Record<string, unknown>): void;
  /** Headers that make Reins' span the upstream call's parent; undefined when Reins exports no span. */
  upstreamHeaders(ctx: CallContext<any, any>): Record<string, string> | undefined;
}
/* eslint-enable @typescript-eslint/no-explicit-any */

/** What a step may use besides the context: the governance's dependencies and its policy-decision memo. */
export interface StepEnv<D extends PipelineDeps = PipelineDeps> {
  readonly deps: D;
  readonly decisions: DecisionMemo;
}

/**
 * One step of the pipeline (agentgateway's per-policy `apply`): nothing to say (undefined, the next step runs),
 * a refusal (the pipeline stops), or a promise of either when the step must wait. A step returns a promise only
 * when it has to: the cached path (credential cached, grants in memory, nothing held, no budget) stays synchronous.
 */
export type StepResult = CallRefusal | undefined | Promise<CallRefusal | undefined>;
export type Step<Call, D extends PipelineDeps = PipelineDeps> = (ctx: CallContext<Call, D>, env: StepEnv<D>) => StepResult;

/** How a plane words what happened to a held (or holdable) call. */
export interface PlaneWords {
  /** `request`, `tool call`, `connection`. */
  noun: string;
  /** `send` / `sent` for an LLM request, `run` / `run` for a tool call. */
  send: string;
  sent: string;
  /** How to ask for an exception after a reviewer stopped the call (ends the sentence). */
  exceptionVia: string;
  /** Added after a timed-out hold's message. */
  timedOutAdvice: string;
  /** Whether a stopped call's message carries the developer's own request note. */
  noteAfterReview: boolean;
  /** The refusal when an approve policy decides and the call is not parked (held calls off, or never for this plane). */
  notParked(policy: DecidingPolicy): string;
}

/** Whether and how an approve outcome parks a call of this plane (hold-step.ts). */
export interface HoldSpec<Call, D extends PipelineDeps = PipelineDeps> {
  /** False: the call is never held and an approve outcome lets it through (LLM token counting, model listings). */
  applies(call: Call): boolean;
  /** The refusal when this call cannot be parked even with held calls on (Bedrock's other routes), else null. */
  cannotHold?(call: Call, policy: DecidingPolicy): string | null;
  request(ctx: CallContext<Call, D>, policy: DecidingPolicy, deps: D): HoldRequest;
}

/** The plane's part of the policy object: `llm`, `mcp` or `egress`. */
export type PolicySection = Pick<PolicyObjectInput, 'llm' | 'mcp' | 'egress'>;

/** A plane as the governance sees it: its steps, its policy section and audit facts, its words. */
export interface PlaneSpec<Call, D extends PipelineDeps = PipelineDeps> {
  /** The audit event's type and the policy object's `request.type`. */
  type: 'llm' | 'mcp' | 'egress';
  steps: readonly Step<Call, D>[];
  words: PlaneWords;
  /** Null: an approve outcome refuses the call (egress: connections are not parked). */
  hold: HoldSpec<Call, D> | null;
  /** The policy object's plane section, `{ llm }`, `{ mcp }` or `{ egress }`. */
  section(ctx: CallContext<Call, D>): PolicySection;
  /** Every field the policy object is built from, in one string; null when the decision must not be memoised. */
  memoKey(ctx: CallContext<Call, D>): string | null;
  action(call: Call): string;
  /** The audit event's host column (egress only). */
  host(call: Call): string | null;
  /** The counter label of a completed call (onCompleted). */
  label(call: Call): string;
  /** The call's facts in the decision event (and the single event of a refused call). */
  decisionFacts(call: Call): Record<string, unknown>;
  /** The call's facts repeated in the end event. */
  endFacts(call: Call): Record<string, unknown>;
  /** The model a policy refusal may be lifted for by a model-access request (LLM), for the developer's request note. */
  refusedModel?(call: Call): string | null;
}

const NO_NAMES: string[] = [];
const NO_RESERVATIONS: Reservation[] = [];
const NO_ADMISSIONS: RateAdmission[] = [];

export interface CallContext<Call, D extends PipelineDeps = PipelineDeps> {
  readonly plane: PlaneSpec<Call, D>;
  readonly call: Call;
  readonly caller: GovernedCaller;
  /** When the call was decided; read through callTime() (made only when a step needs it). */
  at: Date | null;
  tier: AutonomyTier;
  explicitTier: boolean;
  grants: CallerGrants;
  decision: Decision | null;
  /** The policies a grant exempted the caller from. */
  exempted: string[];
  refusal: CallRefusal | null;
  held: HeldRecord | null;
  /** Set when the decision event is queued: the end event then follows with the same id. */
  callId: string | null;
  /** LLM: the model's price (null: no model named) and the budget reservations to settle. */
  price: ModelPrice | null;
  /** LLM: the price is the fallback for a model no pattern matches (`prices.default`, …): what it was taken from. */
  fallbackPricedAs: string | null;
  reservations: Reservation[];
  /** LLM: the rate-limit counters the call was admitted against (its tokens are added there when it ends). */
  rateAdmissions: RateAdmission[];
  /**
   * Told just before the call is parked (the LLM plane keeps the client alive): the plane's events object, its
   * `onHeld` called as its method (the LLM gateway's is its per-call object, not a closure).
   */
  beforeHold: { onHeld?(): void } | undefined;
  /** Called once the call is parked, after its decision event is queued (the MCP plane tells the client). */
  onParked: ((entry: ParkedEntry) => void) | undefined;
  /** performance.now() when the pipeline took the call and when it decided (0: not yet), and the hold's wait. */
  startedAt: number;
  decidedAt: number;
  heldMs: number;
  /** The call's trace (W3C trace context), null when it has none; the span exported for it, when exporting. */
  trace: CallTrace | null;
  span: Span | null;
}

/**
 * Each call's context from its decision to its end, keyed by the call; every plane keeps one. The end forgets the
 * entry at once rather than leave that to the WeakMap: V8's young-generation collector keeps every entry of a WeakMap
 * that lives in the old generation, so an entry left there survives each young collection until a full one. Left to
 * the map, about 7 KB of every call (its context, body and request objects) reached the old generation and brought on
 * a full collection every few seconds at 1,000 calls/s (bench/gateway-overhead/README.md). Still a WeakMap, so that a
 * call that never ends (an exception in a plane) does not keep its context.
 */
export class CallContexts<K extends object, C> {
  private readonly byCall = new WeakMap<K, C>();

  begin(call: K, ctx: C): void {
    this.byCall.set(call, ctx);
  }

  /** The call's context, forgotten: a call ends once. */
  end(call: K): C | undefined {
    const ctx = this.byCall.get(call);
    this.byCall.delete(call);
    return ctx;
  }
}

export function newCallContext<Call, D extends PipelineDeps>(plane: PlaneSpec<Call, D>, call: Call, caller: GovernedCaller): CallContext<Call, D> {
  return {
    plane,
    call,
    caller,
    at: null,
    tier: 'T2',
    explicitTier: false,
    grants: NO_GRANTS,
    decision: null,
    exempted: NO_NAMES,
    refusal: null,
    held: null,
    callId: null,
    price: null,
    fallbackPricedAs: null,
    reservations: NO_RESERVATIONS,
    rateAdmissions: NO_ADMISSIONS,
    beforeHold: undefined,
    onParked: undefined,
    startedAt: 0,
    decidedAt: 0,
    heldMs: 0,
    trace: null,
    span: null,
  };
}

export function callTime<Call, D extends PipelineDeps>(ctx: CallContext<Call, D>): Date {
  return (ctx.at ??= new Date());
}
