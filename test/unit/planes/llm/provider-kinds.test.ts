import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { callFacts, clientSecret, matchEndpoint, providerCredential, upstreamRoute } from '../../../../src/planes/llm/providers.js';
import { PROVIDERS } from '../../../../src/planes/llm/providers/index.js';
import { versionedRoute } from '../../../../src/planes/llm/providers/provider.js';
import { gatewayAnswer } from '../../../../src/planes/llm/refusal.js';
import { estimatedUsage, meterFor, usageOfEvent } from '../../../../src/planes/llm/usage.js';

describe('provider kinds: routes, keys, facts', () => {
  test('openai-compatible serves the OpenAI paths every such server has, not the Responses API', () => {
    assert.deepEqual(matchEndpoint('openai-compatible', 'POST', '/v1/chat/completions'), { metered: true });
    assert.deepEqual(matchEndpoint('openai-compatible', 'GET', '/v1/models'), { metered: false });
    assert.equal(matchEndpoint('openai-compatible', 'POST', '/v1/responses'), null);
  });

  test('azure-openai: deployments paths name the model; v1 paths as OpenAI; api-key both ways', () => {
    const e = matchEndpoint('azure-openai', 'POST', '/openai/deployments/gpt4o-prod/chat/completions');
    assert.deepEqual(e, { metered: true, pathModel: 'gpt4o-prod' });
    assert.deepEqual(callFacts('azure-openai', e!, { max_tokens: 9 }), { model: 'gpt4o-prod', stream: false, maxTokens: 9 });
    assert.equal(callFacts('azure-openai', e!, { model: 'gpt-4o' }).model, 'gpt-4o');
    assert.deepEqual(matchEndpoint('azure-openai', 'POST', '/openai/v1/responses'), { metered: true });
    assert.equal(matchEndpoint('azure-openai', 'GET', '/openai/deployments/x/chat/completions'), null);
    assert.equal(PROVIDERS['azure-openai'].policyRoute('/openai/deployments/d/embeddings'), 'embeddings');
    assert.equal(PROVIDERS['azure-openai'].policyRoute('/openai/v1/chat/completions'), 'chat/completions');
    assert.equal(clientSecret('azure-openai', { 'api-key': 'reins_x' }, ''), 'reins_x');
    assert.deepEqual(providerCredential({ kind: 'azure-openai', baseUrl: 'https://a.openai.azure.com', apiKey: 'k' }), { 'api-key': 'k' });
  });

  test('gemini: model and method in the path; x-goog-api-key or ?key=, removed before forwarding', () => {
    const e = matchEndpoint('gemini', 'POST', '/v1beta/models/gemini-2.5-flash:streamGenerateContent');
    assert.deepEqual(e, { metered: true, pathModel: 'gemini-2.5-flash', pathStream: true });
    assert.deepEqual(callFacts('gemini', e!, { generationConfig: { maxOutputTokens: 64 } }), { model: 'gemini-2.5-flash', stream: true, maxTokens: 64 });
    assert.deepEqual(matchEndpoint('gemini', 'POST', '/v1/models/gemini-2.5-pro:countTokens'), { metered: false, pathModel: 'gemini-2.5-pro', pathStream: false });
    assert.deepEqual(matchEndpoint('gemini', 'GET', '/v1beta/models'), { metered: false });
    assert.equal(matchEndpoint('gemini', 'POST', '/v1beta/models/x:deleteEverything'), null);
    assert.equal(PROVIDERS.gemini.policyRoute('/v1beta/models/m:generateContent'), 'generateContent');
    assert.equal(clientSecret('gemini', { 'x-goog-api-key': 'reins_h' }, ''), 'reins_h');
    assert.equal(clientSecret('gemini', {}, 'alt=sse&key=reins_q'), 'reins_q');
    assert.equal(clientSecret('openai', {}, 'key=reins_q'), null, 'only Gemini takes a key in the query');
    assert.equal(upstreamRoute('gemini', '/v1beta/models/m:streamGenerateContent?alt=sse&key=reins_q'), '/v1beta/models/m:streamGenerateContent?alt=sse');
    assert.equal(upstreamRoute('gemini', '/v1beta/models/m:generateContent?key=reins_q'), '/v1beta/models/m:generateContent');
    assert.equal(upstreamRoute('openai', '/v1/models?key=x'), '/v1/models?key=x');
  });

  test("refusals in each kind's shape; a rate limit leaves x-should-retry unset", () => {
    const g = gatewayAnswer('gemini', 'policy_denied', 'no');
    assert.equal(g.status, 403);
    assert.deepEqual(JSON.parse(g.body), { error: { code: 403, message: 'no', status: 'PERMISSION_DENIED' } });
    assert.equal(g.headers['x-should-retry'], 'false');
    const limited = gatewayAnswer('gemini', 'rate_limited', 'retry');
    assert.deepEqual(JSON.parse(limited.body).error, { code: 429, message: 'retry', status: 'RESOURCE_EXHAUSTED' });
    assert.equal(limited.headers['x-should-retry'], undefined);
    assert.equal(JSON.parse(gatewayAnswer('azure-openai', 'budget_exceeded', 'spent').body).error.code, 'budget_exceeded');
    assert.equal(JSON.parse(gatewayAnswer('openai-compatible', 'model_not_allowed', 'm').body).error.code, 'model_not_allowed');
  });
});

describe('usage of the new kinds', () => {
  test("Gemini usageMetadata: cached tokens apart, thoughts as output", () => {
    assert.deepEqual(usageOfEvent({ usageMetadata: { promptTokenCount: 100, cachedContentTokenCount: 40, candidatesTokenCount: 7, thoughtsTokenCount: 5 } }), {
      inputTokens: 60,
      outputTokens: 12,
      cacheReadTokens: 40,
    });
  });

  test('a JSON array of stream chunks (streamGenerateContent without alt=sse) is metered, and its model seen', () => {
    const meter = meterFor(new Map([['content-type', 'application/json']]));
    meter.push(Buffer.from(JSON.stringify([{ usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1 } }, { usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4 }, modelVersion: 'gemini-2.5-flash-001' }])));
    assert.deepEqual(meter.finish(), { inputTokens: 3, outputTokens: 4 });
    assert.equal(meter.seen?.().model, 'gemini-2.5-flash-001');
  });

  test('the estimate counts the request and answer text at 4 characters a token, marked estimated', () => {
    assert.deepEqual(estimatedUsage({ messages: [{ role: 'user', content: 'x'.repeat(9) }, { role: 'user', content: [{ type: 'text', text: 'abc' }] }] }, 5), { inputTokens: 3, outputTokens: 2, estimated: true });
    assert.deepEqual(estimatedUsage({ prompt: 'abcd' }, 0), { inputTokens: 1, outputTokens: 0, estimated: true });
  });
});

test('the versioned route: the same as stripping /^\\/v1\\// and then /^\\//, for paths of every shape', () => {
  const byExpression = (path: string) => path.replace(/^\/v1\//, '').replace(/^\//, '');
  const parts = ['', '/', 'v1', '/v1', '/v1/', '//', 'chat', '/completions', 'V1', '?x=1', '/v2/'];
  for (const a of parts) for (const b of parts) for (const c of parts) {
    const path = a + b + c;
    assert.equal(versionedRoute(path), byExpression(path), JSON.stringify(path));
  }
});
