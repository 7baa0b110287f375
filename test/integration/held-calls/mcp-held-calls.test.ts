/**
 * Held MCP tool calls, the spec's held-call table row by row, with the real MCP SDK client against Reins against
 * a real MCP SDK server: parked, attached, released, self-release refused, stopped with the note, timed out with
 * each outcome. And keeping the client waiting: a held call answers on an SSE stream with progress notifications
 * (a client that opted in to resetTimeoutOnProgress waits past its own timeout); a client that timed out and
 * cancelled is never run, and its retry attaches to the same entry. (A client that asked for no progress and is still
 * waiting when gateway.mcpHeldAnswerSeconds elapse is answered "held, call again": mcp-held-answer.test.ts.)
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Replica } from '../../../src/app/server.js';
import { startMcpUpstream, type McpUpstream } from '../../fakes/mcp-upstream.js';
import { adminWithToken, ADMIN_TOKEN, agentWithKey, Client, describeEachStore, developerWithToken, startTestReplica, waitFor, WAIT_MS } from '../../helpers/harness.js';

const text = (r: Record<string, unknown>) => (r.content as { text: string }[])[0]!.text;

describeEachStore('held MCP tool calls', ({ store }) => {
  for (const json of [false, true]) {
    describe_(json);
  }

  function describe_(json: boolean) {
    const label = json ? 'upstream answers JSON' : 'upstream answers SSE';
    let upstream: McpUpstream;
    let replica: Replica;
    let admin: Client;
    let agentKey: string;
    let agentId: string;
    let aliceToken: string;
    let bobToken: string;
    const clients: McpClient[] = [];

    async function connect(token: string, headers: Record<string, string> = {}): Promise<McpClient> {
      const client = new McpClient({ name: 'agent', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL('/mcp/github', replica.url), { requestInit: { headers: { authorization: `Bearer ${token}`, ...headers } } }));
      clients.push(client);
      return client;
    }

    async function pending(match: (e: any) => boolean, attached = 1): Promise<any> {
      let entry: any;
      await waitFor(async () => {
        entry = (await admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.kind === 'mcp' && match(e) && e.attachedCalls >= attached);
        return entry !== undefined;
      }, WAIT_MS);
      assert.ok(entry, 'the call was parked');
      return entry;
    }

    const echoCalls = (t: string) => upstream.toolCalls().filter((c) => c.name === 'echo' && (c.arguments as { text: string }).text === t).length;

    before(async () => {
      upstream = await startMcpUpstream({ json });
      replica = await startTestReplica(store(), {
        mcpServers: [{ name: 'github', url: upstream.url, headers: {} }],
        gateway: { auditQueue: 20_000, rulesRefreshSeconds: 30, hideDeniedTools: false, heldKeepAliveSeconds: 0.2, mcpAllowedOrigins: [], mcpHeldAnswerSeconds: 45 },
      });
      admin = new Client(replica.url, ADMIN_TOKEN);
      agentId = `eng/mcp-held-${json ? 'j' : 's'}`;
      agentKey = await agentWithKey(admin, agentId);
      aliceToken = await adminWithToken(replica.db, `eng/alice-${json ? 'j' : 's'}`);
      bobToken = await developerWithToken(admin, `eng/bob-${json ? 'j' : 's'}`, 'developer');
      const created = await admin.post('/api/v1/policies', {
        name: `review-echo-${json ? 'j' : 's'}`,
        kind: 'approve',
        appliesTo: ['mcp'],
        match: "object.mcp.tool == 'echo'",
        message: 'Echo calls need a look from the platform team.',
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
    });
    after(async () => {
      for (const c of clients) await c.close().catch(() => {});
      await replica.close();
      await upstream.close();
    });

    test(`[${label}] none -> held -> released by an admin: the call runs once and answers as if allowed; audited`, async () => {
      const client = await connect(agentKey);
      const call = client.callTool({ name: 'echo', arguments: { text: 'release me' } });
      const entry = await pending((e) => e.tool === 'github/echo');
      assert.equal(entry.requester, null, 'an agent key has no requester');
      assert.equal(entry.promptExcerpt, null);
      assert.match(entry.policyName, /^review-echo/);
      assert.equal(entry.policyMessage, 'Echo calls need a look from the platform team.');
      assert.equal(echoCalls('release me'), 0, 'nothing reaches the upstream while held');
      assert.equal((await admin.post(`/api/v1/held-calls/${entry.id}/approve`, {})).body.state, 'released');
      const r = await call;
      assert.notEqual(r.isError, true, text(r));
      assert.deepEqual(JSON.parse(text(r)), { text: 'release me' });
      assert.equal(echoCalls('release me'), 1);
      const releaseAudited = await waitFor(async () => (await admin.get('/api/v1/audit-events?action=held_call.approve')).body.items.some((e: any) => e.data.heldCallId === entry.id), WAIT_MS);
      assert.ok(releaseAudited >= 0, 'the release is audited');
    });

    test(`[${label}] held + identical call, same agent and session -> attached; one decision answers both; any difference is a new entry`, async () => {
      const session = { 'x-reins-session': `attach-${json}` };
      // A developer's tool: the session is X-Reins-Session (an agent key's calls have no session).
      const [c1, c2, c3] = [await connect(bobToken, session), await connect(bobToken, session), await connect(bobToken, { 'x-reins-session': `other-${json}` })];
      const first = c1.callTool({ name: 'echo', arguments: { text: 'same' } });
      const entry = await pending((e) => e.sessionId === `attach-${json}`);
      const second = c2.callTool({ name: 'echo', arguments: { text: 'same' } });
      await pending((e) => e.id === entry.id, 2);
      const otherArgs = c1.callTool({ name: 'echo', arguments: { text: 'different' } });
      const otherSession = c3.callTool({ name: 'echo', arguments: { text: 'same' } });
      const entries = (await waitFor(async () => (await admin.get('/api/v1/held-calls?state=pending')).body.items.filter((e: any) => e.kind === 'mcp').length >= 3, WAIT_MS), await admin.get('/api/v1/held-calls?state=pending')).body.items.filter((e: any) => e.kind === 'mcp');
      assert.equal(entries.length, 3, 'different arguments and a different session each have their own entry');
      await admin.post(`/api/v1/held-calls/${entry.id}/deny`, { note: 'both at once' });
      for (const r of await Promise.all([first, second])) {
        assert.equal(r.isError, true);
        assert.match(text(r), /both at once/);
      }
      for (const e of entries.filter((e: any) => e.id !== entry.id)) await admin.post(`/api/v1/held-calls/${e.id}/approve`, {});
      assert.notEqual((await otherArgs).isError, true);
      assert.notEqual((await otherSession).isError, true);
      assert.equal(echoCalls('same'), 1, 'the denied pair never ran; the other session ran once');
    });

    test(`[${label}] two developers with the same X-Reins-Session and arguments get two entries; the admin cannot release hers`, async () => {
      const session = { 'x-reins-session': `shared-${json}` };
      const args = { text: `shared call ${json}` };
      const bobCall = (await connect(bobToken, session)).callTool({ name: 'echo', arguments: args });
      const bobEntry = await pending((e) => e.sessionId === `shared-${json}` && e.requester?.startsWith('eng/bob'));
      // Alice is an admin: her identical call must not join Bob's entry (she could then release her own call).
      const aliceCall = (await connect(aliceToken, session)).callTool({ name: 'echo', arguments: args });
      const aliceEntry = await pending((e) => e.sessionId === `shared-${json}` && e.requester?.startsWith('eng/alice'));
      assert.notEqual(aliceEntry.id, bobEntry.id);
      assert.equal((await admin.get(`/api/v1/held-calls/${bobEntry.id}`)).body.attachedCalls, 1, 'nothing joined Bob\'s entry');
      const self = await new Client(replica.url, aliceToken).post(`/api/v1/held-calls/${aliceEntry.id}/approve`, {});
      assert.equal(self.status, 403);
      // Releasing Bob's entry runs Bob's call only.
      assert.equal((await new Client(replica.url, aliceToken).post(`/api/v1/held-calls/${bobEntry.id}/approve`, {})).body.state, 'released');
      assert.notEqual((await bobCall).isError, true);
      assert.equal(echoCalls(args.text), 1);
      assert.equal((await admin.get(`/api/v1/held-calls/${aliceEntry.id}`)).body.state, 'pending', 'Alice\'s call is still held');
      await admin.post(`/api/v1/held-calls/${aliceEntry.id}/deny`, { note: 'not hers to release' });
      assert.equal((await aliceCall).isError, true);
      assert.equal(echoCalls(args.text), 1);
    });

    test(`[${label}] held call of a developer session: self-release refused and audited; another admin releases it`, async () => {
      const client = await connect(aliceToken);
      const call = client.callTool({ name: 'echo', arguments: { text: 'mine' } });
      const entry = await pending((e) => e.requester?.startsWith('eng/alice'));
      const self = await new Client(replica.url, aliceToken).post(`/api/v1/held-calls/${entry.id}/approve`, {});
      assert.equal(self.status, 403);
      assert.match(self.body.error.message, /own|requester/i);
      const refusalAudited = await waitFor(async () => (await admin.get('/api/v1/audit-events?action=held_call.approve')).body.items.some((e: any) => e.outcome === 'refused' && e.data.heldCallId === entry.id), WAIT_MS);
      assert.ok(refusalAudited >= 0, 'the refused self-release is audited');
      const bob = await new Client(replica.url, bobToken).post(`/api/v1/held-calls/${entry.id}/approve`, {});
      assert.equal(bob.status, 403, 'a developer is not an admin');
      assert.equal((await admin.post(`/api/v1/held-calls/${entry.id}/approve`, {})).body.state, 'released');
      assert.deepEqual(JSON.parse(text(await call)), { text: 'mine' });
    });

    test(`[${label}] held + deny -> stopped: the model sees the policy, its message and the note verbatim, and the exception tool`, async () => {
      const client = await connect(agentKey);
      const call = client.callTool({ name: 'echo', arguments: { text: 'deny me' } });
      const entry = await pending((e) => e.state === 'pending' && e.attachedCalls === 1 && e.tool === 'github/echo');
      const note = 'Not on a Friday <b>please</b> & "thanks"';
      await admin.post(`/api/v1/held-calls/${entry.id}/deny`, { note });
      const r = await call;
      assert.equal(r.isError, true);
      assert.match(text(r), /review-echo/);
      assert.ok(text(r).includes('Echo calls need a look from the platform team.'));
      assert.ok(text(r).includes(`"${note}"`), 'the note verbatim');
      assert.match(text(r), /request_policy_exception/);
      assert.equal(echoCalls('deny me'), 0);
    });

    test(`[${label}] window elapses: stopped by default ("no reviewer acted in time"), or let through and audited`, async () => {
      const client = await connect(agentKey);
      for (const outcome of ['deny', 'allow'] as const) {
        const set = await admin.put('/api/v1/settings/human-review', { llmApprovalWindowSeconds: 300, mcpApprovalWindowSeconds: 1800, timeoutOutcome: outcome });
        assert.equal(set.status, 200);
        const call = client.callTool({ name: 'echo', arguments: { text: `timeout ${outcome}` } });
        const entry = await pending((e) => e.state === 'pending' && e.tool === 'github/echo');
        // The clock, moved: the window has elapsed.
        await replica.db.query('UPDATE held_calls SET expires_at = now() WHERE id = $1', [entry.id]);
        await replica.gateway.held.timeOut(entry.id);
        const r = await call;
        if (outcome === 'deny') {
          assert.equal(r.isError, true);
          assert.match(text(r), /no reviewer acted in time/);
          assert.doesNotMatch(text(r), /denied/);
          assert.equal(echoCalls('timeout deny'), 0);
        } else {
          assert.notEqual(r.isError, true, text(r));
          assert.equal(echoCalls('timeout allow'), 1);
        }
      }
      await admin.put('/api/v1/settings/human-review', { llmApprovalWindowSeconds: 300, mcpApprovalWindowSeconds: 1800, timeoutOutcome: 'deny' });
      const timedOut = (await admin.get('/api/v1/held-calls?state=timed_out')).body.items.filter((e: any) => e.kind === 'mcp' && e.agentId === agentId);
      assert.deepEqual(timedOut.map((e: any) => e.timeoutOutcome).sort(), ['allow', 'deny']);
      const audited = async () => (await admin.get('/api/v1/audit-events?action=held_call.time_out')).body.items.filter((e: any) => timedOut.some((t: any) => t.id === e.data.heldCallId));
      await waitFor(async () => (await audited()).length === 2, WAIT_MS);
      assert.equal((await audited()).length, 2, 'each timeout is audited');
    });

    test(`[${label}] progress notifications keep a client that opted in waiting past its own timeout`, async () => {
      const client = await connect(agentKey);
      const progress: { progress: number; message?: string }[] = [];
      const call = client.callTool({ name: 'echo', arguments: { text: 'patient' } }, undefined, {
        timeout: 800,
        resetTimeoutOnProgress: true,
        onprogress: (p) => progress.push(p),
      });
      const entry = await pending((e) => e.tool === 'github/echo' && e.state === 'pending');
      await new Promise((r) => setTimeout(r, 2000)); // well past the client's 800 ms timeout
      await admin.post(`/api/v1/held-calls/${entry.id}/approve`, {});
      const r = await call;
      assert.deepEqual(JSON.parse(text(r)), { text: 'patient' });
      assert.ok(progress.length >= 5, `progress arrived while held (${progress.length})`);
      assert.ok(progress.every((p, i) => i === 0 || p.progress > progress[i - 1]!.progress), 'progress increases');
      assert.match(progress[0]!.message ?? '', new RegExp(`Waiting for a reviewer.*${entry.id}`));
    });

    test(`[${label}] a client that timed out is never run; its retry attaches to the same entry and runs once on release`, async () => {
      const client = await connect(bobToken, { 'x-reins-session': `retry-${json}` });
      const gaveUp = client.callTool({ name: 'echo', arguments: { text: 'retried' } }, undefined, { timeout: 500 });
      await assert.rejects(gaveUp, /timed out/i);
      const entry = await pending((e) => e.sessionId === `retry-${json}`, 0);
      // The cancelled call left the entry (attachedCalls counts the calls waiting on it)...
      const left = await waitFor(async () => (await admin.get(`/api/v1/held-calls/${entry.id}`)).body.attachedCalls === 0, WAIT_MS);
      assert.ok(left >= 0, 'the cancelled call left the entry');
      const retry = client.callTool({ name: 'echo', arguments: { text: 'retried' } }, undefined, { timeout: 60_000 });
      // ...and the retry joins the same one.
      await pending((e) => e.id === entry.id, 1);
      await admin.post(`/api/v1/held-calls/${entry.id}/approve`, {});
      assert.deepEqual(JSON.parse(text(await retry)), { text: 'retried' });
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(echoCalls('retried'), 1, 'the cancelled call did not run');
    });
  }
});
