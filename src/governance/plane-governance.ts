/**
 * The MCP and egress planes on the governance pipeline (pipeline.ts): their PlaneSpecs (steps, policy section
 * `object.mcp` / `object.egress`, audit facts, the words of a refusal) and the hooks each plane calls
 * (planes/mcp/types.ts, planes/egress/types.ts). Audit events are of type `mcp` or `egress` (only egress events
 * carry the destination host): an allowed or parked call's decision event when it is decided, before anything is
 * forwarded, and its end event (`…_end`) when it is over, joined by `data.callId`; a call refused at once is one
 * event (audit-record.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { evaluate, preparePolicyObject } from '../policy/engine.js';
import { canonicalHost, createPolicyObject, MCP_ANNOTATION_DEFAULTS, type AutonomyTier, type JsonValue, type ToolAnnotations } from '../policy/policy-object.js';
import { NO_GRANTS, type CallerGrants } from '../approvals/grants.js';
import type { EgressCredential, EgressDecision, EgressHooks, EgressRequest, EgressResult } from '../planes/egress/types.js';
import type { McpCallResult, McpCredential, McpDecideEvents, McpDecision, McpHooks, McpToolCall } from '../planes/mcp/types.js';
import type { ParkedEntry } from '../held-calls/registry.js';
import { recordEnd } from './audit-record.js';
import { CallContexts, newCallContext, type CallContext, type PipelineDeps, type PlaneSpec } from './call-context.js';
import { callerSections, resolveCallerNow, type GovernedCaller } from './caller.js';
import { GovernancePipeline } from './pipeline.js';
import { auditRoomStep } from './steps/audit-room-step.js';
import { callerStep } from './steps/caller-step.js';
import { grantsStep } from './steps/grants-step.js';
import { holdRequest, holdStep } from './steps/hold-step.js';
import { policyStep } from './steps/policy-step.js';

export type PlaneGovernanceDeps = PipelineDeps;

export interface McpCallFacts {
  server: string;
  tool: string;
  arguments: { [key: string]: JsonValue };
  /** As the upstream declared them in tools/list; undeclared hints take MCP's defaults. */
  annotations: Partial<ToolAnnotations>;
}

export interface EgressFacts {
  /** Canonical (canonicalHost): the policy object's and the audit event's host. */
  host: string;
  port: number;
  scheme: 'http' | 'https';
  /** The HTTP method; CONNECT for a tunnel. */
  method: string;
}

/** The most characters of tool arguments a memoised decision is keyed by; larger arguments are evaluated each time. */
const MEMO_ARGUMENTS_LIMIT = 2048;

/** Who is calling, as every field of the policy object that derives from the caller (namespace and name derive from the ids). */
function whoKey(type: string, tier: AutonomyTier, caller: GovernedCaller): string {
  return `${type}\u0000${tier}\u0000${caller.agentId}\u0000${caller.developer?.id ?? ''}\u0000${caller.developer?.role ?? ''}\u0000${caller.sessionId}`;
}

/**
 * Every field the MCP policy object is built from, in one string; MCP's undeclared hints take their defaults.
 * Null when the call is not worth remembering: tool arguments too large for the memo, or holding a -0
 * (JSON.stringify writes it as 0, yet CEL's doubles tell them apart).
 */
function mcpMemoKey(caller: GovernedCaller, tier: AutonomyTier, m: McpCallFacts): string | null {
  const args = JSON.stringify(m.arguments);
  if (args.length > MEMO_ARGUMENTS_LIMIT || (ZERO_NUMBER.test(args) && holdsNegativeZero(m.arguments))) return null;
  const a = m.annotations;
  const d = MCP_ANNOTATION_DEFAULTS;
  // The tool name is the client's own text: quoted, so that no name can stand for another field of the key.
  return `${whoKey('mcp', tier, caller)}\u0000${m.server}\u0000${JSON.stringify(m.tool)}\u0000${hint(a.readOnlyHint, d.readOnlyHint)}\u0000${hint(a.destructiveHint, d.destructiveHint)}\u0000${hint(a.idempotentHint, d.idempotentHint)}\u0000${hint(a.openWorldHint, d.openWorldHint)}\u0000${args}`;
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

const PLANE_STEPS = [auditRoomStep, callerStep, grantsStep, policyStep, holdStep];

function mcpFactData(facts: McpCallFacts): Record<string, unknown> {
  return { server: facts.server, tool: facts.tool, annotations: facts.annotations };
}

/** The MCP plane: tool calls an approve policy decides are parked for a person when held calls are on. */
export const MCP_PLANE: PlaneSpec<McpCallFacts> = {
  type: 'mcp',
  steps: PLANE_STEPS,
  words: {
    noun: 'tool call',
    send: 'run',
    sent: 'run',
    exceptionVia: 'with the request_policy_exception tool of the reins MCP server',
    timedOutAdvice: '',
    noteAfterReview: false,
    notParked: (p) => `Reins policy "${p.name}" requires a person to approve this tool call, and held calls are not enabled: ${p.message}`,
  },
  hold: {
    applies: () => true,
    request: ({ call, caller }, p) =>
      holdRequest(caller, p, {
        tool: `${call.server}/${call.tool}`,
        model: null,
        promptExcerpt: null,
        identity: { kind: 'mcp', server: call.server, tool: call.tool, arguments: call.arguments },
      }),
  },
  section: (ctx) => ({ mcp: ctx.call }),
  memoKey: (ctx) => mcpMemoKey(ctx.caller, ctx.tier, ctx.call),
  action: () => 'mcp.tool_call',
  host: () => null,
  label: () => 'mcp',
  decisionFacts: mcpFactData,
  endFacts: mcpFactData,
};

function egressFactData(facts: EgressFacts): Record<string, unknown> {
  return { port: facts.port, scheme: facts.scheme, method: facts.method };
}

/** The egress plane: connections are never parked, so an approve policy refuses them. */
export const EGRESS_PLANE: PlaneSpec<EgressFacts> = {
  type: 'egress',
  steps: PLANE_STEPS,
  words: {
    noun: 'connection',
    send: 'open',
    sent: 'opened',
    exceptionVia: 'with the request_policy_exception tool of the reins MCP server',
    timedOutAdvice: '',
    noteAfterReview: false,
    notParked: (p) => `Reins policy "${p.name}" requires a person to approve this connection; connections are not parked for approval, so it is refused: ${p.message}`,
  },
  hold: null,
  section: (ctx) => ({ egress: ctx.call }),
  memoKey: ({ call: e, caller, tier }) => `${whoKey('egress', tier, caller)}\u0000${e.host}\u0000${e.port}\u0000${e.scheme}\u0000${e.method}`,
  action: (facts) => (facts.method === 'CONNECT' ? 'egress.connect' : 'egress.request'),
  host: (facts) => facts.host,
  label: () => 'egress',
  decisionFacts: egressFactData,
  endFacts: egressFactData,
};

/** The governance of the MCP and egress planes: one pipeline (and decision memo) both planes' hooks share. */
export class PlaneGovernance extends GovernancePipeline<PlaneGovernanceDeps> {
  /** The caller; without a promise when its credential is cached. */
  authenticate(secret: string, headers: IncomingHttpHeaders): GovernedCaller | null | Promise<GovernedCaller | null> {
    return resolveCallerNow(this.deps, secret, headers);
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
}

/**
 * Tells the MCP plane that a call was parked for a person (its held stream, a client's cancellation). Made by a plain
 * function, not as an arrow inside the async `decide`: closures made inside the async functions of a tool call's
 * path and kept on its objects left each call's graph alive through the young collections (planes/mcp/proxy.ts,
 * heldStreamEnder).
 */
function parkedReporter(ctx: CallContext<McpCallFacts>, events: McpDecideEvents): (entry: ParkedEntry) => void {
  const onHeld = events.onHeld!;
  return (entry) => {
    const p = ctx.decision!.decidingPolicy!;
    onHeld.call(events, { entryId: entry.id, policyName: p.name, policyMessage: p.message, expiresAt: entry.expiresAt, leave: () => void entry.leave() });
  };
}

/** The MCP proxy's hooks (planes/mcp/types.ts), filled in by the plane's governance. */
export class McpGovernance implements McpHooks<GovernedCaller> {
  private readonly contexts = new CallContexts<McpToolCall<GovernedCaller>, CallContext<McpCallFacts>>();

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
    const facts: McpCallFacts = { server: call.server, tool: call.tool, arguments: call.arguments as { [key: string]: JsonValue }, annotations: call.annotations };
    const ctx = newCallContext(MCP_PLANE, facts, call.caller);
    if (events?.onHeld) ctx.onParked = parkedReporter(ctx, events);
    this.contexts.begin(call, ctx);
    const run = this.plane.run(ctx);
    const decided = run instanceof Promise ? await run : run;
    if (decided.refusal) return { outcome: 'deny', message: decided.refusal.message };
    const upstreamHeaders = this.plane.deps.telemetry?.upstreamHeaders(ctx);
    return upstreamHeaders ? { outcome: 'allow', upstreamHeaders } : { outcome: 'allow' };
  }

  completed(call: McpToolCall<GovernedCaller>, result: McpCallResult): void {
    const ctx = this.contexts.end(call);
    if (!ctx) return;
    recordEnd(ctx, this.plane, {
      status: result.status,
      end: result.end === 'gateway_error' ? 'upstream_unreachable' : result.end,
      durationMs: result.durationMs,
      isError: result.isError,
    });
  }
}

const ALLOW: EgressDecision = Object.freeze({ outcome: 'allow' });

/** The egress proxy's hooks (planes/egress/types.ts), filled in by the plane's governance. */
export class EgressGovernance implements EgressHooks<GovernedCaller> {
  private readonly contexts = new CallContexts<EgressRequest<GovernedCaller>, CallContext<EgressFacts>>();

  constructor(private readonly plane: PlaneGovernance) {}

  authenticate(credential: EgressCredential): GovernedCaller | null | Promise<GovernedCaller | null> {
    return this.plane.authenticate(credential.secret, credential.headers);
  }

  /** Without a promise when nothing has to be waited for (the common case). */
  decide(request: EgressRequest<GovernedCaller>): EgressDecision | Promise<EgressDecision> {
    const facts: EgressFacts = { host: canonicalHost(request.host), port: request.port, scheme: request.scheme, method: request.method };
    const ctx = newCallContext(EGRESS_PLANE, facts, request.caller);
    this.contexts.begin(request, ctx);
    const run = this.plane.run(ctx);
    const deps = this.plane.deps;
    return run instanceof Promise ? run.then((c) => decision(c, deps)) : decision(run, deps);
  }

  completed(request: EgressRequest<GovernedCaller>, result: EgressResult): void {
    const ctx = this.contexts.end(request);
    if (!ctx) return;
    recordEnd(ctx, this.plane, result);
  }
}

function decision(ctx: CallContext<EgressFacts>, deps: PlaneGovernanceDeps): EgressDecision {
  if (ctx.refusal) return { outcome: 'deny', message: ctx.refusal.message };
  // Plain HTTP requests carry Reins' trace context to the origin when spans are exported; a tunnel's bytes are the client's.
  const upstreamHeaders = ctx.call.method === 'CONNECT' ? undefined : deps.telemetry?.upstreamHeaders(ctx);
  return upstreamHeaders ? { outcome: 'allow', upstreamHeaders } : ALLOW;
}
