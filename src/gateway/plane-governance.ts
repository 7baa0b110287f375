/**
 * Policy decisions and audit for the MCP and egress planes: the caller (credential and Reins headers), the
 * policy object with the agent's tier at this moment, the caller's grants, one decision, and one audit event
 * per decided call (type `mcp` or `egress`; only egress events carry the destination host).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { AuditWriter } from '../audit/audit-writer.js';
import type { TierCache } from '../identity/tier-cache.js';
import type { Decision } from '../policy/decision.js';
import { evaluate, preparePolicyObject } from '../policy/engine.js';
import { canonicalHost, createPolicyObject, type AutonomyTier, type JsonValue, type ToolAnnotations } from '../policy/policy-object.js';
import type { PolicySet } from '../policy/policy-set.js';
import { callerActor, callerSections, callerSubject, resolveCaller, type GovernedCaller } from './caller.js';
import type { CredentialCache } from './credential-cache.js';
import { NO_GRANTS, type CallerGrants, type GrantLookup } from './grants.js';
import type { EgressCredential, EgressDecision, EgressHooks, EgressRequest, EgressResult } from './egress/types.js';
import { refusalMessage } from './llm/refusal.js';
import type { RequestNotes } from '../approvals/request-notes.js';
import { heldCallDedupeKey } from '../held-calls/dedupe-key.js';
import type { HeldCallRegistry } from '../held-calls/registry.js';
import type { McpCallResult, McpCredential, McpDecideEvents, McpDecision, McpHooks, McpToolCall } from './mcp/types.js';

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
  reason: 'policy' | 'approval_required' | 'bad_request' | null;
  tier: AutonomyTier;
  explicitTier: boolean;
  decision: Decision | null;
  exempted: string[];
}

export interface PlaneResult {
  status: number;
  end: 'forwarded' | 'refused' | 'upstream_unreachable' | 'client_aborted';
  durationMs: number;
  isError?: boolean;
  bytesUp?: number;
  bytesDown?: number;
}

export class PlaneGovernance {
  constructor(private readonly deps: PlaneGovernanceDeps) {}

  authenticate(secret: string, headers: IncomingHttpHeaders): Promise<GovernedCaller | null> {
    return resolveCaller(this.deps, secret, headers);
  }

  async decideMcp(caller: GovernedCaller, facts: McpCallFacts, events?: McpDecideEvents): Promise<PlaneVerdict> {
    const verdict = await this.decide(caller, 'mcp', { mcp: facts });
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
      dedupeKey: heldCallDedupeKey({ kind: 'mcp', agentId: caller.agentId, sessionId, policyName: p.name, server: facts.server, tool: facts.tool, arguments: facts.arguments }),
    }, (entry) => events?.onHeld?.({ entryId: entry.id, policyName: p.name, policyMessage: p.message, expiresAt: entry.expiresAt }));
    if (held.outcome === 'released' || (held.outcome === 'timed_out' && held.allow)) {
      return { ...verdict, outcome: 'allow', message: '', reason: null };
    }
    if (held.outcome === 'stopped') {
      return {
        ...verdict,
        reason: 'policy',
        message: `Reins policy "${p.name}" stopped this tool call after review: ${p.message} Reviewer's note: "${held.note}". If you need it, request an exception to ${p.name} with the request_policy_exception tool of the reins MCP server.`,
      };
    }
    return { ...verdict, message: `Reins policy "${p.name}" held this tool call for approval and no reviewer acted in time, so it was not run: ${p.message}` };
  }

  async decideEgress(caller: GovernedCaller, facts: EgressFacts): Promise<PlaneVerdict> {
    return this.decide(caller, 'egress', { egress: { ...facts, host: canonicalHost(facts.host) } });
  }

  private async decide(caller: GovernedCaller, type: 'mcp' | 'egress', section: { mcp?: McpCallFacts; egress?: EgressFacts }): Promise<PlaneVerdict> {
    const room = this.deps.audit.ready();
    if (room) await room;
    const sections = callerSections(caller, this.deps.tiers);
    const base = { tier: sections.agent.autonomyTier, explicitTier: sections.explicitTier, exempted: [] as string[] };
    if (caller.problem) {
      return { ...base, outcome: 'deny', message: `Reins refused this request: ${caller.problem}.`, reason: 'bad_request', decision: null };
    }
    let grants: CallerGrants = NO_GRANTS;
    if (caller.developer) {
      const found = this.deps.grants.forDeveloper(caller.developer.id, new Date(), caller.project);
      grants = found instanceof Promise ? await found : found;
    }
    const object = createPolicyObject({ request: { type }, agent: sections.agent, developer: sections.developer, session: sections.session, ...section });
    const decision = evaluate(this.deps.policies.policies, preparePolicyObject(object), { exemptPolicies: grants.exemptPolicies });
    const exempted = grants.exemptPolicies.size > 0 ? [...grants.exemptPolicies] : [];
    const p = decision.decidingPolicy;
    if (decision.outcome === 'deny' && p) {
      let message = refusalMessage(p.name, p.message);
      if (caller.developer && this.deps.notes) {
        const note = await this.deps.notes.noteFor(caller.developer.id, { policy: p.name }).catch(() => null);
        if (note) message = `${message} ${note}`;
      }
      return { ...base, exempted, outcome: 'deny', message, reason: 'policy', decision };
    }
    if (decision.outcome === 'approve' && p) {
      // Held calls come with the human-review workflow; until then an approve outcome stops the call and says why.
      return {
        ...base,
        exempted,
        outcome: 'deny',
        message:
          type === 'mcp'
            ? `Reins policy "${p.name}" requires a person to approve this tool call, and held calls are not enabled: ${p.message}`
            : `Reins policy "${p.name}" requires a person to approve this connection; connections are not parked for approval, so it is refused: ${p.message}`,
        reason: 'approval_required',
        decision,
      };
    }
    return { ...base, exempted, outcome: 'allow', message: '', reason: null, decision };
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

  recordMcp(caller: GovernedCaller, facts: McpCallFacts, verdict: PlaneVerdict, result: PlaneResult): void {
    this.record(caller, 'mcp', 'mcp.tool_call', null, { server: facts.server, tool: facts.tool, annotations: facts.annotations }, verdict, result);
  }

  recordEgress(caller: GovernedCaller, facts: EgressFacts, verdict: PlaneVerdict, result: PlaneResult): void {
    this.record(
      caller,
      'egress',
      facts.method === 'CONNECT' ? 'egress.connect' : 'egress.request',
      canonicalHost(facts.host),
      { port: facts.port, scheme: facts.scheme, method: facts.method },
      verdict,
      result,
    );
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
    const d = verdict.decision;
    const outcome = result.end === 'refused' ? 'refused' : result.end === 'upstream_unreachable' || result.status >= 400 || result.isError ? 'error' : 'ok';
    this.deps.onCompleted?.(type, outcome, verdict.reason);
    try {
      void this.deps.audit.enqueue({
        type,
        action,
        actor: callerActor(caller),
        outcome,
        subject: callerSubject(caller),
        host,
        data: {
          ...facts,
          agent: { id: caller.agentId, tier: verdict.tier, explicitTier: verdict.explicitTier },
          developer: caller.developer?.id ?? null,
          session: caller.sessionId === '' ? null : caller.sessionId,
          tokenId: caller.tokenId,
          decision: d?.outcome ?? (verdict.outcome === 'deny' ? 'deny' : 'allow'),
          policy: d?.decidingPolicy?.name ?? null,
          matched: d?.matched.map((m) => m.name) ?? [],
          flagged: d?.audit ?? false,
          ...(d && d.errors.length > 0 ? { policyErrors: d.errors } : {}),
          ...(verdict.exempted.length ? { exemptedBy: 'grant', exempted: verdict.exempted } : {}),
          ...(verdict.outcome === 'deny' ? { refusal: { reason: verdict.reason, message: verdict.message } } : {}),
          status: result.status,
          end: result.end,
          durationMs: Math.round(result.durationMs * 1000) / 1000,
          ...(result.isError !== undefined ? { isError: result.isError } : {}),
          ...(result.bytesUp !== undefined ? { bytesUp: result.bytesUp, bytesDown: result.bytesDown ?? 0 } : {}),
        },
      });
    } catch (err) {
      this.deps.onError?.(err as Error, 'audit enqueue');
    }
  }
}

/** The MCP proxy's hooks (gateway/mcp/types.ts), filled in by the plane's governance. */
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
    return this.plane.authenticate(credential.secret, credential.headers);
  }

  async decide(call: McpToolCall<GovernedCaller>, events?: McpDecideEvents): Promise<McpDecision> {
    const verdict = await this.plane.decideMcp(call.caller, mcpFacts(call), events);
    this.verdicts.set(call, verdict);
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

/** The egress proxy's hooks (gateway/egress/types.ts), filled in by the plane's governance. */
export class EgressGovernance implements EgressHooks<GovernedCaller> {
  private readonly verdicts = new WeakMap<EgressRequest<GovernedCaller>, PlaneVerdict>();

  constructor(private readonly plane: PlaneGovernance) {}

  authenticate(credential: EgressCredential): Promise<GovernedCaller | null> {
    return this.plane.authenticate(credential.secret, credential.headers);
  }

  async decide(request: EgressRequest<GovernedCaller>): Promise<EgressDecision> {
    const verdict = await this.plane.decideEgress(request.caller, { host: request.host, port: request.port, scheme: request.scheme, method: request.method });
    this.verdicts.set(request, verdict);
    return verdict.outcome === 'allow' ? { outcome: 'allow' } : { outcome: 'deny', message: verdict.message };
  }

  completed(request: EgressRequest<GovernedCaller>, result: EgressResult): void {
    const verdict = this.verdicts.get(request);
    if (!verdict) return;
    this.plane.recordEgress(request.caller, { host: request.host, port: request.port, scheme: request.scheme, method: request.method }, verdict, result);
  }
}
