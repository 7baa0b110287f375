/**
 * Who is calling, for every plane of the gateway (LLM, MCP, egress): from the Reins credential and the Reins
 * headers only, never from a body. With an agent key the agent is the key's identity and there is no session;
 * with a personal access token there is a developer, a session (`X-Reins-Session`, else one per token and UTC
 * day) and the agent named by `X-Reins-Agent`, else the tool itself (empty id, tier T2).
 *
 * A tier given to one agent must not be usable by every developer: `X-Reins-Agent` must name an agent bound to the
 * token's developer (one of the agent's owners covers them, see identity/owners.ts), else the call is refused
 * (403, audited). The binding is read from the tier cache, never the store.
 *
 * A session value is the tool's own text, and two developers may send the same one: it is scoped to the
 * credential's developer wherever it keys anything (held-call entries key the developer too, budget counters are
 * per identity, spend per session is grouped per identity). Policies see the value the tool sent.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Actor } from '../shared/actor.js';
import { parseIdentityId } from '../shared/ids.js';
import type { TierCache } from '../identity/tier-cache.js';
import type { AgentSection, AutonomyTier, DeveloperSection, SessionSection } from '../policy/policy-object.js';
import type { Role } from '../shared/actor.js';
import type { CredentialCache, GatewayCredential } from './credential-cache.js';
import { parseTraceparent, type IncomingTrace } from './trace-context.js';

export const SESSION_HEADER = 'x-reins-session';
export const AGENT_HEADER = 'x-reins-agent';
/** The project (repository, workspace) a developer's tool works in; grants scoped to a project count only there. */
export const PROJECT_HEADER = 'x-reins-project';
const SESSION_ID = /^[\x21-\x7e]{1,200}$/;

export interface GovernedCaller {
  tokenId: string;
  /** The credential's identity: the developer of a personal access token, the agent of an agent key. */
  identityId: string;
  developer: { id: string; role: Role } | null;
  /** The agent identity; '' when a developer's own tool is the agent. */
  agentId: string;
  /** '' for agent keys: they have no session. */
  sessionId: string;
  /** `X-Reins-Project` of a personal access token's call; '' when not sent. */
  project: string;
  /** A bad Reins header, refused at decision time in the client's protocol (400), or an unbound agent (403). */
  problem: CallerProblem | null;
  /** The W3C trace context the request came with (`traceparent`, `tracestate`), or null (governance/call-telemetry.ts). */
  trace: IncomingTrace | null;
}

export interface CallerProblem {
  reason: 'bad_request' | 'agent_not_bound';
  message: string;
  /** The `X-Reins-Agent` value refused (shortened), for the audit event. */
  agent?: string;
}

export interface CallerDeps {
  credentials: CredentialCache;
  tiers: TierCache;
  onTokenUse?: (tokenId: string) => void;
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The caller a Reins secret and the request's headers stand for, or null for an unknown, revoked or expired secret. */
export async function resolveCaller(deps: CallerDeps, secret: string, headers: IncomingHttpHeaders): Promise<GovernedCaller | null> {
  return resolveCallerNow(deps, secret, headers);
}

/**
 * `resolveCaller` without a promise when the credential is cached (the common case: every call after a token's
 * first), so that a caller on the hot path can go on in the same tick. A promise only when the store is read.
 */
export function resolveCallerNow(deps: CallerDeps, secret: string, headers: IncomingHttpHeaders): GovernedCaller | null | Promise<GovernedCaller | null> {
  const cached = deps.credentials.cached(secret);
  if (cached !== undefined) return callerFor(deps, cached, headers);
  return deps.credentials.authenticate(secret).then((c) => (c ? callerFor(deps, c, headers) : null));
}

function callerFor(deps: CallerDeps, c: GatewayCredential, headers: IncomingHttpHeaders): GovernedCaller {
  deps.onTokenUse?.(c.tokenId);
  const trace = headers.traceparent === undefined ? null : parseTraceparent(header(headers, 'traceparent'), header(headers, 'tracestate'));
  if (c.kind === 'agent') {
    return { tokenId: c.tokenId, identityId: c.identityId, developer: null, agentId: c.identityId, sessionId: '', project: '', problem: null, trace };
  }
  const sentSession = header(headers, SESSION_HEADER);
  const sentAgent = header(headers, AGENT_HEADER);
  const sentProject = header(headers, PROJECT_HEADER);
  let problem: CallerProblem | null = null;
  if (sentProject !== undefined && !SESSION_ID.test(sentProject)) {
    problem = { reason: 'bad_request', message: `the X-Reins-Project header must be 1 to 200 visible ASCII characters` };
  }
  if (sentSession !== undefined && !SESSION_ID.test(sentSession)) {
    problem = { reason: 'bad_request', message: `the X-Reins-Session header must be 1 to 200 visible ASCII characters` };
  }
  let agentId = '';
  if (sentAgent !== undefined && sentAgent !== '') {
    if (deps.tiers.isBound(sentAgent, c.identityId)) {
      agentId = sentAgent;
    } else {
      // One answer whether the agent is missing, a developer or someone else's: no probing for agent ids.
      const named = JSON.stringify(sentAgent.slice(0, 100));
      const agent = parseIdentityId(sentAgent) ? sentAgent : '<agent id>';
      problem ??= {
        reason: 'agent_not_bound',
        agent: sentAgent.slice(0, 100),
        message:
          `X-Reins-Agent names ${named}, which is not an agent identity bound to ${c.identityId}. Ask an admin to add ${c.identityId} ` +
          `to the owners of ${agent} (PUT /api/v1/identities/owners?id=${agent}), or leave the X-Reins-Agent header out to call as yourself`,
      };
    }
  }
  return {
    tokenId: c.tokenId,
    identityId: c.identityId,
    developer: { id: c.identityId, role: c.role ?? 'developer' },
    agentId,
    project: sentProject !== undefined && problem === null ? sentProject : '',
    // One session per token and (UTC) day when the tool does not name its own.
    sessionId: sentSession !== undefined && problem === null ? sentSession : `${c.tokenId}:${new Date().toISOString().slice(0, 10)}`,
    problem,
    trace,
  };
}

export interface CallerSections {
  agent: Partial<AgentSection> & { autonomyTier: AutonomyTier };
  developer: Partial<DeveloperSection>;
  session: SessionSection;
  /** Whether the tier was assigned (false: the T2 default). */
  explicitTier: boolean;
}

/** The agent's tier at this moment (T2 when none was assigned, or when a developer's own tool is the agent). */
export function callerTier(caller: GovernedCaller, tiers: TierCache): { autonomyTier: AutonomyTier; explicit: boolean } {
  const resolved = caller.agentId === '' ? null : tiers.resolve(caller.agentId);
  return { autonomyTier: resolved?.autonomyTier ?? 'T2', explicit: resolved?.explicit ?? false };
}

/** The caller's part of the policy object, with the agent's tier as it is at this moment (or as `tier` says). */
export function callerSections(caller: GovernedCaller, tiers: TierCache, tier = callerTier(caller, tiers)): CallerSections {
  const agent = caller.agentId === '' ? null : parseIdentityId(caller.agentId);
  const developer = caller.developer ? parseIdentityId(caller.developer.id) : null;
  return {
    agent: { id: caller.agentId, namespace: agent?.namespace ?? '', name: agent?.name ?? '', autonomyTier: tier.autonomyTier },
    developer: caller.developer
      ? { id: caller.developer.id, namespace: developer?.namespace ?? '', name: developer?.name ?? '', role: caller.developer.role }
      : {},
    session: { id: caller.sessionId },
    explicitTier: tier.explicit,
  };
}

/** Who the audit log names as acting: the token's identity. */
export function callerActor(caller: GovernedCaller): Actor {
  return caller.developer
    ? { kind: 'developer', identityId: caller.developer.id, role: caller.developer.role, via: 'token', tokenId: caller.tokenId }
    : { kind: 'agent', identityId: caller.identityId, tokenId: caller.tokenId };
}

/** The identity an audit event is about: the agent, or the developer when the tool itself is the agent. */
export function callerSubject(caller: GovernedCaller): string {
  return caller.agentId !== '' ? caller.agentId : caller.identityId;
}
