import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  canonicalJson,
  heldCallDedupeKey,
  type LlmCallIdentity,
  type McpCallIdentity,
} from '../../../src/held-calls/dedupe-key.js';

const chatCall: LlmCallIdentity = {
  kind: 'llm',
  agentId: 'eng/reviewer-bot',
  developerId: 'eng/alice',
  sessionId: 'sess-2026-11-21-a',
  policyName: 'approve-prod-data',
  route: '/llm/openai/v1/chat/completions',
  model: 'gpt-4.1',
  body: {
    model: 'gpt-4.1',
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Summarise the customers table.' },
    ],
    tools: [{ type: 'function', function: { name: 'query', parameters: { type: 'object', properties: {} } } }],
    temperature: 0.2,
  },
};

const toolCall: McpCallIdentity = {
  kind: 'mcp',
  agentId: 'eng/reviewer-bot',
  developerId: 'eng/alice',
  sessionId: 'sess-2026-11-21-a',
  policyName: 'approve-destructive-tools',
  server: 'github',
  tool: 'delete_branch',
  arguments: { repo: 'acme/api', branch: 'release-1.2', force: false },
};

describe('held-call de-duplication key', () => {
  test('is 64 hex characters and stable for the same call', () => {
    const key = heldCallDedupeKey(chatCall);
    assert.match(key, /^[0-9a-f]{64}$/);
    assert.equal(heldCallDedupeKey(structuredClone(chatCall)), key);
  });

  test('the same call with its keys in another order gets the same key', () => {
    const reordered: LlmCallIdentity = {
      ...chatCall,
      body: {
        temperature: 0.2,
        tools: [{ function: { parameters: { properties: {}, type: 'object' }, name: 'query' }, type: 'function' }],
        messages: [
          { content: 'You are terse.', role: 'system' },
          { content: 'Summarise the customers table.', role: 'user' },
        ],
        model: 'gpt-4.1',
      },
    };
    assert.equal(heldCallDedupeKey(reordered), heldCallDedupeKey(chatCall));
    const args = { force: false, branch: 'release-1.2', repo: 'acme/api' };
    assert.equal(heldCallDedupeKey({ ...toolCall, arguments: args }), heldCallDedupeKey(toolCall));
  });

  test('numbers are compared by value, not spelling', () => {
    const spelled = JSON.parse('{"a": 1.0, "b": 2e1, "c": -0}') as unknown;
    assert.equal(canonicalJson(spelled), '{"a":1,"b":20,"c":0}');
  });

  const llmDifferences: Array<[string, Partial<LlmCallIdentity>]> = [
    ['prompt', { body: { ...(chatCall.body as object), messages: [{ role: 'user', content: 'Drop the customers table.' }] } }],
    ['system prompt', { body: { ...(chatCall.body as object), messages: [{ role: 'system', content: 'Be verbose.' }, { role: 'user', content: 'Summarise the customers table.' }] } }],
    ['tools offered', { body: { ...(chatCall.body as object), tools: [] } }],
    ['sampling parameters', { body: { ...(chatCall.body as object), temperature: 0.9 } }],
    ['model', { model: 'gpt-4.1-mini' }],
    ['agent', { agentId: 'eng/other-bot' }],
    ['session', { sessionId: 'sess-2026-11-21-b' }],
    ['developer (the same session value sent by another developer)', { developerId: 'eng/bob' }],
    ['developer versus an agent key', { developerId: null }],
    ['no session (agent key) versus a session', { sessionId: null }],
    ['policy', { policyName: 'approve-large-prompts' }],
    ['endpoint', { route: '/llm/openai/v1/responses' }],
  ];
  for (const [what, change] of llmDifferences) {
    test(`an LLM request differing only in ${what} gets another key`, () => {
      assert.notEqual(heldCallDedupeKey({ ...chatCall, ...change }), heldCallDedupeKey(chatCall));
    });
  }

  const mcpDifferences: Array<[string, Partial<McpCallIdentity>]> = [
    ['tool', { tool: 'delete_repo' }],
    ['one argument', { arguments: { repo: 'acme/api', branch: 'release-1.3', force: false } }],
    ['an extra argument', { arguments: { repo: 'acme/api', branch: 'release-1.2', force: false, dryRun: true } }],
    ['an argument type', { arguments: { repo: 'acme/api', branch: 'release-1.2', force: 'false' } }],
    ['server', { server: 'gitlab' }],
    ['agent', { agentId: 'eng/other-bot' }],
    ['session', { sessionId: 'sess-2026-11-21-b' }],
    ['developer (the same session value sent by another developer)', { developerId: 'eng/bob' }],
    ['developer versus an agent key', { developerId: null }],
    ['policy', { policyName: 'approve-everything' }],
  ];
  for (const [what, change] of mcpDifferences) {
    test(`an MCP tool call differing only in ${what} gets another key`, () => {
      assert.notEqual(heldCallDedupeKey({ ...toolCall, ...change }), heldCallDedupeKey(toolCall));
    });
  }

  test('an LLM request and a tool call never share a key', () => {
    assert.notEqual(heldCallDedupeKey(chatCall), heldCallDedupeKey(toolCall));
  });

  test('a retried SDK call gets the same key: transport fields and caching hints are not the prompt', () => {
    const retried: LlmCallIdentity = {
      ...chatCall,
      route: '/llm/openai/v1/chat/completions?retry=1',
      body: {
        ...(chatCall.body as object),
        stream: true,
        stream_options: { include_usage: true },
        metadata: { trace_id: 'tr-9f2c', attempt: '2' },
        user: 'u-1234',
        prompt_cache_key: 'pc-abc',
        store: false,
        service_tier: 'auto',
      },
    };
    assert.equal(heldCallDedupeKey(retried), heldCallDedupeKey(chatCall));
  });

  test('Anthropic cache_control breakpoints do not split a call, wherever they sit', () => {
    const base: LlmCallIdentity = {
      ...chatCall,
      route: '/llm/anthropic/v1/messages',
      model: 'claude-sonnet-4-5',
      body: {
        model: 'claude-sonnet-4-5',
        max_tokens: 1024,
        system: [{ type: 'text', text: 'You are terse.' }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Summarise the customers table.' }] }],
      },
    };
    const cached: LlmCallIdentity = {
      ...base,
      route: '/llm/anthropic/v1/messages?beta=true',
      body: {
        model: 'claude-sonnet-4-5',
        max_tokens: 1024,
        system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Summarise the customers table.', cache_control: { type: 'ephemeral' } }] },
        ],
        metadata: { user_id: 'user_abc_session_1' },
      },
    };
    assert.equal(heldCallDedupeKey(cached), heldCallDedupeKey(base));
  });

  test('MCP request ids and progress tokens are not part of the call; absent arguments equal {}', () => {
    assert.equal(
      heldCallDedupeKey({ ...toolCall, arguments: undefined }),
      heldCallDedupeKey({ ...toolCall, arguments: {} }),
    );
  });

  test('property: any key order of any JSON arguments gives the same key', () => {
    const shuffleDeep = (value: unknown, seed: number): unknown => {
      if (Array.isArray(value)) return value.map((v, i) => shuffleDeep(v, seed + i));
      if (value === null || typeof value !== 'object') return value;
      const entries = Object.entries(value as Record<string, unknown>);
      const rotated = entries.slice(seed % Math.max(entries.length, 1)).concat(entries.slice(0, seed % Math.max(entries.length, 1)));
      return Object.fromEntries(rotated.reverse().map(([k, v]) => [k, shuffleDeep(v, seed + 1)]));
    };
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(50), (args, seed) => {
        const parsed = JSON.parse(JSON.stringify(args)) as unknown;
        const a = heldCallDedupeKey({ ...toolCall, arguments: parsed });
        const b = heldCallDedupeKey({ ...toolCall, arguments: shuffleDeep(parsed, seed) });
        return a === b;
      }),
    );
  });

  test('property: different JSON arguments give different keys', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (x, y) => {
        const a = JSON.parse(JSON.stringify(x)) as unknown;
        const b = JSON.parse(JSON.stringify(y)) as unknown;
        fc.pre(canonicalJson(a) !== canonicalJson(b));
        return heldCallDedupeKey({ ...toolCall, arguments: a }) !== heldCallDedupeKey({ ...toolCall, arguments: b });
      }),
    );
  });
});

test('a "__proto__" member in a body is part of the prompt like any other member', () => {
  const withProto = JSON.parse('{"model":"m","messages":[],"__proto__":{"x":1}}') as unknown;
  const without = JSON.parse('{"model":"m","messages":[]}') as unknown;
  assert.notEqual(
    heldCallDedupeKey({ ...chatCall, body: withProto }),
    heldCallDedupeKey({ ...chatCall, body: without }),
  );
});
