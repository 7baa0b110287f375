/**
 * Named upstreams of every kind, end to end: real SDK clients (openai, its AzureOpenAI client, @google/genai) ->
 * Reins (credential, policies, model access, budgets, audit, prices) -> local fakes speaking each wire format. Two names of one kind reach
 * two upstreams; policies see object.llm.provider (the kind) and object.llm.upstream (the name); each kind refuses
 * in its own error shape.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { AzureOpenAI } from 'openai';
import { GoogleGenAI, ApiError } from '@google/genai';
import { AZURE_DEPLOYMENT_MODEL, FAKE_USAGE, startFakeProviders, type FakeProviders } from '../../fakes/fake-providers.js';
import { agentWithKey, describeEachStore, enc, waitFor, WAIT_MS } from '../../helpers/harness.js';
import { llmEvent, PROVIDER_KEY, providersAt, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';

const chat = (model: string, extra: Record<string, unknown> = {}) => ({ model, messages: [{ role: 'user' as const, content: 'hello there, how are you today?' }], ...extra });
const OTHER_KEY = 'sk-other-upstream-key-0123';

describeEachStore('gateway: named upstreams of every kind', ({ store }) => {
  let w: GatewayWorld;
  let second: FakeProviders;
  let key: string;
  const azure = () => new AzureOpenAI({ endpoint: `${w.replica.url}/llm/azure-eu`, apiKey: key, apiVersion: '2024-10-21', deployment: 'chat-prod', maxRetries: 0 });
  const gemini = () => new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: `${w.replica.url}/llm/gemini` } });

  before(async () => {
    second = await startFakeProviders();
    w = await startGatewayWorldWith(store(), second.origin);
    key = await agentWithKey(w.admin, 'eng/multi');
    const denied = await w.admin.post('/api/v1/policies', {
      name: 'no-forbidden-model',
      kind: 'deny',
      appliesTo: ['llm'],
      match: "object.llm.model == 'forbidden-model' || (object.llm.upstream == 'openai-eu' && object.llm.model == 'eu-only-denied')",
      message: 'That model is not approved.',
    });
    assert.equal(denied.status, 201, JSON.stringify(denied.body));
  });
  after(async () => {
    await w?.close();
    await second?.close();
  });

  test('two names of one kind reach two upstreams, each with its own key; audit records kind and name', async () => {
    const a = await new OpenAI({ baseURL: `${w.replica.url}/llm/openai/v1`, apiKey: key, maxRetries: 0 }).chat.completions.create(chat('gpt-4o-mini'));
    const b = await new OpenAI({ baseURL: `${w.replica.url}/llm/openai-eu/v1`, apiKey: key, maxRetries: 0 }).chat.completions.create(chat('gpt-4o-mini', { max_tokens: 77 }));
    assert.equal(a.choices[0]?.message.content, 'Hello world');
    assert.equal(b.choices[0]?.message.content, 'Hello world');
    assert.equal(w.fake.hits.at(-1)?.headers.authorization, `Bearer ${PROVIDER_KEY}`);
    assert.equal(second.hits.length, 1);
    assert.equal(second.hits[0]?.headers.authorization, `Bearer ${OTHER_KEY}`);
    const event = await llmEvent(w.admin, (e) => e.data.maxTokens === 77, `&identity=${enc('eng/multi')}`);
    assert.equal(event.data.provider, 'openai');
    assert.equal(event.data.upstream, 'openai-eu');
    assert.deepEqual(event.data.usage, FAKE_USAGE.openaiChat);
  });

  test('policies see object.llm.upstream: a rule on one name leaves the other alone', async () => {
    const eu = new OpenAI({ baseURL: `${w.replica.url}/llm/openai-eu/v1`, apiKey: key, maxRetries: 0 });
    await assert.rejects(eu.chat.completions.create(chat('eu-only-denied')), OpenAI.PermissionDeniedError);
    const home = await new OpenAI({ baseURL: `${w.replica.url}/llm/openai/v1`, apiKey: key, maxRetries: 0 }).chat.completions.create(chat('eu-only-denied'));
    assert.equal(home.choices.length, 1);
    const refused = await llmEvent(w.admin, (e) => e.data.model === 'eu-only-denied' && e.outcome === 'refused', `&identity=${enc('eng/multi')}`);
    assert.equal(refused.data.upstream, 'openai-eu');
  });

  test('openai-compatible by name: no key configured, none sent upstream; usage from the answer', async () => {
    const vllm = new OpenAI({ baseURL: `${w.replica.url}/llm/vllm/v1`, apiKey: key, maxRetries: 0 });
    const before = w.fake.hits.length;
    const r = await vllm.chat.completions.create(chat('meta-llama/Llama-3.1-8B-Instruct', { max_tokens: 31 }));
    assert.equal(r.choices[0]?.message.content, 'Hello world');
    const hit = w.fake.hits[before]!;
    assert.equal(hit.url, '/v1/chat/completions');
    assert.equal(hit.headers.authorization, undefined, 'no key configured: nothing, and never the Reins token');
    const event = await llmEvent(w.admin, (e) => e.data.maxTokens === 31, `&identity=${enc('eng/multi')}`);
    assert.equal(event.data.provider, 'openai-compatible');
    assert.equal(event.data.upstream, 'vllm');
    assert.deepEqual(event.data.usage, FAKE_USAGE.openaiChat);
    // The upstream's own prices (providers.vllm.prices).
    assert.ok(Math.abs(event.data.costUsd - (11 * 0.1 + 7 * 0.2) / 1e6) < 1e-12, String(event.data.costUsd));
    await assert.rejects(vllm.chat.completions.create(chat('forbidden-model')), (err: unknown) => {
      assert.ok(err instanceof OpenAI.PermissionDeniedError);
      assert.equal(err.code, 'policy_denied');
      return true;
    });
    const models = await vllm.models.list();
    assert.equal(models.data[0]?.id, 'gpt-fake');
    await assert.rejects(vllm.responses.create({ model: 'x', input: 'hi' }), OpenAI.NotFoundError);
  });

  test('openai-compatible without usage in the answer: counted tokens, marked estimated (plain and streamed)', async () => {
    const vllm = new OpenAI({ baseURL: `${w.replica.url}/llm/vllm/v1`, apiKey: key, maxRetries: 0 });
    await vllm.chat.completions.create(chat('no-usage', { max_tokens: 32 }));
    const plain = await llmEvent(w.admin, (e) => e.data.maxTokens === 32, `&identity=${enc('eng/multi')}`);
    // "hello there, how are you today?" is 31 characters (8 tokens at 4 a token); "Hello world" 11 (3).
    assert.deepEqual(plain.data.usage, { inputTokens: 8, outputTokens: 3, estimated: true });
    const stream = await vllm.chat.completions.create({ ...chat('no-usage', { max_tokens: 33 }), stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text, 'Hello world');
    const streamed = await llmEvent(w.admin, (e) => e.data.maxTokens === 33, `&identity=${enc('eng/multi')}`);
    assert.deepEqual(streamed.data.usage, { inputTokens: 8, outputTokens: 3, estimated: true });
  });

  test('Azure OpenAI: AzureOpenAI reaches the deployment with api-key both ways; priced by the model the answer names', async () => {
    const before = w.fake.hits.length;
    const r = await azure().chat.completions.create({ ...chat(''), max_tokens: 34 } as never);
    assert.equal((r as OpenAI.ChatCompletion).choices[0]?.message.content, 'Hello world');
    const hit = w.fake.hits[before]!;
    assert.equal(hit.url, '/openai/deployments/chat-prod/chat/completions?api-version=2024-10-21');
    assert.equal(hit.headers['api-key'], PROVIDER_KEY);
    assert.equal(hit.headers.authorization, undefined);
    const event = await llmEvent(w.admin, (e) => e.data.maxTokens === 34, `&identity=${enc('eng/multi')}`);
    assert.equal(event.data.provider, 'azure-openai');
    assert.equal(event.data.upstream, 'azure-eu');
    assert.equal(event.data.route, 'chat/completions');
    assert.equal(event.decision.data.model, 'chat-prod', 'policies see the deployment name: the answer is not there yet');
    assert.equal(event.data.model, AZURE_DEPLOYMENT_MODEL, 'the end event names the model the answer names');
    // gpt-4o-mini list price: $0.15 in / $0.60 out per million tokens.
    assert.ok(Math.abs(event.data.costUsd - (11 * 0.15 + 7 * 0.6) / 1e6) < 1e-12, String(event.data.costUsd));
  });

  test('Azure OpenAI: a streamed deployment call, and the v1 paths with Authorization: Bearer', async () => {
    const stream = await azure().chat.completions.create({ ...chat(''), stream: true, stream_options: { include_usage: true }, max_tokens: 35 } as never);
    let text = '';
    for await (const chunk of stream as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>) text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text, 'Hello world');
    const streamed = await llmEvent(w.admin, (e) => e.data.maxTokens === 35, `&identity=${enc('eng/multi')}`);
    assert.deepEqual(streamed.data.usage, FAKE_USAGE.openaiChat);
    const v1 = new OpenAI({ baseURL: `${w.replica.url}/llm/azure-eu/openai/v1`, apiKey: key, maxRetries: 0 });
    const before = w.fake.hits.length;
    const r = await v1.chat.completions.create(chat('gpt-4o-mini', { max_tokens: 36 }));
    assert.equal(r.choices.length, 1);
    assert.equal(w.fake.hits[before]?.url, '/openai/v1/chat/completions');
    assert.equal(w.fake.hits[before]?.headers['api-key'], PROVIDER_KEY);
  });

  test('Azure OpenAI refuses as OpenAI does: PermissionDeniedError naming the policy, not retried', async () => {
    const client = new AzureOpenAI({ endpoint: `${w.replica.url}/llm/azure-eu`, apiKey: key, apiVersion: '2024-10-21', deployment: 'forbidden-model', maxRetries: 2 });
    const before = w.fake.hits.length;
    await assert.rejects(client.chat.completions.create({ ...chat('') } as never), (err: unknown) => {
      assert.ok(err instanceof OpenAI.PermissionDeniedError);
      assert.equal(err.code, 'policy_denied');
      assert.match(err.message, /no-forbidden-model/);
      return true;
    });
    assert.equal(w.fake.hits.length, before);
  });

  test('Gemini: generateContent, generateContentStream and countTokens through @google/genai, x-goog-api-key both ways', async () => {
    const ai = gemini();
    const before = w.fake.hits.length;
    const r = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi', config: { maxOutputTokens: 37 } });
    assert.equal(r.text, 'Hello from Gemini');
    const hit = w.fake.hits[before]!;
    assert.equal(hit.url, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(hit.headers['x-goog-api-key'], PROVIDER_KEY);
    const plain = await llmEvent(w.admin, (e) => e.data.maxTokens === 37, `&identity=${enc('eng/multi')}`);
    assert.equal(plain.data.provider, 'gemini');
    assert.equal(plain.data.upstream, 'gemini');
    assert.equal(plain.data.route, 'generateContent');
    assert.equal(plain.data.model, 'gemini-2.5-flash');
    assert.deepEqual(plain.data.usage, FAKE_USAGE.gemini);
    // gemini-2.5-flash list price: $0.30 in / $2.50 out per million tokens.
    assert.ok(Math.abs(plain.data.costUsd - (14 * 0.3 + 6 * 2.5) / 1e6) < 1e-12, String(plain.data.costUsd));

    let text = '';
    for await (const chunk of await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'hi', config: { maxOutputTokens: 38 } })) text += chunk.text ?? '';
    assert.equal(text, 'Hello from Gemini');
    assert.match(w.fake.hits.at(-1)!.url, /:streamGenerateContent\?alt=sse$/);
    const streamed = await llmEvent(w.admin, (e) => e.data.maxTokens === 38, `&identity=${enc('eng/multi')}`);
    assert.equal(streamed.data.stream, true);
    assert.deepEqual(streamed.data.usage, FAKE_USAGE.gemini);

    const counted = await ai.models.countTokens({ model: 'gemini-2.5-flash', contents: 'hi' });
    assert.equal(counted.totalTokens, 42);
  });

  test('Gemini: the Reins token in ?key= works and is not forwarded; refusals are {"error": {code, message, status}}', async () => {
    const before = w.fake.hits.length;
    const r = await fetch(`${w.replica.url}/llm/gemini/v1/models/gemini-2.5-flash:generateContent?key=${encodeURIComponent(key)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    });
    assert.equal(r.status, 200);
    assert.equal(w.fake.hits[before]?.url, '/v1/models/gemini-2.5-flash:generateContent');
    assert.equal(w.fake.hits[before]?.headers['x-goog-api-key'], PROVIDER_KEY);

    await assert.rejects(gemini().models.generateContent({ model: 'forbidden-model', contents: 'hi' }), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 403);
      const body = JSON.parse(err.message) as { error: { code: number; message: string; status: string } };
      assert.equal(body.error.code, 403);
      assert.equal(body.error.status, 'PERMISSION_DENIED');
      assert.match(body.error.message, /no-forbidden-model/);
      return true;
    });
    const unauthenticated = await fetch(`${w.replica.url}/llm/gemini/v1beta/models/gemini-2.5-flash:generateContent`, { method: 'POST', body: '{}' });
    assert.equal(unauthenticated.status, 401);
    assert.equal(((await unauthenticated.json()) as any).error.status, 'UNAUTHENTICATED');
  });

  test('model access binds every kind: Gemini refuses PERMISSION_DENIED naming the model, an OpenAI-compatible server model_not_allowed', async () => {
    const gatedKey = await agentWithKey(w.admin, 'gated/agent');
    const rule = await w.admin.post('/api/v1/model-access', { scope: 'gated', models: ['gemini-2.5-flash', 'meta-llama/*'], description: 'two models' });
    assert.equal(rule.status, 201, JSON.stringify(rule.body));
    const ai = new GoogleGenAI({ apiKey: gatedKey, httpOptions: { baseUrl: `${w.replica.url}/llm/gemini` } });
    const before = w.fake.hits.length;
    await assert.rejects(ai.models.generateContent({ model: 'gemini-2.5-pro', contents: 'hi' }), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 403);
      const body = JSON.parse(err.message) as { error: { code: number; message: string; status: string } };
      assert.equal(body.error.status, 'PERMISSION_DENIED');
      assert.match(body.error.message, /may not use model gemini-2\.5-pro/);
      return true;
    });
    assert.equal(w.fake.hits.length, before, 'nothing went upstream');
    assert.equal((await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' })).text, 'Hello from Gemini');
    const vllm = new OpenAI({ baseURL: `${w.replica.url}/llm/vllm/v1`, apiKey: gatedKey, maxRetries: 0 });
    await assert.rejects(vllm.chat.completions.create(chat('qwen-2.5')), (err: unknown) => {
      assert.ok(err instanceof OpenAI.PermissionDeniedError);
      assert.equal(err.code, 'model_not_allowed');
      return true;
    });
    assert.equal((await vllm.chat.completions.create(chat('meta-llama/Llama-3.1-8B-Instruct'))).choices.length, 1);
    const refused = await llmEvent(w.admin, (e) => e.outcome === 'refused' && e.data.model === 'gemini-2.5-pro', `&identity=${enc('gated/agent')}`);
    assert.equal(refused.data.upstream, 'gemini');
    assert.equal(refused.data.refusal.reason, 'model_access');
  });

  test('budgets bind every kind: an unknown Gemini model is costed with the fallback (marked estimated) and spends the budget; Azure refuses 402 as OpenAI does', async () => {
    const geminiKey = await agentWithKey(w.admin, 'budgeted/gemini');
    const azureKey = await agentWithKey(w.admin, 'budgeted/azure');
    for (const scope of ['budgeted/gemini', 'budgeted/azure']) {
      const r = await w.admin.post('/api/v1/budget-rules', { name: `tiny ${scope}`, scope, pattern: '*', limitUsd: 0.000001, period: 'day' });
      assert.equal(r.status, 201, JSON.stringify(r.body));
    }
    // A Gemini model no price names: the fallback is Gemini's dearest listed model, never nothing.
    const ai = new GoogleGenAI({ apiKey: geminiKey, httpOptions: { baseUrl: `${w.replica.url}/llm/gemini` } });
    assert.equal((await ai.models.generateContent({ model: 'gemini-9-ultra', contents: 'hi', config: { maxOutputTokens: 39 } })).text, 'Hello from Gemini');
    const costed = await llmEvent(w.admin, (e) => e.data.maxTokens === 39, `&identity=${enc('budgeted/gemini')}`);
    assert.equal(costed.data.costEstimated, true);
    assert.match(costed.data.pricedAs, /^gemini-2\.5-pro/);
    // gemini-2.5-pro list price: $1.25 in / $10 out per million tokens.
    assert.ok(Math.abs(costed.data.costUsd - (14 * 1.25 + 6 * 10) / 1e6) < 1e-12, String(costed.data.costUsd));
    // The settlement is written after the answer: the next call is refused once it is in.
    await waitFor(async () => {
      try {
        await ai.models.generateContent({ model: 'gemini-9-ultra', contents: 'hi' });
        return false;
      } catch (err) {
        assert.ok(err instanceof ApiError, String(err));
        assert.equal(err.status, 402);
        const body = JSON.parse(err.message) as { error: { code: number; message: string; status: string } };
        assert.equal(body.error.status, 'RESOURCE_EXHAUSTED');
        assert.match(body.error.message, /budget "tiny budgeted\/gemini"/);
        return true;
      }
    }, WAIT_MS, 50);

    const client = new AzureOpenAI({ endpoint: `${w.replica.url}/llm/azure-eu`, apiKey: azureKey, apiVersion: '2024-10-21', deployment: 'chat-prod', maxRetries: 2 });
    await client.chat.completions.create({ ...chat('') } as never);
    await waitFor(async () => {
      const before = w.fake.hits.length;
      try {
        await client.chat.completions.create({ ...chat('') } as never);
        return false;
      } catch (err) {
        assert.ok(err instanceof OpenAI.APIError && err.status === 402, String(err));
        assert.equal(err.code, 'budget_exceeded');
        assert.equal(w.fake.hits.length, before, 'refused, not retried, nothing upstream');
        return true;
      }
    }, WAIT_MS, 50);
  });

  test('Azure OpenAI: a held deployment stream stays open while held, and a denied one ends with the reason in-stream', async () => {
    const created = await w.admin.post('/api/v1/policies', { name: 'review-azure', kind: 'approve', appliesTo: ['llm'], match: "object.llm.upstream == 'azure-eu'", message: 'Azure is reviewed.' });
    assert.equal(created.status, 201);
    try {
      const held = async (prompt: string) => {
        const stream = await azure().chat.completions.create({ model: '', messages: [{ role: 'user', content: prompt }], stream: true } as never);
        let text = '';
        for await (const chunk of stream as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>) text += chunk.choices[0]?.delta.content ?? '';
        return text;
      };
      const pendingEntry = async (prompt: string) => {
        let entry: any;
        await waitFor(async () => {
          entry = (await w.admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.promptExcerpt === prompt);
          return entry !== undefined;
        }, WAIT_MS);
        return entry;
      };
      const approved = held('review this azure prompt');
      const entry = await pendingEntry('review this azure prompt');
      assert.equal(entry.model, 'chat-prod', 'the deployment names the model while held');
      assert.equal((await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {})).status, 200);
      assert.equal(await approved, 'Hello world');

      const before = w.fake.hits.length;
      const denied = held('deny this azure prompt');
      // The denial can reach the stream before the deny request's answer does: handled now, asserted below.
      denied.catch(() => {});
      const doomed = await pendingEntry('deny this azure prompt');
      assert.equal((await w.admin.post(`/api/v1/held-calls/${doomed.id}/deny`, { note: 'not today' })).status, 200);
      await assert.rejects(denied, (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError, String(err));
        assert.match(err.message, /not today|denied/);
        return true;
      });
      assert.equal(w.fake.hits.length, before, 'a denied call never goes upstream');
    } finally {
      await w.admin.delete('/api/v1/policies/review-azure');
    }
  });

  test('Gemini: a held streamGenerateContent stays open while held and completes when released; countTokens is never held', async () => {
    const created = await w.admin.post('/api/v1/policies', { name: 'review-gemini', kind: 'approve', appliesTo: ['llm'], match: "object.llm.upstream == 'gemini'", message: 'Gemini is reviewed.' });
    assert.equal(created.status, 201);
    try {
      const ai = gemini();
      const counted = await ai.models.countTokens({ model: 'gemini-2.5-pro', contents: 'hi' });
      assert.equal(counted.totalTokens, 42, 'token counting is never held');
      const streaming = (async () => {
        let text = '';
        for await (const chunk of await ai.models.generateContentStream({ model: 'gemini-2.5-pro', contents: 'review this prompt' })) text += chunk.text ?? '';
        return text;
      })();
      let entry: any;
      await waitFor(async () => {
        entry = (await w.admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.promptExcerpt === 'review this prompt');
        return entry !== undefined;
      }, WAIT_MS);
      assert.equal(entry.model, 'gemini-2.5-pro');
      assert.equal((await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {})).status, 200);
      assert.equal(await streaming, 'Hello from Gemini');
    } finally {
      await w.admin.delete('/api/v1/policies/review-gemini');
    }
  });
});

/** The usual fakes as openai, anthropic and bedrock, plus the new kinds at the first fake and openai-eu at `secondOrigin`. */
function startGatewayWorldWith(s: Parameters<typeof startGatewayWorld>[0], secondOrigin: string): Promise<GatewayWorld> {
  return startGatewayWorld(s, {}, { providers: (origin) => ({
    ...providersAt(origin),
    'openai-eu': { kind: 'openai', baseUrl: secondOrigin, apiKey: OTHER_KEY },
    vllm: { kind: 'openai-compatible', baseUrl: origin, prices: { 'meta-llama/*': { inputPerMTok: 0.1, outputPerMTok: 0.2 } } },
    'azure-eu': { kind: 'azure-openai', baseUrl: origin, apiKey: PROVIDER_KEY },
    gemini: { kind: 'gemini', baseUrl: origin, apiKey: PROVIDER_KEY },
  }) });
}
