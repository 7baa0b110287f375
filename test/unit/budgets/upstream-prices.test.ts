/**
 * Prices of the upstream kinds beyond OpenAI, Anthropic and Bedrock: Azure at OpenAI's list, Gemini's own list, the
 * kind-qualified keys (`gemini:default`, `azure-openai:*`), an upstream's own `prices` (and its `default`), and the
 * fallback for a model no price names, which every kind gets (`prices.default` is for every provider).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createPriceTable, DEFAULT_PRICES, fallbackPrice, priceOf } from '../../../src/budgets/prices.js';
import { GEMINI_PRICES, upstreamFallbackPrice, upstreamPrice, upstreamPriceTables } from '../../../src/budgets/upstream-prices.js';

const list = [...DEFAULT_PRICES, ...GEMINI_PRICES];

describe('prices of every upstream kind', () => {
  const prices = createPriceTable({}, list);

  test('Azure OpenAI is priced at OpenAI list prices; Gemini at its own; a self-hosted server has no list', () => {
    assert.deepEqual(upstreamPrice({ prices }, 'azure-eu', 'azure-openai', 'gpt-4o-mini'), priceOf(prices, 'openai', 'gpt-4o-mini'));
    assert.equal(upstreamPrice({ prices }, 'gemini', 'gemini', 'gemini-2.5-flash')?.outputPerMTok, 2.5);
    assert.equal(upstreamPrice({ prices }, 'gemini', 'gemini', 'gpt-4o-mini'), null, "OpenAI's list does not price a Gemini upstream");
    assert.equal(upstreamPrice({ prices }, 'vllm', 'openai-compatible', 'gpt-4o-mini'), null);
  });

  test("an unknown model falls back to the kind's dearest listed model: Azure OpenAI's, Gemini's; none for a self-hosted server", () => {
    assert.deepEqual(fallbackPrice(prices, 'azure-openai'), fallbackPrice(prices, 'openai'));
    assert.ok(fallbackPrice(prices, 'azure-openai').price.outputPerMTok > 0);
    const gemini = fallbackPrice(prices, 'gemini');
    for (const entry of GEMINI_PRICES) assert.ok(entry.price.outputPerMTok <= gemini.price.outputPerMTok, entry.pattern);
    assert.match(gemini.pricedAs, /^gemini-/);
    assert.deepEqual(fallbackPrice(prices, 'openai-compatible'), { price: { inputPerMTok: 0, outputPerMTok: 0 }, pricedAs: 'none' });
  });

  test('prices.default prices unknown models of every kind; <kind>:default of one kind, for every kind', () => {
    const table = createPriceTable(
      {
        default: { inputPerMTok: 3, outputPerMTok: 15 },
        'gemini:default': { inputPerMTok: 2, outputPerMTok: 12 },
        'openai-compatible:default': { inputPerMTok: 0.1, outputPerMTok: 0.1 },
      },
      list,
    );
    assert.deepEqual(fallbackPrice(table, 'azure-openai'), { price: { inputPerMTok: 3, outputPerMTok: 15 }, pricedAs: 'prices.default' });
    assert.deepEqual(fallbackPrice(table, 'gemini'), { price: { inputPerMTok: 2, outputPerMTok: 12 }, pricedAs: 'prices.gemini:default' });
    assert.deepEqual(fallbackPrice(table, 'openai-compatible'), { price: { inputPerMTok: 0.1, outputPerMTok: 0.1 }, pricedAs: 'prices.openai-compatible:default' });
    assert.equal(priceOf(table, 'openai', 'gemini:default'), null, 'a qualified key is no model glob for the other kinds');
  });

  test("a kind-qualified override prices that kind only; Azure's also takes OpenAI-qualified ones; Ollama's model:tag stays a glob", () => {
    const table = createPriceTable(
      {
        'azure-openai:gpt-4o*': { inputPerMTok: 2, outputPerMTok: 8 },
        'openai:o3*': { inputPerMTok: 1, outputPerMTok: 4 },
        'llama3:8b': { inputPerMTok: 0, outputPerMTok: 0.01 },
      },
      list,
    );
    assert.equal(priceOf(table, 'azure-openai', 'gpt-4o-2024-08-06')?.outputPerMTok, 8);
    assert.equal(priceOf(table, 'openai', 'gpt-4o-2024-08-06')?.outputPerMTok, 10, "OpenAI's own list price");
    assert.equal(priceOf(table, 'azure-openai', 'o3-mini')?.outputPerMTok, 4);
    assert.equal(priceOf(table, 'openai-compatible', 'llama3:8b')?.outputPerMTok, 0.01);
  });

  test("an upstream's own prices win on that upstream, and its own default prices its unknown models", () => {
    const upstreamPrices = upstreamPriceTables({
      vllm: { kind: 'openai-compatible', baseUrl: 'http://vllm:8000', prices: { 'meta-llama/*': { inputPerMTok: 0.1, outputPerMTok: 0.2 }, default: { inputPerMTok: 0.05, outputPerMTok: 0.05 } } },
      'azure-eu': { kind: 'azure-openai', baseUrl: 'https://acme-eu.openai.azure.com', prices: { 'gpt-4o-mini*': { inputPerMTok: 0.1, outputPerMTok: 0.5 } } },
      gemini: { kind: 'gemini', baseUrl: 'https://generativelanguage.googleapis.com' },
    });
    const tables = { prices: createPriceTable({ default: { inputPerMTok: 3, outputPerMTok: 15 } }, list), upstreamPrices };
    assert.equal(upstreamPrice(tables, 'vllm', 'openai-compatible', 'meta-llama/Llama-3.1-8B')?.outputPerMTok, 0.2);
    assert.deepEqual(upstreamFallbackPrice(tables, 'vllm', 'openai-compatible'), { price: { inputPerMTok: 0.05, outputPerMTok: 0.05 }, pricedAs: 'providers.vllm.prices.default' });
    assert.equal(upstreamPrice(tables, 'azure-eu', 'azure-openai', 'gpt-4o-mini')?.outputPerMTok, 0.5);
    assert.equal(upstreamPrice(tables, 'azure-eu', 'azure-openai', 'gpt-4o')?.outputPerMTok, 10, "not in the upstream's own: OpenAI's list");
    // No default of its own: the top-level fallback.
    assert.deepEqual(upstreamFallbackPrice(tables, 'azure-eu', 'azure-openai'), { price: { inputPerMTok: 3, outputPerMTok: 15 }, pricedAs: 'prices.default' });
    assert.deepEqual(upstreamFallbackPrice(tables, 'gemini', 'gemini'), { price: { inputPerMTok: 3, outputPerMTok: 15 }, pricedAs: 'prices.default' });
  });
});
