/**
 * The expressions, objects and tables the CEL engine comparison runs on. The expressions are
 * ours: the four built-in policies and twenty typical custom policies.
 */
import { BUILT_IN_POLICIES } from '../../src/policy/built-in-policies.js';
import { createPolicyObject } from '../../src/policy/policy-object.js';
import type { PolicyObject } from '../../src/policy/policy-object.js';
import type { GovernedCallType } from '../../src/shared/governed-call.js';

export interface BenchExpression {
  name: string;
  type: GovernedCallType;
  expr: string;
}

export const CUSTOM_EXPRESSIONS: readonly BenchExpression[] = [
  { name: 'tier-equals', type: 'llm', expr: "object.agent.autonomyTier == 'T1'" },
  { name: 'level-compare', type: 'llm', expr: 'object.agent.autonomyLevel >= 3' },
  { name: 'tier-in-list', type: 'llm', expr: "object.agent.autonomyTier in ['T1', 'T2']" },
  { name: 'model-starts-with', type: 'llm', expr: "object.llm.model.startsWith('claude-opus')" },
  { name: 'model-matches', type: 'llm', expr: "object.llm.model.matches('^(gpt-5|o3)(-pro)?$')" },
  { name: 'max-tokens-stream', type: 'llm', expr: 'object.llm.maxTokens > 32000 && object.llm.stream' },
  { name: 'bedrock-converse', type: 'llm', expr: "object.llm.provider == 'bedrock' && object.llm.route.startsWith('converse')" },
  { name: 'tool-in-list', type: 'mcp', expr: "object.mcp.server == 'github' && object.mcp.tool in ['delete_repository', 'merge_pull_request']" },
  { name: 'tool-prefix-suffix', type: 'mcp', expr: "object.mcp.tool.startsWith('delete_') || object.mcp.tool.endsWith('_delete')" },
  { name: 'has-argument', type: 'mcp', expr: "has(object.mcp.arguments.path) && object.mcp.arguments.path.startsWith('/etc/')" },
  { name: 'argument-index', type: 'mcp', expr: "has(object.mcp.arguments.branch) && object.mcp.arguments['branch'] in ['main', 'master']" },
  { name: 'argument-count', type: 'mcp', expr: 'size(object.mcp.arguments) > 10' },
  { name: 'open-world-write', type: 'mcp', expr: 'object.mcp.annotations.openWorldHint && !object.mcp.annotations.readOnlyHint' },
  { name: 'aws-non-tls', type: 'egress', expr: "object.egress.host.endsWith('.amazonaws.com') && object.egress.port != 443" },
  { name: 'plain-http', type: 'egress', expr: "object.egress.scheme == 'http'" },
  { name: 'write-methods', type: 'egress', expr: "object.egress.method in ['POST', 'PUT', 'PATCH', 'DELETE'] && object.agent.autonomyLevel <= 2" },
  { name: 'developer-tool', type: 'llm', expr: "object.developer.role == 'developer' && object.agent.id == ''" },
  { name: 'namespace-in-map', type: 'llm', expr: "object.developer.namespace in {'contractors': true, 'interns': true}" },
  { name: 'frontier-exists', type: 'llm', expr: "['opus', 'o1-pro', 'o3-pro'].exists(f, object.llm.model.contains(f))" },
  { name: 'prod-autonomous-egress', type: 'egress', expr: "object.agent.namespace == 'prod' && object.agent.autonomyLevel >= 3 && object.request.type == 'egress'" },
];

export const BUILT_IN_EXPRESSIONS: readonly BenchExpression[] = BUILT_IN_POLICIES.map((policy) => ({
  name: policy.name,
  type: policy.appliesTo[0] as GovernedCallType,
  expr: policy.match,
}));

export const ALL_EXPRESSIONS: readonly BenchExpression[] = [...BUILT_IN_EXPRESSIONS, ...CUSTOM_EXPRESSIONS];

export const SAMPLE_OBJECTS: Readonly<Record<GovernedCallType, PolicyObject>> = {
  llm: createPolicyObject({
    request: { type: 'llm' },
    agent: { id: 'prod/coder', namespace: 'prod', name: 'coder', autonomyTier: 'T2' },
    developer: { id: 'eng/alice', namespace: 'eng', name: 'alice', role: 'developer' },
    session: { id: 'sess-1' },
    llm: { provider: 'anthropic', route: 'messages', model: 'claude-opus-4-1-20250805', stream: true, maxTokens: 8192 },
  }),
  mcp: createPolicyObject({
    request: { type: 'mcp' },
    agent: { id: 'prod/coder', namespace: 'prod', name: 'coder', autonomyTier: 'T3' },
    mcp: {
      server: 'github',
      tool: 'delete_branch',
      arguments: { owner: 'acme', repo: 'api', branch: 'main', path: '/etc/hosts' },
      annotations: { readOnlyHint: false, destructiveHint: true },
    },
  }),
  egress: createPolicyObject({
    request: { type: 'egress' },
    agent: { id: 'prod/coder', namespace: 'prod', name: 'coder', autonomyTier: 'T2' },
    egress: { host: 'example.com', port: 443, scheme: 'https', method: 'CONNECT' },
  }),
};

/** Expected per the CEL specification; `error` means evaluation must fail. */
export interface ConformanceCase {
  expr: string;
  expect: boolean | 'error';
  note: string;
}

/** `x` is bound to {a: 1 (int), n: 3.0 (double), s: 'abc', l: [1, 2], m: {'k': 'v'}}. */
export const CONFORMANCE: readonly ConformanceCase[] = [
  { expr: 'x.a == 1', expect: true, note: 'int equality' },
  { expr: 'x.n == 3', expect: true, note: 'double field == int literal (heterogeneous equality)' },
  { expr: 'dyn(1) == 1.0', expect: true, note: 'int == double at run time' },
  { expr: 'dyn(1) == 1u', expect: true, note: 'int == uint at run time' },
  { expr: "dyn('1') == 1", expect: false, note: 'unlike types are unequal, not an error' },
  { expr: '1 < 1.5', expect: true, note: 'int < double ordering' },
  { expr: '2u > 1', expect: true, note: 'uint > int ordering' },
  { expr: '-1 < 1u', expect: true, note: 'negative int < uint' },
  { expr: '1 in [1.0, 2.0]', expect: true, note: '`in` list uses heterogeneous equality' },
  { expr: "'k' in x.m", expect: true, note: '`in` on a map tests keys' },
  { expr: "'v' in x.m", expect: false, note: '`in` on a map ignores values' },
  { expr: '2 in x.l', expect: true, note: '`in` on a list' },
  { expr: 'has(x.a)', expect: true, note: 'has() on a present key' },
  { expr: 'has(x.zz)', expect: false, note: 'has() on an absent key' },
  { expr: 'x.zz == 1', expect: 'error', note: 'missing key is an error' },
  { expr: 'x.zz == 1 || true', expect: true, note: 'error absorbed by || (right)' },
  { expr: 'true || x.zz == 1', expect: true, note: 'error absorbed by || (left)' },
  { expr: 'x.zz == 1 && false', expect: false, note: 'error absorbed by && (right)' },
  { expr: 'x.zz == 1 || false', expect: 'error', note: 'error not absorbed' },
  { expr: '[0, 1].exists(i, 1 / i > 0)', expect: true, note: 'exists absorbs an element error' },
  { expr: "x.s.startsWith('ab') && x.s.endsWith('bc') && x.s.contains('b')", expect: true, note: 'string functions' },
  { expr: "size('héllo') == 5", expect: true, note: 'size counts code points' },
  { expr: "'T2' < 'T3'", expect: true, note: 'string ordering' },
  { expr: "x.s.matches('^a.c$')", expect: true, note: 'regex' },
  { expr: "x.s.matches('(')", expect: 'error', note: 'invalid regex is an error' },
  { expr: "x.s.matches('\\\\d')", expect: false, note: 'RE2 escape' },
  { expr: '1 / 0 == 0', expect: 'error', note: 'division by zero' },
  { expr: '9223372036854775807 + 1 > 0', expect: 'error', note: 'int overflow' },
  { expr: '0u - 1u > 0u', expect: 'error', note: 'uint underflow' },
  { expr: 'x.l[5] == 1', expect: 'error', note: 'index out of range' },
  { expr: "int('12') == 12 && string(12) == '12'", expect: true, note: 'conversions' },
  { expr: 'type(1) == int', expect: true, note: 'type values' },
  { expr: "timestamp('2025-01-01T00:00:00Z') < timestamp('2026-01-01T00:00:00Z')", expect: true, note: 'timestamps' },
  { expr: "duration('1h') > duration('30m')", expect: true, note: 'durations' },
  { expr: "[1, 'a'].size() == 2", expect: true, note: 'mixed list literal' },
  { expr: "{'a': 1, 'b': 'x'}.size() == 2", expect: true, note: 'mixed map literal' },
  { expr: "x.s == 'abc' ? true : x.zz", expect: true, note: 'ternary does not evaluate the other branch' },
];

export const CONFORMANCE_BINDING = { a: 1n, n: 3, s: 'abc', l: [1n, 2n], m: { k: 'v' } };

export interface ErrorCase {
  what: string;
  expr: string;
}

export const ERROR_CASES: readonly ErrorCase[] = [
  { what: 'missing operand', expr: 'object.agent.autonomyLevel >= 3 &&' },
  { what: 'unterminated string (line 2)', expr: "object.agent.autonomyLevel >= 3 &&\n  object.agent.autonomyTier == 'T1" },
  { what: 'unclosed parenthesis', expr: "(object.agent.autonomyTier == 'T1'" },
  { what: 'single =', expr: "object.agent.autonomyTier = 'T1'" },
  { what: 'misspelt field', expr: "object.agent.autonomyTeir == 'T1'" },
  { what: 'int compared with string', expr: "object.agent.autonomyLevel == '3'" },
  { what: 'result is not a bool', expr: 'object.agent.autonomyLevel + 1' },
  { what: 'unknown function', expr: 'isFrontier(object.llm.model)' },
  { what: 'wrong argument type', expr: 'object.llm.model.startsWith(1)' },
];

export interface RegexCase {
  what: string;
  pattern: string;
  input: string;
}

export const REGEX_CASES: readonly RegexCase[] = [
  { what: 'nested quantifier, 29 chars', pattern: '(a+)+$', input: `${'a'.repeat(28)}!` },
  { what: 'alternation under +, 300 kB', pattern: '(foo|bar)+x', input: 'foo'.repeat(100_000) },
  { what: 'unanchored .* twice, 100 kB', pattern: '.*x.*y', input: 'a'.repeat(100_000) },
  { what: 'unanchored \\s*, 100 kB', pattern: '\\s*,\\s*$', input: ' '.repeat(100_000) },
  { what: 'anchored host pattern, 100 kB', pattern: '^[a-z0-9-]+\\.example\\.com$', input: 'a'.repeat(100_000) },
];
