import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { text as readText } from 'node:stream/consumers';
import OpenAI from 'openai';
import { request } from 'node:http';
import { CLIENT_TOKEN, startGateway, type Harness } from '../../fakes/gateway-harness.js';
import { BIG_STREAM_EVENTS, BIG_STREAM_TEXT } from '../../fakes/fake-providers.js';
import { unusedPort } from '../../helpers/ports.js';

const auth = { authorization: `Bearer ${CLIENT_TOKEN}`, 'content-type': 'application/json' };

describe('LLM gateway: edges of the data path', () => {
  let h: Harness;
  before(async () => {
    h = await startGateway();
  });
  after(async () => h.close());

  test('a client that goes away mid-stream cancels the upstream call and is reported as client_aborted', async () => {
    const before = h.completed.length;
    const abandonedBefore = h.fake.abandoned;
    const abort = new AbortController();
    const r = await fetch(`${h.url}/llm/openai/v1/chat/completions`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ model: 'slow-stream', stream: true, messages: [] }),
      signal: abort.signal,
    });
    assert.equal(r.headers.get('content-type'), 'text/event-stream');
    const reader = r.body!.getReader();
    const first = await reader.read();
    assert.match(new TextDecoder().decode(first.value), /Hel/);
    abort.abort();
    const done = (await h.completions(before + 1))[before];
    assert.equal(done?.result.end, 'client_aborted');
    for (let i = 0; i < 100 && h.fake.abandoned === abandonedBefore; i++) await new Promise((res) => setTimeout(res, 5));
    assert.equal(h.fake.abandoned, abandonedBefore + 1, 'the upstream connection was closed');
  });

  test('a client that goes away before the provider answers cancels the upstream call (client_aborted)', async () => {
    const before = h.completed.length;
    const abandonedBefore = h.fake.abandoned;
    const hits = h.fake.hits.length;
    const abort = new AbortController();
    const pending = fetch(`${h.url}/llm/openai/v1/chat/completions`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ model: 'silent', messages: [] }),
      signal: abort.signal,
    }).catch((err: unknown) => err);
    // The call reached the provider, which is still thinking.
    for (let i = 0; i < 400 && h.fake.hits.length === hits; i++) await new Promise((res) => setTimeout(res, 5));
    abort.abort();
    assert.ok((await pending) instanceof Error);
    const done = (await h.completions(before + 1))[before];
    assert.deepEqual([done?.result.status, done?.result.end], [499, 'client_aborted']);
    for (let i = 0; i < 400 && h.fake.abandoned === abandonedBefore; i++) await new Promise((res) => setTimeout(res, 5));
    assert.equal(h.fake.abandoned, abandonedBefore + 1, 'the upstream connection was closed');
  });

  test("a provider that drops mid-answer: the client's answer is cut too, and the call is upstream_unreachable", async () => {
    const before = h.completed.length;
    const r = await fetch(`${h.url}/llm/openai/v1/chat/completions`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ model: 'cut-stream', stream: true, messages: [] }),
    });
    assert.equal(r.status, 200);
    // The bytes that came are the client's; the stream then fails instead of ending as if complete.
    await assert.rejects(r.text());
    const done = (await h.completions(before + 1))[before];
    assert.deepEqual([done?.result.status, done?.result.end], [200, 'upstream_unreachable']);
  });

  test('a client that reads slowly holds the provider back (no unbounded buffering), then gets every byte, metered', async () => {
    const before = h.completed.length;
    const pressedBefore = h.fake.backpressured;
    const sentBefore = h.fake.bigStreamsSent;
    const body = JSON.stringify({ model: 'big-stream', stream: true, messages: [] });
    const res = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      const req = request(`${h.url}/llm/openai/v1/chat/completions`, { method: 'POST', headers: { ...auth, 'content-length': Buffer.byteLength(body) } }, resolve);
      req.on('error', reject);
      req.end(body);
    });
    assert.equal(res.statusCode, 200);
    // Not reading: once the client's socket and Reins' are full, Reins stops reading the provider, whose writes then
    // wait. 16 MiB would otherwise pass through at once.
    res.pause();
    for (let i = 0; i < 2000 && h.fake.backpressured === pressedBefore; i++) await new Promise((r) => setTimeout(r, 5));
    assert.ok(h.fake.backpressured > pressedBefore, 'the provider was held back');
    // And stays held back while the client does not read: a gateway that ignored its client's full socket took all
    // 16 MiB from the provider within 0.3 s of the first wait here (the same test, with that line of
    // shared/answer-relay.ts changed).
    for (let i = 0; i < 200 && h.fake.bigStreamsSent === sentBefore; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(h.fake.bigStreamsSent, sentBefore, 'the provider is still waiting to write');
    assert.equal(h.completed.length, before, 'the call is still under way');
    // Reading now: every byte the client was held back from.
    const text = await readText(res);
    assert.equal(text.split(BIG_STREAM_TEXT).length - 1, BIG_STREAM_EVENTS, 'every event arrived');
    assert.ok(text.endsWith('data: [DONE]\n\n'));
    assert.equal(h.fake.bigStreamsSent, sentBefore + 1);
    const done = (await h.completions(before + 1))[before];
    assert.equal(done?.result.end, 'forwarded');
  });

  test("a sized answer reaches the client with the upstream's content-length, not re-framed as chunked", async () => {
    const r = await fetch(`${h.url}/llm/openai/v1/chat/completions`, { method: 'POST', headers: auth, body: JSON.stringify({ model: 'gpt-fake', messages: [] }) });
    assert.equal(r.status, 200);
    const bytes = Buffer.from(await r.arrayBuffer());
    assert.equal(r.headers.get('content-length'), String(bytes.length));
    assert.equal(r.headers.get('transfer-encoding'), null);
    assert.ok(JSON.parse(bytes.toString('utf8')).choices, 'the completion, whole');
  });

  test('a body over 32 MiB is a 413 in the provider shape, never forwarded', async () => {
    const hits = h.fake.hits.length;
    const r = await fetch(`${h.url}/llm/openai/v1/chat/completions`, { method: 'POST', headers: auth, body: 'x'.repeat(32 * 1024 * 1024 + 1) });
    assert.equal(r.status, 413);
    const body = (await r.json()) as { error: { code: string; type: string } };
    assert.equal(body.error.code, 'request_too_large');
    assert.equal(h.fake.hits.length, hits);
  });

  test('a route the gateway does not serve is a 404 in the provider shape listing what it serves', async () => {
    const r = await fetch(`${h.url}/llm/anthropic/v1/files`, { method: 'POST', headers: { 'x-api-key': CLIENT_TOKEN, 'content-type': 'application/json' }, body: '{}' });
    assert.equal(r.status, 404);
    const body = (await r.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(body.error.type, 'not_found_error');
    assert.match(body.error.message, /\/v1\/messages/);
  });

  test('an unreachable upstream is a 502 in the provider shape that the SDK may retry', async () => {
    const down = await startGateway({ upstreamOrigin: `http://127.0.0.1:${await unusedPort()}` });
    try {
      const client = new OpenAI({ baseURL: `${down.url}/llm/openai/v1`, apiKey: CLIENT_TOKEN, maxRetries: 1 });
      await assert.rejects(client.chat.completions.create({ model: 'gpt-fake', messages: [] }), (err: unknown) => {
        assert.ok(err instanceof OpenAI.InternalServerError);
        assert.equal(err.status, 502);
        assert.match(err.message, /could not reach openai/);
        return true;
      });
      assert.equal(down.decided.length, 2, 'the SDK retried once');
      assert.ok(down.completed.every((c) => c.result.end === 'upstream_unreachable'));
    } finally {
      await down.close();
    }
  });
});
