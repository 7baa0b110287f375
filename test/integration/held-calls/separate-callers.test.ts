/**
 * Held-call entries never mix callers. The de-duplication key holds the agent, the developer and the session, and a
 * session value is scoped to the credential's developer: two developers who send the same X-Reins-Session and the
 * same body get two entries. So an admin's identical call never joins a developer's entry (where she could release
 * her own call), she cannot release the entry that holds it (403, audited like any self-approval), and a third
 * developer's call is never released under an entry that did not name him. Real OpenAI SDK clients.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { adminWithToken, describeEachStore, developerWithToken, waitFor } from '../../helpers/harness.js';
import { openai, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';

describeEachStore('held LLM calls: entries never mix callers', ({ store }) => {
  let w: GatewayWorld;
  let alice: string;
  let ivy: string;
  let carl: string;
  before(async () => {
    w = await startGatewayWorld(store());
    alice = await developerWithToken(w.admin, 'eng/alice', 'developer');
    ivy = await adminWithToken(w.replica.db, 'eng/ivy');
    carl = await developerWithToken(w.admin, 'eng/carl', 'developer');
    const created = await w.admin.post('/api/v1/policies', {
      name: 'review-gpt-4o',
      kind: 'approve',
      appliesTo: ['llm'],
      match: "object.llm.model == 'gpt-4o'",
      message: 'gpt-4o calls need a look.',
    });
    assert.equal(created.status, 201);
  });
  after(async () => w.close());

  const SESSION = { 'X-Reins-Session': 'shared-session' };
  const ask = (token: string, content: string) =>
    openai(w.replica.url, token, SESSION).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content }] });

  async function pendingOf(requester: string, content: string): Promise<any> {
    let entry: any;
    await waitFor(async () => {
      entry = (await w.admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.requester === requester && e.promptExcerpt === content);
      return entry !== undefined;
    }, 10_000);
    assert.ok(entry, `no pending entry of ${requester} for "${content}"`);
    return entry;
  }

  /** Whether a promise has settled, after giving it every chance to. */
  async function settled(p: Promise<unknown>): Promise<boolean> {
    let done = false;
    p.then(
      () => (done = true),
      () => (done = true),
    );
    await new Promise((r) => setImmediate(r));
    return done;
  }

  test('two developers, the same X-Reins-Session and body: two entries, each naming its developer and the session the tool sent', async () => {
    const content = 'same words, two people';
    const a = ask(alice, content);
    const aliceEntry = await pendingOf('eng/alice', content);
    const c = ask(carl, content);
    c.catch(() => undefined);
    const carlEntry = await pendingOf('eng/carl', content);
    assert.notEqual(carlEntry.id, aliceEntry.id);
    assert.equal(aliceEntry.sessionId, 'shared-session', 'the entry shows the value the tool sent');
    assert.equal(carlEntry.sessionId, 'shared-session');
    assert.equal((await w.admin.get(`/api/v1/held-calls/${aliceEntry.id}`)).body.attachedCalls, 1);
    // Releasing Alice's entry releases Alice's call only: Carl's stays held under his own entry.
    assert.equal((await w.admin.post(`/api/v1/held-calls/${aliceEntry.id}/approve`, {})).body.state, 'released');
    assert.equal((await a).choices[0]?.message.content, 'Hello world');
    assert.equal((await w.admin.get(`/api/v1/held-calls/${carlEntry.id}`)).body.state, 'pending');
    assert.equal(await settled(c), false, "Carl's call was not released with Alice's entry");
    await w.admin.post(`/api/v1/held-calls/${carlEntry.id}/deny`, { note: 'not now' });
    await assert.rejects(c, OpenAI.PermissionDeniedError);
  });

  test("an admin's identical call does not join a developer's entry, and she cannot release the entry holding her own call (403, audited)", async () => {
    const content = 'an admin tries to ride along';
    const hits = w.fake.hits.length;
    const a = ask(alice, content);
    const aliceEntry = await pendingOf('eng/alice', content);
    const i = ask(ivy, content);
    const ivyEntry = await pendingOf('eng/ivy', content);
    assert.notEqual(ivyEntry.id, aliceEntry.id);
    assert.equal((await w.admin.get(`/api/v1/held-calls/${aliceEntry.id}`)).body.attachedCalls, 1, "nothing joined Alice's entry");

    const self = await w.admin.with(ivy).post(`/api/v1/held-calls/${ivyEntry.id}/approve`, {});
    assert.equal(self.status, 403);
    assert.equal(self.body.error.code, 'self_approval');
    let refusal: any;
    await waitFor(async () => {
      refusal = (await w.admin.get('/api/v1/audit-events?action=held_call.approve')).body.items.find((e: any) => e.outcome === 'refused' && e.data.heldCallId === ivyEntry.id);
      return refusal !== undefined;
    }, 10_000);
    assert.ok(refusal, 'the refused self-approval is audited');
    assert.equal(refusal.actor.id, 'eng/ivy');
    assert.equal(refusal.data.code, 'self_approval');

    // Ivy may decide Alice's entry: it holds Alice's call only, and releasing it sends exactly that call.
    assert.equal((await w.admin.with(ivy).post(`/api/v1/held-calls/${aliceEntry.id}/approve`, {})).body.state, 'released');
    await a;
    assert.equal(w.fake.hits.length, hits + 1);
    assert.equal(await settled(i), false, "Ivy's call is still held");
    assert.equal((await w.admin.post(`/api/v1/held-calls/${ivyEntry.id}/approve`, {})).body.state, 'released');
    await i;
    assert.equal(w.fake.hits.length, hits + 2);
  });

  test('second line: the registry never attaches a call of another requester, agent or session, even under the same key', async () => {
    const content = 'what if two callers ever shared a key';
    const a = ask(alice, content);
    const entry = await pendingOf('eng/alice', content);
    const key = (await w.replica.db.query<{ dedupe_key: string }>('SELECT dedupe_key FROM held_calls WHERE id = $1', [entry.id])).rows[0]!.dedupe_key;
    const base = { kind: 'llm' as const, requester: 'eng/alice', agentId: '', sessionId: 'shared-session', tool: null, model: 'gpt-4o', policyName: 'review-gpt-4o', policyMessage: 'x', promptExcerpt: null, dedupeKey: key };
    for (const other of [{ requester: 'eng/ivy' }, { requester: null }, { agentId: 'eng/some-bot' }, { sessionId: 'another-session' }]) {
      await assert.rejects(w.replica.gateway.held.hold({ ...base, ...other }), /another caller/, JSON.stringify(other));
    }
    assert.equal((await w.admin.get(`/api/v1/held-calls/${entry.id}`)).body.attachedCalls, 1);
    await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {});
    await a;
  });
});
