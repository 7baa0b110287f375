/**
 * Input PostgreSQL cannot store and input nothing should walk, through the real HTTP API on both stores:
 *
 * - the control plane refuses U+0000 and lone surrogates in any field, field name, path or query parameter with
 *   400 invalid_request naming the field;
 * - the data plane lets them flow: a held LLM prompt with U+0000 is held (its excerpt stored escaped), listed,
 *   audited and decided normally; MCP arguments with U+0000 are governed and audited normally;
 * - bad percent-encoding in any route's path or query, and a tier of the wrong type, answer the contract's codes;
 * - JSON nested 200,000 levels deep gets 400 (control plane, LLM plane in the provider's shape, audited) or
 *   JSON-RPC -32600 (both MCP planes), never a 500.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { MAX_JSON_DEPTH } from '../../../src/shared/json-depth.js';
import { startMcpUpstream, type McpUpstream } from '../../fakes/mcp-upstream.js';
import { llmEvent, openai, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';
import { agentWithKey, describeEachStore, developerWithToken, enc, waitFor, type Answer } from '../../helpers/harness.js';

const NUL = '\u0000';
/** The six characters a stored U+0000 reads as. */
const STORED_NUL = '\\u0000';
const nested = (depth: number, inner = '1') => '['.repeat(depth) + inner + ']'.repeat(depth);
const DEEP = 200_000;

function assertRefusedNaming(r: Answer, field: string, what: RegExp, label: string): void {
  assert.equal(r.status, 400, `${label}: ${r.status} ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error.code, 'invalid_request', label);
  assert.ok(r.body.error.message.startsWith(`${field}:`), `${label}: "${r.body.error.message}" should name ${field}`);
  assert.match(r.body.error.message, what, label);
}

describeEachStore('input hygiene', ({ store }) => {
  let w: GatewayWorld;
  let upstream: McpUpstream;
  let agentKey: string;
  let devToken: string;

  before(async () => {
    upstream = await startMcpUpstream();
    w = await startGatewayWorld(store(), { mcpServers: [{ name: 'github', url: upstream.url, headers: {} }] });
    agentKey = await agentWithKey(w.admin, 'eng/hygiene-bot');
    devToken = await developerWithToken(w.admin, 'eng/hygiene-dev', 'developer');
    const created = await w.admin.post('/api/v1/policies', {
      name: 'review-hygiene',
      kind: 'approve',
      appliesTo: ['llm'],
      match: "object.llm.model == 'gpt-4o'",
      message: 'Reviewed.',
    });
    assert.equal(created.status, 201);
  });
  after(async () => {
    await w.close();
    await upstream.close();
  });

  test('U+0000 and lone surrogates in control-plane text are 400 invalid_request naming the field; nothing is stored', async () => {
    const dev = w.admin.with(devToken);
    for (const [bad, what] of [
      [NUL, /U\+0000/],
      ['\ud800', /lone surrogate/],
      ['\udfff', /lone surrogate/],
    ] as const) {
      const cases: [string, Promise<Answer>, string][] = [
        ['displayName', w.admin.post('/api/v1/identities', { id: 'eng/never-made', kind: 'agent', displayName: `a${bad}b` }), 'body.displayName'],
        ['id', w.admin.post('/api/v1/identities', { id: `eng/ne${bad}ver`, kind: 'agent' }), 'body.id'],
        ['token name', w.admin.post('/api/v1/tokens', { identityId: 'eng/hygiene-bot', name: `k${bad}` }), 'body.name'],
        ['justification', dev.post('/api/v1/access-requests', { type: 'model_access', requestedModel: 'gpt-4o', justification: `need it${bad}` }), 'body.justification'],
        ['reason', w.admin.post('/api/v1/access-requests/ar_x/deny', { reason: `no${bad}` }), 'body.reason'],
        ['note', w.admin.post('/api/v1/held-calls/hc_x/deny', { note: `no${bad}` }), 'body.note'],
        ['nested field', w.admin.put('/api/v1/settings/human-review', { timeoutOutcome: `deny${bad}` }), 'body.timeoutOutcome'],
        ['field name', w.admin.post('/api/v1/identities', { id: 'eng/never-made', kind: 'agent', [`x${bad}`]: 'y' }), `body.${JSON.stringify(`x${bad}`).slice(1, -1)}`],
      ];
      for (const [label, answer, field] of cases) assertRefusedNaming(await answer, field, what, `${label} ${JSON.stringify(bad)}`);
    }
    // Path and query values arrive percent-encoded; %00 decodes to U+0000 (a lone surrogate cannot be UTF-8 at all).
    assertRefusedNaming(await w.admin.get(`/api/v1/access-requests/ar${enc(NUL)}x`), 'path.id', /U\+0000/, 'path id');
    assertRefusedNaming(await w.admin.get(`/api/v1/policies/p${enc(NUL)}`), 'path.name', /U\+0000/, 'path name');
    assertRefusedNaming(await w.admin.get(`/api/v1/identities/detail?id=${enc(`eng/x${NUL}`)}`), 'query.id', /U\+0000/, 'query id');
    assertRefusedNaming(await w.admin.get(`/api/v1/audit-events?action=${enc(`a${NUL}`)}`), 'query.action', /U\+0000/, 'query action');
    // A lone surrogate written as a JSON escape by a client that does not check.
    assertRefusedNaming(
      await w.admin.post('/api/v1/identities', undefined, { raw: '{"id":"eng/never-made","kind":"agent","displayName":"\\udfffx"}' }),
      'body.displayName',
      /lone surrogate/,
      'raw escape',
    );
    assert.equal((await w.admin.get(`/api/v1/identities/detail?id=${enc('eng/never-made')}`)).status, 404);
    // A surrogate pair is ordinary text.
    const emoji = await w.admin.post('/api/v1/identities', { id: 'eng/emoji', kind: 'agent', displayName: 'bot \ud83e\udd16' });
    assert.equal(emoji.status, 201);
    assert.equal(emoji.body.displayName, 'bot \ud83e\udd16');
  });

  test('bad percent-encoding in the path or the query of every route is 400 invalid_request naming the parameter', async () => {
    const doc = (await w.admin.get('/api/v1/openapi.json')).body;
    let checked = 0;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      if (!path.startsWith('/api/')) continue;
      for (const [method, op] of Object.entries<any>(item)) {
        if (!['get', 'post', 'put', 'delete', 'patch'].includes(method)) continue;
        const params: any[] = op.parameters ?? [];
        const pathParams = params.filter((p) => p.in === 'path').map((p) => p.name as string);
        const concrete = (bad: string | null) => path.replace(/\{([^}]+)\}/g, (_m, name: string) => (name === bad ? '%E0%A4%A' : 'x'));
        for (const name of pathParams) {
          const r = await w.admin.request(method.toUpperCase(), concrete(name), undefined, method === 'get' || method === 'delete' ? {} : { raw: '{}' });
          assertRefusedNaming(r, `path.${name}`, /percent-encoding/, `${method} ${path} (${name})`);
          checked++;
        }
        for (const p of params.filter((q) => q.in === 'query')) {
          const r = await w.admin.request(method.toUpperCase(), `${concrete(null)}?${p.name}=%zz`, undefined, method === 'get' || method === 'delete' ? {} : { raw: '{}' });
          assert.ok(r.status < 500, `${method} ${path}?${p.name}=%zz: ${r.status}`);
          checked++;
          if (p.name === 'window' && path.startsWith('/api/v1/runtime/')) {
            // The spec's one exception: an unparseable window falls back to 1h without an error.
            assert.equal(r.status, 200, `${path}?window=%zz: ${JSON.stringify(r.body)}`);
            continue;
          }
          if (r.status === 400 && r.body.error.message.includes('percent')) assertRefusedNaming(r, `query.${p.name}`, /percent-encoding/, `${method} ${path} ?${p.name}`);
          else assert.fail(`${method} ${path}?${p.name}=%zz answered ${r.status} ${JSON.stringify(r.body)}`);
        }
      }
    }
    assert.ok(checked > 20, `only ${checked} parameters were checked`);
    // The two of the review, and a route that does not exist.
    assertRefusedNaming(await w.admin.get('/api/v1/policies/%E0%A4%A'), 'path.name', /percent-encoding/, 'policies');
    assertRefusedNaming(await w.admin.get('/api/v1/access-requests/%zz'), 'path.id', /percent-encoding/, 'access requests');
    assertRefusedNaming(await w.admin.get('/api/v1/no-such-route/%zz'), 'path', /percent-encoding/, 'unknown route');
    assertRefusedNaming(await w.admin.get('/api/v1/runtime/reconciliation?window=1h&other=%zz'), 'query.other', /percent-encoding/, 'runtime, another parameter');
    assert.equal((await w.admin.get(`/api/v1/runtime/reconciliation?window=${enc('1h\u0000')}`)).status, 200, 'a window with U+0000 is unparseable: 1h');
  });

  test('a tier of the wrong type is 400 invalid_tier, as a wrong string is', async () => {
    await w.admin.post('/api/v1/identities', { id: 'eng/tiered', kind: 'agent' });
    for (const tier of [3, null, true, ['T1'], { t: 'T1' }, 'T9']) {
      const r = await w.admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/tiered')}`, { tier });
      assert.equal(r.status, 400, JSON.stringify(tier));
      assert.equal(r.body.error.code, 'invalid_tier', JSON.stringify(tier));
      assert.match(r.body.error.message, /^tier:/);
    }
    assert.equal((await w.admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/tiered')}`, { tier: 'T3' })).body.tier, 'T3');
  });

  test(`JSON nested ${DEEP} levels: 400 on the control plane and the LLM plane (audited), -32600 on both MCP planes`, async () => {
    const deepBody = `{"tier":${nested(DEEP)}}`;
    const tier = await w.admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/tiered')}`, undefined, { raw: deepBody });
    assertRefusedNaming(tier, 'body', new RegExp(`deeper than ${MAX_JSON_DEPTH}`), 'control plane');
    const evaluate = await w.admin.post('/api/v1/policies/evaluate', undefined, { raw: `{"object":${nested(DEEP)}}` });
    assertRefusedNaming(evaluate, 'body', /deeper than/, 'evaluate');
    // At the limit the body is read as usual (here: a tier of the wrong type).
    const atLimit = await w.admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/tiered')}`, undefined, { raw: `{"tier":${nested(MAX_JSON_DEPTH - 1)}}` });
    assert.equal(atLimit.body.error.code, 'invalid_tier');

    // LLM plane, in the client's protocol: OpenAI's error shape (the SDK raises its BadRequestError), Anthropic's.
    const hitsBefore = w.fake.hits.length;
    const openaiDeep = await fetch(`${w.replica.url}/llm/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agentKey}`, 'content-type': 'application/json' },
      body: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"deep"}],"metadata":${nested(DEEP)}}`,
    });
    assert.equal(openaiDeep.status, 400);
    const openaiBody = (await openaiDeep.json()) as any;
    assert.equal(openaiBody.error.type, 'invalid_request_error');
    assert.equal(openaiBody.error.code, 'invalid_request');
    assert.match(openaiBody.error.message, /deeper than/);
    // Just past the limit, through the SDK: its usual error class.
    await assert.rejects(
      openai(w.replica.url, agentKey).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'deep' }], metadata: JSON.parse(nested(MAX_JSON_DEPTH)) } as never),
      (err: unknown) => err instanceof OpenAI.BadRequestError && /deeper than/.test(err.message),
    );
    const anthropicDeep = await fetch(`${w.replica.url}/llm/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': agentKey, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"x":${nested(DEEP)}}`,
    });
    assert.equal(anthropicDeep.status, 400);
    const anthropicBody = (await anthropicDeep.json()) as any;
    assert.equal(anthropicBody.type, 'error');
    assert.equal(anthropicBody.error.type, 'invalid_request_error');
    assert.match(anthropicBody.error.message, /deeper than/);
    const audited = await llmEvent(w.admin, (e) => e.outcome === 'refused' && e.data.refusal?.reason === 'bad_request' && /deeper than/.test(e.data.refusal.message));
    assert.equal(audited.data.status, 400);
    assert.equal(w.fake.hits.length, hitsBefore, 'nothing was forwarded');

    // MCP planes: the proxied server and the built-in one.
    const mcpHeaders = { authorization: `Bearer ${agentKey}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
    const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x","nested":{"a":${nested(DEEP)}}}}}`;
    const before = upstream.toolCalls().length;
    const proxied = await fetch(`${w.replica.url}/mcp/github`, { method: 'POST', headers: mcpHeaders, body: call });
    assert.equal(proxied.status, 400);
    const proxiedBody = (await proxied.json()) as any;
    assert.equal(proxiedBody.error.code, -32600);
    assert.match(proxiedBody.error.message, /deeper than/);
    assert.equal(upstream.toolCalls().length, before, 'nothing reached the upstream');
    const builtIn = await fetch(`${w.replica.url}/mcp/reins`, { method: 'POST', headers: { ...mcpHeaders, authorization: `Bearer ${devToken}` }, body: call });
    assert.equal(builtIn.status, 400);
    const builtInBody = (await builtIn.json()) as any;
    assert.equal(builtInBody.error.code, -32600);
    assert.match(builtInBody.error.message, /deeper than/);
  });

  test('a held LLM prompt with U+0000 is held, listed with its excerpt escaped, audited, and released or stopped normally', async () => {
    const ask = (content: string) => openai(w.replica.url, agentKey).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content }] });
    const pending = async (marker: string) => {
      let entry: any;
      await waitFor(async () => {
        entry = (await w.admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.promptExcerpt?.includes(marker));
        return entry !== undefined;
      }, 15_000);
      assert.ok(entry, `no pending entry for ${marker}`);
      return entry;
    };

    const released = ask(`release nul-one ${NUL} and a lone \ud800 surrogate`);
    const entry = await pending('nul-one');
    assert.ok(entry.promptExcerpt.includes(`nul-one ${STORED_NUL} and a lone \ufffd surrogate`), entry.promptExcerpt);
    const detail = await w.admin.get(`/api/v1/held-calls/${entry.id}`);
    assert.equal(detail.status, 200);
    assert.equal(detail.body.promptExcerpt, entry.promptExcerpt);
    assert.equal((await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {})).body.state, 'released');
    const answer = await released;
    assert.equal(answer.choices[0]?.message.content, 'Hello world');
    const event = await llmEvent(w.admin, (e) => e.data.held?.entryId === entry.id);
    assert.equal(event.outcome, 'ok');
    assert.equal(event.data.held.outcome, 'released');

    const stopped = ask(`stop nul-two ${NUL}`);
    stopped.catch(() => undefined);
    const second = await pending('nul-two');
    assert.equal((await w.admin.post(`/api/v1/held-calls/${second.id}/deny`, { note: 'not this one' })).body.state, 'stopped');
    await assert.rejects(stopped, (err: unknown) => err instanceof OpenAI.PermissionDeniedError && err.message.includes('not this one'));
    const refused = await llmEvent(w.admin, (e) => e.data.held?.entryId === second.id);
    assert.equal(refused.outcome, 'refused');
  });

  test('U+0000 and lone surrogates in what the audit records (model, tool name) are audited escaped, not lost', async () => {
    // The audit writer inserts a batch as one JSON parameter: one unstorable string would fail the batch for good.
    const model = `gpt-4o-mini-nul${NUL}x\ud800`;
    const r = await fetch(`${w.replica.url}/llm/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agentKey}`, 'content-type': 'application/json' },
      body: `{"model":${JSON.stringify(model).replace('\\ud800', '\ud800')},"messages":[{"role":"user","content":"hi"}]}`,
    });
    assert.ok(r.status < 500, `${r.status}`);
    await r.text();
    const event = await llmEvent(w.admin, (e) => typeof e.data.model === 'string' && e.data.model.startsWith('gpt-4o-mini-nul'));
    assert.equal(event.data.model, `gpt-4o-mini-nul${STORED_NUL}x\ufffd`);

    // An unlisted tool counts as destructive, which only T4 may run without a person's review.
    const t4Key = await agentWithKey(w.admin, 'eng/hygiene-t4');
    assert.equal((await w.admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/hygiene-t4')}`, { tier: 'T4' })).status, 200);
    const mcpHeaders = { authorization: `Bearer ${t4Key}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
    const call = await fetch(`${w.replica.url}/mcp/github`, {
      method: 'POST',
      headers: mcpHeaders,
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: `nul${NUL}tool`, arguments: { a: NUL } } }),
    });
    assert.ok(call.status < 500, `${call.status}`);
    await call.text();
    let audited: any;
    await waitFor(async () => {
      audited = (await w.admin.get(`/api/v1/audit-events?type=mcp&identity=${enc('eng/hygiene-t4')}`)).body.items.find((e: any) => e.data.tool?.startsWith('nul'));
      return audited !== undefined;
    }, 10_000);
    assert.ok(audited, 'the tool call was audited');
    assert.equal(audited.data.tool, `nul${STORED_NUL}tool`);
    // And the writer is not stuck: a later event is written too.
    const later = await w.admin.post('/api/v1/identities', { id: 'eng/after-nul', kind: 'agent' });
    assert.equal(later.status, 201);
    assert.ok((await w.admin.get(`/api/v1/audit-events?action=identity.create&identity=${enc('eng/after-nul')}`)).body.items.length >= 1);
  });

  test('MCP arguments with U+0000 are governed, forwarded and audited normally', async () => {
    const client = new McpClient({ name: 'agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp/github', w.replica.url), { requestInit: { headers: { authorization: `Bearer ${agentKey}` } } }));
    try {
      // echo is not read-only: the default tier (T2) may run it.
      const text = `nul ${NUL} in arguments, and \ud800 a lone surrogate`;
      const r = await client.callTool({ name: 'echo', arguments: { text, nested: { [`key${NUL}`]: `v${NUL}` } } });
      assert.notEqual(r.isError, true, JSON.stringify(r));
      const reached = upstream.toolCalls().at(-1);
      assert.equal(reached?.name, 'echo');
      // The body goes up as the client wrote it: the upstream sees exactly these arguments.
      assert.equal((reached?.arguments as any).text, text);
      let event: any;
      await waitFor(async () => {
        event = (await w.admin.get(`/api/v1/audit-events?type=mcp&identity=${enc('eng/hygiene-bot')}`)).body.items.find((e: any) => e.data.tool === 'echo');
        return event !== undefined;
      }, 10_000);
      assert.ok(event, 'the call was audited');
      assert.equal(event.outcome, 'ok');
      // A held one: delete_repo (destructive) is held for approval at T2; released, it runs.
      const held = client.callTool({ name: 'delete_repo', arguments: { repo: `nul${NUL}repo` } });
      let entry: any;
      await waitFor(async () => {
        entry = (await w.admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.kind === 'mcp' && e.agentId === 'eng/hygiene-bot');
        return entry !== undefined;
      }, 15_000);
      assert.ok(entry, 'the destructive call was held');
      await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {});
      const ran = await held;
      assert.notEqual(ran.isError, true, JSON.stringify(ran));
      assert.equal((upstream.toolCalls().at(-1)?.arguments as any).repo, `nul${NUL}repo`);
    } finally {
      await client.close();
    }
  });
});
