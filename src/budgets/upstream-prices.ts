/**
 * Prices for the upstream kinds beyond OpenAI, Anthropic and Bedrock, and each upstream's own `prices` override
 * (`providers.<name>.prices`): a self-hosted model is free or costs what the team says, a contracted Azure rate
 * differs from OpenAI's list. Kept apart from prices.ts, which holds the list prices and the lookup itself.
 */
import type { Config, ProviderKind } from '../config/config.js';
import { configuredFallback, createPriceTable, fallbackPrice, priceOf, type FallbackPrice, type ModelPrice, type PriceEntry, type PriceTable } from './prices.js';

type Tables = { prices: PriceTable; upstreamPrices?: ReadonlyMap<string, PriceTable> | undefined };

function gemini(patterns: string[], inputPerMTok: number, outputPerMTok: number, cacheReadPerMTok: number): PriceEntry[] {
  const price: ModelPrice = Object.freeze({ inputPerMTok, outputPerMTok, cacheReadPerMTok });
  return patterns.map((pattern) => ({ pattern, price, provider: 'gemini' as const }));
}

/**
 * Gemini API list prices, USD per million tokens, standard tier, prompts up to 200K tokens (ai.google.dev/pricing,
 * as of 2026-11); thinking tokens are output. Patterns name a model and its versions (`-001`, `-preview-…`).
 */
export const GEMINI_PRICES: readonly PriceEntry[] = [
  ...gemini(['gemini-2.5-pro', 'gemini-2.5-pro-*'], 1.25, 10, 0.125),
  ...gemini(['gemini-2.5-flash', 'gemini-2.5-flash-0*', 'gemini-2.5-flash-preview-*'], 0.3, 2.5, 0.03),
  ...gemini(['gemini-2.5-flash-lite', 'gemini-2.5-flash-lite-*'], 0.1, 0.4, 0.01),
  ...gemini(['gemini-2.0-flash', 'gemini-2.0-flash-0*'], 0.1, 0.4, 0.025),
  ...gemini(['gemini-2.0-flash-lite', 'gemini-2.0-flash-lite-*'], 0.075, 0.3, 0.01875),
];

/** Each upstream's own overrides, by name; an upstream without any is absent. Throws like createPriceTable. */
export function upstreamPriceTables(providers: Config['providers']): Map<string, PriceTable> {
  const out = new Map<string, PriceTable>();
  for (const [name, settings] of Object.entries(providers)) {
    if (settings.prices && Object.keys(settings.prices).length > 0) out.set(name, createPriceTable(settings.prices, []));
  }
  return out;
}

/** What a model costs on an upstream: its own override, else the list (OpenAI's for Azure, `LISTED_AS`), else null (unpriced). */
export function upstreamPrice(tables: Tables, upstream: string, kind: ProviderKind, model: string | null): ModelPrice | null {
  const own = tables.upstreamPrices?.get(upstream);
  return (own ? priceOf(own, kind, model) : null) ?? priceOf(tables.prices, kind, model);
}

/**
 * The price of a model no price names on an upstream: the upstream's own `default` (a self-hosted server's cost, a
 * contracted rate), else `fallbackPrice` (`prices.<kind>:default`, `prices.default`, the kind's dearest listed model).
 */
export function upstreamFallbackPrice(tables: Tables, upstream: string, kind: ProviderKind): FallbackPrice {
  const own = tables.upstreamPrices?.get(upstream);
  const configured = own ? configuredFallback(own, kind) : null;
  if (configured) return { price: configured.price, pricedAs: `providers.${upstream}.${configured.pricedAs}` };
  return fallbackPrice(tables.prices, kind);
}
