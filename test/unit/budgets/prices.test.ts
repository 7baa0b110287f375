import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { ProviderName } from '../../../src/config/config.js';
import {
  DEFAULT_ESTIMATE_OUTPUT_TOKENS,
  DEFAULT_PRICES,
  costOf,
  createPriceTable,
  estimateCost,
  fallbackPrice,
  priceOf,
  type ModelPrice,
} from '../../../src/budgets/prices.js';

const defaults = createPriceTable({});

function inOut(provider: ProviderName, model: string): [number, number] | null {
  const p = priceOf(defaults, provider, model);
  return p === null ? null : [p.inputPerMTok, p.outputPerMTok];
}

describe('default prices', () => {
  const cases: Array<[ProviderName, string, [number, number]]> = [
    // OpenAI: aliases and dated snapshots resolve to their family.
    ['openai', 'gpt-5', [1.25, 10]],
    ['openai', 'gpt-5-2025-08-07', [1.25, 10]],
    ['openai', 'gpt-5-chat-latest', [1.25, 10]],
    ['openai', 'gpt-5-codex', [1.25, 10]],
    ['openai', 'gpt-5-mini', [0.25, 2]],
    ['openai', 'gpt-5-mini-2025-08-07', [0.25, 2]],
    ['openai', 'gpt-5-nano', [0.05, 0.4]],
    ['openai', 'gpt-5-nano-2025-08-07', [0.05, 0.4]],
    ['openai', 'gpt-5-pro', [15, 120]],
    ['openai', 'gpt-5-pro-2025-10-06', [15, 120]],
    ['openai', 'gpt-5.1', [1.25, 10]],
    ['openai', 'gpt-5.1-codex-max', [1.25, 10]],
    ['openai', 'gpt-5.1-codex-mini', [0.25, 2]],
    ['openai', 'gpt-5.2', [1.75, 14]],
    ['openai', 'gpt-5.2-2025-12-11', [1.75, 14]],
    ['openai', 'gpt-5.2-pro', [21, 168]],
    ['openai', 'gpt-4.1', [2, 8]],
    ['openai', 'gpt-4.1-2025-04-14', [2, 8]],
    ['openai', 'gpt-4.1-mini', [0.4, 1.6]],
    ['openai', 'gpt-4.1-mini-2025-04-14', [0.4, 1.6]],
    ['openai', 'gpt-4.1-nano', [0.1, 0.4]],
    ['openai', 'gpt-4.1-nano-2025-04-14', [0.1, 0.4]],
    ['openai', 'gpt-4o', [2.5, 10]],
    ['openai', 'gpt-4o-2024-08-06', [2.5, 10]],
    ['openai', 'gpt-4o-2024-11-20', [2.5, 10]],
    ['openai', 'gpt-4o-2024-05-13', [5, 15]],
    ['openai', 'gpt-4o-mini', [0.15, 0.6]],
    ['openai', 'gpt-4o-mini-2024-07-18', [0.15, 0.6]],
    ['openai', 'o3', [2, 8]],
    ['openai', 'o3-2025-04-16', [2, 8]],
    ['openai', 'o3-pro', [20, 80]],
    ['openai', 'o3-pro-2025-06-10', [20, 80]],
    ['openai', 'o3-mini', [1.1, 4.4]],
    ['openai', 'o4-mini', [1.1, 4.4]],
    ['openai', 'o4-mini-2025-04-16', [1.1, 4.4]],
    ['openai', 'o1', [15, 60]],
    ['openai', 'o1-2024-12-17', [15, 60]],
    ['openai', 'o1-pro', [150, 600]],
    ['openai', 'o1-pro-2025-03-19', [150, 600]],
    ['openai', 'text-embedding-3-small', [0.02, 0]],
    ['openai', 'text-embedding-3-large', [0.13, 0]],
    // The 2026 GPT-5 line (Codex CLI's models among them).
    ['openai', 'gpt-5.5', [5, 30]],
    ['openai', 'gpt-5.5-2026-04-23', [5, 30]],
    ['openai', 'gpt-5.5-pro', [30, 180]],
    ['openai', 'gpt-5.4', [2.5, 15]],
    ['openai', 'gpt-5.4-mini', [0.75, 4.5]],
    ['openai', 'gpt-5.4-nano', [0.2, 1.25]],
    ['openai', 'gpt-5.4-pro', [30, 180]],
    ['openai', 'gpt-5.3-codex', [1.75, 14]],
    ['openai', 'gpt-5.2-codex', [1.75, 14]],
    // Anthropic's current families: Claude Code's aliases resolve to these ids.
    ['anthropic', 'claude-sonnet-5', [2, 10]],
    ['anthropic', 'claude-sonnet-5-5', [2, 10]],
    ['anthropic', 'claude-opus-5', [5, 25]],
    ['anthropic', 'claude-opus-4-8', [5, 25]],
    ['anthropic', 'claude-fable-5-1', [10, 50]],
    ['anthropic', 'claude-mythos-5', [10, 50]],
    // Anthropic.
    ['anthropic', 'claude-opus-4-5', [5, 25]],
    ['anthropic', 'claude-opus-4-5-20251101', [5, 25]],
    ['anthropic', 'claude-opus-4-1', [15, 75]],
    ['anthropic', 'claude-opus-4-1-20250805', [15, 75]],
    ['anthropic', 'claude-opus-4-0', [15, 75]],
    ['anthropic', 'claude-opus-4-20250514', [15, 75]],
    ['anthropic', 'claude-sonnet-4-5', [3, 15]],
    ['anthropic', 'claude-sonnet-4-5-20250929', [3, 15]],
    ['anthropic', 'claude-sonnet-4-0', [3, 15]],
    ['anthropic', 'claude-sonnet-4-20250514', [3, 15]],
    ['anthropic', 'claude-3-7-sonnet-20250219', [3, 15]],
    ['anthropic', 'claude-3-7-sonnet-latest', [3, 15]],
    ['anthropic', 'claude-haiku-4-5', [1, 5]],
    ['anthropic', 'claude-haiku-4-5-20251001', [1, 5]],
    ['anthropic', 'claude-3-5-haiku-20241022', [0.8, 4]],
    ['anthropic', 'claude-3-5-haiku-latest', [0.8, 4]],
    ['anthropic', 'claude-3-haiku-20240307', [0.25, 1.25]],
    // Bedrock: Claude before 4.5 costs what Anthropic charges, with or without a cross-region prefix.
    ['bedrock', 'anthropic.claude-3-haiku-20240307-v1:0', [0.25, 1.25]],
    ['bedrock', 'us.anthropic.claude-3-5-haiku-20241022-v1:0', [0.8, 4]],
    ['bedrock', 'eu.anthropic.claude-3-7-sonnet-20250219-v1:0', [3, 15]],
    ['bedrock', 'apac.anthropic.claude-sonnet-4-20250514-v1:0', [3, 15]],
    ['bedrock', 'us.anthropic.claude-opus-4-1-20250805-v1:0', [15, 75]],
    ['bedrock', 'us.anthropic.claude-opus-4-20250514-v1:0', [15, 75]],
    // Claude 4.5 and later: the global profile at Anthropic's price, everything else 10% more.
    ['bedrock', 'global.anthropic.claude-sonnet-4-5-20250929-v1:0', [3, 15]],
    ['bedrock', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', [3.3, 16.5]],
    ['bedrock', 'eu.anthropic.claude-sonnet-4-5-20250929-v1:0', [3.3, 16.5]],
    ['bedrock', 'apac.anthropic.claude-sonnet-4-5-20250929-v1:0', [3.3, 16.5]],
    ['bedrock', 'anthropic.claude-sonnet-4-5-20250929-v1:0', [3.3, 16.5]],
    ['bedrock', 'global.anthropic.claude-haiku-4-5-20251001-v1:0', [1, 5]],
    ['bedrock', 'us.anthropic.claude-haiku-4-5-20251001-v1:0', [1.1, 5.5]],
    ['bedrock', 'global.anthropic.claude-opus-4-5-20251101-v1:0', [5, 25]],
    ['bedrock', 'us.anthropic.claude-opus-4-5-20251101-v1:0', [5.5, 27.5]],
    // The ids Claude Code (Bedrock mode) and the AWS SDK send for the current families.
    ['bedrock', 'us.anthropic.claude-opus-4-8-v1', [5.5, 27.5]],
    ['bedrock', 'global.anthropic.claude-opus-4-8-v1', [5, 25]],
    ['bedrock', 'us.anthropic.claude-sonnet-5-v1', [2.2, 11]],
    ['bedrock', 'global.anthropic.claude-sonnet-5-v1', [2, 10]],
    ['bedrock', 'eu.anthropic.claude-opus-5-v1', [5.5, 27.5]],
    ['bedrock', 'global.anthropic.claude-fable-5-1-v1', [10, 50]],
    ['bedrock', 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.anthropic.claude-sonnet-4-5-20250929-v1:0', [3, 15]],
    ['bedrock', 'arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0', [0.25, 1.25]],
    // Amazon Nova, Meta Llama, Mistral.
    ['bedrock', 'amazon.nova-micro-v1:0', [0.035, 0.14]],
    ['bedrock', 'us.amazon.nova-lite-v1:0', [0.06, 0.24]],
    ['bedrock', 'amazon.nova-pro-v1:0', [0.8, 3.2]],
    ['bedrock', 'us.amazon.nova-premier-v1:0', [2.5, 12.5]],
    ['bedrock', 'meta.llama3-8b-instruct-v1:0', [0.3, 0.6]],
    ['bedrock', 'meta.llama3-70b-instruct-v1:0', [2.65, 3.5]],
    ['bedrock', 'us.meta.llama3-1-8b-instruct-v1:0', [0.22, 0.22]],
    ['bedrock', 'us.meta.llama3-1-70b-instruct-v1:0', [0.72, 0.72]],
    ['bedrock', 'us.meta.llama3-2-1b-instruct-v1:0', [0.1, 0.1]],
    ['bedrock', 'us.meta.llama3-2-11b-instruct-v1:0', [0.16, 0.16]],
    ['bedrock', 'us.meta.llama3-3-70b-instruct-v1:0', [0.72, 0.72]],
    ['bedrock', 'us.meta.llama4-scout-17b-instruct-v1:0', [0.17, 0.66]],
    ['bedrock', 'us.meta.llama4-maverick-17b-instruct-v1:0', [0.24, 0.97]],
    ['bedrock', 'mistral.mistral-7b-instruct-v0:2', [0.15, 0.2]],
    ['bedrock', 'mistral.mixtral-8x7b-instruct-v0:1', [0.45, 0.7]],
    ['bedrock', 'mistral.mistral-large-2402-v1:0', [4, 12]],
    ['bedrock', 'mistral.mistral-large-2407-v1:0', [2, 6]],
    ['bedrock', 'us.mistral.pixtral-large-2502-v1:0', [2, 6]],
  ];
  for (const [provider, model, expected] of cases) {
    test(`${provider} ${model} costs $${expected[0]} in / $${expected[1]} out per MTok`, () => {
      assert.deepEqual(inOut(provider, model), expected);
    });
  }

  test('Claude prices carry the prompt-cache rates: 0.1x input for a hit, 1.25x for a write', () => {
    assert.deepEqual(priceOf(defaults, 'anthropic', 'claude-sonnet-4-5-20250929'), {
      inputPerMTok: 3,
      outputPerMTok: 15,
      cacheReadPerMTok: 0.3,
      cacheWritePerMTok: 3.75,
    });
    assert.deepEqual(priceOf(defaults, 'bedrock', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'), {
      inputPerMTok: 3.3,
      outputPerMTok: 16.5,
      cacheReadPerMTok: 0.33,
      cacheWritePerMTok: 4.125,
    });
  });

  test('Claude 3 Haiku has its own cache rates, not the usual multiples', () => {
    assert.deepEqual(priceOf(defaults, 'anthropic', 'claude-3-haiku-20240307'), {
      inputPerMTok: 0.25,
      outputPerMTok: 1.25,
      cacheReadPerMTok: 0.03,
      cacheWritePerMTok: 0.3,
    });
  });

  test('OpenAI prices carry the cached-input rate and no cache-write rate', () => {
    assert.deepEqual(priceOf(defaults, 'openai', 'gpt-4o-2024-08-06'), { inputPerMTok: 2.5, outputPerMTok: 10, cacheReadPerMTok: 1.25 });
    assert.equal(priceOf(defaults, 'openai', 'gpt-5-nano')?.cacheReadPerMTok, 0.005);
  });

  const unpriced: Array<[ProviderName, string, string]> = [
    ['openai', 'gpt-4o-realtime-preview', 'a differently priced sibling is not taken for its family'],
    ['openai', 'ft:gpt-4o-mini-2024-07-18:acme::abc123', 'fine-tuned models cost more than their base'],
    ['openai', 'gpt-6', 'a model not in the list (the gateway costs it with the fallback)'],
    ['openai', 'GPT-4o', 'model ids are case-sensitive'],
    ['anthropic', 'anthropic.claude-3-haiku-20240307-v1:0', 'a Bedrock id is priced only on Bedrock'],
    ['bedrock', 'claude-sonnet-4-5-20250929', 'an Anthropic API id is priced only on Anthropic'],
    ['bedrock', 'gpt-4o', 'an OpenAI API id is priced only on OpenAI'],
    ['bedrock', 'arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3', 'an application profile does not name its model'],
    ['openai', '', 'an empty model'],
  ];
  for (const [provider, model, why] of unpriced) {
    test(`${provider} ${JSON.stringify(model)} has no price: ${why}`, () => {
      assert.equal(priceOf(defaults, provider, model), null);
    });
  }

  test('an unknown model falls back to the dearest known standard model of its provider, never a premium one', () => {
    assert.deepEqual(fallbackPrice(defaults, 'anthropic').price, priceOf(defaults, 'anthropic', 'claude-opus-4-1'));
    assert.match(fallbackPrice(defaults, 'anthropic').pricedAs, /opus/);
    // o1-pro ($150/$600) is a premium model: the fallback is o1's price.
    assert.deepEqual(fallbackPrice(defaults, 'openai').price, priceOf(defaults, 'openai', 'o1'));
    assert.equal(fallbackPrice(defaults, 'bedrock').price.outputPerMTok, 75);
    for (const entry of DEFAULT_PRICES) {
      if (entry.premium) continue;
      assert.ok(entry.price.outputPerMTok <= fallbackPrice(defaults, entry.provider!).price.outputPerMTok, entry.pattern);
    }
  });

  test('prices.default (and <provider>:default) price unknown models, provider-qualified first; they price no model called "default"', () => {
    const table = createPriceTable({ default: { inputPerMTok: 3, outputPerMTok: 15 }, 'bedrock:default': { inputPerMTok: 1, outputPerMTok: 2 } });
    assert.deepEqual(fallbackPrice(table, 'openai'), { price: { inputPerMTok: 3, outputPerMTok: 15 }, pricedAs: 'prices.default' });
    assert.deepEqual(fallbackPrice(table, 'bedrock'), { price: { inputPerMTok: 1, outputPerMTok: 2 }, pricedAs: 'prices.bedrock:default' });
    assert.equal(priceOf(table, 'openai', 'default'), null);
    assert.throws(() => createPriceTable({ default: { inputPerMTok: -1, outputPerMTok: 1 } }), /price override "default"/);
  });

  test('a call without a model has no price', () => {
    assert.equal(priceOf(defaults, 'openai', null), null);
  });

  test('every default is a finite, non-negative price for one provider', () => {
    for (const entry of DEFAULT_PRICES) {
      assert.ok(entry.provider, entry.pattern);
      assert.ok(entry.pattern.length > 0 && !/\s/.test(entry.pattern), entry.pattern);
      for (const v of Object.values(entry.price)) assert.ok(Number.isFinite(v) && v >= 0, `${entry.pattern}: ${v}`);
    }
  });

  test('no pattern is listed twice for a provider', () => {
    const seen = new Set<string>();
    for (const entry of DEFAULT_PRICES) {
      const key = `${entry.provider}:${entry.pattern}`;
      assert.ok(!seen.has(key), `duplicate ${key}`);
      seen.add(key);
    }
  });

  test('no default is shadowed: the shortest model a pattern matches gets that pattern\'s price', () => {
    for (const entry of DEFAULT_PRICES) {
      const model = entry.pattern.replaceAll('*', '');
      assert.deepEqual(priceOf(defaults, entry.provider!, model), entry.price, `${entry.provider} ${entry.pattern}`);
    }
  });
});

describe('price overrides', () => {
  const cheap: ModelPrice = { inputPerMTok: 0.01, outputPerMTok: 0.02 };
  const dear: ModelPrice = { inputPerMTok: 100, outputPerMTok: 200 };

  test('an override wins over a default even when its pattern is less specific', () => {
    const table = createPriceTable({ '*': cheap });
    assert.deepEqual(priceOf(table, 'openai', 'gpt-4o-2024-08-06'), cheap);
    assert.deepEqual(priceOf(table, 'bedrock', 'some.unknown-model-v1:0'), cheap);
  });

  test('among overrides the most specific pattern wins, whatever the order in config', () => {
    const a = createPriceTable({ 'gpt-*': cheap, 'gpt-4o*': dear });
    const b = createPriceTable({ 'gpt-4o*': dear, 'gpt-*': cheap });
    for (const table of [a, b]) {
      assert.deepEqual(priceOf(table, 'openai', 'gpt-4o-mini'), dear);
      assert.deepEqual(priceOf(table, 'openai', 'gpt-5'), cheap);
    }
  });

  test('with equal literal parts, fewer wildcards win', () => {
    const table = createPriceTable({ '*gpt-4o*': cheap, 'gpt-4o*': dear });
    assert.deepEqual(priceOf(table, 'openai', 'gpt-4o'), dear);
  });

  test('a provider-qualified override applies to that provider only', () => {
    const table = createPriceTable({ 'bedrock:*': dear });
    assert.deepEqual(priceOf(table, 'bedrock', 'amazon.nova-pro-v1:0'), dear);
    assert.deepEqual(inOut('openai', 'gpt-4o'), [2.5, 10]);
    assert.deepEqual(priceOf(table, 'openai', 'gpt-4o'), priceOf(defaults, 'openai', 'gpt-4o'));
  });

  test('between equally specific overrides, the provider-qualified one wins, then the first in config', () => {
    const table = createPriceTable({ 'gpt-4o': cheap, 'openai:gpt-4o': dear });
    assert.deepEqual(priceOf(table, 'openai', 'gpt-4o'), dear);
    const ordered = createPriceTable({ 'claude-*': cheap, '*-sonnet': dear });
    assert.deepEqual(priceOf(ordered, 'anthropic', 'claude-sonnet'), cheap);
    const reversed = createPriceTable({ '*-sonnet': dear, 'claude-*': cheap });
    assert.deepEqual(priceOf(reversed, 'anthropic', 'claude-sonnet'), dear);
  });

  test('a Bedrock id with ":" is a plain pattern, not a provider qualifier', () => {
    const table = createPriceTable({ 'anthropic.claude-3-haiku-20240307-v1:0': dear, 'arn:aws:*': cheap });
    assert.deepEqual(priceOf(table, 'bedrock', 'anthropic.claude-3-haiku-20240307-v1:0'), dear);
    assert.deepEqual(priceOf(table, 'bedrock', 'arn:aws:bedrock:us-east-1::foundation-model/x'), cheap);
  });

  test('an override prices a model the defaults do not know', () => {
    const table = createPriceTable({ 'ft:gpt-4o-mini-*': { inputPerMTok: 0.3, outputPerMTok: 1.2 } });
    assert.deepEqual(inOut('openai', 'ft:gpt-4o-mini-2024-07-18:acme::abc'), null);
    assert.equal(priceOf(table, 'openai', 'ft:gpt-4o-mini-2024-07-18:acme::abc')?.inputPerMTok, 0.3);
  });

  const invalid: Array<[string, unknown]> = [
    ['a negative price', { inputPerMTok: -1, outputPerMTok: 1 }],
    ['NaN', { inputPerMTok: Number.NaN, outputPerMTok: 1 }],
    ['Infinity', { inputPerMTok: 1, outputPerMTok: Number.POSITIVE_INFINITY }],
    ['a missing output price', { inputPerMTok: 1 }],
    ['a string', { inputPerMTok: '1', outputPerMTok: 1 }],
    ['a negative cache price', { inputPerMTok: 1, outputPerMTok: 1, cacheReadPerMTok: -0.1 }],
  ];
  for (const [what, p] of invalid) {
    test(`an override with ${what} is refused at creation, naming the key`, () => {
      assert.throws(() => createPriceTable({ 'my-model': p as ModelPrice }), /price override "my-model"/);
    });
  }

  test('an override with an empty pattern is refused', () => {
    assert.throws(() => createPriceTable({ 'openai:': cheap }), /empty/);
  });

  test('a table can be built on other defaults', () => {
    const table = createPriceTable({}, [{ pattern: 'm-*', price: cheap }]);
    assert.deepEqual(priceOf(table, 'anthropic', 'm-1'), cheap);
    assert.equal(priceOf(table, 'openai', 'gpt-4o'), null);
  });
});

describe('price lookup cache', () => {
  test('answers the same price object for a repeated lookup, misses included', () => {
    const table = createPriceTable({});
    const first = priceOf(table, 'openai', 'gpt-4o');
    assert.equal(priceOf(table, 'openai', 'gpt-4o'), first);
    assert.equal(table.cache.size, 1);
    assert.equal(priceOf(table, 'openai', 'no-such-model'), null);
    assert.equal(table.cache.get('openai\u0000no-such-model'), null);
  });

  test('keeps providers apart', () => {
    const table = createPriceTable({ 'anthropic:x': { inputPerMTok: 1, outputPerMTok: 1 } });
    assert.notEqual(priceOf(table, 'anthropic', 'x'), null);
    assert.equal(priceOf(table, 'openai', 'x'), null);
  });

  test('is bounded: a client inventing model ids cannot grow it without limit', () => {
    const table = createPriceTable({});
    for (let i = 0; i < 10_000; i++) priceOf(table, 'openai', `made-up-${i}`);
    assert.ok(table.cache.size <= 4096, `cache holds ${table.cache.size}`);
    priceOf(table, 'openai', 'x'.repeat(10_000));
    assert.ok(!table.cache.has(`openai\u0000${'x'.repeat(10_000)}`), 'long model ids are not kept');
  });

  test('prices are frozen, so a caller cannot change a shared cached price', () => {
    const p = priceOf(defaults, 'openai', 'gpt-4o')!;
    assert.ok(Object.isFrozen(p));
  });

  test('a warm cache answers what a cold table answers', () => {
    const models = fc.constantFrom(
      'gpt-4o',
      'gpt-4o-mini-2024-07-18',
      'gpt-5-nano',
      'claude-opus-4-1',
      'us.anthropic.claude-haiku-4-5-20251001-v1:0',
      'global.anthropic.claude-haiku-4-5-20251001-v1:0',
      'nothing',
    );
    const provider = fc.constantFrom<ProviderName>('openai', 'anthropic', 'bedrock');
    const warm = createPriceTable({ 'gpt-5*': { inputPerMTok: 9, outputPerMTok: 9 } });
    fc.assert(
      fc.property(provider, models, (p, m) => {
        const cold = createPriceTable({ 'gpt-5*': { inputPerMTok: 9, outputPerMTok: 9 } });
        assert.deepEqual(priceOf(warm, p, m), priceOf(cold, p, m));
      }),
    );
  });
});

describe('costOf', () => {
  const sonnet: ModelPrice = { inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };

  const cases: Array<[string, ModelPrice, Parameters<typeof costOf>[1], number]> = [
    ['input and output', sonnet, { inputTokens: 1_000_000, outputTokens: 1_000_000 }, 18],
    ['a small call', sonnet, { inputTokens: 1200, outputTokens: 350 }, 0.00885],
    ['cache reads and writes at their own rates', sonnet, { inputTokens: 100, outputTokens: 0, cacheReadTokens: 10_000, cacheWriteTokens: 2000 }, 0.0108],
    ['cache tokens at the input rate when the price has none', { inputPerMTok: 2, outputPerMTok: 8 }, { inputTokens: 0, outputTokens: 0, cacheReadTokens: 1000, cacheWriteTokens: 1000 }, 0.004],
    ['no tokens', sonnet, { inputTokens: 0, outputTokens: 0 }, 0],
    ['no float noise: 0.1 + 0.2', { inputPerMTok: 0.1, outputPerMTok: 0.2 }, { inputTokens: 1_000_000, outputTokens: 1_000_000 }, 0.3],
    ['no float noise: 3 x 1.1', { inputPerMTok: 1.1, outputPerMTok: 0 }, { inputTokens: 3_000_000, outputTokens: 0 }, 3.3],
    ['an embedding', { inputPerMTok: 0.02, outputPerMTok: 0 }, { inputTokens: 8191, outputTokens: 0 }, 0.00016382],
    ['malformed counts cost nothing rather than credit the budget', sonnet, { inputTokens: -5000, outputTokens: Number.NaN, cacheReadTokens: Number.POSITIVE_INFINITY }, 0],
  ];
  for (const [what, p, usage, expected] of cases) {
    test(`${what}: $${expected}`, () => {
      assert.equal(costOf(p, usage), expected);
    });
  }

  test('takes the gateway\'s TokenUsage as it is', () => {
    const usage: import('../../../src/planes/llm/types.js').TokenUsage = { inputTokens: 10, outputTokens: 20 };
    assert.equal(costOf(sonnet, usage), 0.00033);
  });

  const priceArb = fc.record({
    inputPerMTok: fc.double({ min: 0, max: 200, noNaN: true }),
    outputPerMTok: fc.double({ min: 0, max: 600, noNaN: true }),
    cacheReadPerMTok: fc.option(fc.double({ min: 0, max: 50, noNaN: true }), { nil: undefined }),
    cacheWritePerMTok: fc.option(fc.double({ min: 0, max: 50, noNaN: true }), { nil: undefined }),
  });
  const count = fc.integer({ min: 0, max: 5_000_000 });

  test('is never negative, and a whole number of billionths of a dollar', () => {
    fc.assert(
      fc.property(priceArb, count, count, count, count, (p, i, o, r, w) => {
        const c = costOf(p, { inputTokens: i, outputTokens: o, cacheReadTokens: r, cacheWriteTokens: w });
        return c >= 0 && Math.abs(c * 1e9 - Math.round(c * 1e9)) < 1e-3;
      }),
    );
  });

  test('never falls when a count grows', () => {
    fc.assert(
      fc.property(priceArb, count, count, fc.integer({ min: 1, max: 1000 }), (p, i, o, more) => {
        return costOf(p, { inputTokens: i + more, outputTokens: o }) >= costOf(p, { inputTokens: i, outputTokens: o }) &&
          costOf(p, { inputTokens: i, outputTokens: o + more }) >= costOf(p, { inputTokens: i, outputTokens: o });
      }),
    );
  });

  test('splitting a call in two changes its cost by at most the rounding', () => {
    fc.assert(
      fc.property(priceArb, count, count, count, count, (p, i1, o1, i2, o2) => {
        const whole = costOf(p, { inputTokens: i1 + i2, outputTokens: o1 + o2 });
        const parts = costOf(p, { inputTokens: i1, outputTokens: o1 }) + costOf(p, { inputTokens: i2, outputTokens: o2 });
        return Math.abs(whole - parts) <= 2e-9 + whole * 1e-12;
      }),
    );
  });
});

describe('estimateCost', () => {
  const p: ModelPrice = { inputPerMTok: 4, outputPerMTok: 10, cacheReadPerMTok: 0.4 };

  test('counts 4 bytes of request body per input token and the request\'s own output cap', () => {
    // 4000 bytes -> 1000 tokens x $4/MTok + 500 x $10/MTok
    assert.equal(estimateCost(p, { inputBytes: 4000, maxTokens: 500 }), 0.009);
  });

  test('rounds a partial token up', () => {
    assert.equal(estimateCost(p, { inputBytes: 1, maxTokens: 0 }), 0.000004);
    assert.equal(estimateCost(p, { inputBytes: 5, maxTokens: 0 }), 0.000008);
  });

  test(`assumes ${DEFAULT_ESTIMATE_OUTPUT_TOKENS} output tokens when the request sets no cap`, () => {
    const expected = costOf(p, { inputTokens: 0, outputTokens: 1024 });
    assert.equal(estimateCost(p, { inputBytes: 0, maxTokens: null }), expected);
    assert.equal(estimateCost(p, { inputBytes: 0 }), expected);
    assert.equal(estimateCost(p, { inputBytes: 0, maxTokens: Number.NaN }), expected);
  });

  test('a cap of 0 means no output, not the default', () => {
    assert.equal(estimateCost(p, { inputBytes: 0, maxTokens: 0 }), 0);
  });

  test('prices all input as uncached', () => {
    assert.equal(estimateCost(p, { inputBytes: 4_000_000, maxTokens: 0 }), 4);
  });

  test('grows with the body and with the cap', () => {
    fc.assert(
      fc.property(fc.nat(10_000_000), fc.nat(200_000), fc.nat(1000), (bytes, cap, more) => {
        const base = estimateCost(p, { inputBytes: bytes, maxTokens: cap });
        return base >= 0 && estimateCost(p, { inputBytes: bytes + more, maxTokens: cap }) >= base && estimateCost(p, { inputBytes: bytes, maxTokens: cap + more }) >= base;
      }),
    );
  });
});
