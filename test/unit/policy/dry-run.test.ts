import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BUILT_IN_POLICIES } from '../../../src/policy/built-in-policies.js';
import { compilePolicy } from '../../../src/policy/compile-policy.js';
import type { CompiledPolicy } from '../../../src/policy/compile-policy.js';
import { dryRunEvaluate, parsePolicyObjectSample } from '../../../src/policy/dry-run.js';
import type { DryRunResult, SampleFieldError } from '../../../src/policy/dry-run.js';
import { compiled, constant } from './policy-fixtures.js';

const builtIns: CompiledPolicy[] = BUILT_IN_POLICIES.map((policy) => {
  const result = compilePolicy(policy);
  if (!result.ok) throw new Error(policy.name);
  return result.compiled;
});

function run(sample: unknown, policies: readonly CompiledPolicy[] = builtIns, exempt?: string[]): DryRunResult {
  const result = dryRunEvaluate(policies, sample, exempt === undefined ? undefined : { exemptPolicies: new Set(exempt) });
  assert.ok(result.ok, JSON.stringify(!result.ok && result.errors));
  return result.result;
}

function refused(sample: unknown): SampleFieldError[] {
  const result = parsePolicyObjectSample(sample);
  assert.equal(result.ok, false);
  return result.ok ? [] : result.errors;
}

describe('dry run of a sample request', () => {
  test('a partial LLM sample is completed with defaults (tier T2) and evaluated against the built-ins', () => {
    const result = run({ request: { type: 'llm' }, llm: { model: 'o3-pro' } });
    assert.equal(result.decision.outcome, 'deny');
    assert.equal(result.decision.decidingPolicy?.name, 'autonomy-model-ceiling');
    assert.equal(result.object.agent.autonomyTier, 'T2');
    assert.equal(result.object.agent.autonomyLevel, 2);
    assert.equal(result.object.llm.maxTokens, 0);
    assert.deepEqual(
      result.policies.map((p) => [p.name, p.result]),
      [
        ['autonomy-tool-approval', 'not_applicable'],
        ['autonomy-egress-allowlist', 'not_applicable'],
        ['autonomy-model-ceiling', 'matched'],
        ['autonomy-audit-autonomous', 'not_applicable'],
      ],
    );
  });

  test('the request type is taken from the only request section given', () => {
    const result = run({ agent: { autonomyTier: 'T1' }, mcp: { tool: 'delete_branch' } });
    assert.equal(result.object.request.type, 'mcp');
    assert.deepEqual(result.object.mcp.annotations, {
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    });
    assert.equal(result.decision.outcome, 'approve');
  });

  test('an autonomy level alone sets the tier', () => {
    const result = run({ agent: { autonomyLevel: 4 }, egress: { host: 'example.com' } });
    assert.equal(result.object.agent.autonomyTier, 'T4');
    assert.equal(result.decision.outcome, 'allow');
    assert.equal(result.decision.audit, true);
  });

  test('disabled, exempt, failing and not-matching policies are each reported', () => {
    const policies = [
      constant('off', 'deny', true, { enabled: false }),
      constant('waived', 'deny', true),
      compiled({ name: 'broken', kind: 'approve', match: "object.mcp.arguments.path == '/'" }),
      constant('quiet', 'audit', false),
    ];
    const result = run({ request: { type: 'mcp' } }, policies, ['waived']);
    assert.deepEqual(
      result.policies.map((p) => [p.name, p.result]),
      [
        ['off', 'disabled'],
        ['waived', 'exempt'],
        ['broken', 'failed'],
        ['quiet', 'not_matched'],
      ],
    );
    assert.match(result.policies[2]?.error?.message ?? '', /path/);
    assert.equal(result.decision.outcome, 'approve');
  });

  test('sections of another request type are ignored with a warning', () => {
    const result = run({ request: { type: 'llm' }, llm: { model: 'gpt-5' }, egress: { host: 'example.com' } });
    assert.equal(result.object.egress.host, '');
    assert.deepEqual(result.warnings, [
      'object.egress is ignored for a request of type llm: sections of other request types hold zero values',
    ]);
  });
});

describe('a sample that does not fit the policy object is refused, naming the field', () => {
  const table: { why: string; sample: unknown; field: string; says: RegExp }[] = [
    { why: 'not an object', sample: 'llm', field: 'object', says: /JSON object/ },
    { why: 'an unknown section', sample: { request: { type: 'llm' }, user: {} }, field: 'object.user', says: /not part of the policy object/ },
    { why: 'an unknown field', sample: { request: { type: 'llm' }, agent: { tier: 'T1' } }, field: 'object.agent.tier', says: /not part/ },
    { why: 'a tier outside T1..T4', sample: { request: { type: 'llm' }, agent: { autonomyTier: 'T5' } }, field: 'object.agent.autonomyTier', says: /T1, T2, T3, T4 or empty/ },
    { why: 'a level outside 1..4', sample: { request: { type: 'llm' }, agent: { autonomyLevel: 5 } }, field: 'object.agent.autonomyLevel', says: /from 1 to 4/ },
    { why: 'a tier and level that disagree', sample: { request: { type: 'llm' }, agent: { autonomyTier: 'T1', autonomyLevel: 3 } }, field: 'object.agent.autonomyLevel', says: /contradicts/ },
    { why: 'a port out of range', sample: { egress: { port: 70_000 } }, field: 'object.egress.port', says: /0 to 65535/ },
    { why: 'a string where a bool belongs', sample: { llm: { stream: 'yes' } }, field: 'object.llm.stream', says: /true or false/ },
    { why: 'arguments that are not an object', sample: { mcp: { arguments: [1, 2] } }, field: 'object.mcp.arguments', says: /JSON object/ },
    { why: 'an unknown request type', sample: { request: { type: 'http' } }, field: 'object.request.type', says: /llm, mcp, egress/ },
    { why: 'no request type and two request sections', sample: { llm: {}, mcp: {} }, field: 'object.request.type', says: /required/ },
    { why: 'an unknown developer role', sample: { request: { type: 'llm' }, developer: { role: 'owner' } }, field: 'object.developer.role', says: /admin, viewer, developer or empty/ },
  ];
  for (const row of table) {
    test(`${row.why} -> ${row.field}`, () => {
      const errors = refused(row.sample);
      assert.equal(errors[0]?.field, row.field, JSON.stringify(errors));
      assert.match(errors[0]?.message ?? '', row.says);
    });
  }
});
