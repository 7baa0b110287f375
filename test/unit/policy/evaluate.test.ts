import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { CompiledPolicy, PolicyKind } from '../../../src/policy/compile-policy.js';
import type { Outcome } from '../../../src/policy/decision.js';
import { evaluate, preparePolicyObject } from '../../../src/policy/engine.js';
import { GOVERNED_CALL_TYPES, type GovernedCallType } from '../../../src/shared/governed-call.js';
import { callOf, compiled, constant, llmCall, mcpCall } from './policy-fixtures.js';

describe('precedence: deny over approve over allow, no match allows', () => {
  const table: { matching: PolicyKind[]; outcome: Outcome; deciding?: string; audit: boolean }[] = [
    { matching: [], outcome: 'allow', audit: false },
    { matching: ['allow'], outcome: 'allow', deciding: 'allow-1', audit: false },
    { matching: ['approve'], outcome: 'approve', deciding: 'approve-1', audit: false },
    { matching: ['deny'], outcome: 'deny', deciding: 'deny-1', audit: false },
    { matching: ['allow', 'approve'], outcome: 'approve', deciding: 'approve-1', audit: false },
    { matching: ['approve', 'allow'], outcome: 'approve', deciding: 'approve-1', audit: false },
    { matching: ['allow', 'deny'], outcome: 'deny', deciding: 'deny-1', audit: false },
    { matching: ['approve', 'deny'], outcome: 'deny', deciding: 'deny-1', audit: false },
    { matching: ['deny', 'approve', 'allow'], outcome: 'deny', deciding: 'deny-1', audit: false },
    { matching: ['audit'], outcome: 'allow', audit: true },
    { matching: ['audit', 'approve'], outcome: 'approve', deciding: 'approve-1', audit: true },
    { matching: ['deny', 'audit'], outcome: 'deny', deciding: 'deny-1', audit: true },
  ];
  for (const row of table) {
    test(`matching [${row.matching.join(', ')}] -> ${row.outcome}${row.audit ? ', audited' : ''}`, () => {
      const policies = row.matching.map((kind) => constant(`${kind}-1`, kind, true));
      const decision = evaluate(policies, llmCall('T2'));
      assert.equal(decision.outcome, row.outcome);
      assert.equal(decision.decidingPolicy?.name, row.deciding);
      assert.equal(decision.audit, row.audit);
      assert.deepEqual(
        decision.matched.map((m) => m.name),
        row.matching.map((kind) => `${kind}-1`),
      );
      assert.deepEqual(decision.errors, []);
    });
  }

  test('among matching policies of the winning kind the first in order decides', () => {
    const decision = evaluate(
      [constant('deny-b', 'deny', true), constant('deny-a', 'deny', true)],
      llmCall('T2'),
    );
    assert.equal(decision.decidingPolicy?.name, 'deny-b');
  });

  test('the deciding policy carries its kind, message and approval window', () => {
    const decision = evaluate(
      [compiled({ name: 'hold-opus', kind: 'approve', match: 'true', message: 'wait for a human', approvalWindowSeconds: 120 })],
      llmCall('T2'),
    );
    assert.deepEqual(decision.decidingPolicy, {
      name: 'hold-opus',
      kind: 'approve',
      message: 'wait for a human',
      approvalWindowSeconds: 120,
    });
  });

  test('policies that do not match are not listed', () => {
    const decision = evaluate([constant('never', 'deny', false), constant('always', 'audit', true)], llmCall('T2'));
    assert.deepEqual(decision.matched, [{ name: 'always', kind: 'audit' }]);
    assert.equal(decision.outcome, 'allow');
  });

  test('the outcome is the strictest matching kind, and audit policies never change it (property)', () => {
    const rank: Record<Outcome, number> = { allow: 1, approve: 2, deny: 3 };
    const spec = fc.record({
      kind: fc.constantFrom<PolicyKind>('allow', 'deny', 'approve', 'audit'),
      matches: fc.boolean(),
      enabled: fc.boolean(),
      appliesTo: fc.subarray([...GOVERNED_CALL_TYPES], { minLength: 1 }),
    });
    fc.assert(
      fc.property(fc.array(spec, { maxLength: 8 }), fc.constantFrom<GovernedCallType>(...GOVERNED_CALL_TYPES), (specs, type) => {
        const policies = specs.map((s, i) =>
          constant(`p-${i}`, s.kind, s.matches, { enabled: s.enabled, appliesTo: s.appliesTo }),
        );
        const object = callOf(type);
        const decision = evaluate(policies, object);
        const deciding = specs.filter((s) => s.matches && s.enabled && s.appliesTo.includes(type) && s.kind !== 'audit');
        const expected = deciding.reduce<Outcome>(
          (best, s) => (rank[s.kind as Outcome] > rank[best] ? (s.kind as Outcome) : best),
          'allow',
        );
        assert.equal(decision.outcome, expected);

        const withoutAudit = evaluate(
          policies.filter((p) => p.policy.kind !== 'audit'),
          object,
        );
        assert.equal(withoutAudit.outcome, decision.outcome);
        assert.equal(withoutAudit.decidingPolicy?.name, decision.decidingPolicy?.name);
      }),
    );
  });
});

describe('which policies take part', () => {
  test('a disabled policy is ignored', () => {
    const decision = evaluate([constant('off', 'deny', true, { enabled: false })], llmCall('T2'));
    assert.equal(decision.outcome, 'allow');
    assert.deepEqual(decision.matched, []);
  });

  const appliesToTable: { appliesTo: GovernedCallType[]; type: GovernedCallType; outcome: Outcome }[] = [
    { appliesTo: ['mcp'], type: 'llm', outcome: 'allow' },
    { appliesTo: ['mcp'], type: 'mcp', outcome: 'deny' },
    { appliesTo: ['mcp'], type: 'egress', outcome: 'allow' },
    { appliesTo: ['llm', 'egress'], type: 'llm', outcome: 'deny' },
    { appliesTo: ['llm', 'egress'], type: 'mcp', outcome: 'allow' },
    { appliesTo: ['llm', 'egress'], type: 'egress', outcome: 'deny' },
  ];
  for (const row of appliesToTable) {
    test(`a policy for [${row.appliesTo.join(', ')}] on a ${row.type} request -> ${row.outcome}`, () => {
      const decision = evaluate([constant('scoped', 'deny', true, { appliesTo: row.appliesTo })], callOf(row.type));
      assert.equal(decision.outcome, row.outcome);
    });
  }

  test('an exempted policy is skipped and the others still apply', () => {
    const policies = [constant('no-opus', 'deny', true), constant('hold-all', 'approve', true)];
    const exempt = evaluate(policies, llmCall('T2'), { exemptPolicies: new Set(['no-opus']) });
    assert.equal(exempt.outcome, 'approve');
    assert.equal(exempt.decidingPolicy?.name, 'hold-all');
    assert.deepEqual(
      exempt.matched.map((m) => m.name),
      ['hold-all'],
    );
    assert.equal(evaluate(policies, llmCall('T2')).outcome, 'deny');
  });

  test('an exemption from a failing policy also skips its failure', () => {
    const broken = compiled({ name: 'broken', kind: 'deny', match: "object.mcp.arguments.path == '/etc'" });
    const decision = evaluate([broken], mcpCall('T2'), { exemptPolicies: new Set(['broken']) });
    assert.equal(decision.outcome, 'allow');
    assert.deepEqual(decision.errors, []);
  });

  test('a prepared object gives the same decision as the plain object', () => {
    const policies = [compiled({ name: 'low-tier', kind: 'deny', match: 'object.agent.autonomyLevel < 3' })];
    const object = llmCall('T1');
    assert.deepEqual(evaluate(policies, preparePolicyObject(object)), evaluate(policies, object));
  });
});

describe('sections of other request types read as zero values', () => {
  const table: { match: string; matches: boolean }[] = [
    { match: 'object.mcp.annotations.readOnlyHint', matches: false },
    { match: 'object.mcp.annotations.destructiveHint', matches: false },
    { match: "object.mcp.tool == ''", matches: true },
    { match: 'size(object.mcp.arguments) == 0', matches: true },
    { match: 'object.egress.port == 0', matches: true },
    { match: "object.developer.id == ''", matches: true },
    { match: 'has(object.mcp.annotations)', matches: true },
  ];
  for (const row of table) {
    test(`on an LLM request \`${row.match}\` is ${row.matches} and raises no error`, () => {
      const decision = evaluate([compiled({ name: 'cross-type', kind: 'deny', match: row.match })], llmCall('T2'));
      assert.deepEqual(decision.errors, []);
      assert.equal(decision.outcome, row.matches ? 'deny' : 'allow');
    });
  }
});

describe('fail closed: a policy whose expression errors at run time', () => {
  // `path` is absent from the tool arguments, so reading it is a CEL "no such key" error.
  const failing = "object.mcp.arguments.path.startsWith('/etc')";
  const failTable: { kind: PolicyKind; outcome: Outcome; matched: boolean; audit: boolean }[] = [
    { kind: 'deny', outcome: 'deny', matched: true, audit: false },
    { kind: 'approve', outcome: 'approve', matched: true, audit: false },
    { kind: 'allow', outcome: 'allow', matched: false, audit: false },
    { kind: 'audit', outcome: 'allow', matched: true, audit: true },
  ];
  for (const row of failTable) {
    test(`a failing ${row.kind} policy ${row.matched ? 'counts as matched' : 'does not match'} and is reported`, () => {
      const decision = evaluate([compiled({ name: 'broken', kind: row.kind, match: failing })], mcpCall('T2'));
      assert.equal(decision.outcome, row.outcome);
      assert.equal(decision.audit, row.audit);
      assert.deepEqual(
        decision.matched.map((m) => m.name),
        row.matched ? ['broken'] : [],
      );
      assert.equal(decision.errors.length, 1);
      assert.equal(decision.errors[0]?.policy, 'broken');
      assert.match(decision.errors[0]?.message ?? '', /path/);
      assert.equal(decision.errors[0]?.line, 1);
      assert.equal(decision.errors[0]?.column, 22);
    });
  }

  test('a failing allow policy grants nothing: a matching approve policy still holds the call', () => {
    const decision = evaluate(
      [compiled({ name: 'broken-allow', kind: 'allow', match: failing }), constant('hold', 'approve', true)],
      mcpCall('T2'),
    );
    assert.equal(decision.outcome, 'approve');
    assert.equal(decision.decidingPolicy?.name, 'hold');
  });

  test('a cleanly matching deny decides ahead of an earlier failing deny', () => {
    const decision = evaluate(
      [compiled({ name: 'broken-deny', kind: 'deny', match: failing }), constant('clean-deny', 'deny', true)],
      mcpCall('T2'),
    );
    assert.equal(decision.decidingPolicy?.name, 'clean-deny');
    assert.deepEqual(
      decision.matched.map((m) => m.name),
      ['broken-deny', 'clean-deny'],
    );
  });

  test('a guard with has() avoids the error, so the policy simply does not match', () => {
    const guarded = compiled({ name: 'guarded', kind: 'deny', match: `has(object.mcp.arguments.path) && ${failing}` });
    const decision = evaluate([guarded], mcpCall('T2'));
    assert.equal(decision.outcome, 'allow');
    assert.deepEqual(decision.errors, []);
    assert.equal(evaluate([guarded], mcpCall('T2', { arguments: { path: '/etc/passwd' } })).outcome, 'deny');
  });

  test('an error absorbed by || is not an error (CEL commutative logic)', () => {
    const absorbed = compiled({ name: 'absorbed', kind: 'deny', match: `${failing} || object.agent.autonomyLevel == 2` });
    const decision = evaluate([absorbed], mcpCall('T2'));
    assert.equal(decision.outcome, 'deny');
    assert.deepEqual(decision.errors, []);
  });

  test('a value that is not a bool at run time is an error, and a deny policy then matches', () => {
    const notBool = compiled({ name: 'not-bool', kind: 'deny', match: 'object.mcp.arguments.force' });
    const decision = evaluate([notBool], mcpCall('T2', { arguments: { force: 'yes' } }));
    assert.equal(decision.outcome, 'deny');
    assert.match(decision.errors[0]?.message ?? '', /instead of true or false/);
    assert.equal(evaluate([notBool], mcpCall('T2', { arguments: { force: false } })).outcome, 'allow');
  });
});

describe('tool arguments are JSON as CEL sees it', () => {
  const table: { match: string; args: Record<string, unknown>; matches: boolean }[] = [
    { match: 'object.mcp.arguments.limit == 100', args: { limit: 100 }, matches: true },
    { match: 'object.mcp.arguments.limit > 99', args: { limit: 100 }, matches: true },
    { match: "object.mcp.arguments.branch in ['main', 'master']", args: { branch: 'main' }, matches: true },
    { match: "'force' in object.mcp.arguments", args: { force: true }, matches: true },
    { match: "object.mcp.arguments.paths.exists(p, p.startsWith('/etc'))", args: { paths: ['/tmp/a', '/etc/x'] }, matches: true },
    { match: 'object.mcp.arguments.options.recursive', args: { options: { recursive: true } }, matches: true },
    { match: 'object.mcp.arguments.note == null', args: { note: null }, matches: true },
  ];
  for (const row of table) {
    test(`\`${row.match}\` with ${JSON.stringify(row.args)} -> ${row.matches}`, () => {
      const decision = evaluate(
        [compiled({ name: 'args', kind: 'deny', match: row.match })],
        mcpCall('T2', { arguments: row.args as never }),
      );
      assert.deepEqual(decision.errors, []);
      assert.equal(decision.outcome, row.matches ? 'deny' : 'allow');
    });
  }
});

// Speed is measured in bench/ (cel-engines, gateway-overhead), side by side, never as a timed unit test.
