/**
 * The official MCP conformance suite (conformance-cli.ts) against /mcp/reins, the built-in stateless server that
 * declares only tools: the scenarios that apply to such a server pass cleanly. One store (CONFORMANCE_STORE in
 * conformance-cli.ts), as in conformance.test.ts: the suite exercises the transport, the same code on either store.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, developerWithToken, openTestStore, startTestReplica, type TestStore } from '../../helpers/harness.js';
import { skipWithoutOutsideClients } from '../../helpers/outside-clients.js';
import { CONFORMANCE_STORE, conformance } from './conformance-cli.js';

/**
 * The scenarios that apply to a stateless server that declares only tools (no logging, resources, prompts,
 * completions, sessions). The tools-call-* scenarios other than the error one call the reference server's own test
 * tools (test_simple_text, …), which a server with other tools cannot pass or fail.
 */
const TOOLS_ONLY_SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'tools-call-error', 'dns-rebinding-protection'];

describe('MCP conformance suite through Reins: /mcp/reins', { skip: skipWithoutOutsideClients }, () => {
  let store: TestStore;
  let replica: Replica;
  let developerToken: string;

  before(async () => {
    store = await openTestStore(CONFORMANCE_STORE);
    replica = await startTestReplica(store);
    // The built-in server is for developers' tools: a personal access token.
    developerToken = await developerWithToken(new Client(replica.url, ADMIN_TOKEN), 'conformance/dev', 'developer');
  });
  after(async () => {
    await replica?.close();
    await store?.close();
  });

  test('the scenarios that apply to a tools-only server pass cleanly', async () => {
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
