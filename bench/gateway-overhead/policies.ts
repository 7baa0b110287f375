/**
 * The sixteen policies the bench adds to Reins' four built-in ones, for twenty in all. They are the kind an
 * operator writes (model and token ceilings, namespaces, regexes, tier conditions, audit flags) and all apply to
 * `llm`, so every one of them runs on every benchmark call: the worst case for the gateway's policy step. None
 * denies the benchmark request (agent bench/agent at T3, gpt-4o-mini, max_tokens 64); one allow policy matches it,
 * so the engine takes its "something matched" path instead of the shared no-match decision.
 */
import { BUILT_IN_POLICIES, compilePolicy, createPolicyObject, evaluate } from '../../src/policy/index.js';
import type { CompiledPolicy } from '../../src/policy/index.js';

export interface BenchPolicy {
  name: string;
  kind: 'deny' | 'allow' | 'audit';
  appliesTo: ['llm'];
  match: string;
  message: string;
}

function policy(name: string, kind: BenchPolicy['kind'], match: string, message: string): BenchPolicy {
  return { name: `bench-${name}`, kind, appliesTo: ['llm'], match, message };
}

export const BENCH_POLICIES: readonly BenchPolicy[] = [
  policy('deny-o1', 'deny', "object.llm.model.startsWith('o1')", 'o1 models are not approved for agents.'),
  policy('deny-huge-output', 'deny', 'object.llm.maxTokens > 100000', 'Ask for at most 100000 output tokens.'),
  policy('deny-blocked-namespace', 'deny', "object.agent.namespace == 'blocked'", 'Agents of namespace blocked may not call models.'),
  policy('deny-gpt-4-5', 'deny', "object.llm.model.matches('^gpt-4[.]5')", 'GPT-4.5 is retired here; use gpt-4.1.'),
  policy('deny-preview-models', 'deny', "object.llm.model.matches('(?i)(preview|experimental)')", 'Preview models are not approved.'),
  policy('deny-t1-streaming', 'deny', 'object.agent.autonomyLevel == 1 && object.llm.stream', 'T1 agents may not stream.'),
  policy(
    'deny-t2-large-models',
    'deny',
    "object.agent.autonomyLevel <= 2 && object.llm.model in ['gpt-4o', 'gpt-4.1', 'o3', 'claude-sonnet-4-5']",
    'T1 and T2 agents use small models.',
  ),
  policy(
    'deny-quarantined-agents',
    'deny',
    "object.agent.id in ['sandbox/untrusted', 'ci/rogue', 'bench/quarantined']",
    'This agent is quarantined.',
  ),
  policy(
    'deny-embeddings-outside-data',
    'deny',
    "object.llm.route == 'embeddings' && object.agent.namespace != 'data'",
    'Only the data namespace computes embeddings.',
  ),
  policy(
    'deny-sandbox-anthropic',
    'deny',
    "object.llm.provider == 'anthropic' && object.agent.namespace.startsWith('sandbox')",
    'Sandbox agents use OpenAI only.',
  ),
  policy(
    'deny-responses-below-t3',
    'deny',
    "object.llm.route.startsWith('responses') && object.agent.autonomyLevel < 3",
    'The Responses API is for T3 and T4 agents.',
  ),
  policy(
    'allow-approved-models',
    'allow',
    "object.llm.model in ['gpt-4o-mini', 'gpt-4.1-mini', 'claude-haiku-4-5'] && object.llm.maxTokens <= 4096",
    'Approved small model.',
  ),
  policy('audit-large-output', 'audit', 'object.llm.maxTokens > 16384', 'Large output requested.'),
  policy('audit-reasoning-models', 'audit', "object.llm.model.matches('^o[1-9]')", 'Reasoning model used.'),
  policy('audit-t4-streams', 'audit', 'object.agent.autonomyLevel == 4 && object.llm.stream', 'A T4 agent streamed.'),
  policy(
    'audit-developer-pro-models',
    'audit',
    "object.developer.role == 'developer' && object.llm.model.endsWith('-pro')",
    'A developer used a pro model.',
  ),
];

/**
 * Compiles the twenty policies with Reins' own engine and evaluates them on the benchmark request, before any
 * server starts: a policy that does not compile, or that would refuse or flag the benchmark call, would make
 * Reins' figures meaningless, so it stops the run here with the reason.
 */
export function checkPoliciesOffline(): { total: number; applyToLlm: number } {
  const compiled: CompiledPolicy[] = [];
  for (const p of [...BUILT_IN_POLICIES, ...BENCH_POLICIES]) {
    const result = compilePolicy({ ...p, enabled: true, builtIn: false });
    if (!result.ok) throw new Error(`policy ${p.name} does not compile: ${JSON.stringify(result.errors)}`);
    compiled.push(result.compiled);
  }
  const object = createPolicyObject({
    request: { type: 'llm' },
    agent: { id: 'bench/agent', namespace: 'bench', name: 'agent', autonomyTier: 'T3' },
    llm: { provider: 'openai', route: 'chat/completions', model: 'gpt-4o-mini', stream: false, maxTokens: 64 },
  });
  const decision = evaluate(compiled, object);
  const matched = decision.matched.map((m) => m.name);
  if (decision.outcome !== 'allow' || decision.audit || decision.errors.length > 0 || matched.join() !== 'bench-allow-approved-models') {
    throw new Error(`the policies do not leave the benchmark request alone: ${JSON.stringify({ ...decision, matched })}`);
  }
  return {
    total: compiled.length,
    applyToLlm: [...BUILT_IN_POLICIES, ...BENCH_POLICIES].filter((p) => p.appliesTo.includes('llm')).length,
  };
}
