import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createPolicyObject } from '../../../src/policy/policy-object.js';
import type { AutonomyLevel, AutonomyTier } from '../../../src/policy/policy-object.js';

describe('createPolicyObject', () => {
  const tiers: [AutonomyTier, AutonomyLevel][] = [
    ['T1', 1],
    ['T2', 2],
    ['T3', 3],
    ['T4', 4],
  ];
  for (const [tier, level] of tiers) {
    test(`tier ${tier} reads as autonomyLevel ${level}`, () => {
      const object = createPolicyObject({ request: { type: 'llm' }, agent: { autonomyTier: tier } });
      assert.equal(object.agent.autonomyTier, tier);
      assert.equal(object.agent.autonomyLevel, level);
    });
  }

  test('an agent with no tier, or an empty one, is T2', () => {
    for (const agent of [undefined, {}, { autonomyTier: '' as const }]) {
      const object = createPolicyObject({ request: { type: 'llm' }, ...(agent === undefined ? {} : { agent }) });
      assert.equal(object.agent.autonomyTier, 'T2');
      assert.equal(object.agent.autonomyLevel, 2);
    }
  });

  test('an agent key call has an empty developer and session', () => {
    const object = createPolicyObject({ request: { type: 'llm' }, agent: { id: 'prod/bot' } });
    assert.deepEqual(object.developer, { id: '', namespace: '', name: '', role: '' });
    assert.deepEqual(object.session, { id: '' });
  });

  test('an MCP call takes MCP defaults for hints the server did not declare', () => {
    const object = createPolicyObject({ request: { type: 'mcp' }, mcp: { tool: 'x', annotations: { readOnlyHint: true } } });
    assert.deepEqual(object.mcp.annotations, {
      readOnlyHint: true,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    });
  });

  test('sections of other request types hold zero values, whatever the input says', () => {
    const object = createPolicyObject({
      request: { type: 'llm' },
      llm: { model: 'gpt-5' },
      mcp: { tool: 'delete_repo', annotations: { destructiveHint: true } },
      egress: { host: 'example.com', port: 443 },
    });
    assert.deepEqual(object.mcp, {
      server: '',
      tool: '',
      arguments: {},
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    });
    assert.deepEqual(object.egress, { host: '', port: 0, scheme: '', method: '' });
    assert.equal(object.llm.model, 'gpt-5');
  });

  test('an egress host is compared in lower case and without a trailing dot', () => {
    const object = createPolicyObject({ request: { type: 'egress' }, egress: { host: 'API.OpenAI.com.' } });
    assert.equal(object.egress.host, 'api.openai.com');
  });
});
