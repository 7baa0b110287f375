/**
 * The policy object: what a policy's CEL `match` expression sees as `object`.
 *
 * Absent sections rule: every section is always present. The sections that do not belong to
 * the request type (`object.mcp` on an LLM request, for example) hold zero values: empty
 * strings, 0, false and an empty `arguments` map. So `object.mcp.annotations.readOnlyHint` on an
 * LLM request reads `false` and never throws, and `appliesTo` filters policies by request type
 * before any expression runs. `object.developer` is all empty strings when an agent key calls.
 */
import type { Role } from '../shared/actor.js';
import type { GovernedCallType } from '../shared/governed-call.js';

export const AUTONOMY_TIERS = ['T1', 'T2', 'T3', 'T4'] as const;
export type AutonomyTier = (typeof AUTONOMY_TIERS)[number];
export type AutonomyLevel = 1 | 2 | 3 | 4;

/** An agent with no explicit assignment resolves to T2 (spec, Identity). */
export const DEFAULT_AUTONOMY_TIER: AutonomyTier = 'T2';


export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export interface AgentSection {
  /** `<namespace>/<name>`; empty when a developer's own tool is the agent. */
  id: string;
  namespace: string;
  name: string;
  autonomyTier: AutonomyTier;
  /** The tier as a number, 1 for T1 to 4 for T4, for comparisons such as `>= 3`. */
  autonomyLevel: AutonomyLevel;
}

export interface DeveloperSection {
  id: string;
  namespace: string;
  name: string;
  /** Empty when an agent key calls. */
  role: Role | '';
}

export interface SessionSection {
  /** Empty when an agent key calls: agent keys have no session. */
  id: string;
}

export interface RequestSection {
  type: GovernedCallType;
}

export interface LlmSection {
  /** The configured provider name, e.g. `openai`, `anthropic`, `bedrock`. */
  provider: string;
  /** The provider API route after the version prefix, e.g. `chat/completions`, `messages`, `converse`. */
  route: string;
  /** The model id as the client sent it. */
  model: string;
  stream: boolean;
  /** The requested output token limit; 0 when the request does not state one. */
  maxTokens: number;
  /**
   * The caller holds an active model-access grant (an approved `model_access` request) whose model glob covers
   * `model`: what lets a granted model through the policies that judge models (the built-in ceiling among them).
   */
  modelAccessGranted: boolean;
}

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export interface McpSection {
  server: string;
  tool: string;
  /** The tool call's arguments as sent (JSON). */
  arguments: { [key: string]: JsonValue };
  annotations: ToolAnnotations;
}

export interface EgressSection {
  /** Lower case, without a trailing dot. */
  host: string;
  port: number;
  scheme: string;
  /** The HTTP method; `CONNECT` for a tunnel. */
  method: string;
}

export interface PolicyObject {
  agent: AgentSection;
  developer: DeveloperSection;
  session: SessionSection;
  request: RequestSection;
  llm: LlmSection;
  mcp: McpSection;
  egress: EgressSection;
}

/**
 * What the gateway (or a dry run) supplies; everything but the request type may be left out.
 * Missing fields take zero values, a missing tier takes T2.
 */
export interface PolicyObjectInput {
  request: RequestSection;
  agent?: Partial<Omit<AgentSection, 'autonomyTier'>> & { autonomyTier?: AutonomyTier | '' };
  developer?: Partial<DeveloperSection>;
  session?: Partial<SessionSection>;
  llm?: Partial<LlmSection>;
  mcp?: Partial<Omit<McpSection, 'annotations'>> & { annotations?: Partial<ToolAnnotations> };
  egress?: Partial<EgressSection>;
}

/**
 * MCP's own defaults for a hint the server did not declare (MCP specification, tool annotations).
 * They are the cautious reading: an unannotated tool may write, may destroy, and reaches outside.
 */
export const MCP_ANNOTATION_DEFAULTS: Readonly<ToolAnnotations> = Object.freeze({
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: false,
  openWorldHint: true,
});

const ZERO_ANNOTATIONS: Readonly<ToolAnnotations> = Object.freeze({
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: false,
});

export function autonomyLevelOf(tier: AutonomyTier): AutonomyLevel {
  return (AUTONOMY_TIERS.indexOf(tier) + 1) as AutonomyLevel;
}

export function autonomyTierOf(level: AutonomyLevel): AutonomyTier {
  return AUTONOMY_TIERS[level - 1] as AutonomyTier;
}

export function isAutonomyTier(value: unknown): value is AutonomyTier {
  return typeof value === 'string' && (AUTONOMY_TIERS as readonly string[]).includes(value);
}

/** Lower case and without the trailing dot of a fully qualified name, so allow-lists compare plainly. */
export function canonicalHost(host: string): string {
  const lower = host.toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

/**
 * Builds the complete policy object from what is known about a call. The section of the
 * request type is filled from the input; the other sections get zero values whatever the input
 * says, so a policy cannot read stale fields of another request type.
 */
export function createPolicyObject(input: PolicyObjectInput): PolicyObject {
  const type = input.request.type;
  const agent = input.agent ?? {};
  const tier: AutonomyTier =
    agent.autonomyTier !== undefined && agent.autonomyTier !== ''
      ? agent.autonomyTier
      : agent.autonomyLevel !== undefined
        ? autonomyTierOf(agent.autonomyLevel)
        : DEFAULT_AUTONOMY_TIER;
  const developer = input.developer ?? {};
  const llm = type === 'llm' ? (input.llm ?? {}) : {};
  const mcp = type === 'mcp' ? (input.mcp ?? {}) : {};
  const egress = type === 'egress' ? (input.egress ?? {}) : {};
  const annotationDefaults = type === 'mcp' ? MCP_ANNOTATION_DEFAULTS : ZERO_ANNOTATIONS;

  return {
    agent: {
      id: agent.id ?? '',
      namespace: agent.namespace ?? '',
      name: agent.name ?? '',
      autonomyTier: tier,
      autonomyLevel: autonomyLevelOf(tier),
    },
    developer: {
      id: developer.id ?? '',
      namespace: developer.namespace ?? '',
      name: developer.name ?? '',
      role: developer.role ?? '',
    },
    session: { id: input.session?.id ?? '' },
    request: { type },
    llm: {
      provider: llm.provider ?? '',
      route: llm.route ?? '',
      model: llm.model ?? '',
      stream: llm.stream ?? false,
      maxTokens: llm.maxTokens ?? 0,
      modelAccessGranted: llm.modelAccessGranted ?? false,
    },
    mcp: {
      server: mcp.server ?? '',
      tool: mcp.tool ?? '',
      arguments: mcp.arguments ?? {},
      annotations: { ...annotationDefaults, ...definedOnly(mcp.annotations ?? {}) },
    },
    egress: {
      host: canonicalHost(egress.host ?? ''),
      port: egress.port ?? 0,
      scheme: egress.scheme ?? '',
      method: egress.method ?? '',
    },
  };
}

function definedOnly(hints: Partial<ToolAnnotations>): Partial<ToolAnnotations> {
  const out: Partial<ToolAnnotations> = {};
  for (const key of Object.keys(hints) as (keyof ToolAnnotations)[]) {
    const value = hints[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** The CEL type of each leaf of the policy object; `map` is `map(string, dyn)` (tool arguments). */
export type PolicyFieldType = 'string' | 'int' | 'bool' | 'map';
export interface PolicyObjectShape {
  readonly [field: string]: PolicyFieldType | PolicyObjectShape;
}

/**
 * The shape of `object` as CEL sees it. The compiler checks field names and literal types
 * against it, so a typo is refused when the policy is saved instead of failing on every call.
 */
export const POLICY_OBJECT_SHAPE: PolicyObjectShape = {
  agent: { id: 'string', namespace: 'string', name: 'string', autonomyTier: 'string', autonomyLevel: 'int' },
  developer: { id: 'string', namespace: 'string', name: 'string', role: 'string' },
  session: { id: 'string' },
  request: { type: 'string' },
  llm: { provider: 'string', route: 'string', model: 'string', stream: 'bool', maxTokens: 'int', modelAccessGranted: 'bool' },
  mcp: {
    server: 'string',
    tool: 'string',
    arguments: 'map',
    annotations: { readOnlyHint: 'bool', destructiveHint: 'bool', idempotentHint: 'bool', openWorldHint: 'bool' },
  },
  egress: { host: 'string', port: 'int', scheme: 'string', method: 'string' },
};
