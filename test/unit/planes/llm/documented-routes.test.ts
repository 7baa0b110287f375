import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DOCUMENTED_ROUTES } from '../../../../src/planes/llm/documented-routes.js';
import { PROVIDERS } from '../../../../src/planes/llm/providers/index.js';

const SAMPLE: Record<string, string> = {
  modelId: 'anthropic.claude-sonnet-4-5-20250929-v1%3A0',
  model: 'gpt-4o',
  responseId: 'resp_123',
  deployment: 'gpt-4o-prod',
  modelAction: 'gemini-2.5-pro:generateContent',
};

test('every route the OpenAPI document lists for a provider is one its gateway serves', () => {
  for (const [provider, routes] of Object.entries(DOCUMENTED_ROUTES)) {
    assert.ok(routes.length > 0, provider);
    for (const route of routes) {
      const path = route.path.replace(/\{([^}]+)\}/g, (_m, name: string) => SAMPLE[name] ?? 'x');
      const served = PROVIDERS[provider as keyof typeof PROVIDERS].matchEndpoint(route.method, path);
      assert.notEqual(served, null, `${provider}: ${route.method} ${route.path} is documented but not served`);
    }
  }
});

test('operationIds are unique across providers', () => {
  const ids = Object.values(DOCUMENTED_ROUTES).flatMap((routes) => routes.map((r) => r.operationId));
  assert.equal(new Set(ids).size, ids.length);
});
