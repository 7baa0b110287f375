/**
 * What Reins does around every LLM call: the hooks the forwarding layer (planes/llm/routes.ts) calls, on the
 * governance pipeline (pipeline.ts) with the LLM plane's steps and words.
 *
 *   authenticate  the Reins credential (cached, revocation announced) -> the caller: developer, session, agent
 *   decide        audit room -> caller -> request body -> grants -> policies -> model access -> rate limits -> hold -> budget
 *   completed     actual cost -> budget counters; the call's end event, queued for the batched writer
 *
 * Audit (audit-record.ts): an allowed call's decision event (`llm.request`) is queued when decide allows it,
 * before anything is forwarded, and its end event (`llm.request_end`: status, usage, cost) when it is over; a held
 * call's decision is queued when it is parked. A call refused at once is one `llm.request` event with its outcome.
 *
 * Nothing here queries the store on the common path except the budget reservation, and that only when a
 * budget rule binds the call.
 */
import type { TierCache } from '../identity/tier-cache.js';
import type { PolicySet } from '../policy/policy-set.js';
import type { Db } from '../store/db.js';
import type { AuditWriter } from '../audit/audit-writer.js';
import type { GrantLookup } from '../approvals/grants.js';
import type { RequestNotes } from '../approvals/request-notes.js';
import { promptExcerpt } from '../held-calls/redact.js';
import type { HeldCallRegistry } from '../held-calls/registry.js';
import type { ProviderName } from '../config/config.js';
import { PROVIDERS } from '../planes/llm/providers/index.js';
import type { CallResult, DecideEvents, GatewayCredential, GatewayDecision, GatewayHooks, LlmCall } from '../planes/llm/types.js';
import { costOf, globMatches, type PriceTable } from '../budgets/prices.js';
import { upstreamPrice } from '../budgets/upstream-prices.js';
import { settleBudget } from '../budgets/budget-store.js';
import type { GatewayRules } from '../budgets/gateway-rules.js';
import { recordEnd } from './audit-record.js';
import { CallContexts, newCallContext, type CallContext, type PlaneSpec, type StepResult } from './call-context.js';
import { resolveCallerNow, type GovernedCaller } from './caller.js';
import type { CredentialCache } from './credential-cache.js';
import { GovernancePipeline } from './pipeline.js';
import { auditRoomStep } from './steps/audit-room-step.js';
import { budgetStep, type BudgetDeps } from './steps/budget-step.js';
import { callerStep } from './steps/caller-step.js';
import { grantsStep } from './steps/grants-step.js';
import { holdRequest, holdStep } from './steps/hold-step.js';
import { modelAccessStep } from './steps/model-access-step.js';
import { policyStep } from './steps/policy-step.js';
import { rateLimitStep } from './steps/rate-limit-step.js';
import { countRateTokens } from '../budgets/rate-limit-store.js';

export interface LlmGovernanceDeps extends BudgetDeps {
  db: Db;
  tiers: TierCache;
  policies: PolicySet;
  credentials: CredentialCache;
  rules: GatewayRules;
  prices: PriceTable;
  audit: AuditWriter;
  grants: GrantLookup;
  notes?: RequestNotes;
  held?: HeldCallRegistry;
  /** Reins' own secret values (config.ts ownSecrets), redacted from held prompts' excerpts like any credential. */
  ownSecrets?: readonly string[];
}

type Call = LlmCall<GovernedCaller>;
type Context = CallContext<Call, LlmGovernanceDeps>;

/** The readable part of a prompt for the held-call entry: the last message's (or Gemini content's) text, else the input or prompt. */
function promptText(body: unknown): string {
  if (typeof body !== 'object' || body === null) return '';
  const b = body as Record<string, unknown>;
  const textOf = (content: unknown): string =>
    typeof content === 'string'
      ? content
      : Array.isArray(content)
        ? content.map((part) => (typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : '')).join(' ')
        : '';
  if (Array.isArray(b.messages) && b.messages.length > 0) {
    const last = b.messages[b.messages.length - 1] as { content?: unknown };
    const text = textOf(last?.content);
    if (text) return text;
  }
  // Gemini: contents[].parts[].text.
  if (Array.isArray(b.contents) && b.contents.length > 0) {
    const last = b.contents[b.contents.length - 1] as { parts?: unknown } | string;
    const text = typeof last === 'string' ? last : textOf(last?.parts);
    if (text) return text;
  }
  if (typeof b.input === 'string') return b.input;
  if (Array.isArray(b.input)) return textOf(b.input.map((i) => (typeof i === 'object' && i !== null ? ((i as { content?: unknown }).content ?? i) : i)).flat());
  if (typeof b.prompt === 'string') return b.prompt;
  return JSON.stringify(b).slice(0, 2000);
}

/** By provider, then route: no key string made per look-up (a call looks its route up three times). */
const routeNames = new Map<string, Map<string, string>>();
let routeNameCount = 0;

/** `chat/completions`, `messages`, `converse`: the provider's route after its version prefix (memoised: few distinct routes). */
export function policyRoute(provider: ProviderName, route: string): string {
  let names = routeNames.get(provider);
  let name = names?.get(route);
  if (name === undefined) {
    name = routeName(provider, route);
    if (routeNameCount >= 10_000) {
      routeNames.clear();
      routeNameCount = 0;
      names = undefined;
    }
    if (names === undefined) routeNames.set(provider, (names = new Map()));
    names.set(route, name);
    routeNameCount++;
  }
  return name;
}

function routeName(provider: ProviderName, route: string): string {
  return PROVIDERS[provider].policyRoute(route.split('?')[0] ?? route);
}

/** A body Reins will not read (nested too deep) is refused before anything else is looked at. */
function requestBodyStep(ctx: Context): StepResult {
  const problem = ctx.call.bodyProblem;
  return problem ? { reason: 'bad_request', message: problem } : undefined;
}

/** An approved model-access request's grant covers the model: the policies see it (`object.llm.modelAccessGranted`). */
function modelAccessGranted(ctx: Context): boolean {
  const model = ctx.call.model;
  const globs = ctx.grants.extraModels;
  return model !== null && globs.length > 0 && globs.some((glob) => globMatches(glob, model));
}

function llmSection(ctx: Context): { provider: string; upstream: string; route: string; model: string; stream: boolean; maxTokens: number; modelAccessGranted: boolean } {
  const call = ctx.call;
  return {
    provider: call.provider,
    upstream: call.upstream,
    route: policyRoute(call.provider, call.route),
    model: call.model ?? '',
    stream: call.stream,
    maxTokens: call.maxTokens ?? 0,
    modelAccessGranted: modelAccessGranted(ctx),
  };
}

/** The LLM plane as the governance pipeline sees it. */
export const LLM_PLANE: PlaneSpec<Call, LlmGovernanceDeps> = {
  type: 'llm',
  // Rate limits before the hold: a person should not approve a call the minute's limit would refuse anyway.
  steps: [auditRoomStep, callerStep, requestBodyStep, grantsStep, policyStep, modelAccessStep, rateLimitStep, holdStep, budgetStep],
  words: {
    noun: 'request',
    send: 'send',
    sent: 'sent',
    exceptionVia: '(console Security > Approvals, POST /api/v1/access-requests, or the request tool of the reins MCP server)',
    timedOutAdvice: ' Try again later or ask an admin to review it.',
    noteAfterReview: true,
    notParked: (p) => `Reins policy "${p.name}" requires a person to approve this request, and held calls are not enabled: ${p.message}`,
  },
  hold: {
    // Token counting and listings are never held.
    applies: (call) => call.metered,
    // Some routes of a provider cannot be parked (Bedrock: only the native routes of two model families).
    cannotHold: (call, p) => {
      const why = PROVIDERS[call.provider].unholdable?.(policyRoute(call.provider, call.route), call.model ?? '') ?? null;
      return why === null ? null : `Reins policy "${p.name}" requires a person to approve this request, and ${why} ${p.message}`;
    },
    request: ({ call, caller }, p, deps) =>
      holdRequest(caller, p, {
        tool: null,
        model: call.model,
        promptExcerpt: promptExcerpt(promptText(call.body), 500, deps.ownSecrets),
        identity: { kind: 'llm', route: `/llm/${call.upstream}${call.route}`, model: call.model ?? '', body: call.body },
      }),
  },
  section: (ctx) => ({ llm: llmSection(ctx) }),
  /**
   * Every field the LLM policy object is built from (decision-memo.ts); namespace and name derive from the ids. Built
   * on every call, as one `join`: a template of 23 parts made a chain of intermediate strings before the flat one
   * the memo's look-up needs (0.7 against 0.35 KB a call, bench/gateway-overhead/allocations.ts).
   */
  memoKey: (ctx) =>
    [
      ctx.tier,
      ctx.caller.agentId,
      ctx.caller.developer?.id ?? '',
      ctx.caller.developer?.role ?? '',
      ctx.caller.sessionId,
      ctx.call.provider,
      ctx.call.upstream,
      policyRoute(ctx.call.provider, ctx.call.route),
      ctx.call.model ?? '',
      ctx.call.stream ? 1 : 0,
      ctx.call.maxTokens ?? 0,
      modelAccessGranted(ctx) ? 1 : 0,
    ].join('\u0000'),
  action: () => 'llm.request',
  host: () => null,
  label: (call) => call.provider,
  decisionFacts: (call) => ({
    provider: call.provider,
    upstream: call.upstream,
    route: policyRoute(call.provider, call.route),
    model: call.model,
    stream: call.stream,
    maxTokens: call.maxTokens,
  }),
  // What spend groups by.
  endFacts: (call) => ({ provider: call.provider, upstream: call.upstream, model: call.model }),
  refusedModel: (call) => call.model,
};

const ALLOW: GatewayDecision = Object.freeze({ outcome: 'allow' });

export class LlmGovernance implements GatewayHooks<GovernedCaller> {
  private readonly contexts = new CallContexts<Call, Context>();
  private readonly pipeline: GovernancePipeline<LlmGovernanceDeps>;

  constructor(private readonly deps: LlmGovernanceDeps) {
    this.pipeline = new GovernancePipeline(deps);
  }

  authenticate(credential: GatewayCredential): GovernedCaller | null | Promise<GovernedCaller | null> {
    return resolveCallerNow(this.deps, credential.secret, credential.headers);
  }

  /** A value when the pipeline decided without waiting (no store read, no hold), else a promise. */
  decide(call: Call, events?: DecideEvents): GatewayDecision | Promise<GatewayDecision> {
    const ctx = newCallContext(LLM_PLANE, call, call.caller);
    ctx.beforeHold = events;
    this.contexts.begin(call, ctx);
    const run = this.pipeline.run(ctx);
    return run instanceof Promise ? run.then((decided) => this.decision(decided)) : this.decision(run);
  }

  /** The gateway's answer for a decided context (the pipeline gives back the context it was given). */
  private decision(ctx: Context): GatewayDecision {
    const refusal = ctx.refusal;
    if (refusal) {
      return refusal.retryAfterSeconds === undefined
        ? { outcome: 'deny', reason: refusal.reason, message: refusal.message }
        : { outcome: 'deny', reason: refusal.reason, message: refusal.message, retryAfterSeconds: refusal.retryAfterSeconds };
    }
    const upstreamHeaders = this.deps.telemetry?.upstreamHeaders(ctx);
    return upstreamHeaders ? { outcome: 'allow', upstreamHeaders } : ALLOW;
  }

  completed(call: Call, result: CallResult): void {
    // A call completed without a decision (none expected) is still recorded, as decided by nothing.
    const ctx = this.contexts.end(call) ?? newCallContext(LLM_PLANE, call, call.caller);
    // Azure: the deployment's model, as the answer names it, is what the call is priced (and its end recorded) as.
    const answerModel = PROVIDERS[call.provider].priceByResponseModel && result.responseModel !== undefined ? result.responseModel : null;
    // The model the answer names (Azure: the deployment's model) prices the call when the list knows it.
    let pricedAs = ctx.fallbackPricedAs;
    const answerPrice = answerModel !== null ? upstreamPrice(this.deps, call.upstream, call.provider, answerModel) : null;
    if (answerPrice !== null) {
      ctx.price = answerPrice;
      pricedAs = null;
    }
    const cost = ctx.price && result.usage ? costOf(ctx.price, result.usage) : null;
    if (ctx.rateAdmissions.length > 0 && result.usage) {
      const tokens = result.usage.inputTokens + result.usage.outputTokens + (result.usage.cacheReadTokens ?? 0) + (result.usage.cacheWriteTokens ?? 0);
      countRateTokens(this.deps.db, ctx.rateAdmissions, tokens).catch((err: Error) => this.deps.onError?.(err, 'rate-limit tokens'));
    }
    if (ctx.reservations.length > 0) {
      settleBudget(this.deps.db, ctx.reservations, cost ?? 0).catch((err: Error) => this.deps.onError?.(err, 'budget settlement'));
    }
    recordEnd(ctx, this.pipeline, result, (data) => {
      // With the outcome, since that is where the cost is counted: spend's estimatedRequests, settled budgets. A model
      // no price names is costed with the fallback: the cost is an estimate, and says what it was priced as.
      if (answerModel !== null) data.model = answerModel;
      if (cost !== null) data.costEstimated = pricedAs !== null;
      if (pricedAs !== null) data.pricedAs = pricedAs;
      if (ctx.reservations.length > 0) data.budgetRules = ctx.reservations.map((r) => r.ruleId);
      data.usage = result.usage ?? null;
      data.costUsd = cost;
    });
  }
}
