import { compilePolicy } from '../../../src/policy/compile-policy.js';
import type { CompiledPolicy, Policy, PolicyKind } from '../../../src/policy/compile-policy.js';
import { createPolicyObject } from '../../../src/policy/policy-object.js';
import type { AutonomyTier, PolicyObject, PolicyObjectInput } from '../../../src/policy/policy-object.js';
import type { GovernedCallType } from '../../../src/shared/governed-call.js';

/** Compiles a policy that is expected to be valid; a test fails loudly if it is not. */
export function compiled(policy: Partial<Policy> & { name: string; match: string }): CompiledPolicy {
  const result = compilePolicy({
    kind: 'deny',
    appliesTo: ['llm', 'mcp', 'egress'],
    message: `${policy.name} says no`,
    ...policy,
  });
  if (!result.ok) throw new Error(`policy ${policy.name} does not compile: ${JSON.stringify(result.errors)}`);
  return result.compiled;
}

/** A policy of `kind` whose match is the constant `matches`. */
export function constant(name: string, kind: PolicyKind, matches: boolean, extra: Partial<Policy> = {}): CompiledPolicy {
  return compiled({ name, kind, match: String(matches), ...extra });
}

export function llmCall(tier: AutonomyTier, llm: PolicyObjectInput['llm'] = {}): PolicyObject {
  return createPolicyObject({
    request: { type: 'llm' },
    agent: { id: 'prod/coder', namespace: 'prod', name: 'coder', autonomyTier: tier },
    llm: { provider: 'anthropic', route: 'messages', model: 'claude-sonnet-4-5', stream: true, maxTokens: 8192, ...llm },
  });
}

export function mcpCall(tier: AutonomyTier, mcp: PolicyObjectInput['mcp'] = {}): PolicyObject {
  return createPolicyObject({
    request: { type: 'mcp' },
    agent: { id: 'prod/coder', namespace: 'prod', name: 'coder', autonomyTier: tier },
    mcp: { server: 'github', tool: 'create_issue', arguments: {}, ...mcp },
  });
}

export function egressCall(tier: AutonomyTier, egress: PolicyObjectInput['egress'] = {}): PolicyObject {
  return createPolicyObject({
    request: { type: 'egress' },
    agent: { id: 'prod/coder', namespace: 'prod', name: 'coder', autonomyTier: tier },
    egress: { host: 'example.com', port: 443, scheme: 'https', method: 'CONNECT', ...egress },
  });
}

export function callOf(type: GovernedCallType, tier: AutonomyTier = 'T2'): PolicyObject {
  if (type === 'llm') return llmCall(tier);
  if (type === 'mcp') return mcpCall(tier);
  return egressCall(tier);
}
