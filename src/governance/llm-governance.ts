/**
 * What Reins does around every LLM call: the hooks the forwarding layer (llm/routes.ts) calls.
 *
 *   authenticate  the Reins credential (cached, revocation announced) -> the caller: developer, session, agent
 *   decide        policy object (tier from the tier cache) -> policies -> model access -> budget reservation
 *   completed     actual cost -> budget counters; the call's end event, queued for the batched writer
 *
 * Audit (audit/call-events.ts): an allowed call's decision event (`llm.request`) is queued when decide allows it,
 * before anything is forwarded, and its end event (`llm.request_end`: status, usage, cost) when it is over; a held
 * call's decision is queued when it is parked. A call refused at once is one `llm.request` event with its outcome.
 *
 * Nothing here queries the store on the common path except the budget reservation, and that only when a
 * budget rule binds the call.
 */
import type { AuditInput } from '../audit/audit.js';
import type { AuditWriter } from '../audit/audit-writer.js';
import { newCallId } from '../audit/call-events.js';
import type { TierCache } from '../identity/tier-cache.js';
import type { Decision } from '../policy/decision.js';
import { evaluate, preparePolicyObject } from '../policy/engine.js';
import { createPolicyObject, type AutonomyTier } from '../policy/policy-object.js';
import type { PolicySet } from '../policy/policy-set.js';
import type { Db } from '../store/db.js';
import { DecisionMemo } from './decision-memo.js';
import { callerActor, callerSections, callerSubject, resolveCaller, type CallerSections, type GovernedCaller } from './caller.js';
import type { CredentialCache } from './credential-cache.js';
import { NO_GRANTS, type CallerGrants, type GrantLookup } from '../approvals/grants.js';
import { refusalMessage } from './policy-refusal.js';
import type { RequestNotes } from '../approvals/request-notes.js';
import { heldCallDedupeKey } from '../held-calls/dedupe-key.js';
import { promptExcerpt } from '../held-calls/redact.js';
import type { HeldCallRegistry, HoldOutcome } from '../held-calls/registry.js';
import type { CallResult, DecideEvents, GatewayCredential, GatewayDecision, GatewayHooks, LlmCall } from '../planes/llm/types.js';
import { enforcedRules, periodKey, scopeCovers } from '../budgets/budget-rules.js';
import { costOf, estimateCost, globMatches, priceOf, type ModelPrice, type PriceTable } from '../budgets/prices.js';
import { reserveBudget, settleBudget, type Reservation } from '../budgets/budget-store.js';
import type { GatewayRules } from '../budgets/gateway-rules.js';

/** What decide learned, kept for the audit event and the budget settlement. */
interface CallContext {
  at: Date;
  tier: AutonomyTier;
  explicitTier: boolean;
  decision: Decision | null;
  refusal: { reason: string; message: string; agent?: string } | null;
  price: ModelPrice | null;
  reservations: Reservation[];
  exempted: string[];
  /** How a hold ended, when the call was parked. */
  held?: HoldOutcome;
  /** Set when the decision event is queued: the end event then follows with the same id. */
  callId: string | null;
}

export interface LlmGovernanceDeps {
  db: Db;
  tiers: TierCache;
  policies: PolicySet;
  credentials: CredentialCache;
  rules: GatewayRules;
  prices: PriceTable;
  audit: AuditWriter;
  grants: GrantLookup;
  /** What a refusal says about the developer's own request for the same policy or model (approvals). */
  notes?: RequestNotes;
  /** Parks calls an approve policy holds; absent: such calls are refused with the policy's message. */
  held?: HeldCallRegistry;
  /** Reins' own secret values (config.ts ownSecrets), redacted from held prompts' excerpts like any credential. */
  ownSecrets?: readonly string[];
  onTokenUse?: (tokenId: string) => void;
  onError?: (err: Error, what: string) => void;
  /** Counts each completed call by provider and outcome (ok, refused, error). */
  onCompleted?: (provider: string, outcome: string, refusal: string | null) => void;
}

/**
 * The two model families whose native Bedrock routes are held (the spec's "two model families"): Anthropic Claude
 * and Amazon Nova, on invoke and invoke-with-response-stream only. Their Converse routes and other families are
 * refused outright by an approve policy.
 */
function holdableOnBedrock(call: LlmCall<GovernedCaller>): boolean {
  const action = policyRoute('bedrock', call.route);
  const model = call.model ?? '';
  return (action === 'invoke' || action === 'invoke-with-response-stream') && /(^|[.:/])(anthropic\.claude|amazon\.nova)/.test(model);
}

/** The readable part of a prompt for the held-call entry: the last message's text, else the input or prompt. */
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
  if (typeof b.input === 'string') return b.input;
  if (Array.isArray(b.input)) return textOf(b.input.map((i) => (typeof i === 'object' && i !== null ? ((i as { content?: unknown }).content ?? i) : i)).flat());
  if (typeof b.prompt === 'string') return b.prompt;
  return JSON.stringify(b).slice(0, 2000);
}

const routeNames = new Map<string, string>();

/** `chat/completions`, `messages`, `converse`: the provider's route after its version prefix (memoised: few distinct routes). */
export function policyRoute(provider: string, route: string): string {
  const key = provider + route;
  let name = routeNames.get(key);
  if (name === undefined) {
    name = routeName(provider, route);
    if (routeNames.size >= 10_000) routeNames.clear();
    routeNames.set(key, name);
  }
  return name;
}

function routeName(provider: string, route: string): string {
  const path = route.split('?')[0] ?? route;
  if (provider === 'bedrock') return /^\/model\/[^/]+\/([a-z-]+)$/.exec(path)?.[1] ?? path.replace(/^\//, '');
  return path.replace(/^\/v1\//, '').replace(/^\//, '');
}

/** Every field the LLM policy object is built from (decision-memo.ts); namespace and name derive from the ids. */
function llmMemoKey(sections: CallerSections, caller: GovernedCaller, llm: LlmSection, exempt: ReadonlySet<string>): string | null {
  if (exempt.size > 0) return null;
  return [
    sections.agent.autonomyTier,
    caller.agentId,
    caller.developer?.id ?? '',
    caller.developer?.role ?? '',
    caller.sessionId,
    llm.provider,
    llm.route,
    llm.model,
    llm.stream ? 1 : 0,
    llm.maxTokens,
  ].join('\u0000');
}

type LlmSection = { provider: string; route: string; model: string; stream: boolean; maxTokens: number };

export class LlmGovernance implements GatewayHooks<GovernedCaller> {
  private readonly contexts = new WeakMap<LlmCall<GovernedCaller>, CallContext>();
  private readonly decisions = new DecisionMemo();

  constructor(private readonly deps: LlmGovernanceDeps) {}

  authenticate(credential: GatewayCredential): Promise<GovernedCaller | null> {
    return resolveCaller(this.deps, credential.secret, credential.headers);
  }

  async decide(call: LlmCall<GovernedCaller>, events?: DecideEvents): Promise<GatewayDecision> {
    // A full audit queue slows intake down instead of losing events. (No await when there is room: every
    // await is a trip through the microtask queue on the hot path.)
    const room = this.deps.audit.ready();
    if (room) await room;
    const caller = call.caller;
    const at = new Date();
    const sections = callerSections(caller, this.deps.tiers);
    const ctx: CallContext = {
      at,
      tier: sections.agent.autonomyTier,
      explicitTier: sections.explicitTier,
      decision: null,
      refusal: null,
      price: null,
      reservations: [],
      exempted: [],
      callId: null,
    };
    this.contexts.set(call, ctx);
    const refuse = (reason: Exclude<GatewayDecision, { outcome: 'allow' }>['reason'], message: string): GatewayDecision => {
      ctx.refusal = { reason, message };
      return { outcome: 'deny', reason, message };
    };

    if (caller.problem) {
      const refused = refuse(caller.problem.reason, `Reins refused this request: ${caller.problem.message}.`);
      if (caller.problem.agent !== undefined) ctx.refusal!.agent = caller.problem.agent;
      return refused;
    }
    if (call.bodyProblem) return refuse('bad_request', call.bodyProblem);

    let grants: CallerGrants = NO_GRANTS;
    if (caller.developer) {
      const found = this.deps.grants.forDeveloper(caller.developer.id, at, caller.project);
      grants = found instanceof Promise ? await found : found;
    }
    const llm = {
      provider: call.provider,
      route: policyRoute(call.provider, call.route),
      model: call.model ?? '',
      stream: call.stream,
      maxTokens: call.maxTokens ?? 0,
    };
    const policies = this.deps.policies.policies;
    const exempt = grants.exemptPolicies;
    const decision = this.decisions.decide(policies, llmMemoKey(sections, caller, llm, exempt), () =>
      evaluate(
        policies,
        preparePolicyObject(createPolicyObject({ request: { type: 'llm' }, agent: sections.agent, developer: sections.developer, session: sections.session, llm })),
        { exemptPolicies: exempt },
      ),
    );
    ctx.decision = decision;
    if (grants.exemptPolicies.size > 0) ctx.exempted = [...grants.exemptPolicies];

    if (decision.outcome === 'deny') {
      const p = decision.decidingPolicy!;
      return refuse('policy', await this.withNote(caller, refusalMessage(p.name, p.message), { policy: p.name }));
    }

    const rules = this.deps.rules.value;
    if (call.model !== null) {
      const covering = rules.modelAccess.filter((r) => scopeCovers(r.scope, caller.identityId));
      if (covering.length > 0) {
        const allowed = covering.some((r) => r.models.some((glob) => globMatches(glob, call.model!))) || grants.extraModels.some((glob) => globMatches(glob, call.model!));
        if (!allowed) {
          return refuse(
            'model_access',
            await this.withNote(
              caller,
              `Reins refused this request: ${caller.identityId} may not use model ${call.model} (allowed: ${[...new Set(covering.flatMap((r) => r.models))].join(', ')}). ` +
                `Use an allowed model, or ask for access: request type model_access in Reins (console Security > Approvals, ` +
                `POST /api/v1/access-requests, or the request tool of the reins MCP server).`,
              { model: call.model },
            ),
          );
        }
      }
    }

    // An approve outcome parks the call until a person decides; token counting and listings are never held.
    if (decision.outcome === 'approve' && call.metered) {
      const p = decision.decidingPolicy!;
      if (!this.deps.held) {
        return refuse('approval_required', `Reins policy "${p.name}" requires a person to approve this request, and held calls are not enabled: ${p.message}`);
      }
      if (call.provider === 'bedrock' && !holdableOnBedrock(call)) {
        return refuse(
          'approval_required',
          `Reins policy "${p.name}" requires a person to approve this request, and this Bedrock route cannot be held: only invoke and ` +
            `invoke-with-response-stream of Anthropic Claude and Amazon Nova models are parked for approval; other models and the Converse API are refused. ${p.message}`,
        );
      }
      events?.onHeld?.();
      const held = await this.deps.held.hold({
        kind: 'llm',
        requester: caller.developer?.id ?? null,
        agentId: caller.agentId,
        sessionId: caller.sessionId === '' ? null : caller.sessionId,
        tool: null,
        model: call.model,
        policyName: p.name,
        policyMessage: p.message,
        ...(p.approvalWindowSeconds === undefined ? {} : { approvalWindowSeconds: p.approvalWindowSeconds }),
        promptExcerpt: promptExcerpt(promptText(call.body), 500, this.deps.ownSecrets),
        dedupeKey: heldCallDedupeKey({
          kind: 'llm',
          agentId: caller.agentId,
          developerId: caller.developer?.id ?? null,
          sessionId: caller.sessionId === '' ? null : caller.sessionId,
          policyName: p.name,
          route: `/llm/${call.provider}${call.route}`,
          model: call.model ?? '',
          body: call.body,
        }),
      }, (entry) => this.recordDecision(call, ctx, entry.id));
      ctx.held = held;
      if (held.outcome === 'stopped' && held.decidedBy.startsWith('system:')) {
        return refuse('policy', `Reins stopped this held request before anyone decided: ${held.note}.`);
      }
      if (held.outcome === 'stopped') {
        return refuse(
          'policy',
          await this.withNote(
            caller,
            `Reins policy "${p.name}" stopped this request after review: ${p.message} Reviewer's note: "${held.note}". ` +
              `If you need it, request an exception to ${p.name} (console Security > Approvals, POST /api/v1/access-requests, or the request tool of the reins MCP server).`,
            { policy: p.name },
          ),
        );
      }
      if (held.outcome === 'timed_out' && !held.allow) {
        return refuse(
          'approval_required',
          `Reins policy "${p.name}" held this request for approval and no reviewer acted in time, so it was not sent: ${p.message} Try again later or ask an admin to review it.`,
        );
      }
      // Released or let through: the caller must still be who may send it.
      const revoked = await this.deps.credentials.revokedSince(caller.tokenId, caller.agentId);
      if (revoked) return refuse('credential_revoked', `Reins did not send this held request: ${revoked}.`);
    }

    if (call.metered && call.model !== null) {
      ctx.price = priceOf(this.deps.prices, call.provider, call.model);
      const binding = enforcedRules(rules.budgetRules, { identityId: caller.identityId, model: call.model });
      if (binding.length > 0 && ctx.price === null) {
        // Without a price a budget cannot be kept: refusing is the only way not to let spend around it.
        const rule = binding[0]!;
        return refuse(
          'budget',
          `Reins refused this request: budget "${rule.name}" applies to model ${call.model}, but Reins has no price for it, so the spend ` +
            `cannot be counted. Ask an admin to add a price for ${call.model} (config key prices), or use a priced model.`,
        );
      }
      if (binding.length > 0) {
        const estimate = ctx.price ? estimateCost(ctx.price, { inputBytes: call.bodyBytes, maxTokens: call.maxTokens }) : 0;
        for (const rule of binding) {
          // Agent keys have no session, so session budgets bind only calls made with a personal access token.
          if (rule.period === 'session' && caller.sessionId === '') continue;
          const topUp = grants.budgetTopUps.filter((t) => t.ruleId === null || t.ruleId === rule.id).reduce((sum, t) => sum + t.amountUsd, 0);
          ctx.reservations.push({
            ruleId: rule.id,
            identityId: caller.identityId,
            periodKey: periodKey(rule.period, { sessionId: caller.sessionId, at }),
            limitUsd: rule.limitUsd + topUp,
            amountUsd: estimate,
          });
        }
        if (ctx.reservations.length > 0) {
          const reserved = await reserveBudget(this.deps.db, ctx.reservations);
          if (!reserved.ok) {
            ctx.reservations = [];
            const rule = binding.find((r) => r.id === reserved.ruleId)!;
            return refuse(
              'budget',
              `Reins refused this request: budget "${rule.name}" (${rule.period}, $${reserved.limitUsd.toFixed(2)} for ${rule.pattern}) is used up ` +
                `($${reserved.spentUsd.toFixed(2)} spent${reserved.reservedUsd > 0 ? `, $${reserved.reservedUsd.toFixed(2)} reserved by calls in flight` : ''}). ` +
                `To continue, ask for a budget top-up: request type budget_topup in Reins (console Security > Approvals, ` +
                `POST /api/v1/access-requests, or the request tool of the reins MCP server).`,
            );
          }
        }
      }
    }
    // Recorded before the call is forwarded (queued, not awaited): a replica that stops mid-stream still leaves it.
    if (ctx.callId === null) this.recordDecision(call, ctx, null);
    return { outcome: 'allow' };
  }

  /** Appends what the developer's own latest request for this policy or model says; a failed lookup adds nothing. */
  private async withNote(caller: GovernedCaller, message: string, subject: { policy?: string; model?: string }): Promise<string> {
    if (!caller.developer || !this.deps.notes) return message;
    try {
      const note = await this.deps.notes.noteFor(caller.developer.id, subject);
      return note ? `${message} ${note}` : message;
    } catch (err) {
      this.deps.onError?.(err as Error, 'request note');
      return message;
    }
  }

  /** The facts and the decision: the decision event of an allowed or parked call, or the one event of a refused call. */
  private decisionData(call: LlmCall<GovernedCaller>, ctx: CallContext | undefined, callId: string): Record<string, unknown> {
    const caller = call.caller;
    const decision = ctx?.decision;
    const data: Record<string, unknown> = {
      callId,
      provider: call.provider,
      route: policyRoute(call.provider, call.route),
      model: call.model,
      stream: call.stream,
      maxTokens: call.maxTokens,
      agent: { id: caller.agentId, tier: ctx?.tier ?? 'T2', explicitTier: ctx?.explicitTier ?? false },
      developer: caller.developer?.id ?? null,
      session: caller.sessionId === '' ? null : caller.sessionId,
      tokenId: caller.tokenId,
      decision: decision?.outcome ?? (ctx?.refusal ? 'deny' : 'allow'),
      policy: decision?.decidingPolicy?.name ?? null,
      matched: decision?.matched.map((m) => m.name) ?? [],
      flagged: decision?.audit ?? false,
    };
    if (decision && decision.errors.length > 0) data.policyErrors = decision.errors;
    if (ctx?.exempted.length) {
      data.exemptedBy = 'grant';
      data.exempted = ctx.exempted;
    }
    return data;
  }

  /** Queues the decision event of an allowed call, or of a call parked for a person (`heldEntryId`). */
  private recordDecision(call: LlmCall<GovernedCaller>, ctx: CallContext, heldEntryId: string | null): void {
    if (ctx.callId !== null) return;
    ctx.callId = newCallId();
    const data = this.decisionData(call, ctx, ctx.callId);
    if (heldEntryId !== null) data.held = { entryId: heldEntryId };
    this.enqueue({ type: 'llm', action: 'llm.request', actor: callerActor(call.caller), outcome: 'ok', subject: callerSubject(call.caller), data });
  }

  completed(call: LlmCall<GovernedCaller>, result: CallResult): void {
    const ctx = this.contexts.get(call);
    const caller = call.caller;
    const cost = ctx?.price && result.usage ? costOf(ctx.price, result.usage) : null;
    if (ctx && ctx.reservations.length > 0) {
      settleBudget(this.deps.db, ctx.reservations, cost ?? 0).catch((err: Error) => this.deps.onError?.(err, 'budget settlement'));
    }
    const outcome = result.end === 'refused' ? 'refused' : result.end === 'upstream_unreachable' || result.status >= 400 ? 'error' : 'ok';
    this.deps.onCompleted?.(call.provider, outcome, ctx?.refusal?.reason ?? null);
    const decided = ctx?.callId ?? null;
    let data: Record<string, unknown>;
    if (decided === null) {
      // Refused at once (or decided without a context): one event holds the decision and the outcome.
      data = this.decisionData(call, ctx, newCallId());
    } else {
      // The end of a call whose decision event is already queued: only what the end adds, and what spend groups by.
      data = { callId: decided, provider: call.provider, model: call.model, session: caller.sessionId === '' ? null : caller.sessionId };
    }
    // With the outcome, since that is where the cost is (or is not) counted: spend's unpricedRequests, settled budgets.
    if (call.metered && call.model !== null && ctx?.price === null) data.unpriced = true;
    if (ctx && ctx.reservations.length > 0) data.budgetRules = ctx.reservations.map((r) => r.ruleId);
    if (ctx?.refusal) data.refusal = ctx.refusal;
    if (ctx?.held) data.held = ctx.held.outcome === 'timed_out' ? { entryId: ctx.held.entryId, outcome: ctx.held.outcome, letThrough: ctx.held.allow } : { entryId: ctx.held.entryId, outcome: ctx.held.outcome };
    data.status = result.status;
    data.end = result.end;
    data.durationMs = Math.round(result.durationMs * 1000) / 1000;
    data.usage = result.usage ?? null;
    data.costUsd = cost;
    this.enqueue({
      type: 'llm',
      action: decided === null ? 'llm.request' : 'llm.request_end',
      actor: callerActor(caller),
      outcome,
      subject: callerSubject(caller),
      data,
    });
  }

  private enqueue(event: AuditInput): void {
    try {
      void this.deps.audit.enqueue(event);
    } catch (err) {
      this.deps.onError?.(err as Error, 'audit enqueue');
    }
  }
}
