/**
 * Policy decisions and audit for the MCP and egress planes: the caller (credential and Reins headers), the
 * policy object with the agent's tier at this moment, the caller's grants, one decision, and its audit events
 * (type `mcp` or `egress`; only egress events carry the destination host): an allowed or parked call's decision
 * event when it is decided, before anything is forwarded, and its end event (`…_end`) when it is over, joined by
 * `data.callId`; a call refused at once is one event (audit/call-events.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { AuditInput } from '../audit/audit.js';
import type { AuditWriter } from '../audit/audit-writer.js';
import { endActionOf, newCallId } from '../audit/call-events.js';
import type { TierCache } from '../identity/tier-cache.js';
import type { Decision } from '../policy/decision.js';
import { evaluate, preparePolicyObject } from '../policy/engine.js';
import { canonicalHost, createPolicyObject, MCP_ANNOTATION_DEFAULTS, type AutonomyTier, type JsonValue, type ToolAnnotations } from '../policy/policy-object.js';
import type { PolicySet } from '../policy/policy-set.js';
import { DecisionMemo } from './decision-memo.js';
import { callerActor, callerSections, callerSubject, callerTier, resolveCallerNow, type GovernedCaller } from './caller.js';
import type { CredentialCache } from './credential-cache.js';
import { NO_GRANTS, type CallerGrants, type GrantLookup } from '../approvals/grants.js';
import type { EgressCredential, EgressDecision, EgressHooks, EgressRequest, EgressResult } from '../planes/egress/types.js';
import { refusalMessage } from './policy-refusal.js';
import type { RequestNotes } from '../approvals/request-notes.js';
import { heldCallDedupeKey } from '../held-calls/dedupe-key.js';
import type { HeldCallRegistry } from '../held-calls/registry.js';
import type { McpCallResult, McpCredential, McpDecideEvents, McpDecision, McpHooks, McpToolCall } from '../planes/mcp/types.js';

export interface PlaneGovernanceDeps {
  tiers: TierCache;
  policies: PolicySet;
  credentials: CredentialCache;
  audit: AuditWriter;
  grants: GrantLookup;
  onTokenUse?: (tokenId: string) => void;
  onError?: (err: Error, what: string) => void;
  onCompleted?: (plane: string, outcome: string, refusal: string | null) => void;
  /** What a refusal says about the developer's own request for an exception to the refusing policy. */
  notes?: RequestNotes;
  /** Parks tool calls an approve policy holds; absent: such calls are refused with the policy's message. */
  held?: HeldCallRegistry;
}

export interface McpCallFacts {
  server: string;
  tool: string;
  arguments: { [key: string]: JsonValue };
  /** As the upstream declared them in tools/list; undeclared hints take MCP's defaults. */
  annotations: Partial<ToolAnnotations>;
}

export interface EgressFacts {
  host: string;
  port: number;
  scheme: 'http' | 'https';
  /** The HTTP method; CONNECT for a tunnel. */
  method: string;
}

/** The outcome of one decision, with what the audit event needs. */
export interface PlaneVerdict {
  outcome: 'allow' | 'deny';
  /** The sentence the person sees when denied. */
  message: string;
  reason: 'policy' | 'approval_required' | 'bad_request' | 'agent_not_bound' | 'credential_revoked' | null;
  tier: AutonomyTier;
  explicitTier: boolean;
  decision: Decision | null;
  exempted: string[];
  /** How a hold ended, for a call that was parked for a person. */
  held?: { entryId: string; outcome: string; letThrough?: boolean };
  /** Set once the decision event is queued: the end event follows with the same id. Null for a call refused at once. */
  callId: string | null;
}

export interface PlaneResult {
  status: number;
  end: 'forwarded' | 'refused' | 'address_denied' | 'upstream_unreachable' | 'client_aborted';
  durationMs: number;
  isError?: boolean;
  bytesUp?: number;
  bytesDown?: number;
  /** Egress allowed by policy but refused on the address it is or resolved to (egress.deniedNetworks). */
  deniedAddress?: { address: string; network: string; message: string } | undefined;
}

/** The most characters of tool arguments a memoised decision is keyed by; larger arguments are evaluated each time. */
const MEMO_ARGUMENTS_LIMIT = 2048;
/**
 * Every field the policy object is built from, in one string; namespace, name and level derive from the ids and
 * the tier, and MCP's undeclared hints from their defaults. Null when the call is not worth remembering: tool
 * arguments too large for the memo, or holding a -0 (JSON.stringify writes it as 0, yet CEL's doubles tell them
 * apart).
 */
function memoKey(caller: GovernedCaller, tier: AutonomyTier, type: 'mcp' | 'egress', section: { mcp?: McpCallFacts; egress?: EgressFacts }): string | null {
  const who = `${type}\u0000${tier}\u0000${caller.agentId}\u0000${caller.developer?.id ?? ''}\u0000${caller.developer?.role ?? ''}\u0000${caller.sessionId}`;
  if (section.egress) {
    const e = section.egress;
    return `${who}\u0000${e.host}\u0000${e.port}\u0000${e.scheme}\u0000${e.method}`;
  }
  const m = section.mcp;
  if (!m) return null;
  const args = JSON.stringify(m.arguments);
  if (args.length > MEMO_ARGUMENTS_LIMIT || (ZERO_NUMBER.test(args) && holdsNegativeZero(m.arguments))) return null;
  const a = m.annotations;
  const d = MCP_ANNOTATION_DEFAULTS;
  // The tool name is the client's own text: quoted, so that no name can stand for another field of the key.
  return `${who}\u0000${m.server}\u0000${JSON.stringify(m.tool)}\u0000${hint(a.readOnlyHint, d.readOnlyHint)}\u0000${hint(a.destructiveHint, d.destructiveHint)}\u0000${hint(a.idempotentHint, d.idempotentHint)}\u0000${hint(a.openWorldHint, d.openWorldHint)}\u0000${args}`;
}

/** A hint as the policy object will hold it: an undeclared one takes MCP's default (createPolicyObject). */
function hint(declared: boolean | undefined, otherwise: boolean): string {
  return String(declared === undefined ? otherwise : declared);
}

/** A number 0 in JSON text (or text that looks like one inside a string, which only costs a closer look). */
const ZERO_NUMBER = /[:[,]-?0[,\]}]/;

function holdsNegativeZero(value: JsonValue): boolean {
  if (typeof value === 'number') return Object.is(value, -0);
  if (value === null || typeof value !== 'object') return false;
  return Array.isArray(value) ? value.some(holdsNegativeZero) : Object.values(value).some(holdsNegativeZero);
}

export class PlaneGovernance {
  private readonly decisions = new DecisionMemo();

  constructor(private readonly deps: PlaneGovernanceDeps) {}

  /** The caller; without a promise when its credential is cached. */
  authenticate(secret: string, headers: IncomingHttpHeaders): GovernedCaller | null | Promise<GovernedCaller | null> {
    return resolveCallerNow(this.deps, secret, headers);
  }

  async decideMcp(caller: GovernedCaller, facts: McpCallFacts, events?: McpDecideEvents): Promise<PlaneVerdict> {
    const decided = this.decide(caller, 'mcp', { mcp: facts });
    const verdict = decided instanceof Promise ? await decided : decided;
    const p = verdict.decision?.decidingPolicy;
    // An approve outcome parks the tool call for a person when held calls are enabled.
    if (verdict.reason !== 'approval_required' || !this.deps.held || !p) return verdict;
    const sessionId = caller.sessionId === '' ? null : caller.sessionId;
    const held = await this.deps.held.hold({
      kind: 'mcp',
      requester: caller.developer?.id ?? null,
      agentId: caller.agentId,
      sessionId,
      tool: `${facts.server}/${facts.tool}`,
      model: null,
      policyName: p.name,
      policyMessage: p.message,
      ...(p.approvalWindowSeconds === undefined ? {} : { approvalWindowSeconds: p.approvalWindowSeconds }),
      promptExcerpt: null,
      dedupeKey: heldCallDedupeKey({ kind: 'mcp', agentId: caller.agentId, developerId: caller.developer?.id ?? null, sessionId, policyName: p.name, server: facts.server, tool: facts.tool, arguments: facts.arguments }),
    }, (entry) => {
      // The hold is the decision: recorded when the call is parked, its outcome with the end event.
      this.recordDecision(caller, 'mcp', 'mcp.tool_call', null, mcpFactData(facts), verdict, entry.id);
      events?.onHeld?.({ entryId: entry.id, policyName: p.name, policyMessage: p.message, expiresAt: entry.expiresAt });
    });
    const heldData = held.outcome === 'timed_out' ? { entryId: held.entryId, outcome: held.outcome, letThrough: held.allow } : { entryId: held.entryId, outcome: held.outcome };
    if (held.outcome === 'released' || (held.outcome === 'timed_out' && held.allow)) {
      // The caller must still be who may run it: a credential revoked or an identity deleted while it waited.
      const revoked = await this.deps.credentials.revokedSince(caller.tokenId, caller.agentId);
      if (revoked) return { ...verdict, reason: 'credential_revoked', message: `Reins did not run this held tool call: ${revoked}.`, held: heldData };
      return { ...verdict, outcome: 'allow', message: '', reason: null, held: heldData };
    }
    if (held.outcome === 'stopped' && held.decidedBy.startsWith('system:')) {
      return { ...verdict, held: heldData, reason: 'policy', message: `Reins stopped this held tool call before anyone decided: ${held.note}.` };
    }
    if (held.outcome === 'stopped') {
      return {
        ...verdict,
        held: heldData,
        reason: 'policy',
        message: `Reins policy "${p.name}" stopped this tool call after review: ${p.message} Reviewer's note: "${held.note}". If you need it, request an exception to ${p.name} with the request_policy_exception tool of the reins MCP server.`,
      };
    }
    return { ...verdict, held: heldData, message: `Reins policy "${p.name}" held this tool call for approval and no reviewer acted in time, so it was not run: ${p.message}` };
  }

  /** The verdict on a connection or request; without a promise when nothing has to be waited for (the common case). */
  decideEgress(caller: GovernedCaller, facts: EgressFacts): PlaneVerdict | Promise<PlaneVerdict> {
    return this.decide(caller, 'egress', { egress: { host: canonicalHost(facts.host), port: facts.port, scheme: facts.scheme, method: facts.method } });
  }

  /**
   * Every await here is a trip through the microtask queue on the hot path, so there is none unless something
   * must be waited for: a full audit queue (intake slows down instead of losing events), grants not in memory,
   * the note a refusal carries.
   */
  private decide(caller: GovernedCaller, type: 'mcp' | 'egress', section: { mcp?: McpCallFacts; egress?: EgressFacts }): PlaneVerdict | Promise<PlaneVerdict> {
    const room = this.deps.audit.ready();
    if (room) return room.then(() => this.decideWithRoom(caller, type, section));
    return this.decideWithRoom(caller, type, section);
  }

  private decideWithRoom(caller: GovernedCaller, type: 'mcp' | 'egress', section: { mcp?: McpCallFacts; egress?: EgressFacts }): PlaneVerdict | Promise<PlaneVerdict> {
    const tier = callerTier(caller, this.deps.tiers);
    if (caller.problem) {
      return {
        tier: tier.autonomyTier,
        explicitTier: tier.explicit,
        exempted: [],
        outcome: 'deny',
        message: `Reins refused this request: ${caller.problem.message}.`,
        reason: caller.problem.reason,
        decision: null,
        callId: null,
      };
    }
    if (!caller.developer) return this.verdict(caller, tier, type, section, NO_GRANTS);
    const found = this.deps.grants.forDeveloper(caller.developer.id, new Date(), caller.project);
    return found instanceof Promise ? found.then((grants) => this.verdict(caller, tier, type, section, grants)) : this.verdict(caller, tier, type, section, found);
  }

  private verdict(
    caller: GovernedCaller,
    tier: { autonomyTier: AutonomyTier; explicit: boolean },
    type: 'mcp' | 'egress',
    section: { mcp?: McpCallFacts; egress?: EgressFacts },
    grants: CallerGrants,
  ): PlaneVerdict | Promise<PlaneVerdict> {
    const policies = this.deps.policies.policies;
    const exempt = grants.exemptPolicies;
    const decision = this.decisions.decide(policies, exempt.size > 0 ? null : memoKey(caller, tier.autonomyTier, type, section), () => {
      const sections = callerSections(caller, this.deps.tiers, tier);
      const object = createPolicyObject({ request: { type }, agent: sections.agent, developer: sections.developer, session: sections.session, ...section });
      return evaluate(policies, preparePolicyObject(object), { exemptPolicies: exempt });
    });
    const exempted = exempt.size > 0 ? [...exempt] : [];
    const p = decision.decidingPolicy;
    if (decision.outcome === 'deny' && p) {
      const message = refusalMessage(p.name, p.message);
      const denied = (text: string): PlaneVerdict => ({ tier: tier.autonomyTier, explicitTier: tier.explicit, exempted, outcome: 'deny', message: text, reason: 'policy', decision, callId: null });
      if (!caller.developer || !this.deps.notes) return denied(message);
      return this.deps.notes
        .noteFor(caller.developer.id, { policy: p.name })
        .catch(() => null)
        .then((note) => denied(note ? `${message} ${note}` : message));
    }
    if (decision.outcome === 'approve' && p) {
      // Held calls come with the human-review workflow; until then an approve outcome stops the call and says why.
      return {
        tier: tier.autonomyTier,
        explicitTier: tier.explicit,
        exempted,
        outcome: 'deny',
        message:
          type === 'mcp'
            ? `Reins policy "${p.name}" requires a person to approve this tool call, and held calls are not enabled: ${p.message}`
            : `Reins policy "${p.name}" requires a person to approve this connection; connections are not parked for approval, so it is refused: ${p.message}`,
        reason: 'approval_required',
        decision,
        callId: null,
      };
    }
    // Written out rather than spread from a shared base: see decisionData().
    return { tier: tier.autonomyTier, explicitTier: tier.explicit, exempted, outcome: 'allow', message: '', reason: null, decision, callId: null };
  }

  /**
   * Whether the policies refuse this tool for this caller whatever its arguments say, judged on a call with no
   * arguments: used only to hide tools from tools/list (a courtesy to the model; calls are always decided).
   */
  alwaysDeniesTool(caller: GovernedCaller, tool: { server: string; tool: string; annotations: Partial<ToolAnnotations> }): boolean {
    if (caller.problem) return false;
    let grants: CallerGrants = NO_GRANTS;
    if (caller.developer) {
      const found = this.deps.grants.forDeveloper(caller.developer.id, new Date(), caller.project);
      // A lookup that must wait cannot hide anything here: show the tool and let the call be decided.
      if (found instanceof Promise) return false;
      grants = found;
    }
    const sections = callerSections(caller, this.deps.tiers);
    const object = createPolicyObject({ request: { type: 'mcp' }, agent: sections.agent, developer: sections.developer, session: sections.session, mcp: { ...tool, arguments: {} } });
    const decision = evaluate(this.deps.policies.policies, preparePolicyObject(object), { exemptPolicies: grants.exemptPolicies });
    return decision.outcome === 'deny' && decision.errors.length === 0;
  }

  /** Queues the decision event of an allowed tool call, before it is forwarded. */
  recordMcpDecision(caller: GovernedCaller, facts: McpCallFacts, verdict: PlaneVerdict): void {
    this.recordDecision(caller, 'mcp', 'mcp.tool_call', null, mcpFactData(facts), verdict, null);
  }

  /** Queues the decision event of an allowed request or tunnel, before anything reaches the origin. */
  recordEgressDecision(caller: GovernedCaller, facts: EgressFacts, verdict: PlaneVerdict): void {
    this.recordDecision(caller, 'egress', egressAction(facts), canonicalHost(facts.host), egressFactData(facts), verdict, null);
  }

  /** The call is over: its end event, or, for a call refused at once, its one event. */
  recordMcp(caller: GovernedCaller, facts: McpCallFacts, verdict: PlaneVerdict, result: PlaneResult): void {
    this.record(caller, 'mcp', 'mcp.tool_call', null, mcpFactData(facts), verdict, result);
  }

  recordEgress(caller: GovernedCaller, facts: EgressFacts, verdict: PlaneVerdict, result: PlaneResult): void {
    this.record(caller, 'egress', egressAction(facts), canonicalHost(facts.host), egressFactData(facts), verdict, result);
  }

  /** The facts and the decision, as the decision event (or the one event of a refused call) holds them. */
  private decisionData(caller: GovernedCaller, facts: Record<string, unknown>, verdict: PlaneVerdict, callId: string): Record<string, unknown> {
    const d = verdict.decision;
    // Not `{ ...facts, agent, … }`: on Node 20's V8 every property added to an object that a leading spread made
    // (in the literal or assigned afterwards) takes a slow path, about 0.7 µs each: 10 µs per call here.
    // Object.assign onto a fresh literal keeps the fast path.
    const data: Record<string, unknown> = Object.assign({ callId }, facts);
    data.agent = { id: caller.agentId, tier: verdict.tier, explicitTier: verdict.explicitTier };
    data.developer = caller.developer?.id ?? null;
    data.session = caller.sessionId === '' ? null : caller.sessionId;
    data.tokenId = caller.tokenId;
    data.decision = d?.outcome ?? (verdict.outcome === 'deny' ? 'deny' : 'allow');
    data.policy = d?.decidingPolicy?.name ?? null;
    data.matched = d?.matched.map((m) => m.name) ?? [];
    data.flagged = d?.audit ?? false;
    if (d && d.errors.length > 0) data.policyErrors = d.errors;
    if (verdict.exempted.length) {
      data.exemptedBy = 'grant';
      data.exempted = verdict.exempted;
    }
    return data;
  }

  /** Queued, not awaited: one more entry in the batched writer's queue, no store round trip before forwarding. */
  private recordDecision(
    caller: GovernedCaller,
    type: 'mcp' | 'egress',
    action: string,
    host: string | null,
    facts: Record<string, unknown>,
    verdict: PlaneVerdict,
    heldEntryId: string | null,
  ): void {
    if (verdict.callId !== null) return;
    verdict.callId = newCallId();
    const data = this.decisionData(caller, facts, verdict, verdict.callId);
    if (heldEntryId !== null) data.held = { entryId: heldEntryId };
    this.enqueue({ type, action, actor: callerActor(caller), outcome: 'ok', subject: callerSubject(caller), host, data });
  }

  private record(
    caller: GovernedCaller,
    type: 'mcp' | 'egress',
    action: string,
    host: string | null,
    facts: Record<string, unknown>,
    verdict: PlaneVerdict,
    result: PlaneResult,
  ): void {
    const addressDenied = result.end === 'address_denied';
    const refused = result.end === 'refused' || addressDenied;
    const outcome = refused ? 'refused' : result.end === 'upstream_unreachable' || result.status >= 400 || result.isError ? 'error' : 'ok';
    this.deps.onCompleted?.(type, outcome, addressDenied ? 'address_denied' : verdict.reason);
    const decided = verdict.callId;
    let data: Record<string, unknown>;
    if (decided === null) data = this.decisionData(caller, facts, verdict, newCallId());
    else {
      // The decision event is queued already: the end repeats only the facts and the session, then adds the outcome.
      data = Object.assign({ callId: decided }, facts);
      data.session = caller.sessionId === '' ? null : caller.sessionId;
    }
    if (verdict.held) data.held = verdict.held;
    if (verdict.outcome === 'deny') {
      data.refusal =
        verdict.reason === 'agent_not_bound' && caller.problem?.agent !== undefined
          ? { reason: verdict.reason, message: verdict.message, agent: caller.problem.agent }
          : { reason: verdict.reason, message: verdict.message };
    } else if (addressDenied && result.deniedAddress) {
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
    this.enqueue({ type, action: decided === null ? action : endActionOf(action), actor: callerActor(caller), outcome, subject: callerSubject(caller), host, data });
  }

  private enqueue(event: AuditInput): void {
    try {
      void this.deps.audit.enqueue(event);
    } catch (err) {
      this.deps.onError?.(err as Error, 'audit enqueue');
    }
  }
}

function mcpFactData(facts: McpCallFacts): Record<string, unknown> {
  return { server: facts.server, tool: facts.tool, annotations: facts.annotations };
}

function egressFactData(facts: EgressFacts): Record<string, unknown> {
  return { port: facts.port, scheme: facts.scheme, method: facts.method };
}

function egressAction(facts: EgressFacts): string {
  return facts.method === 'CONNECT' ? 'egress.connect' : 'egress.request';
}

/** The MCP proxy's hooks (planes/mcp/types.ts), filled in by the plane's governance. */
export class McpGovernance implements McpHooks<GovernedCaller> {
  private readonly verdicts = new WeakMap<McpToolCall<GovernedCaller>, PlaneVerdict>();

  constructor(
    private readonly plane: PlaneGovernance,
    private readonly options: { hideDeniedTools: boolean } = { hideDeniedTools: false },
  ) {
    if (options.hideDeniedTools) this.hideTool = (caller, server, tool, annotations) => this.plane.alwaysDeniesTool(caller, { server, tool, annotations });
  }

  hideTool?: McpHooks<GovernedCaller>['hideTool'];

  authenticate(credential: McpCredential): Promise<GovernedCaller | null> {
    const caller = this.plane.authenticate(credential.secret, credential.headers);
    return caller instanceof Promise ? caller : Promise.resolve(caller);
  }

  async decide(call: McpToolCall<GovernedCaller>, events?: McpDecideEvents): Promise<McpDecision> {
    const facts = mcpFacts(call);
    const verdict = await this.plane.decideMcp(call.caller, facts, events);
    this.verdicts.set(call, verdict);
    if (verdict.outcome === 'allow') this.plane.recordMcpDecision(call.caller, facts, verdict);
    return verdict.outcome === 'allow' ? { outcome: 'allow' } : { outcome: 'deny', message: verdict.message };
  }

  completed(call: McpToolCall<GovernedCaller>, result: McpCallResult): void {
    const verdict = this.verdicts.get(call);
    if (!verdict) return;
    const end = result.end === 'gateway_error' ? 'upstream_unreachable' : result.end;
    this.plane.recordMcp(call.caller, mcpFacts(call), verdict, {
      status: result.status,
      end,
      durationMs: result.durationMs,
      ...(result.isError !== undefined ? { isError: result.isError } : {}),
    });
  }
}

function mcpFacts(call: McpToolCall<GovernedCaller>): McpCallFacts {
  return { server: call.server, tool: call.tool, arguments: call.arguments as { [key: string]: JsonValue }, annotations: call.annotations };
}

const ALLOW: EgressDecision = Object.freeze({ outcome: 'allow' });

/** The egress proxy's hooks (planes/egress/types.ts), filled in by the plane's governance. */
export class EgressGovernance implements EgressHooks<GovernedCaller> {
  private readonly verdicts = new WeakMap<EgressRequest<GovernedCaller>, PlaneVerdict>();

  constructor(private readonly plane: PlaneGovernance) {}

  authenticate(credential: EgressCredential): GovernedCaller | null | Promise<GovernedCaller | null> {
    return this.plane.authenticate(credential.secret, credential.headers);
  }

  decide(request: EgressRequest<GovernedCaller>): EgressDecision | Promise<EgressDecision> {
    const verdict = this.plane.decideEgress(request.caller, { host: request.host, port: request.port, scheme: request.scheme, method: request.method });
    return verdict instanceof Promise ? verdict.then((v) => this.decided(request, v)) : this.decided(request, verdict);
  }

  private decided(request: EgressRequest<GovernedCaller>, verdict: PlaneVerdict): EgressDecision {
    this.verdicts.set(request, verdict);
    // The request carries host, port, scheme and method: the facts, without another object per call.
    if (verdict.outcome === 'allow') this.plane.recordEgressDecision(request.caller, request, verdict);
    return verdict.outcome === 'allow' ? ALLOW : { outcome: 'deny', message: verdict.message };
  }

  completed(request: EgressRequest<GovernedCaller>, result: EgressResult): void {
    const verdict = this.verdicts.get(request);
    if (!verdict) return;
    this.plane.recordEgress(request.caller, { host: request.host, port: request.port, scheme: request.scheme, method: request.method }, verdict, result);
  }
}
