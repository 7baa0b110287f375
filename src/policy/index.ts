export { GOVERNED_CALL_TYPES, isGovernedCallType } from '../shared/governed-call.js';
export type { GovernedCallType } from '../shared/governed-call.js';
export {
  AUTONOMY_TIERS,
  DEFAULT_AUTONOMY_TIER,
  MCP_ANNOTATION_DEFAULTS,
  POLICY_OBJECT_SHAPE,
  autonomyLevelOf,
  autonomyTierOf,
  canonicalHost,
  createPolicyObject,
  isAutonomyTier,
} from './policy-object.js';
export type {
  AgentSection,
  AutonomyLevel,
  AutonomyTier,
  DeveloperSection,
  EgressSection,
  JsonValue,
  LlmSection,
  McpSection,
  PolicyObject,
  PolicyObjectInput,
  SessionSection,
  ToolAnnotations,
} from './policy-object.js';
export { MAX_EXPRESSION_LENGTH, compileExpression } from './cel.js';
export type { CelCompileError, CelRuntimeError, CompiledExpression, PolicyActivation } from './cel.js';
export {
  MAX_APPROVAL_WINDOW_SECONDS,
  MAX_POLICY_MESSAGE_LENGTH,
  MIN_APPROVAL_WINDOW_SECONDS,
  POLICY_KINDS,
  POLICY_NAME_PATTERN,
  compilePolicy,
} from './compile-policy.js';
export type {
  CompiledPolicy,
  CompilePolicyResult,
  DecidingPolicy,
  MatchedPolicy,
  Policy,
  PolicyFieldError,
  PolicyInput,
  PolicyKind,
} from './compile-policy.js';
export { ALLOW_WITHOUT_MATCH, OUTCOME_PRECEDENCE } from './decision.js';
export type { Decision, Outcome, PolicyEvaluationError } from './decision.js';
export { evaluate, preparePolicyObject } from './engine.js';
export type { EvaluateOptions, PreparedPolicyObject } from './engine.js';
export { dryRunEvaluate, parsePolicyObjectSample } from './dry-run.js';
export type { DryRunPolicyResult, DryRunResult, PolicyParticipation, SampleFieldError } from './dry-run.js';
export {
  AUTONOMY_AUDIT_AUTONOMOUS,
  AUTONOMY_EGRESS_ALLOWLIST,
  AUTONOMY_MODEL_CEILING,
  AUTONOMY_TOOL_APPROVAL,
  BUILT_IN_POLICIES,
  DEFAULT_EGRESS_ALLOW_LIST,
  DEFAULT_CEILING_MODEL_MARKERS,
  SUPERSEDED_BUILT_IN_VERSIONS,
} from './built-in-policies.js';
