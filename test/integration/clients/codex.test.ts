/**
 * The real Codex CLI (`@openai/codex` from npm, on its Node 22) driven through Reins the way the README tells a
 * developer to set it up: Codex ignores `OPENAI_BASE_URL`, so `~/.codex/config.toml` (here `$CODEX_HOME`) declares a
 * custom model provider with `base_url` at Reins' OpenAI route, `env_key` naming the variable that holds the
 * developer's personal access token, and `wire_api = "responses"`. Reins' defaults (built-in policies, default tier),
 * a local fake Responses API upstream, `codex exec` non-interactive with Codex's default model.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Replica } from '../../../src/app/server.js';
import { CODING_TOOL_TEXT, CODING_TOOL_USAGE, startCodingToolUpstream, type CodingToolUpstream } from '../../fakes/coding-tool-upstream.js';
import { startMcpUpstream, UPSTREAM_SECRET, type McpUpstream } from '../../fakes/mcp-upstream.js';
import { PROVIDER_KEY, llmEvent, providersAt } from '../../helpers/gateway.js';
import { ADMIN_TOKEN, Client, describeEachStore, developerWithToken, enc, startTestReplica, WAIT_MS, waitFor } from '../../helpers/harness.js';
import { outsideClient, skipWithoutOutsideClients as skip } from '../../helpers/outside-clients.js';
import { clientEnv, described, runClient, tempHome, type ClientRun } from './run-client.js';

/** The set-up of the README, plus what turns off Codex's own traffic to the internet (none here). */
function codexConfig(reinsUrl: string, providerExtra: string[] = []): string {
  return [
    'model_provider = "reins"',
    'check_for_update_on_startup = false',
    '',
    '[model_providers.reins]',
    'name = "Reins"',
    `base_url = "${reinsUrl}/llm/openai/v1"`,
    'env_key = "REINS_TOKEN"',
    'wire_api = "responses"',
    ...providerExtra,
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[feedback]',
    'enabled = false',
    '',
    '[otel]',
    'exporter = "none"',
    '',
  ].join('\n');
}

describeEachStore('Codex CLI through Reins', ({ store }) => {
  let upstream: CodingToolUpstream;
  let mcp: McpUpstream;
  let replica: Replica;
  let admin: Client;
  let pat: string;
  let bobPat: string;
  let home: { dir: string; remove: () => Promise<void> };
  before(async () => {
    if (skip) return;
    upstream = await startCodingToolUpstream();
    mcp = await startMcpUpstream();
    replica = await startTestReplica(store(), {
      providers: providersAt(upstream.origin),
      mcpServers: [{ name: 'github', url: mcp.url, headers: { authorization: `Bearer ${UPSTREAM_SECRET}` } }],
    });
    admin = new Client(replica.url, ADMIN_TOKEN);
    pat = await developerWithToken(admin, 'eng/alice', 'developer');
    bobPat = await developerWithToken(admin, 'eng/bob', 'developer');
    home = await tempHome('codex');
  });
  after(async () => {
    if (skip) return;
    try {
      await replica?.close();
    } finally {
      await Promise.all([upstream?.close(), mcp?.close(), home?.remove()]);
    }
  });

  /** `codex exec <prompt>` with `$CODEX_HOME/config.toml` as given, from a folder of its own. */
  async function codexExec(prompt: string, config: string): Promise<ClientRun> {
    const codexHome = await mkdtemp(join(home.dir, 'codex-home-'));
    await writeFile(join(codexHome, 'config.toml'), config);
    const env = clientEnv(home.dir, { CODEX_HOME: codexHome, REINS_TOKEN: pat });
    // The working folder is no git repository; Codex refuses that unless told.
    return runClient(outsideClient('codex'), ['exec', '--skip-git-repo-check', prompt], { cwd: home.dir, env });
  }

  test('codex exec with a personal access token answers at the default tier, and Reins audits it as the developer', { skip }, async () => {
    const from = upstream.hits.length;
    const run = await codexExec('say hi', codexConfig(replica.url));
    assert.equal(run.code, 0, described(run));
    assert.ok(run.stdout.includes(CODING_TOOL_TEXT.responses), described(run));

    const sent = upstream.hits.slice(from).filter((h) => h.url === '/v1/responses');
    assert.ok(sent.length >= 1, 'Codex called the Responses API through Reins');
    for (const hit of sent) assert.equal(hit.headers.authorization, `Bearer ${PROVIDER_KEY}`, 'Reins sends its provider key, never the token');
    const turn = sent.find((h) => h.body.stream === true)!;
    assert.ok(turn, 'the turn is streamed');
    const model = turn.body.model as string;

    const event = await llmEvent(admin, (e) => e.data.model === model, `&identity=${enc('eng/alice')}`);
    assert.equal(event.outcome, 'ok', JSON.stringify(event));
    assert.equal(event.data.decision, 'allow');
    assert.equal(event.data.route, 'responses');
    assert.deepEqual(event.actor, { kind: 'developer', id: 'eng/alice' });
    assert.equal(event.data.developer, 'eng/alice');
    assert.equal(event.data.agent.tier, 'T2', 'the default tier');
    assert.equal(event.data.stream, true);
    assert.equal(event.data.status, 200);
    assert.deepEqual(event.data.usage, CODING_TOOL_USAGE.responses);
    const refused = (await admin.get(`/api/v1/audit-events?type=llm&limit=200&identity=${enc('eng/alice')}`)).body.items.filter((e: any) => e.outcome === 'refused');
    assert.deepEqual(refused.map((e: any) => [e.data.model, e.data.refusal]), []);
  });

  test("the provider's http_headers name the session (X-Reins-Session)", { skip }, async () => {
    const run = await codexExec('say hi again', codexConfig(replica.url, ['http_headers = { "X-Reins-Session" = "codex-demo" }']));
    assert.equal(run.code, 0, described(run));
    assert.ok(run.stdout.includes(CODING_TOOL_TEXT.responses), described(run));
    const event = await llmEvent(admin, (e) => e.data.session === 'codex-demo', `&identity=${enc('eng/alice')}`);
    assert.equal(event.outcome, 'ok', JSON.stringify(event));
    assert.equal(event.data.developer, 'eng/alice');
  });

  test('an MCP server through Reins ([mcp_servers] url at /mcp/github, bearer_token_env_var): Codex lists its tools through Reins', { skip }, async () => {
    const before = mcp.messages().length;
    const mcpServer = ['', '[mcp_servers.github]', `url = "${replica.url}/mcp/github"`, 'bearer_token_env_var = "REINS_TOKEN"', ''];
    const run = await codexExec('say hi', codexConfig(replica.url) + mcpServer.join('\n'));
    assert.equal(run.code, 0, described(run));
    const methods = mcp.messages().slice(before).map((m) => m.method);
    assert.ok(methods.includes('initialize') && methods.includes('tools/list'), `Codex initialized and listed tools through Reins: ${methods.join(', ')}`);
    for (const hit of mcp.hits) assert.equal(hit.headers.authorization, `Bearer ${UPSTREAM_SECRET}`, 'Reins sends its upstream credential, never the token');
  });

  /** A second developer's `codex exec`, so the refusal rules below bind nobody else's calls. */
  async function asBob(prompt: string): Promise<ClientRun> {
    const codexHome = await mkdtemp(join(home.dir, 'codex-home-'));
    await writeFile(join(codexHome, 'config.toml'), codexConfig(replica.url));
    const env = clientEnv(home.dir, { CODEX_HOME: codexHome, REINS_TOKEN: bobPat });
    return runClient(outsideClient('codex'), ['exec', '--skip-git-repo-check', prompt], { cwd: home.dir, env });
  }
  const bobRefusals = async (): Promise<string[]> =>
    (await admin.get(`/api/v1/audit-events?type=llm&limit=200&identity=${enc('eng/bob')}`)).body.items
      .filter((e: any) => e.outcome === 'refused')
      .map((e: any) => e.data.refusal?.reason as string);

  // Codex prints a 400's body as it came: JSON, its quotes escaped.
  const POLICY_MESSAGE = /Reins policy \\?"bob-paused\\?" denied this request: paused for bob/;
  const BUDGET_MESSAGE = /budget \\?"bob-tiny\\?"/;

  /**
   * Runs `codex exec` as bob twice under a rule that refuses bob: with a deny policy, and with a budget that the
   * first of two calls uses up. Returns what Codex printed and how many requests each refusal took.
   */
  async function refusedTwice(): Promise<{ policy: ClientRun; budget: ClientRun; policyRequests: number; budgetRequests: number }> {
    const before = (await bobRefusals()).length;
    const rule = { name: 'bob-paused', kind: 'deny', appliesTo: ['llm'], match: "object.developer.id == 'eng/bob'", message: 'paused for bob', enabled: true };
    assert.equal((await admin.post('/api/v1/policies', rule)).status, 201);
    let policy: ClientRun;
    try {
      policy = await asBob('say hi');
    } finally {
      await admin.delete('/api/v1/policies/bob-paused');
    }
    await waitFor(async () => (await bobRefusals()).length > before, WAIT_MS);
    const afterPolicy = (await bobRefusals()).length;
    // The first call reserves its estimate and passes; the next is refused, the budget used up.
    const created = await admin.post('/api/v1/budget-rules', { name: 'bob-tiny', scope: 'eng/bob', pattern: '*', limitUsd: 0.000001, period: 'day' });
    assert.equal(created.status, 201);
    let budget: ClientRun;
    try {
      const first = await asBob('say hi');
      assert.equal(first.code, 0, described(first));
      budget = await asBob('say hi');
    } finally {
      await admin.delete(`/api/v1/budget-rules/${created.body.id}`);
    }
    await waitFor(async () => (await bobRefusals()).length > afterPolicy, WAIT_MS);
    const total = (await bobRefusals()).length;
    return { policy, budget, policyRequests: afterPolicy - before, budgetRequests: total - afterPolicy };
  }

  // Codex retries every status but 400 and some 429s five times, x-should-retry ignored (6 requests for a 403 or a
  // 402): on /v1/responses Reins answers a refusal 400, so each is one request.
  test("a refusal reaches the developer with Reins' message and is not retried", { skip }, async () => {
    const r = await refusedTwice();
    assert.notEqual(r.policy.code, 0, described(r.policy));
    assert.ok(POLICY_MESSAGE.test(`${r.policy.stdout}${r.policy.stderr}`), described(r.policy));
    assert.notEqual(r.budget.code, 0, described(r.budget));
    assert.ok(BUDGET_MESSAGE.test(`${r.budget.stdout}${r.budget.stderr}`), described(r.budget));
    assert.deepEqual([r.policyRequests, r.budgetRequests], [1, 1], 'one request each: Codex did not retry');
  });
});
