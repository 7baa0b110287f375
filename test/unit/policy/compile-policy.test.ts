import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { compilePolicy } from '../../../src/policy/compile-policy.js';
import type { PolicyFieldError, PolicyInput } from '../../../src/policy/compile-policy.js';

const valid: PolicyInput = {
  name: 'no-prod-egress',
  kind: 'deny',
  appliesTo: ['egress'],
  match: "object.agent.namespace == 'prod'",
  message: 'Production agents may not open outbound connections.',
};

function errorsOf(input: Partial<PolicyInput>): PolicyFieldError[] {
  const result = compilePolicy({ ...valid, ...input });
  assert.equal(result.ok, false, `expected ${JSON.stringify(input)} to be refused`);
  return result.ok ? [] : result.errors;
}

function matchError(match: string): PolicyFieldError & { line: number; column: number } {
  const [error] = errorsOf({ match });
  assert.equal(error?.field, 'match');
  return error as PolicyFieldError & { line: number; column: number };
}

describe('compilePolicy accepts a valid policy', () => {
  test('defaults: enabled, not built-in, no approval window', () => {
    const result = compilePolicy(valid);
    assert.ok(result.ok);
    assert.deepEqual(result.compiled.policy, { ...valid, enabled: true, builtIn: false });
  });

  test('an approve policy keeps its approval window', () => {
    const result = compilePolicy({ ...valid, kind: 'approve', approvalWindowSeconds: 600 });
    assert.ok(result.ok);
    assert.equal(result.compiled.policy.approvalWindowSeconds, 600);
  });

  // Typical custom policies: none may be refused by the static check.
  const customs = [
    "object.agent.autonomyTier == 'T1'",
    'object.agent.autonomyLevel >= 3',
    "object.agent.autonomyTier in ['T1', 'T2']",
    "object.llm.model.startsWith('claude-opus')",
    "object.llm.model.matches('^(gpt-5|o3)(-pro)?$')",
    'object.llm.maxTokens > 32000 && object.llm.stream',
    "object.llm.provider == 'bedrock' && object.llm.route.startsWith('converse')",
    "object.mcp.server == 'github' && object.mcp.tool in ['delete_repository', 'merge_pull_request']",
    "object.mcp.tool.startsWith('delete_') || object.mcp.tool.endsWith('_delete')",
    "has(object.mcp.arguments.path) && object.mcp.arguments.path.startsWith('/etc/')",
    "object.mcp.arguments['branch'] == 'main'",
    'size(object.mcp.arguments) > 10',
    'object.mcp.annotations.openWorldHint && !object.mcp.annotations.readOnlyHint',
    "object.egress.host.endsWith('.amazonaws.com') && object.egress.port != 443",
    "object.egress.method in ['POST', 'PUT', 'PATCH', 'DELETE'] && object.agent.autonomyLevel <= 2",
    "object.developer.role == 'developer' && object.agent.id == ''",
    "object.developer.namespace in {'contractors': true, 'interns': true}",
    "object.session.id == '' && object.request.type == 'llm'",
    "['opus', 'o1-pro'].exists(f, object.llm.model.contains(f))",
    "object.llm.model.lowerAscii().split('-').size() > 3",
    'object.agent.autonomyLevel > 2.5',
    "object.mcp.arguments.count > 3 ? true : object.mcp.tool == 'x'",
    "type(object.mcp.arguments.limit) == double && object.mcp.arguments.limit > 1000.0",
    "// only production\nobject.agent.namespace == 'prod'",
  ];
  for (const match of customs) {
    test(`compiles ${JSON.stringify(match)}`, () => {
      const result = compilePolicy({ ...valid, match });
      assert.ok(result.ok, JSON.stringify(!result.ok && result.errors));
    });
  }
});

describe('compilePolicy refuses a bad match with its position', () => {
  const table: { why: string; match: string; line: number; column: number; says: RegExp }[] = [
    { why: 'an operand is missing', match: "object.agent.autonomyLevel >= 3 &&", line: 1, column: 33, says: /syntax error/ },
    { why: 'a string is never closed', match: "object.agent.autonomyTier == 'T1", line: 1, column: 30, says: /string is never closed/ },
    { why: 'a bracket is never closed', match: '(object.agent.autonomyLevel > 1', line: 1, column: 1, says: /"\(" is never closed/ },
    { why: 'a bracket closes nothing', match: 'object.agent.autonomyLevel > 1)', line: 1, column: 31, says: /no matching opening/ },
    { why: 'a field is misspelt', match: "object.agent.autonomyTeir == 'T1'", line: 1, column: 14, says: /no field "autonomyTeir" \(did you mean "autonomyTier"\?\)/ },
    { why: 'a section is misspelt, on line 2', match: "object.agent.autonomyLevel >= 3 &&\n  object.agnet.id == ''", line: 2, column: 10, says: /object has no field "agnet"/ },
    { why: 'an int is compared with a string', match: "object.agent.autonomyLevel == '3'", line: 1, column: 28, says: /never true/ },
    { why: 'an int is ordered against a string', match: "object.agent.autonomyLevel >= 'T3'", line: 1, column: 28, says: /cannot order/ },
    { why: 'the list can never contain the value', match: 'object.agent.autonomyTier in [1, 2]', line: 1, column: 27, says: /can never be in this list/ },
    { why: 'the result is not a bool', match: 'object.agent.autonomyLevel + 1', line: 1, column: 28, says: /must be true or false/ },
    { why: 'a method gets the wrong argument type', match: 'object.llm.model.startsWith(1)', line: 1, column: 29, says: /expects a string/ },
    { why: 'the regular expression is invalid', match: "object.llm.model.matches('gpt-(5')", line: 1, column: 26, says: /invalid regular expression/ },
    { why: 'matches() is called as a function', match: "matches(object.llm.model, '^gpt')", line: 1, column: 1, says: /as a method/ },
    { why: 'the function does not exist', match: 'isFrontier(object.llm.model)', line: 1, column: 1, says: /unknown function "isFrontier"/ },
    { why: 'a name other than object is read', match: "request.type == 'llm'", line: 1, column: 1, says: /unknown name "request"/ },
    { why: 'a field is read from a string', match: "object.agent.id.namespace == 'x'", line: 1, column: 17, says: /cannot read field "namespace"/ },
    { why: 'the expression is empty', match: '   ', line: 1, column: 1, says: /empty/ },
  ];
  for (const row of table) {
    test(`${row.why}: line ${row.line}, column ${row.column}`, () => {
      const error = matchError(row.match);
      assert.match(error.message, row.says);
      assert.deepEqual([error.line, error.column], [row.line, row.column]);
    });
  }

  test('a match that is not a string is refused', () => {
    const error = matchError(42 as unknown as string);
    assert.match(error.message, /CEL expression in a string/);
  });

  test('an over-long expression is refused', () => {
    const error = matchError(`object.agent.id == '${'a'.repeat(5000)}'`);
    assert.match(error.message, /longer than 4096/);
  });
});

describe('compilePolicy validates the other fields, naming each', () => {
  const table: { why: string; input: Partial<PolicyInput>; field: string; says: RegExp }[] = [
    { why: 'name with spaces', input: { name: 'No Prod' }, field: 'name', says: /lower-case letters/ },
    { why: 'empty name', input: { name: '' }, field: 'name', says: /1 to 63/ },
    { why: 'name starting with a hyphen', input: { name: '-x' }, field: 'name', says: /starting and ending/ },
    { why: 'name of 64 characters', input: { name: 'a'.repeat(64) }, field: 'name', says: /1 to 63/ },
    { why: 'unknown kind', input: { kind: 'block' }, field: 'kind', says: /allow, deny, approve, audit/ },
    { why: 'appliesTo empty', input: { appliesTo: [] }, field: 'appliesTo', says: /at least one/ },
    { why: 'appliesTo not a list', input: { appliesTo: 'llm' }, field: 'appliesTo', says: /at least one/ },
    { why: 'appliesTo with an unknown type', input: { appliesTo: ['llm', 'http'] }, field: 'appliesTo', says: /"http"/ },
    { why: 'appliesTo twice the same', input: { appliesTo: ['llm', 'llm'] }, field: 'appliesTo', says: /twice/ },
    { why: 'blank message', input: { message: '  ' }, field: 'message', says: /why and what they can do/ },
    { why: 'message too long', input: { message: 'x'.repeat(1001) }, field: 'message', says: /at most 1000/ },
    { why: 'window on a deny policy', input: { approvalWindowSeconds: 300 }, field: 'approvalWindowSeconds', says: /only to approve/ },
    { why: 'window of 0', input: { kind: 'approve', approvalWindowSeconds: 0 }, field: 'approvalWindowSeconds', says: /30 to 86400/ },
    { why: 'window below 30 s', input: { kind: 'approve', approvalWindowSeconds: 29 }, field: 'approvalWindowSeconds', says: /30 to 86400/ },
    { why: 'window above a day', input: { kind: 'approve', approvalWindowSeconds: 86_401 }, field: 'approvalWindowSeconds', says: /30 to 86400/ },
    { why: 'fractional window', input: { kind: 'approve', approvalWindowSeconds: 90.5 }, field: 'approvalWindowSeconds', says: /whole number/ },
    { why: 'window as a string', input: { kind: 'approve', approvalWindowSeconds: '300' }, field: 'approvalWindowSeconds', says: /whole number/ },
    { why: 'enabled as a string', input: { enabled: 'yes' }, field: 'enabled', says: /true or false/ },
  ];
  for (const row of table) {
    test(`${row.why} -> ${row.field}`, () => {
      const errors = errorsOf(row.input);
      assert.deepEqual(
        errors.map((e) => e.field),
        [row.field],
      );
      assert.match(errors[0]?.message ?? '', row.says);
    });
  }

  test('every problem is reported at once', () => {
    const errors = errorsOf({ name: 'Bad Name', kind: 'block', appliesTo: [], match: 'object.nope', message: '' });
    assert.deepEqual(
      errors.map((e) => e.field).sort(),
      ['appliesTo', 'kind', 'match', 'message', 'name'],
    );
  });
});
