/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, run by its own CLI on Node 22 from
 * test/outside-clients) against Reins' MCP endpoints:
 * - /mcp/{server} fronting the suite's own reference server (its "everything server", test/fakes/
 *   conformance-everything-server.ts): every server scenario of the suite's active set gives through Reins exactly
 *   the check outcomes it gives directly, on every run (three runs: server-to-client requests, sampling and
 *   elicitation, once lost a race in the proxy in most runs; see streamOrder in src/planes/mcp/proxy.ts);
 * - /mcp/reins, the built-in tools-only stateless server: the scenarios that apply to such a server pass cleanly.
 *
 * The CLI has no option for request headers, so test/outside-clients/reins-token.mjs (preloaded into it) adds the
 * Reins token to its requests to Reins, the way a configured client sends it; nothing else changes.
 *
 * One store (PGlite), not both: what the suite exercises is the MCP transport path, which is the same code on
 * either store; the store only resolves the token and receives the audit events, and the MCP suites in this folder
 * (proxy.test.ts, governed-tools.test.ts) cover that on both. Running it twice would double a minute of run time
 * for nothing more.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Replica } from '../../../src/app/server.js';
import { startEverythingServer } from '../../fakes/conformance-everything-server.js';
import { ADMIN_TOKEN, agentWithKey, Client, developerWithToken, openTestStore, startTestReplica, type TestStore } from '../../helpers/harness.js';
import { OUTSIDE_CLIENTS_DIR, outsideClient, outsideClientEnv, skipWithoutOutsideClients } from '../../helpers/outside-clients.js';

const TOKEN_PRELOAD = fileURLToPath(new URL('reins-token.mjs', `file://${OUTSIDE_CLIENTS_DIR}`));

/** The scenarios that apply to a stateless server that declares only tools (no logging, resources, prompts, completions, sessions). */
const TOOLS_ONLY_SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'tools-call-error', 'dns-rebinding-protection'];
/** The scenarios in which the server sends requests to the client (on the standalone GET stream). */
const SERVER_TO_CLIENT_SCENARIOS = ['tools-call-sampling', 'tools-call-elicitation', 'elicitation-sep1034-defaults', 'elicitation-sep1330-enums'];

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | string;
  errorMessage?: string;
}
type Results = Map<string, Check[]>;

/** Runs `conformance server` (one scenario, or the active suite) and reads each scenario's checks.json. */
function conformance(url: string, token: { origin: string; secret: string } | null, scenario?: string): Promise<{ code: number | null; output: string; results: Results }> {
  const dir = mkdtempSync(join(tmpdir(), 'reins-conformance-'));
  const env = outsideClientEnv(token ? { NODE_OPTIONS: `--import ${TOKEN_PRELOAD}`, REINS_ORIGIN: token.origin, REINS_TOKEN: token.secret } : {});
  const args = ['server', '--url', url, '-o', dir, ...(scenario ? ['--scenario', scenario] : [])];
  return new Promise((resolve, reject) => {
    const child = spawn(outsideClient('conformance'), args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      const results: Results = new Map();
      for (const name of readdirSync(dir)) {
        const scenarioName = name.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '');
        results.set(scenarioName, JSON.parse(readFileSync(join(dir, name, 'checks.json'), 'utf8')) as Check[]);
      }
      rmSync(dir, { recursive: true, force: true });
      resolve({ code, output, results });
    });
  });
}

/** A scenario's outcome, check by check (INFO checks only report). */
function outcome(checks: Check[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of checks) if (c.status !== 'INFO') out[c.id] = c.status;
  return out;
}

function failures(results: Results): string[] {
  const out: string[] = [];
  for (const [scenario, checks] of results) for (const c of checks) if (c.status === 'FAILURE') out.push(`${scenario}/${c.id}: ${c.errorMessage ?? ''}`);
  return out;
}

describe('MCP conformance suite through Reins', { skip: skipWithoutOutsideClients }, () => {
  let store: TestStore;
  let everything: { url: string; close(): Promise<void> };
  let replica: Replica;
  let agentKey: string;
  let developerToken: string;
  let direct: Results;

  before(async () => {
    everything = await startEverythingServer();
    store = await openTestStore('pglite');
    replica = await startTestReplica(store, { mcpServers: [{ name: 'everything', url: everything.url, headers: {} }] });
    const admin = new Client(replica.url, ADMIN_TOKEN);
    // An agent at T4: the suite's tools declare no annotations, so at lower tiers autonomy-tool-approval would hold them
    // for a person; the suite is about the transport, not about approvals.
    agentKey = await agentWithKey(admin, 'conformance/agent');
    assert.equal((await admin.put('/api/v1/identities/autonomy-tier?id=conformance%2Fagent', { tier: 'T4' })).status, 200);
    // The built-in server is for developers' tools: a personal access token.
    developerToken = await developerWithToken(admin, 'conformance/dev', 'developer');
    const run = await conformance(everything.url, null);
    direct = run.results;
    assert.ok(direct.size >= 25, `the suite ran its scenarios directly (${direct.size})\n${run.output.slice(-2000)}`);
    assert.deepEqual(failures(direct), [], 'the reference server passes the suite directly');
  });
  after(async () => {
    await replica?.close();
    await everything?.close();
    await store?.close();
  });

  test('/mcp/{server} fronting the suite\'s reference server: every scenario gives the same checks as directly, on every run', async () => {
    const token = { origin: new URL(replica.url).origin, secret: agentKey };
    for (let run = 1; run <= 3; run++) {
      const through = await conformance(`${replica.url}/mcp/everything`, token);
      assert.deepEqual([...through.results.keys()].sort(), [...direct.keys()].sort(), `run ${run}: the same scenarios ran`);
      for (const [scenario, checks] of direct) {
        assert.deepEqual(outcome(through.results.get(scenario) ?? []), outcome(checks), `run ${run}, ${scenario}: ${JSON.stringify(failures(new Map([[scenario, through.results.get(scenario) ?? []]])))}`);
      }
      // Named, because these are the ones that once failed through the proxy in most runs.
      for (const scenario of SERVER_TO_CLIENT_SCENARIOS) {
        const checks = through.results.get(scenario) ?? [];
        assert.ok(checks.length > 0 && checks.every((c) => c.status === 'SUCCESS' || c.status === 'INFO'), `run ${run}, ${scenario} passes through Reins`);
      }
    }
  });

  test('/mcp/reins, the built-in tools-only server: the scenarios that apply to it pass cleanly', async () => {
    // The whole suite in one run (one CLI start, not five); only the scenarios that apply to a stateless tools-only
    // server are judged: the others ask for tools, resources, prompts, logging or sessions it does not declare.
    const r = await conformance(`${replica.url}/mcp/reins`, { origin: new URL(replica.url).origin, secret: developerToken });
    for (const scenario of TOOLS_ONLY_SCENARIOS) {
      const checks = r.results.get(scenario) ?? [];
      assert.ok(checks.length > 0, `${scenario} ran: ${r.output.slice(-1500)}`);
      assert.deepEqual(
        checks.filter((c) => c.status !== 'SUCCESS' && c.status !== 'INFO').map((c) => `${c.id}: ${c.status} ${c.errorMessage ?? ''}`),
        [],
        scenario,
      );
    }
  });
});
