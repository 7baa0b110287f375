/**
 * A tier given to one agent must not be usable by every developer: with a personal access token, X-Reins-Agent
 * must name an agent whose owners cover the token's developer (a developer id or a `<namespace>/*` rule). Anything
 * else is refused with 403 in the client's protocol on every plane (LLM, MCP, egress) and audited; with the binding
 * the call proceeds as the agent, with its tier, and policies see the developer too. Real SDK clients, a real MCP
 * upstream, a real CONNECT through the egress proxy.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startMcpUpstream, type McpUpstream } from '../../fakes/mcp-upstream.js';
import { adminWithToken, ADMIN_TOKEN, describeEachStore, developerWithToken, enc, waitFor, type Client } from '../../helpers/harness.js';
import { anthropic, llmEvent, openai, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';

const premium = (client: Anthropic) => client.messages.create({ model: 'o3-pro', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });

/** A CONNECT through the egress proxy with these headers; resolves with the proxy's status line and body. */
function connectThrough(egressUrl: string, target: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  const proxy = new URL(egressUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(proxy.port), proxy.hostname);
    let data = '';
    socket.setEncoding('utf8');
    socket.on('error', reject);
    socket.on('connect', () => {
      const lines = [`CONNECT ${target} HTTP/1.1`, `Host: ${target}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    const settle = () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0);
      socket.destroy();
      resolve({ status, text: data });
    };
    socket.on('data', (chunk: string) => {
      data += chunk;
      // A tunnel answers with its status line only; a refusal with a body after the headers.
      if (/^HTTP\/1\.1 200/.test(data) && data.includes('\r\n\r\n')) settle();
    });
    socket.on('end', settle);
    socket.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0), text: data }));
  });
}

describeEachStore('gateway: X-Reins-Agent must name an agent bound to the developer', ({ store }) => {
  let w: GatewayWorld;
  let upstream: McpUpstream;
  let origin: net.Server;
  let originPort = 0;
  let alice: string;
  let bob: string;
  let carol: string;
  let root: string;
  before(async () => {
    upstream = await startMcpUpstream();
    origin = net.createServer((s) => s.end());
    await new Promise<void>((r) => origin.listen(0, '127.0.0.1', () => r()));
    originPort = (origin.address() as AddressInfo).port;
    w = await startGatewayWorld(store(), {
      mcpServers: [{ name: 'github', url: upstream.url, headers: { authorization: 'Bearer upstream-api-key-held-by-reins' } }],
      // The origin is on loopback, which the default list denies: only the metadata addresses stay closed here.
      egress: { port: 0, deniedNetworks: ['169.254.0.0/16'] },
    });
    alice = await developerWithToken(w.admin, 'eng/alice', 'developer');
    bob = await developerWithToken(w.admin, 'eng/bob', 'developer');
    carol = await developerWithToken(w.admin, 'ops/carol', 'developer');
    root = await adminWithToken(w.replica.db, 'eng/root');
    for (const id of ['eng/t4-bot', 'eng/team-bot']) {
      assert.equal((await w.admin.post('/api/v1/identities', { id, kind: 'agent' })).status, 201);
      assert.equal((await w.admin.put(`/api/v1/identities/autonomy-tier?id=${enc(id)}`, { tier: 'T4' })).status, 200);
    }
    assert.equal((await w.admin.put(`/api/v1/identities/owners?id=${enc('eng/team-bot')}`, { owners: ['eng/*'] })).status, 200);
  });
  after(async () => {
    await w.close();
    await upstream.close();
    origin.close();
  });

  const setOwners = (admin: Client, id: string, owners: string[]) => admin.put(`/api/v1/identities/owners?id=${enc(id)}`, { owners });

  test('LLM: an unbound, unknown or developer X-Reins-Agent is refused 403 in the OpenAI and Anthropic shapes, audited, nothing sent', async () => {
    const hits = w.fake.hits.length;
    for (const named of ['eng/t4-bot', 'eng/ghost', 'eng/bob', 'not an id']) {
      await assert.rejects(openai(w.replica.url, alice, { 'X-Reins-Agent': named }).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }), (err: unknown) => {
        assert.ok(err instanceof OpenAI.PermissionDeniedError, String(err));
        assert.equal(err.status, 403);
        assert.equal(err.code, 'agent_not_bound');
        assert.match(err.message, /X-Reins-Agent/);
        assert.match(err.message, /ask an admin to add eng\/alice to the owners/i);
        assert.equal(err.headers?.get('x-should-retry'), 'false');
        return true;
      });
    }
    await assert.rejects(premium(anthropic(w.replica.url, alice, { 'X-Reins-Agent': 'eng/t4-bot' })), (err: unknown) => {
      assert.ok(err instanceof Anthropic.PermissionDeniedError, String(err));
      assert.match(err.message, /owners of eng\/t4-bot/);
      return true;
    });
    assert.equal(w.fake.hits.length, hits, 'nothing reached the provider');
    const event = await llmEvent(w.admin, (e) => e.data.refusal?.agent === 'eng/t4-bot' && e.data.model === 'o3-pro', `&identity=${enc('eng/alice')}`);
    assert.equal(event.outcome, 'refused');
    assert.equal(event.data.refusal.reason, 'agent_not_bound');
    assert.equal(event.data.developer, 'eng/alice');
    assert.equal(event.data.agent.id, '', 'the refused call never acted as the agent');
    assert.equal(event.data.agent.tier, 'T2');
  });

  test('admins are not exempt: an admin must be bound like anyone', async () => {
    for (const token of [root, ADMIN_TOKEN]) {
      await assert.rejects(premium(anthropic(w.replica.url, token, { 'X-Reins-Agent': 'eng/t4-bot' })), (err: unknown) => {
        assert.ok(err instanceof Anthropic.PermissionDeniedError, String(err));
        assert.match(err.message, /not an agent identity bound to (eng\/root|default\/admin)/);
        return true;
      });
    }
    // eng/* covers the admin eng/root as it covers any developer of the namespace.
    const ok = await premium(anthropic(w.replica.url, root, { 'X-Reins-Agent': 'eng/team-bot' }));
    assert.equal(ok.id, 'msg_fake');
  });

  test('LLM: bound directly, the call proceeds as the agent with its tier (T4 passes the model ceiling); the change applies at once', async () => {
    // The developer's own tool is T2: o3-pro is above its ceiling.
    await assert.rejects(premium(anthropic(w.replica.url, alice)), /autonomy-model-ceiling/);
    assert.equal((await setOwners(w.admin, 'eng/t4-bot', ['eng/alice'])).status, 200);
    const ok = await premium(anthropic(w.replica.url, alice, { 'X-Reins-Agent': 'eng/t4-bot', 'X-Reins-Session': 'bound-1' }));
    assert.equal(ok.id, 'msg_fake');
    const event = await llmEvent(w.admin, (e) => e.data.session === 'bound-1', `&identity=${enc('eng/t4-bot')}`);
    assert.equal(event.outcome, 'ok');
    assert.deepEqual(event.data.agent, { id: 'eng/t4-bot', tier: 'T4', explicitTier: true });
    assert.equal(event.data.developer, 'eng/alice');
    // Bob is not an owner of eng/t4-bot.
    await assert.rejects(premium(anthropic(w.replica.url, bob, { 'X-Reins-Agent': 'eng/t4-bot' })), /not an agent identity bound to eng\/bob/);
    // Removed: refused again on the very next call.
    assert.equal((await setOwners(w.admin, 'eng/t4-bot', [])).status, 200);
    await assert.rejects(premium(anthropic(w.replica.url, alice, { 'X-Reins-Agent': 'eng/t4-bot' })), /not an agent identity bound to eng\/alice/);
  });

  test('LLM: a namespace rule binds every developer of the namespace and no other; policies see the agent and the developer', async () => {
    const policy = await w.admin.post('/api/v1/policies', {
      name: 'no-bob-as-team-bot',
      kind: 'deny',
      appliesTo: ['llm'],
      match: "object.agent.id == 'eng/team-bot' && object.developer.id == 'eng/bob' && object.agent.autonomyTier == 'T4'",
      message: 'Bob does not drive the team bot.',
    });
    assert.equal(policy.status, 201, JSON.stringify(policy.body));
    const asAlice = await premium(anthropic(w.replica.url, alice, { 'X-Reins-Agent': 'eng/team-bot' }));
    assert.equal(asAlice.id, 'msg_fake');
    await assert.rejects(premium(anthropic(w.replica.url, bob, { 'X-Reins-Agent': 'eng/team-bot' })), (err: unknown) => {
      assert.ok(err instanceof Anthropic.PermissionDeniedError);
      assert.match(err.message, /no-bob-as-team-bot/);
      return true;
    });
    await assert.rejects(premium(anthropic(w.replica.url, carol, { 'X-Reins-Agent': 'eng/team-bot' })), (err: unknown) => {
      assert.ok(err instanceof Anthropic.PermissionDeniedError);
      assert.match(err.message, /owners of eng\/team-bot/);
      return true;
    });
    assert.equal((await w.admin.delete('/api/v1/policies/no-bob-as-team-bot')).status, 200);
  });

  test('MCP: an unbound agent is refused as a tool result naming the header, audited, nothing upstream; bound, the agent tier applies', async () => {
    const connect = async (token: string, agent: string) => {
      const client = new McpClient({ name: 'agent', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL('/mcp/github', w.replica.url), { requestInit: { headers: { authorization: `Bearer ${token}`, 'x-reins-agent': agent } } }),
      );
      return client;
    };
    const before = upstream.toolCalls().length;
    const unbound = await connect(alice, 'eng/t4-bot');
    const refused = await unbound.callTool({ name: 'delete_repo', arguments: { repo: 'x' } });
    assert.equal(refused.isError, true);
    assert.match((refused.content as { text: string }[])[0]!.text, /X-Reins-Agent names "eng\/t4-bot".*owners of eng\/t4-bot/);
    assert.equal(upstream.toolCalls().length, before);
    await unbound.close();
    let event: any;
    await waitFor(async () => {
      event = (await w.admin.get(`/api/v1/audit-events?type=mcp&identity=${enc('eng/alice')}`)).body.items.find((e: any) => e.data.refusal?.reason === 'agent_not_bound');
      return event !== undefined;
    }, 10_000);
    assert.ok(event, 'the refusal is audited');
    assert.equal(event.outcome, 'refused');
    assert.equal(event.data.refusal.agent, 'eng/t4-bot');
    assert.equal(event.data.developer, 'eng/alice');

    // eng/* binds alice to the T4 team bot: a destructive tool runs at T4 (it would be held at T2).
    const bound = await connect(alice, 'eng/team-bot');
    const ran = await bound.callTool({ name: 'delete_repo', arguments: { repo: 'x' } });
    assert.notEqual(ran.isError, true, JSON.stringify(ran));
    assert.equal(upstream.toolCalls().length, before + 1);
    await bound.close();
  });

  test('egress: CONNECT with an unbound agent gets 403 and is audited; bound to a T4 agent it passes the allow-list', async () => {
    const target = `localhost:${originPort}`;
    const auth = (token: string) => ({ 'Proxy-Authorization': `Bearer ${token}` });
    // The developer's own tool (T2) is held to the allow-list.
    const own = await connectThrough(w.replica.egressUrl!, target, auth(alice));
    assert.equal(own.status, 403);
    assert.match(own.text, /autonomy-egress-allowlist/);
    const unbound = await connectThrough(w.replica.egressUrl!, target, { ...auth(alice), 'X-Reins-Agent': 'eng/t4-bot' });
    assert.equal(unbound.status, 403);
    assert.match(unbound.text, /X-Reins-Agent names "eng\/t4-bot".*owners of eng\/t4-bot/);
    let event: any;
    await waitFor(async () => {
      event = (await w.admin.get(`/api/v1/audit-events?type=egress&identity=${enc('eng/alice')}`)).body.items.find((e: any) => e.data.refusal?.reason === 'agent_not_bound');
      return event !== undefined;
    }, 10_000);
    assert.ok(event, 'the refusal is audited');
    assert.equal(event.action, 'egress.connect');
    assert.equal(event.outcome, 'refused');
    assert.equal(event.data.refusal.agent, 'eng/t4-bot');
    const bound = await connectThrough(w.replica.egressUrl!, target, { ...auth(alice), 'X-Reins-Agent': 'eng/team-bot' });
    assert.equal(bound.status, 200, bound.text);
    const outsider = await connectThrough(w.replica.egressUrl!, target, { ...auth(carol), 'X-Reins-Agent': 'eng/team-bot' });
    assert.equal(outsider.status, 403);
  });

  test('a deleted developer stops counting: the entry goes with them, and a new identity with the same id does not inherit it', async () => {
    const dave = await developerWithToken(w.admin, 'eng/dave', 'developer');
    assert.equal((await setOwners(w.admin, 'eng/t4-bot', ['eng/dave', 'ops/*'])).status, 200);
    assert.equal((await premium(anthropic(w.replica.url, dave, { 'X-Reins-Agent': 'eng/t4-bot' }))).id, 'msg_fake');
    assert.equal((await w.admin.delete(`/api/v1/identities?id=${enc('eng/dave')}`)).status, 200);
    const detail = await w.admin.get(`/api/v1/identities/detail?id=${enc('eng/t4-bot')}`);
    assert.deepEqual(detail.body.owners, ['ops/*']);
    const again = await developerWithToken(w.admin, 'eng/dave', 'developer');
    await assert.rejects(premium(anthropic(w.replica.url, again, { 'X-Reins-Agent': 'eng/t4-bot' })), /not an agent identity bound to eng\/dave/);
    // The namespace rule still holds for the others.
    assert.equal((await premium(anthropic(w.replica.url, carol, { 'X-Reins-Agent': 'eng/t4-bot' }))).id, 'msg_fake');
    assert.equal((await setOwners(w.admin, 'eng/t4-bot', [])).status, 200);
  });
});
