import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { CLIENT_TOKEN, startGateway, type Harness } from '../../fakes/gateway-harness.js';
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
