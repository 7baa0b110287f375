/**
 * Held LLM calls with the real SDK clients: the spec's held-call table (release, deny with the note verbatim,
 * time out with each outcome), attaching identical calls to one entry, separate entries for differences,
 * redaction of the stored prompt excerpt, and self-release refused for a developer's own call.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { adminWithToken, agentWithKey, describeEachStore, developerWithToken, waitFor, WAIT_MS } from '../../helpers/harness.js';
import { anthropic, openai, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';

describeEachStore('held LLM calls', ({ store }) => {
  let w: GatewayWorld;
  let key: string;
  before(async () => {
    w = await startGatewayWorld(store());
    key = await agentWithKey(w.admin, 'eng/held-bot');
    const created = await w.admin.post('/api/v1/policies', {
      name: 'review-gpt-4o',
      kind: 'approve',
      appliesTo: ['llm'],
      match: "object.llm.model == 'gpt-4o'",
      message: 'gpt-4o calls need a look from the platform team.',
    });
    assert.equal(created.status, 201);
  });
  after(async () => w.close());

  const ask = (token: string, content: string, headers: Record<string, string> = {}) =>
    openai(w.replica.url, token, headers).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content }] });

  async function pendingFor(content: string, count = 1): Promise<any> {
    let entry: any;
    await waitFor(async () => {
      entry = (await w.admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.promptExcerpt?.startsWith(content.slice(0, 20)) && e.attachedCalls >= count);
      return entry !== undefined;
    }, WAIT_MS);
    assert.ok(entry, `no pending entry for "${content}"`);
    return entry;
  }

  test('held + approve by an admin -> released: the call completes as if allowed; audited, nothing announced', async () => {
    const call = ask(key, 'release me please');
    const entry = await pendingFor('release me please');
    // The hold is recorded when the call is parked (its decision event), the outcome when it is over (its end).
    let parked: any;
    await waitFor(async () => {
      parked = (await w.admin.get('/api/v1/audit-events?action=llm.request&identity=eng%2Fheld-bot')).body.items.find((e: any) => e.data.held?.entryId === entry.id);
      return parked !== undefined;
    }, 15_000);
    assert.ok(parked, 'the hold decision is in the log while the call waits');
    assert.equal(parked.data.decision, 'approve');
    assert.equal(parked.data.policy, 'review-gpt-4o');
    assert.equal(parked.callEnded, false);
    assert.equal(entry.requester, null, 'an agent key has no requester');
    assert.equal(entry.agentId, 'eng/held-bot');
    assert.equal(entry.policyName, 'review-gpt-4o');
    assert.equal(entry.policyMessage, 'gpt-4o calls need a look from the platform team.');
    const released = await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {});
    assert.equal(released.body.state, 'released');
    const r = await call;
    assert.equal(r.choices[0]?.message.content, 'Hello world');
    assert.equal((await w.admin.post(`/api/v1/held-calls/${entry.id}/deny`, { note: 'late' })).status, 409);
    const audit = (await w.admin.get('/api/v1/audit-events?action=held_call.approve')).body.items;
    assert.ok(audit.some((e: any) => e.data.heldCallId === entry.id));
    let end: any;
    await waitFor(async () => {
      end = (await w.admin.get(`/api/v1/audit-events?callId=${parked.data.callId}&action=llm.request_end`)).body.items[0];
      return end !== undefined;
    }, 15_000);
    assert.deepEqual(end.data.held, { entryId: entry.id, outcome: 'released' });
    assert.equal(end.data.end, 'forwarded');
    assert.equal(end.outcome, 'ok');
  });

  test('held + deny -> stopped: the tool shows the policy, its message and the note verbatim, and offers an exception', async () => {
    const call = ask(key, 'deny me please');
    call.catch(() => undefined); // rejected while the test is busy deciding; asserted below
    const entry = await pendingFor('deny me please');
    const note = 'Not during the freeze <see #ops>.';
    assert.equal((await w.admin.post(`/api/v1/held-calls/${entry.id}/deny`, { note })).body.state, 'stopped');
    await assert.rejects(call, (err: unknown) => {
      assert.ok(err instanceof OpenAI.PermissionDeniedError, String(err));
      assert.match(err.message, /review-gpt-4o/);
      assert.ok(err.message.includes('gpt-4o calls need a look from the platform team.'));
      assert.ok(err.message.includes(`"${note}"`));
      assert.match(err.message, /request an exception/);
      return true;
    });
  });

  test('the list filters by every state, not only pending: a stopped entry is listed under stopped and not under pending', async () => {
    const call = ask(key, 'list me as stopped');
    call.catch(() => undefined); // refused once denied; this test is about the listing
    const entry = await pendingFor('list me as stopped');
    assert.equal((await w.admin.post(`/api/v1/held-calls/${entry.id}/deny`, { note: 'listing' })).body.state, 'stopped');
    const ids = async (state: string) => (await w.admin.get(`/api/v1/held-calls?state=${state}`)).body.items.map((e: any) => e.id);
    assert.ok((await ids('stopped')).includes(entry.id));
    assert.ok(!(await ids('pending')).includes(entry.id));
    assert.ok(!(await ids('released')).includes(entry.id));
    assert.equal((await w.admin.get('/api/v1/held-calls?state=parked')).status, 400);
  });

  test('identical calls attach to one entry and one decision applies to all; any difference gives another entry', async () => {
    const calls = [ask(key, 'same prompt twice'), ask(key, 'same prompt twice')];
    const entry = await pendingFor('same prompt twice', 2);
    assert.equal(entry.attachedCalls, 2);
    const other = ask(key, 'a different prompt');
    other.catch(() => undefined);
    const otherEntry = await pendingFor('a different prompt');
    assert.notEqual(otherEntry.id, entry.id);
    await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {});
    const answers = await Promise.all(calls);
    assert.equal(answers.length, 2);
    await w.admin.post(`/api/v1/held-calls/${otherEntry.id}/deny`, { note: 'no' });
    await assert.rejects(other, OpenAI.PermissionDeniedError);
  });

  test('the window elapses: deny outcome says no reviewer acted in time; allow outcome lets it through, audited', async () => {
    for (const outcome of ['deny', 'allow'] as const) {
      const set = await w.admin.put('/api/v1/settings/human-review', { llmApprovalWindowSeconds: 300, mcpApprovalWindowSeconds: 1800, timeoutOutcome: outcome });
      assert.equal(set.status, 200);
      const content = `time me out ${outcome}`;
      const call = ask(key, content);
      call.catch(() => undefined);
      const entry = await pendingFor(content);
      // The clock, moved: the window has elapsed.
      await w.replica.db.query('UPDATE held_calls SET expires_at = now() WHERE id = $1', [entry.id]);
      await w.replica.gateway.held.timeOut(entry.id);
      if (outcome === 'deny') {
        await assert.rejects(call, (err: Error) => /no reviewer acted in time/.test(err.message) && !/denied/.test(err.message));
      } else {
        const r = await call;
        assert.equal(r.choices.length, 1);
      }
      const after = (await w.admin.get(`/api/v1/held-calls/${entry.id}`)).body;
      assert.equal(after.state, 'timed_out');
      assert.equal(after.timeoutOutcome, outcome);
    }
    await w.admin.put('/api/v1/settings/human-review', { llmApprovalWindowSeconds: 300, mcpApprovalWindowSeconds: 1800, timeoutOutcome: 'deny' });
  });

  test('a developer cannot release their own held call; credentials in the prompt never reach the stored excerpt', async () => {
    const pat = await adminWithToken(w.replica.db, 'eng/ivy');
    const secret = 'sk-proj-' + 'A1b2C3d4E5f6G7h8I9j0'.repeat(3);
    const content = `deploy with key ${secret} and AKIAIOSFODNN7EXAMPLE please`;
    const call = ask(pat, content, { 'X-Reins-Session': 'ivy-1' });
    let entry: any;
    await waitFor(async () => {
      entry = (await w.admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.requester === 'eng/ivy');
      return entry !== undefined;
    }, WAIT_MS);
    assert.ok(!entry.promptExcerpt.includes(secret) && !entry.promptExcerpt.includes('AKIAIOSFODNN7EXAMPLE'), entry.promptExcerpt);
    assert.match(entry.promptExcerpt, /REDACTED/);
    assert.equal(entry.sessionId, 'ivy-1');
    const own = await w.admin.with(pat).post(`/api/v1/held-calls/${entry.id}/approve`, {});
    assert.equal(own.status, 403);
    const stored = await w.replica.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM held_calls WHERE prompt_excerpt LIKE '%' || $1 || '%'`, [secret.slice(0, 20)]);
    assert.equal(stored.rows[0]!.n, '0');
    await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {});
    await call;
  });

  test('Bedrock Converse is refused outright by an approve policy, never parked', async () => {
    await w.admin.post('/api/v1/policies', { name: 'review-bedrock', kind: 'approve', appliesTo: ['llm'], match: "object.llm.provider == 'bedrock'", message: 'Bedrock is reviewed.' });
    const r = await fetch(`${w.replica.url}/llm/bedrock/model/anthropic.claude-sonnet-4-5-20250929-v1:0/converse`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'hi' }] }] }),
    });
    assert.equal(r.status, 403);
    assert.match(((await r.json()) as { message: string }).message, /cannot be held/);
    await w.admin.delete('/api/v1/policies/review-bedrock');
    void Anthropic;
  });
});

describeEachStore('held LLM calls: a client that gave up', ({ store }) => {
  let w: GatewayWorld;
  let key: string;
  before(async () => {
    w = await startGatewayWorld(store());
    key = await agentWithKey(w.admin, 'eng/impatient');
    await w.admin.post('/api/v1/policies', { name: 'review-4o', kind: 'approve', appliesTo: ['llm'], match: "object.llm.model == 'gpt-4o'", message: 'Reviewed.' });
  });
  after(async () => w.close());

  test('a call whose client went away during the hold is not sent upstream when released', async () => {
    const controller = new AbortController();
    const call = openai(w.replica.url, key).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'abandon me' }] }, { signal: controller.signal });
    call.catch(() => undefined);
    let entry: any;
    await waitFor(async () => {
      entry = (await w.admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.promptExcerpt === 'abandon me');
      return entry !== undefined;
    }, WAIT_MS);
    controller.abort();
    await assert.rejects(call);
    await new Promise((r) => setTimeout(r, 100));
    const upstreamBefore = w.fake.hits.length;
    await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {});
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(w.fake.hits.length, upstreamBefore, 'nothing reached the provider');
  });
});

describeEachStore('held streaming calls are kept alive', ({ store }) => {
  let w: GatewayWorld;
  let key: string;
  before(async () => {
    w = await startGatewayWorld(store());
    key = await agentWithKey(w.admin, 'eng/streamer');
    await w.admin.post('/api/v1/policies', { name: 'review-streams', kind: 'approve', appliesTo: ['llm'], match: 'object.llm.stream', message: 'Streams are reviewed.' });
  });
  after(async () => w.close());

  async function entryFor(model: string): Promise<any> {
    let entry: any;
    await waitFor(async () => {
      entry = (await w.admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.model === model);
      return entry !== undefined;
    }, WAIT_MS);
    assert.ok(entry);
    return entry;
  }

  test('the answer starts at once (200, SSE, a ping) while the call is held', async () => {
    const res = await fetch(`${w.replica.url}/llm/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-raw', max_tokens: 8, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-reins-held'), 'true');
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    assert.match(first, /event: ping/);
    const entry = await entryFor('claude-raw');
    await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {});
    let rest = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    assert.match(rest, /message_stop/);
  });

  test('Anthropic SDK stream: released -> the final message; denied -> an error naming the policy and the note', async () => {
    const client = anthropic(w.replica.url, key);
    const ok = client.messages.stream({ model: 'claude-ok', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    await w.admin.post(`/api/v1/held-calls/${(await entryFor('claude-ok')).id}/approve`, {});
    assert.equal((await ok).content[0]?.type, 'text');
    const no = client.messages.stream({ model: 'claude-no', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    no.catch(() => undefined);
    await w.admin.post(`/api/v1/held-calls/${(await entryFor('claude-no')).id}/deny`, { note: 'not now' });
    await assert.rejects(no, (err: Error) => /review-streams/.test(err.message) && /not now/.test(err.message));
  });

  test('OpenAI SDK stream: released -> the chunks; denied -> an error naming the policy and the note', async () => {
    const client = openai(w.replica.url, key);
    const collect = async (model: string) => {
      const stream = await client.chat.completions.create({ model, stream: true, messages: [{ role: 'user', content: 'hi' }] });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      return text;
    };
    const ok = collect('gpt-ok');
    await w.admin.post(`/api/v1/held-calls/${(await entryFor('gpt-ok')).id}/approve`, {});
    assert.equal(await ok, 'Hello world');
    const no = collect('gpt-no');
    no.catch(() => undefined);
    await w.admin.post(`/api/v1/held-calls/${(await entryFor('gpt-no')).id}/deny`, { note: 'nope' });
    await assert.rejects(no, (err: Error) => /review-streams/.test(err.message) && /"nope"/.test(err.message));
  });
});
