/**
 * The client libraries people build agents with, as they ship, against Reins and the local fake providers: the
 * Vercel AI SDK (`ai` with `@ai-sdk/openai` and `@ai-sdk/anthropic`) and LangChain's `ChatOpenAI`, plain and
 * streaming; and every kind of refusal (policy, model access, budget, a held call denied) through each SDK with its
 * default retry settings, counting the requests that reached Reins: exactly one per refusal, never a retry. The
 * OpenAI, Anthropic and AWS SDKs are counted the same way. A counting pass-through sits between the SDKs and Reins.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateText, streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { BedrockRuntimeClient, ConverseCommand } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { describeEachStore, developerWithToken, waitFor, WAIT_MS } from '../../helpers/harness.js';
import { llmEvent, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';
import { startCountingProxy, type CountingProxy } from '../../helpers/counting-proxy.js';

const PROMPT = 'say hi';

describeEachStore('gateway: the Vercel AI SDK, LangChain and the provider SDKs as they ship', ({ store }) => {
  let w: GatewayWorld;
  let proxy: CountingProxy;
  let dev: string;
  let broke: string;
  let limited: string;
  let held: string;
  before(async () => {
    w = await startGatewayWorld(store());
    proxy = await startCountingProxy(w.replica.url);
    dev = await developerWithToken(w.admin, 'eng/sdk-dev', 'developer');
    broke = await developerWithToken(w.admin, 'broke/dev', 'developer');
    limited = await developerWithToken(w.admin, 'limited/dev', 'developer');
    held = await developerWithToken(w.admin, 'eng/sdk-held', 'developer');
    const policy = (name: string, kind: string, match: string, message: string) =>
      w.admin.post('/api/v1/policies', { name, kind, appliesTo: ['llm'], match, message, enabled: true });
    assert.equal((await policy('no-forbidden-models', 'deny', "object.llm.model.contains('forbidden-')", 'Forbidden models are not used here.')).status, 201);
    assert.equal((await policy('review-held-models', 'approve', "object.llm.model.contains('held-')", 'A person reviews these.')).status, 201);
    assert.equal((await w.admin.post('/api/v1/budget-rules', { name: 'broke zero', scope: 'broke', pattern: '*', limitUsd: 0, period: 'day' })).status, 201);
    assert.equal((await w.admin.post('/api/v1/model-access', { scope: 'limited', models: ['gpt-4o-mini'], description: 'mini only' })).status, 201);
  });
  after(async () => {
    await proxy?.close();
    await w?.close();
  });

  // The SDKs with their own defaults (retries included); only the base URL and the key change.
  const aiOpenAI = (key: string) => createOpenAI({ baseURL: `${proxy.url}/llm/openai/v1`, apiKey: key });
  const aiAnthropic = (key: string) => createAnthropic({ baseURL: `${proxy.url}/llm/anthropic/v1`, apiKey: key });
  const langchain = (key: string, model = 'gpt-4o-mini') => new ChatOpenAI({ model, apiKey: key, configuration: { baseURL: `${proxy.url}/llm/openai/v1` } });

  /** Every error part of a streamText run (the AI SDK reports stream errors in the stream, not by throwing). */
  async function streamErrors(result: ReturnType<typeof streamText>): Promise<{ text: string; errors: unknown[] }> {
    let text = '';
    const errors: unknown[] = [];
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') text += part.text;
      if (part.type === 'error') errors.push(part.error);
    }
    return { text, errors };
  }

  test('Vercel AI SDK over @ai-sdk/openai: generateText and streamText, audited with usage and cost', async () => {
    const model = aiOpenAI(dev).chat('gpt-4o-mini');
    const plain = await generateText({ model, prompt: PROMPT });
    assert.equal(plain.text, 'Hello world');
    assert.ok((plain.usage.inputTokens ?? 0) > 0);
    const streamed = await streamErrors(streamText({ model, prompt: PROMPT }));
    assert.deepEqual(streamed.errors, []);
    assert.equal(streamed.text, 'Hello world');
    const event = await llmEvent(w.admin, (e) => e.data.model === 'gpt-4o-mini' && e.data.stream === true, '&identity=eng%2Fsdk-dev');
    assert.equal(event.end.data.status, 200);
    assert.ok(event.end.data.costUsd > 0);
    assert.equal(event.end.data.costEstimated, false);
  });

  test("Vercel AI SDK over @ai-sdk/anthropic: generateText and streamText with the provider's default max_tokens", async () => {
    const model = aiAnthropic(dev)('claude-sonnet-4-6');
    const plain = await generateText({ model, prompt: PROMPT });
    assert.match(plain.text, /Hello/);
    const streamed = await streamErrors(streamText({ model, prompt: PROMPT }));
    assert.deepEqual(streamed.errors, []);
    assert.match(streamed.text, /Hello/);
    // The provider asks for the model's whole output limit; the built-in policies let it through at T2.
    const sent = w.fake.hits.filter((h) => h.url.startsWith('/v1/messages')).map((h) => JSON.parse(h.body.toString()).max_tokens);
    assert.ok(sent.length >= 2 && sent.every((n) => n >= 64_000), JSON.stringify(sent));
  });

  test('LangChain ChatOpenAI: invoke and stream', async () => {
    const llm = langchain(dev);
    const answer = await llm.invoke(PROMPT);
    assert.equal(answer.content, 'Hello world');
    let text = '';
    for await (const chunk of await llm.stream(PROMPT)) text += typeof chunk.content === 'string' ? chunk.content : '';
    assert.equal(text, 'Hello world');
  });

  /** Runs `call`, expects it to fail, and returns the error and how many requests reached Reins for it. */
  async function attempts(call: () => Promise<unknown>): Promise<{ error: unknown; count: number; requests: string[] }> {
    proxy.reset();
    let error: unknown = null;
    try {
      await call();
    } catch (err) {
      error = err;
    }
    assert.ok(error !== null, 'the call was refused');
    return { error, count: proxy.requests.length, requests: [...proxy.requests] };
  }

  const statusOf = (err: unknown): number | undefined => {
    const e = err as { status?: number; statusCode?: number; lastError?: { statusCode?: number }; $metadata?: { httpStatusCode?: number } };
    return e.status ?? e.statusCode ?? e.lastError?.statusCode ?? e.$metadata?.httpStatusCode;
  };

  const refusals: { name: string; key: () => string; openaiModel: string; anthropicModel: string; status: number; message: RegExp }[] = [
    { name: 'a policy deny', key: () => dev, openaiModel: 'forbidden-gpt', anthropicModel: 'forbidden-claude', status: 403, message: /no-forbidden-models/ },
    { name: 'model access', key: () => limited, openaiModel: 'gpt-4o', anthropicModel: 'claude-sonnet-4-6', status: 403, message: /may not use model/ },
    { name: 'a budget', key: () => broke, openaiModel: 'gpt-4o-mini', anthropicModel: 'claude-sonnet-4-6', status: 402, message: /broke zero/ },
  ];

  for (const r of refusals) {
    test(`${r.name} is refused once, never retried: AI SDK (both providers, plain and streaming), LangChain, OpenAI and Anthropic SDKs`, async () => {
      const cases: { client: string; call: () => Promise<unknown>; status?: number }[] = [
        { client: 'ai generateText @ai-sdk/openai', call: () => generateText({ model: aiOpenAI(r.key()).chat(r.openaiModel), prompt: PROMPT }) },
        // The provider's default model is the Responses API, Codex CLI's: there a refusal is a 400 (docs/gateway.md).
        { client: 'ai generateText @ai-sdk/openai (Responses API)', call: () => generateText({ model: aiOpenAI(r.key())(r.openaiModel), prompt: PROMPT }), status: 400 },
        {
          client: 'openai SDK, Responses API',
          call: () => new OpenAI({ baseURL: `${proxy.url}/llm/openai/v1`, apiKey: r.key() }).responses.create({ model: r.openaiModel, input: PROMPT }),
          status: 400,
        },
        {
          client: 'ai streamText @ai-sdk/openai',
          call: async () => {
            const { errors } = await streamErrors(streamText({ model: aiOpenAI(r.key()).chat(r.openaiModel), prompt: PROMPT }));
            if (errors.length > 0) throw errors[0];
          },
        },
        { client: 'ai generateText @ai-sdk/anthropic', call: () => generateText({ model: aiAnthropic(r.key())(r.anthropicModel), prompt: PROMPT }) },
        {
          client: 'ai streamText @ai-sdk/anthropic',
          call: async () => {
            const { errors } = await streamErrors(streamText({ model: aiAnthropic(r.key())(r.anthropicModel), prompt: PROMPT }));
            if (errors.length > 0) throw errors[0];
          },
        },
        { client: 'LangChain invoke', call: () => langchain(r.key(), r.openaiModel).invoke(PROMPT) },
        {
          client: 'LangChain stream',
          call: async () => {
            for await (const chunk of await langchain(r.key(), r.openaiModel).stream(PROMPT)) void chunk;
          },
        },
        {
          client: 'openai SDK',
          call: () => new OpenAI({ baseURL: `${proxy.url}/llm/openai/v1`, apiKey: r.key() }).chat.completions.create({ model: r.openaiModel, messages: [{ role: 'user', content: PROMPT }] }),
        },
        {
          client: '@anthropic-ai/sdk',
          call: () => new Anthropic({ baseURL: `${proxy.url}/llm/anthropic`, apiKey: r.key() }).messages.create({ model: r.anthropicModel, max_tokens: 64, messages: [{ role: 'user', content: PROMPT }] }),
        },
      ];
      for (const c of cases) {
        const { error, count, requests } = await attempts(c.call);
        assert.equal(count, 1, `${c.client}: ${requests.join(', ')}`);
        assert.match(String((error as Error).message), r.message, `${c.client}: ${String(error)}`);
        const status = statusOf(error);
        if (status !== undefined) assert.equal(status, c.status ?? r.status, `${c.client}: ${String(error)}`);
      }
    });
  }

  test('the AWS SDK (standard retry strategy, 3 attempts) is refused once for a policy and a budget', async () => {
    const bedrock = (token: string) =>
      new BedrockRuntimeClient({
        endpoint: `${proxy.url}/llm/bedrock`,
        region: 'us-east-1',
        token: { token },
        authSchemePreference: ['httpBearerAuth'],
        // HTTP/1.1: the counting pass-through speaks it, as Reins does on this port.
        requestHandler: new NodeHttpHandler(),
      });
    const converse = (token: string, modelId: string) => bedrock(token).send(new ConverseCommand({ modelId, messages: [{ role: 'user', content: [{ text: PROMPT }] }] }));
    const denied = await attempts(() => converse(dev, 'us.anthropic.forbidden-model-v1:0'));
    assert.equal(denied.count, 1, denied.requests.join(', '));
    assert.equal((denied.error as Error).name, 'AccessDeniedException');
    const budget = await attempts(() => converse(broke, 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'));
    assert.equal(budget.count, 1, budget.requests.join(', '));
    assert.equal((budget.error as Error).name, 'ServiceQuotaExceededException');
  });

  /** Waits for the pending held call of `model` and denies it with a note. */
  async function denyHeld(model: string): Promise<void> {
    let entry: any;
    await waitFor(async () => {
      entry = (await w.admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.model === model);
      return entry !== undefined;
    }, WAIT_MS);
    const denied = await w.admin.post(`/api/v1/held-calls/${entry.id}/deny`, { note: 'not this one' });
    assert.equal(denied.status, 200, JSON.stringify(denied.body));
  }

  test('a held call a reviewer denies is answered once and not retried: AI SDK plain (403) and streaming (in-stream error), LangChain', async () => {
    const cases: { client: string; model: string; call: (model: string) => Promise<unknown> }[] = [
      { client: 'ai generateText @ai-sdk/openai', model: 'held-ai-plain', call: (model) => generateText({ model: aiOpenAI(held).chat(model), prompt: PROMPT }) },
      {
        client: 'ai streamText @ai-sdk/openai',
        model: 'held-ai-stream',
        call: async (model) => {
          const { errors } = await streamErrors(streamText({ model: aiOpenAI(held).chat(model), prompt: PROMPT }));
          if (errors.length > 0) throw errors[0];
        },
      },
      {
        client: 'ai streamText @ai-sdk/openai (Responses API: a response.failed event)',
        model: 'held-responses-stream',
        call: async (model) => {
          const { errors } = await streamErrors(streamText({ model: aiOpenAI(held)(model), prompt: PROMPT }));
          if (errors.length > 0) throw errors[0];
        },
      },
      {
        client: 'ai streamText @ai-sdk/anthropic',
        model: 'held-claude-stream',
        call: async (model) => {
          const { errors } = await streamErrors(streamText({ model: aiAnthropic(held)(model), prompt: PROMPT }));
          if (errors.length > 0) throw errors[0];
        },
      },
      { client: 'LangChain invoke', model: 'held-langchain', call: (model) => langchain(held, model).invoke(PROMPT) },
    ];
    for (const c of cases) {
      const outcome = attempts(() => c.call(c.model));
      await denyHeld(c.model);
      const { error, count, requests } = await outcome;
      assert.equal(count, 1, `${c.client}: ${requests.join(', ')}`);
      assert.match(String((error as Error).message), /review-held-models[\s\S]*not this one/, `${c.client}: ${String(error)}`);
    }
  });
});
