import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  AUTONOMY_AUDIT_AUTONOMOUS,
  AUTONOMY_EGRESS_ALLOWLIST,
  AUTONOMY_MODEL_CEILING,
  AUTONOMY_TOOL_APPROVAL,
  BUILT_IN_POLICIES,
  DEFAULT_EGRESS_ALLOW_LIST,
  SUPERSEDED_BUILT_IN_VERSIONS,
} from '../../../src/policy/built-in-policies.js';
import { POLICY_NAME_PATTERN, compilePolicy } from '../../../src/policy/compile-policy.js';
import type { CompiledPolicy } from '../../../src/policy/compile-policy.js';
import type { Outcome } from '../../../src/policy/decision.js';
import { evaluate } from '../../../src/policy/engine.js';
import { AUTONOMY_TIERS, createPolicyObject } from '../../../src/policy/policy-object.js';
import type { AutonomyTier, PolicyObject, ToolAnnotations } from '../../../src/policy/policy-object.js';
import { egressCall, llmCall, mcpCall } from './policy-fixtures.js';

const builtIns: CompiledPolicy[] = BUILT_IN_POLICIES.map((policy) => {
  const result = compilePolicy(policy);
  if (!result.ok) throw new Error(`${policy.name}: ${JSON.stringify(result.errors)}`);
  return result.compiled;
});

type PerTier<T> = readonly [T, T, T, T];

function outcomesPerTier(build: (tier: AutonomyTier) => PolicyObject): Outcome[] {
  return AUTONOMY_TIERS.map((tier) => evaluate(builtIns, build(tier)).outcome);
}

describe('built-in Autonomy Governance policies', () => {
  test('there are four, all compile, are enabled, marked built-in and named in kebab-case', () => {
    assert.equal(BUILT_IN_POLICIES.length, 4);
    for (const policy of BUILT_IN_POLICIES) {
      assert.equal(policy.builtIn, true, policy.name);
      assert.equal(policy.enabled, true, policy.name);
      assert.match(policy.name, POLICY_NAME_PATTERN);
      assert.ok(compilePolicy(policy).ok, policy.name);
    }
  });

  test('every message names a way forward the person can take', () => {
    for (const policy of BUILT_IN_POLICIES) {
      assert.match(policy.message, /ask an admin|request|lower the agent/i, policy.name);
    }
  });

  describe('autonomy-tool-approval holds tool calls that can change data, by tier', () => {
    const hints = (readOnlyHint: boolean, destructiveHint: boolean): Partial<ToolAnnotations> => ({
      readOnlyHint,
      destructiveHint,
    });
    const table: { tool: string; annotations?: Partial<ToolAnnotations>; expected: PerTier<Outcome> }[] = [
      { tool: 'read-only tool', annotations: hints(true, false), expected: ['allow', 'allow', 'allow', 'allow'] },
      { tool: 'non-destructive write', annotations: hints(false, false), expected: ['approve', 'allow', 'allow', 'allow'] },
      { tool: 'destructive tool', annotations: hints(false, true), expected: ['approve', 'approve', 'approve', 'allow'] },
      { tool: 'unannotated tool (MCP defaults: may write, destructive)', expected: ['approve', 'approve', 'approve', 'allow'] },
      // MCP: destructiveHint is meaningful only when readOnlyHint is false.
      { tool: 'read-only tool that also claims destructive', annotations: hints(true, true), expected: ['allow', 'allow', 'allow', 'allow'] },
    ];
    for (const row of table) {
      test(`${row.tool}: T1..T4 -> ${row.expected.join(', ')}`, () => {
        const outcomes = outcomesPerTier((tier) =>
          mcpCall(tier, row.annotations === undefined ? {} : { annotations: row.annotations }),
        );
        assert.deepEqual(outcomes, row.expected);
      });
    }

    test('the hold names the policy, its message and no approval window of its own (the MCP default applies)', () => {
      const decision = evaluate(builtIns, mcpCall('T2', { annotations: hints(false, true) }));
      assert.equal(decision.decidingPolicy?.name, AUTONOMY_TOOL_APPROVAL.name);
      assert.equal(decision.decidingPolicy?.message, AUTONOMY_TOOL_APPROVAL.message);
      assert.equal(decision.decidingPolicy?.approvalWindowSeconds, undefined);
    });
  });

  describe('autonomy-egress-allowlist keeps T1-T2 agents on the allow-listed hosts', () => {
    const table: { host: string; expected: PerTier<Outcome> }[] = [
      { host: 'registry.npmjs.org', expected: ['allow', 'allow', 'allow', 'allow'] },
      { host: 'github.com', expected: ['allow', 'allow', 'allow', 'allow'] },
      { host: 'Registry.NPMJS.org.', expected: ['allow', 'allow', 'allow', 'allow'] },
      { host: 'example.com', expected: ['deny', 'deny', 'allow', 'allow'] },
      { host: 'api.openai.com', expected: ['deny', 'deny', 'allow', 'allow'] },
      { host: 'github.com.attacker.example', expected: ['deny', 'deny', 'allow', 'allow'] },
    ];
    for (const row of table) {
      test(`${row.host}: T1..T4 -> ${row.expected.join(', ')}`, () => {
        assert.deepEqual(outcomesPerTier((tier) => egressCall(tier, { host: row.host })), row.expected);
      });
    }

    test('every host of the shipped allow-list is reachable at T1', () => {
      for (const host of DEFAULT_EGRESS_ALLOW_LIST) {
        assert.equal(evaluate(builtIns, egressCall('T1', { host })).outcome, 'allow', host);
      }
    });

    test('the allow-list is a list literal in the policy that an admin edits', () => {
      const edited = compilePolicy({
        ...AUTONOMY_EGRESS_ALLOWLIST,
        match: AUTONOMY_EGRESS_ALLOWLIST.match.replace("'pypi.org',", "'pypi.org',\n  'docs.internal.example',"),
      });
      assert.ok(edited.ok);
      assert.equal(evaluate([edited.compiled], egressCall('T2', { host: 'docs.internal.example' })).outcome, 'allow');
      assert.equal(evaluate(builtIns, egressCall('T2', { host: 'docs.internal.example' })).outcome, 'deny');
    });
  });

  describe('autonomy-model-ceiling keeps the premium and deep-research models from T1-T2 agents, and no client default', () => {
    const table: { model: string; maxTokens?: number; expected: PerTier<Outcome> }[] = [
      { model: 'claude-sonnet-4-5', expected: ['allow', 'allow', 'allow', 'allow'] },
      // Claude Code's default model and max_tokens (2.1.x), and its small model's.
      { model: 'claude-opus-4-8', maxTokens: 64_000, expected: ['allow', 'allow', 'allow', 'allow'] },
      { model: 'claude-haiku-4-5-20251001', maxTokens: 32_000, expected: ['allow', 'allow', 'allow', 'allow'] },
      { model: 'us.anthropic.claude-opus-4-1-20250805-v1:0', expected: ['allow', 'allow', 'allow', 'allow'] },
      // The Vercel AI SDK's Anthropic provider sends the model's whole output limit.
      { model: 'claude-sonnet-4-5', maxTokens: 128_000, expected: ['allow', 'allow', 'allow', 'allow'] },
      // Codex CLI's models, with no max_output_tokens.
      { model: 'gpt-5.1-codex-max', expected: ['allow', 'allow', 'allow', 'allow'] },
      { model: 'gpt-5.2-codex', maxTokens: 0, expected: ['allow', 'allow', 'allow', 'allow'] },
      { model: 'gemini-2.5-pro', expected: ['allow', 'allow', 'allow', 'allow'] },
      { model: 'o1-pro', expected: ['deny', 'deny', 'allow', 'allow'] },
      { model: 'o3-pro-2025-06-10', expected: ['deny', 'deny', 'allow', 'allow'] },
      { model: 'o3-deep-research', expected: ['deny', 'deny', 'allow', 'allow'] },
      { model: 'o4-mini-deep-research-2025-06-26', expected: ['deny', 'deny', 'allow', 'allow'] },
      { model: 'o3', expected: ['allow', 'allow', 'allow', 'allow'] },
      { model: 'gpt-5-pro', expected: ['deny', 'deny', 'allow', 'allow'] },
      { model: 'gpt-5.2-pro', expected: ['deny', 'deny', 'allow', 'allow'] },
      { model: 'gpt-5', expected: ['allow', 'allow', 'allow', 'allow'] },
      { model: 'gpt-5-mini', maxTokens: 200_000, expected: ['allow', 'allow', 'allow', 'allow'] },
    ];
    for (const row of table) {
      const label = `${row.model}${row.maxTokens === undefined ? '' : ` with ${row.maxTokens} max tokens`}`;
      test(`${label}: T1..T4 -> ${row.expected.join(', ')}`, () => {
        const outcomes = outcomesPerTier((tier) =>
          llmCall(tier, { model: row.model, ...(row.maxTokens === undefined ? {} : { maxTokens: row.maxTokens }) }),
        );
        assert.deepEqual(outcomes, row.expected);
      });
    }

    test('the denial offers a model-access request, and a granted model passes', () => {
      const decision = evaluate(builtIns, llmCall('T2', { model: 'gpt-5-pro' }));
      assert.equal(decision.decidingPolicy?.name, AUTONOMY_MODEL_CEILING.name);
      assert.match(decision.decidingPolicy?.message ?? '', /request model access/);
      assert.equal(evaluate(builtIns, llmCall('T1', { model: 'gpt-5-pro', modelAccessGranted: true })).outcome, 'allow');
    });

    test('the first shipped version is kept word for word, so an unedited store is upgraded', () => {
      const old = SUPERSEDED_BUILT_IN_VERSIONS.find((v) => v.name === AUTONOMY_MODEL_CEILING.name);
      assert.ok(old, 'the superseded ceiling is listed');
      const compiled = compilePolicy({ ...AUTONOMY_MODEL_CEILING, match: old.match, message: old.message });
      assert.ok(compiled.ok);
      // The old version refused Claude Code's default model: what the upgrade is for.
      assert.equal(evaluate([compiled.compiled], llmCall('T2', { model: 'claude-opus-4-8', maxTokens: 64_000 })).outcome, 'deny');
    });
  });

  describe('autonomy-audit-autonomous flags what T3-T4 agents do with no person in the loop', () => {
    const table: { call: string; build: (tier: AutonomyTier) => PolicyObject; expected: PerTier<boolean> }[] = [
      { call: 'egress to any host', build: (tier) => egressCall(tier, { host: 'example.com' }), expected: [false, false, true, true] },
      { call: 'tool call that can change data', build: (tier) => mcpCall(tier, { annotations: { readOnlyHint: false, destructiveHint: false } }), expected: [false, false, true, true] },
      { call: 'read-only tool call', build: (tier) => mcpCall(tier, { annotations: { readOnlyHint: true } }), expected: [false, false, false, false] },
      { call: 'LLM request', build: (tier) => llmCall(tier), expected: [false, false, false, false] },
    ];
    for (const row of table) {
      test(`${row.call}: audited at T1..T4 -> ${row.expected.join(', ')}`, () => {
        assert.deepEqual(
          AUTONOMY_TIERS.map((tier) => evaluate(builtIns, row.build(tier)).audit),
          row.expected,
        );
      });
    }

    test('flagging never changes the outcome', () => {
      const call = mcpCall('T4', { annotations: { readOnlyHint: false, destructiveHint: true } });
      const decision = evaluate(builtIns, call);
      assert.equal(decision.outcome, 'allow');
      assert.equal(decision.audit, true);
      assert.equal(decision.decidingPolicy, undefined);
      assert.deepEqual(decision.matched, [{ name: AUTONOMY_AUDIT_AUTONOMOUS.name, kind: 'audit' }]);
    });
  });

  test('a tier change alone changes the next outcome', () => {
    const input = {
      request: { type: 'llm' as const },
      agent: { id: 'prod/coder', autonomyTier: 'T2' as AutonomyTier },
      llm: { model: 'o3-pro' },
    };
    assert.equal(evaluate(builtIns, createPolicyObject(input)).outcome, 'deny');
    assert.equal(
      evaluate(builtIns, createPolicyObject({ ...input, agent: { ...input.agent, autonomyTier: 'T3' } })).outcome,
      'allow',
    );
  });

  test('an agent with no tier assigned is governed as T2', () => {
    const unassigned = createPolicyObject({ request: { type: 'egress' }, agent: { autonomyTier: '' }, egress: { host: 'example.com' } });
    assert.equal(evaluate(builtIns, unassigned).outcome, 'deny');
  });

  test('raising the tier never makes the built-ins stricter (property)', () => {
    const strictness: Record<Outcome, number> = { allow: 0, approve: 1, deny: 2 };
    const call = fc.oneof(
      fc.record({
        type: fc.constant('mcp' as const),
        readOnlyHint: fc.option(fc.boolean(), { nil: undefined }),
        destructiveHint: fc.option(fc.boolean(), { nil: undefined }),
      }),
      fc.record({ type: fc.constant('egress' as const), host: fc.constantFrom('example.com', 'pypi.org', 'api.openai.com') }),
      fc.record({
        type: fc.constant('llm' as const),
        model: fc.constantFrom('claude-opus-4-1', 'claude-haiku-4-5', 'gpt-5-pro', 'gpt-5', 'o3-pro'),
        maxTokens: fc.integer({ min: 0, max: 200_000 }),
      }),
    );
    fc.assert(
      fc.property(call, (c) => {
        const build = (tier: AutonomyTier): PolicyObject => {
          if (c.type === 'mcp') {
            const annotations: Partial<ToolAnnotations> = {};
            if (c.readOnlyHint !== undefined) annotations.readOnlyHint = c.readOnlyHint;
            if (c.destructiveHint !== undefined) annotations.destructiveHint = c.destructiveHint;
            return mcpCall(tier, { annotations });
          }
          if (c.type === 'egress') return egressCall(tier, { host: c.host });
          return llmCall(tier, { model: c.model, maxTokens: c.maxTokens });
        };
        const levels = outcomesPerTier(build).map((outcome) => strictness[outcome]);
        for (let i = 1; i < levels.length; i++) assert.ok((levels[i] ?? 0) <= (levels[i - 1] ?? 0), `${JSON.stringify(c)}: ${levels}`);
      }),
    );
  });
});
