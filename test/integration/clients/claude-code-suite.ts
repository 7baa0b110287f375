/**
 * The real Claude Code (`@anthropic-ai/claude-code` from npm, on its Node 22) driven through Reins the way the README
 * tells a developer to set it up: `ANTHROPIC_BASE_URL` at Reins' Anthropic route and the developer's personal access
 * token, Reins' defaults (the built-in policies, the default tier), a local fake Anthropic upstream. Claude Code runs
 * non-interactively (`-p`) with its defaults (its default model and max_tokens, streaming), a home of its own, and
 * its telemetry and non-essential traffic off (the machine has no internet).
 *
 * One file per store (claude-code.pglite.test.ts, claude-code.postgres.test.ts) run this suite: a Claude Code run
 * takes 5-15 s on a loaded two-core machine, and the suite's nine runs on both stores in one file came close to the
 * runner's per-file limit (300 s) and passed it under heavy load.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Replica } from '../../../src/app/server.js';
import { CODING_TOOL_TEXT, CODING_TOOL_USAGE, startCodingToolUpstream, type CodingToolUpstream } from '../../fakes/coding-tool-upstream.js';
import { startMcpUpstream, UPSTREAM_SECRET, type McpUpstream } from '../../fakes/mcp-upstream.js';
import { PROVIDER_KEY, llmEvent, providersAt } from '../../helpers/gateway.js';
import { ADMIN_TOKEN, Client, describeEachStore, type TestStore, developerWithToken, enc, startTestReplica, WAIT_MS, waitFor } from '../../helpers/harness.js';
import type { StoreKind } from '../../helpers/stores.js';
import { outsideClient, skipWithoutOutsideClients as skip } from '../../helpers/outside-clients.js';
import { clientEnv, described, runClient, tempHome, type ClientRun } from './run-client.js';

/** The MCP tool the fake model calls: read-only, so the default tier runs it without a hold. */
const MCP_TOOL = 'mcp__github__read_file';
/**
 * `claude -p` connects MCP servers in the background and sends its first turn without the tools of a server that
 * has not finished connecting and listing them (its debug log: "servers running fully async (nonblocking)"). On a
 * loaded machine that race was lost now and then, and the model was never offered the tool. With these, Claude
 * Code waits for the servers before the first turn (up to MCP_CONNECT_TIMEOUT_MS, 5 s by default); the README
 * tells scripts that use MCP tools in `-p` to set the same.
 */
const MCP_WAIT = { MCP_CONNECTION_NONBLOCKING: 'false', MCP_CONNECT_TIMEOUT_MS: '60000' };

/** The suite on one store. */
export function claudeCodeSuite(kind: StoreKind): void {
  describeEachStore('Claude Code through Reins', ({ store }) => suite(store), kind);
}

function suite(store: () => TestStore): void {
  let upstream: CodingToolUpstream;
  let mcp: McpUpstream;
  let replica: Replica;
  let admin: Client;
  let pat: string;
  let home: { dir: string; remove: () => Promise<void> };
  before(async () => {
    if (skip) return;
    upstream = await startCodingToolUpstream({ toolUse: { name: MCP_TOOL, input: { path: 'README.md' } } });
    mcp = await startMcpUpstream();
    replica = await startTestReplica(store(), {
      providers: providersAt(upstream.origin),
      mcpServers: [{ name: 'github', url: mcp.url, headers: { authorization: `Bearer ${UPSTREAM_SECRET}` } }],
    });
    admin = new Client(replica.url, ADMIN_TOKEN);
    pat = await developerWithToken(admin, 'eng/alice', 'developer');
    home = await tempHome('claude');
  });
  after(async () => {
    if (skip) return;
    try {
      await replica?.close();
    } finally {
      await Promise.all([upstream?.close(), mcp?.close(), home?.remove()]);
    }
  });

  /** Claude Code's environment: Reins as its API, `auth` as its credential variables (and any other), a home of its own. */
  function claudeEnv(auth: Record<string, string>): NodeJS.ProcessEnv {
    return clientEnv(home.dir, {
      ANTHROPIC_BASE_URL: `${replica.url}/llm/anthropic`,
      ...auth,
      CLAUDE_CONFIG_DIR: join(home.dir, '.claude'),
      // No telemetry, error reporting, auto-update or other traffic that would reach for the internet.
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      DISABLE_AUTOUPDATER: '1',
    });
  }

  /** `claude -p <prompt>` as a developer runs it, in `cwd` (its project folder). */
  function claude(prompt: string, auth: Record<string, string>, extraArgs: string[] = [], cwd = home.dir): Promise<ClientRun> {
    return runClient(outsideClient('claude'), ['-p', prompt, ...extraArgs], { cwd, env: claudeEnv(auth) });
  }

  /** The Messages requests Claude Code sent since `from`, as the upstream got them. */
  const messagesSince = (from: number) => upstream.hits.slice(from).filter((h) => h.url.split('?')[0] === '/v1/messages');

  /** The developer's LLM decision events, newest first. */
  async function aliceLlmEvents(): Promise<any[]> {
    return (await admin.get(`/api/v1/audit-events?type=llm&limit=200&identity=${enc('eng/alice')}`)).body.items;
  }

  test('claude -p with a personal access token (ANTHROPIC_AUTH_TOKEN) answers at the default tier, and Reins audits it as the developer', { skip }, async () => {
    const from = upstream.hits.length;
    const run = await claude('say hi', { ANTHROPIC_AUTH_TOKEN: pat });
    assert.equal(run.code, 0, described(run));
    assert.ok(run.stdout.includes(CODING_TOOL_TEXT.anthropic), described(run));

    const sent = messagesSince(from);
    assert.ok(sent.length >= 1, 'Claude Code called the Messages API through Reins');
    for (const hit of sent) {
      assert.equal(hit.headers['x-api-key'], PROVIDER_KEY, 'Reins sends its provider key upstream');
      assert.equal(hit.headers.authorization, undefined, 'and never the developer token');
    }
    // Claude Code's own defaults reached the upstream unchanged: nothing of them was refused.
    const main = sent.find((h) => h.body.stream === true && Array.isArray(h.body.tools))!;
    assert.ok(main, 'the main turn: streamed, with tools');
    const model = main.body.model as string;

    const event = await llmEvent(admin, (e) => e.data.model === model && e.data.maxTokens === main.body.max_tokens, `&identity=${enc('eng/alice')}`);
    assert.equal(event.outcome, 'ok', JSON.stringify(event));
    assert.equal(event.data.decision, 'allow');
    assert.deepEqual(event.actor, { kind: 'developer', id: 'eng/alice' });
    assert.equal(event.data.developer, 'eng/alice');
    assert.equal(event.data.agent.tier, 'T2', 'the default tier');
    assert.equal(event.data.stream, true);
    assert.equal(event.data.status, 200);
    assert.deepEqual(event.data.usage, CODING_TOOL_USAGE.anthropic);
    // Every call the run made was allowed: a refused side call (a small model, token counting) would show here.
    const refused = (await aliceLlmEvents()).filter((e) => e.outcome === 'refused');
    assert.deepEqual(refused.map((e) => [e.data.model, e.data.refusal]), []);
  });

  test('the API key form (ANTHROPIC_API_KEY, sent as x-api-key) works the same; ANTHROPIC_CUSTOM_HEADERS names the session', { skip }, async () => {
    const from = upstream.hits.length;
    const run = await claude('say hi again', { ANTHROPIC_API_KEY: pat, ANTHROPIC_CUSTOM_HEADERS: 'X-Reins-Session: claude-code-demo' });
    assert.equal(run.code, 0, described(run));
    assert.ok(run.stdout.includes(CODING_TOOL_TEXT.anthropic), described(run));
    const sent = messagesSince(from);
    assert.ok(sent.length >= 1);
    for (const hit of sent) assert.equal(hit.headers['x-api-key'], PROVIDER_KEY);
    const event = await llmEvent(admin, (e) => e.data.session === 'claude-code-demo', `&identity=${enc('eng/alice')}`);
    assert.equal(event.outcome, 'ok', JSON.stringify(event));
    assert.equal(event.data.developer, 'eng/alice');
  });

  test('with an MCP server through Reins (--mcp-config at /mcp/github): the tool runs through Reins, is audited, and its answer is printed', { skip }, async () => {
    const config = join(home.dir, 'mcp.json');
    await writeFile(
      config,
      JSON.stringify({ mcpServers: { github: { type: 'http', url: `${replica.url}/mcp/github`, headers: { Authorization: `Bearer ${pat}` } } } }),
    );
    const from = upstream.hits.length;
    const toolCallsBefore = mcp.toolCalls().length;
    const run = await claude('Read README.md with the github tool', { ANTHROPIC_AUTH_TOKEN: pat, ...MCP_WAIT }, [
      '--mcp-config',
      config,
      '--strict-mcp-config',
      '--allowedTools',
      MCP_TOOL,
    ]);
    assert.equal(run.code, 0, described(run));
    assert.ok(run.stdout.includes(`${CODING_TOOL_TEXT.afterTool}contents of README.md`), described(run));

    // The tool ran once on the upstream MCP server, with the model's arguments, reached through Reins.
    assert.deepEqual(mcp.toolCalls().slice(toolCallsBefore), [{ name: 'read_file', arguments: { path: 'README.md' } }]);
    for (const hit of mcp.hits) {
      assert.equal(hit.headers.authorization, `Bearer ${UPSTREAM_SECRET}`, 'Reins sends its upstream credential');
      assert.ok(!JSON.stringify(hit.headers).includes(pat), 'and never the developer token');
    }
    // Claude Code offered the tool under its MCP name and sent its result back in the next turn.
    const sent = messagesSince(from);
    assert.ok(sent.some((h) => h.body.tools?.some((t: { name?: string }) => t.name === MCP_TOOL)), 'the tool was offered to the model');

    let call: any;
    let end: any;
    await waitFor(async () => {
      const items = (await admin.get(`/api/v1/audit-events?type=mcp&identity=${enc('eng/alice')}`)).body.items;
      call = items.find((e: any) => e.action === 'mcp.tool_call' && e.data.tool === 'read_file');
      end = call && items.find((e: any) => e.action === 'mcp.tool_call_end' && e.data.callId === call.data.callId);
      return end !== undefined;
    }, WAIT_MS);
    assert.ok(end, 'the tool call and its end were audited');
    assert.deepEqual(call.actor, { kind: 'developer', id: 'eng/alice' });
    assert.equal(call.data.server, 'github');
    assert.equal(call.data.decision, 'allow');
    assert.equal(call.data.agent.tier, 'T2');
    assert.equal(end.data.isError, false);
    // Both model turns went through Reins as the developer.
    const turns = (await aliceLlmEvents()).filter((e) => e.action === 'llm.request' && e.data.stream === true);
    assert.ok(turns.length >= 2, `two streamed turns audited, got ${turns.length}`);
  });

  test('an MCP server added with `claude mcp add --transport http … --header` (as the README says) is reached through Reins', { skip }, async () => {
    const project = await mkdtemp(join(home.dir, 'project-'));
    // Scope "local" (the default): this project folder only, kept in Claude Code's own config.
    const added = await runClient(
      outsideClient('claude'),
      ['mcp', 'add', '--transport', 'http', 'github', `${replica.url}/mcp/github`, '--header', `Authorization: Bearer ${pat}`],
      { cwd: project, env: claudeEnv({}) },
    );
    assert.equal(added.code, 0, described(added));
    const toolCallsBefore = mcp.toolCalls().length;
    const run = await claude('Read README.md with the github tool', { ANTHROPIC_AUTH_TOKEN: pat, ...MCP_WAIT }, ['--allowedTools', MCP_TOOL], project);
    assert.equal(run.code, 0, described(run));
    assert.ok(run.stdout.includes(`${CODING_TOOL_TEXT.afterTool}contents of README.md`), described(run));
    assert.deepEqual(mcp.toolCalls().slice(toolCallsBefore), [{ name: 'read_file', arguments: { path: 'README.md' } }]);
  });

  test("a refusal reaches the developer with Reins' message and is not retried (a policy's 403, a used-up budget)", { skip }, async () => {
    // Another developer, so the rules bind nobody else's calls.
    const bobPat = await developerWithToken(admin, 'eng/bob', 'developer');
    const bobRefusals = async () =>
      (await admin.get(`/api/v1/audit-events?type=llm&limit=200&identity=${enc('eng/bob')}`)).body.items.filter((e: any) => e.outcome === 'refused');
    const policy = { name: 'bob-paused', kind: 'deny', appliesTo: ['llm'], match: "object.developer.id == 'eng/bob'", message: 'paused for bob', enabled: true };
    assert.equal((await admin.post('/api/v1/policies', policy)).status, 201);
    const denied = await claude('say hi', { ANTHROPIC_AUTH_TOKEN: bobPat });
    assert.equal(denied.code, 1, described(denied));
    // Claude Code labels every 403 "Failed to authenticate"; Reins' message follows it.
    assert.ok(denied.stdout.includes('403 Reins policy "bob-paused" denied this request: paused for bob'), described(denied));
    await waitFor(async () => (await bobRefusals()).length > 0, WAIT_MS);
    assert.equal((await bobRefusals()).length, 1, 'one request: Claude Code did not retry the 403');
    assert.equal((await admin.delete('/api/v1/policies/bob-paused')).status, 200);

    // A budget refuses once it is used up: the first call reserves its estimate and passes, the next is refused.
    const rule = await admin.post('/api/v1/budget-rules', { name: 'bob-tiny', scope: 'eng/bob', pattern: '*', limitUsd: 0.000001, period: 'day' });
    assert.equal(rule.status, 201);
    const first = await claude('say hi', { ANTHROPIC_AUTH_TOKEN: bobPat });
    assert.equal(first.code, 0, described(first));
    const over = await claude('say hi', { ANTHROPIC_AUTH_TOKEN: bobPat });
    assert.equal(over.code, 1, described(over));
    assert.ok(over.stdout.includes('Reins refused this request: budget "bob-tiny"'), described(over));
    await waitFor(async () => (await bobRefusals()).length > 1, WAIT_MS);
    assert.deepEqual((await bobRefusals()).map((e: any) => e.data.refusal?.reason), ['budget', 'policy'], 'one request: Claude Code did not retry the budget refusal');
  });
}
