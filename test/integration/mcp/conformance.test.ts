/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, run by its own CLI on Node 22 from
 * test/outside-clients; conformance-cli.ts) against /mcp/{server} fronting the suite's own reference server (its
 * "everything server", test/fakes/conformance-everything-server.ts): every server scenario of the suite's active
 * set gives through Reins exactly the check outcomes it gives directly, on every run (three runs: server-to-client
 * requests, sampling and elicitation, once lost a race in the proxy in most runs; see streamOrder in
 * src/planes/mcp/proxy.ts). /mcp/reins is conformance-reins.test.ts.
 *
 * One store (CONFORMANCE_STORE in conformance-cli.ts), not both: what the suite exercises is the MCP transport
 * path, which is the same code on either store; the MCP suites in this folder (proxy.test.ts, governed-tools.test.ts)
 * cover the rest on both. Running it twice would double minutes of run time for nothing more.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Replica } from '../../../src/app/server.js';
import { startEverythingServer } from '../../fakes/conformance-everything-server.js';
import { ADMIN_TOKEN, agentWithKey, Client, openTestStore, startTestReplica, type TestStore } from '../../helpers/harness.js';
import { skipWithoutOutsideClients } from '../../helpers/outside-clients.js';
import { CONFORMANCE_STORE, conformance, failures, outcome, type Results } from './conformance-cli.js';

/** The scenarios in which the server sends requests to the client (on the standalone GET stream). */
const SERVER_TO_CLIENT_SCENARIOS = ['tools-call-sampling', 'tools-call-elicitation', 'elicitation-sep1034-defaults', 'elicitation-sep1330-enums'];

describe('MCP conformance suite through Reins: /mcp/{server}', { skip: skipWithoutOutsideClients }, () => {
  let store: TestStore;
  let everything: { url: string; close(): Promise<void> };
  let replica: Replica;
  let agentKey: string;
  let direct: Results;

  before(async () => {
    everything = await startEverythingServer();
    // The direct run and the replica's start-up at once: each takes tens of seconds on a loaded machine.
    const directRun = conformance(everything.url, null);
    store = await openTestStore(CONFORMANCE_STORE);
    replica = await startTestReplica(store, { mcpServers: [{ name: 'everything', url: everything.url, headers: {} }] });
    const admin = new Client(replica.url, ADMIN_TOKEN);
    // An agent at T4: the suite's tools declare no annotations, so at lower tiers autonomy-tool-approval would hold them
    // for a person; the suite is about the transport, not about approvals.
    agentKey = await agentWithKey(admin, 'conformance/agent');
    assert.equal((await admin.put('/api/v1/identities/autonomy-tier?id=conformance%2Fagent', { tier: 'T4' })).status, 200);
    const run = await directRun;
    direct = run.results;
    assert.ok(direct.size >= 25, `the suite ran its scenarios directly (${direct.size})\n${run.output.slice(-2000)}`);
    assert.deepEqual(failures(direct), [], 'the reference server passes the suite directly');
  });
  after(async () => {
    await replica?.close();
    await everything?.close();
    await store?.close();
  });

  test('every scenario gives the same checks through Reins as directly, on every run', async () => {
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
});
