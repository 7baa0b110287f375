// What a model call costs in USD: list prices per model glob, the lookup that picks the most specific
// one (an admin's override first), the cost of a finished call and the estimate a budget reserves
// before the call. Pure: plain data in, numbers out. See README.md for the rules.
import { PROVIDER_KINDS, type ProviderName } from '../config/config.js';

/** USD per million tokens. A missing cache price means those tokens cost the input price. */
export interface ModelPrice {
  inputPerMTok: number;
  outputPerMTok: number;
  cacheReadPerMTok?: number;
  cacheWritePerMTok?: number;
}

export interface PriceEntry {
  /** A model glob: `*` matches any run of characters (none included), everything else is literal. */
  pattern: string;
  price: ModelPrice;
  /** The provider whose model ids the pattern is written for; absent means any provider. */
  provider?: ProviderName;
  /**
   * A premium model (OpenAI's `-pro` and deep-research models, priced far above their family): left out when the
   * fallback for an unknown model is worked out, since a new model id is far likelier a standard one.
   */
  premium?: boolean;
}

/**
 * Token counts of one call. Additive, as Anthropic and Bedrock report them: `inputTokens` are the input
 * tokens read neither from nor into the prompt cache. OpenAI's `prompt_tokens` include the cached ones
 * (`prompt_tokens_details.cached_tokens`); subtract those before calling `costOf`.
 */
export interface MeteredUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

export interface CostEstimateInput {
  /** Size of the request body as sent, in bytes. */
  inputBytes: number;
  /** The request's output cap (`max_tokens`, `max_output_tokens`, …), or null when it sets none. */
  maxTokens?: number | null;
}

function price(input: number, output: number, cacheRead?: number, cacheWrite?: number): ModelPrice {
  const p: ModelPrice = { inputPerMTok: input, outputPerMTok: output };
  if (cacheRead !== undefined) p.cacheReadPerMTok = cacheRead;
  if (cacheWrite !== undefined) p.cacheWritePerMTok = cacheWrite;
  return p;
}

/** Anthropic's prompt cache: a hit costs 0.1x the input price, a (5-minute) write 1.25x. */
function claude(input: number, output: number): ModelPrice {
  return price(input, output, round9(input * 0.1), round9(input * 1.25));
}

/**
 * Bedrock's regional price for Claude 4.5 and later: in-region and geographic cross-region profiles
 * (`us.`, `eu.`, `apac.`, …) cost 10% more than the `global.` profile, which costs what Anthropic charges.
 */
function claudeRegional(input: number, output: number): ModelPrice {
  return claude(round9(input * 1.1), round9(output * 1.1));
}

function family(provider: ProviderName, patterns: string[], p: ModelPrice): PriceEntry[] {
  return patterns.map((pattern) => ({ pattern, price: p, provider }));
}

function premiumFamily(provider: ProviderName, patterns: string[], p: ModelPrice): PriceEntry[] {
  return patterns.map((pattern) => ({ pattern, price: p, provider, premium: true }));
}

/**
 * List prices, USD per million tokens, standard (not batch, flex or priority) tier, as of 2026-11:
 * OpenAI from platform.openai.com/docs/pricing, Anthropic from platform.claude.com/docs/en/about-claude/pricing,
 * Bedrock from aws.amazon.com/bedrock/pricing (us-east-1, on-demand). Checked again on 2026-11-25 for the current
 * families: Claude Sonnet 5 and 5.5 at $2/$10 (the model overview page on platform.claude.com; its introductory
 * price was made standard), Opus 5 and 4.8 at $5/$25, Fable 5 / 5.1 and Mythos 5 / 5.1 at $10/$50; OpenAI GPT-5.5
 * $5/$30, GPT-5.4 $2.50/$15 (mini $0.75/$4.50, nano $0.20/$1.25), their pro models $30/$180, GPT-5.3 Codex
 * $1.75/$14 (OpenAI's pricing page as quoted in June 2026). Admins override them in config; a model listed
 * nowhere is costed with the fallback (`fallbackPrice`), its cost marked as estimated.
 *
 * Patterns name a family and its dated snapshots (`gpt-4o`, `gpt-4o-20*`) rather than a bare prefix
 * (`gpt-4o*`), so that a differently priced sibling (`gpt-4o-realtime-preview`) or a later version stays
 * unlisted (costed with the fallback price, marked estimated) instead of silently priced as its neighbour. Not modelled: long-context surcharges (Sonnet 4
 * and 4.5 above 200K input tokens), 1-hour cache writes (2x input), per-call tool fees, batch discounts.
 */
export const DEFAULT_PRICES: readonly PriceEntry[] = [
  // OpenAI. No charge for writing the prompt cache, so no cacheWritePerMTok (OpenAI reports no writes).
  ...family('openai', ['gpt-5.5', 'gpt-5.5-*'], price(5, 30, 0.5)),
  ...premiumFamily('openai', ['gpt-5.5-pro', 'gpt-5.5-pro-*'], price(30, 180)),
  ...family('openai', ['gpt-5.4', 'gpt-5.4-*'], price(2.5, 15, 0.25)),
  ...family('openai', ['gpt-5.4-mini', 'gpt-5.4-mini-*'], price(0.75, 4.5, 0.075)),
  ...family('openai', ['gpt-5.4-nano', 'gpt-5.4-nano-*'], price(0.2, 1.25, 0.02)),
  ...premiumFamily('openai', ['gpt-5.4-pro', 'gpt-5.4-pro-*'], price(30, 180)),
  // `gpt-5.3-*` covers gpt-5.3-codex (Codex CLI's model in 2026).
  ...family('openai', ['gpt-5.3', 'gpt-5.3-*'], price(1.75, 14, 0.175)),
  ...family('openai', ['gpt-5.2', 'gpt-5.2-*'], price(1.75, 14, 0.175)),
  ...premiumFamily('openai', ['gpt-5.2-pro', 'gpt-5.2-pro-*'], price(21, 168)),
  ...family('openai', ['gpt-5.1', 'gpt-5.1-*'], price(1.25, 10, 0.125)),
  ...family('openai', ['gpt-5.1-codex-mini', 'gpt-5.1-codex-mini-*'], price(0.25, 2, 0.025)),
  // `gpt-5-*` covers the dated snapshot, gpt-5-chat-latest, gpt-5-codex and gpt-5-search-api (same price).
  ...family('openai', ['gpt-5', 'gpt-5-*'], price(1.25, 10, 0.125)),
  ...family('openai', ['gpt-5-mini', 'gpt-5-mini-*'], price(0.25, 2, 0.025)),
  ...family('openai', ['gpt-5-nano', 'gpt-5-nano-*'], price(0.05, 0.4, 0.005)),
  ...premiumFamily('openai', ['gpt-5-pro', 'gpt-5-pro-*'], price(15, 120)),
  ...family('openai', ['gpt-4.1', 'gpt-4.1-20*'], price(2, 8, 0.5)),
  ...family('openai', ['gpt-4.1-mini', 'gpt-4.1-mini-20*'], price(0.4, 1.6, 0.1)),
  ...family('openai', ['gpt-4.1-nano', 'gpt-4.1-nano-20*'], price(0.1, 0.4, 0.025)),
  ...family('openai', ['gpt-4o', 'gpt-4o-20*'], price(2.5, 10, 1.25)),
  // The first gpt-4o snapshot kept its launch price.
  ...family('openai', ['gpt-4o-2024-05-13'], price(5, 15)),
  ...family('openai', ['chatgpt-4o-latest'], price(5, 15)),
  ...family('openai', ['gpt-4o-mini', 'gpt-4o-mini-20*'], price(0.15, 0.6, 0.075)),
  ...family('openai', ['o3', 'o3-20*'], price(2, 8, 0.5)),
  ...premiumFamily('openai', ['o3-pro', 'o3-pro-20*'], price(20, 80)),
  ...family('openai', ['o3-mini', 'o3-mini-20*'], price(1.1, 4.4, 0.55)),
  ...premiumFamily('openai', ['o3-deep-research', 'o3-deep-research-20*'], price(10, 40, 2.5)),
  ...family('openai', ['o4-mini', 'o4-mini-20*'], price(1.1, 4.4, 0.275)),
  ...premiumFamily('openai', ['o4-mini-deep-research', 'o4-mini-deep-research-20*'], price(2, 8, 0.5)),
  ...family('openai', ['o1', 'o1-20*'], price(15, 60, 7.5)),
  ...premiumFamily('openai', ['o1-pro', 'o1-pro-20*'], price(150, 600)),
  ...family('openai', ['o1-mini', 'o1-mini-20*'], price(1.1, 4.4, 0.55)),
  ...family('openai', ['codex-mini-latest'], price(1.5, 6, 0.375)),
  ...family('openai', ['text-embedding-3-small'], price(0.02, 0)),
  ...family('openai', ['text-embedding-3-large'], price(0.13, 0)),
  ...family('openai', ['text-embedding-ada-002'], price(0.1, 0)),

  // Anthropic. Ids are `claude-<family>-<version>` aliases and `-YYYYMMDD` snapshots (`claude-opus-4-0`
  // and `claude-opus-4-20250514` are the same model).
  ...family('anthropic', ['claude-fable-5*', 'claude-mythos-5*'], claude(10, 50)),
  // Opus 5 itself (not Opus 5.5, whose price is not published here yet: it takes the fallback).
  ...family('anthropic', ['claude-opus-5', 'claude-opus-5-20*'], claude(5, 25)),
  // Claude Code's `sonnet` alias.
  ...family('anthropic', ['claude-sonnet-5*'], claude(2, 10)),
  ...family('anthropic', ['claude-opus-4-8*', 'claude-opus-4-7*', 'claude-opus-4-6*', 'claude-opus-4-5*'], claude(5, 25)),
  ...family('anthropic', ['claude-opus-4-1*', 'claude-opus-4-0*', 'claude-opus-4-20*'], claude(15, 75)),
  ...family('anthropic', ['claude-3-opus*'], claude(15, 75)),
  ...family(
    'anthropic',
    ['claude-sonnet-4-6*', 'claude-sonnet-4-5*', 'claude-sonnet-4-0*', 'claude-sonnet-4-20*', 'claude-3-7-sonnet*', 'claude-3-5-sonnet*'],
    claude(3, 15),
  ),
  ...family('anthropic', ['claude-haiku-4-5*'], claude(1, 5)),
  ...family('anthropic', ['claude-3-5-haiku*'], claude(0.8, 4)),
  // Claude 3 Haiku's cache rates are not the usual multiples.
  ...family('anthropic', ['claude-3-haiku*'], price(0.25, 1.25, 0.03, 0.3)),

  // Bedrock: `anthropic.claude-sonnet-4-5-20250929-v1:0`, `anthropic.claude-opus-4-6-v1`, with a cross-region prefix
  // (`us.`, `eu.`, `apac.`, `global.`: Claude Code sends `us.anthropic.…` in Bedrock mode) or inside an
  // inference-profile or foundation-model ARN, hence the leading `*`.
  ...family('bedrock', ['*anthropic.claude-fable-5*', '*anthropic.claude-mythos-5*'], claudeRegional(10, 50)),
  ...family('bedrock', ['*global.anthropic.claude-fable-5*', '*global.anthropic.claude-mythos-5*'], claude(10, 50)),
  ...family('bedrock', ['*anthropic.claude-opus-5-v*', '*anthropic.claude-opus-5-20*'], claudeRegional(5, 25)),
  ...family('bedrock', ['*global.anthropic.claude-opus-5-v*', '*global.anthropic.claude-opus-5-20*'], claude(5, 25)),
  ...family('bedrock', ['*anthropic.claude-sonnet-5*'], claudeRegional(2, 10)),
  ...family('bedrock', ['*global.anthropic.claude-sonnet-5*'], claude(2, 10)),
  ...family('bedrock', ['*anthropic.claude-opus-4-8*', '*anthropic.claude-opus-4-7*', '*anthropic.claude-opus-4-6*', '*anthropic.claude-opus-4-5*'], claudeRegional(5, 25)),
  ...family('bedrock', ['*global.anthropic.claude-opus-4-8*', '*global.anthropic.claude-opus-4-7*', '*global.anthropic.claude-opus-4-6*', '*global.anthropic.claude-opus-4-5*'], claude(5, 25)),
  ...family('bedrock', ['*anthropic.claude-sonnet-4-6*', '*anthropic.claude-sonnet-4-5*'], claudeRegional(3, 15)),
  ...family('bedrock', ['*global.anthropic.claude-sonnet-4-6*', '*global.anthropic.claude-sonnet-4-5*'], claude(3, 15)),
  ...family('bedrock', ['*anthropic.claude-haiku-4-5*'], claudeRegional(1, 5)),
  ...family('bedrock', ['*global.anthropic.claude-haiku-4-5*'], claude(1, 5)),
  // Before 4.5 there is no global profile and no regional premium.
  ...family('bedrock', ['*anthropic.claude-opus-4-1*', '*anthropic.claude-opus-4-20*', '*anthropic.claude-3-opus*'], claude(15, 75)),
  ...family('bedrock', ['*anthropic.claude-sonnet-4-20*', '*anthropic.claude-3-7-sonnet*', '*anthropic.claude-3-5-sonnet*'], claude(3, 15)),
  ...family('bedrock', ['*anthropic.claude-3-5-haiku*'], claude(0.8, 4)),
  ...family('bedrock', ['*anthropic.claude-3-haiku*'], price(0.25, 1.25, 0.03, 0.3)),
  // Amazon Nova: a cache hit costs a quarter of the input price; Premier's cache price is not listed.
  ...family('bedrock', ['*amazon.nova-micro-*'], price(0.035, 0.14, 0.00875)),
  ...family('bedrock', ['*amazon.nova-lite-*'], price(0.06, 0.24, 0.015)),
  ...family('bedrock', ['*amazon.nova-pro-*'], price(0.8, 3.2, 0.2)),
  ...family('bedrock', ['*amazon.nova-premier-*'], price(2.5, 12.5)),
  // Meta Llama.
  ...family('bedrock', ['*meta.llama3-8b-instruct-*'], price(0.3, 0.6)),
  ...family('bedrock', ['*meta.llama3-70b-instruct-*'], price(2.65, 3.5)),
  ...family('bedrock', ['*meta.llama3-1-8b-instruct-*'], price(0.22, 0.22)),
  ...family('bedrock', ['*meta.llama3-1-70b-instruct-*'], price(0.72, 0.72)),
  ...family('bedrock', ['*meta.llama3-1-405b-instruct-*'], price(2.4, 2.4)),
  ...family('bedrock', ['*meta.llama3-2-1b-instruct-*'], price(0.1, 0.1)),
  ...family('bedrock', ['*meta.llama3-2-3b-instruct-*'], price(0.15, 0.15)),
  ...family('bedrock', ['*meta.llama3-2-11b-instruct-*'], price(0.16, 0.16)),
  ...family('bedrock', ['*meta.llama3-2-90b-instruct-*'], price(0.72, 0.72)),
  ...family('bedrock', ['*meta.llama3-3-70b-instruct-*'], price(0.72, 0.72)),
  ...family('bedrock', ['*meta.llama4-scout-17b-instruct-*'], price(0.17, 0.66)),
  ...family('bedrock', ['*meta.llama4-maverick-17b-instruct-*'], price(0.24, 0.97)),
  // Mistral.
  ...family('bedrock', ['*mistral.mistral-7b-instruct-*'], price(0.15, 0.2)),
  ...family('bedrock', ['*mistral.mixtral-8x7b-instruct-*'], price(0.45, 0.7)),
  ...family('bedrock', ['*mistral.mistral-small-2402-*'], price(1, 3)),
  ...family('bedrock', ['*mistral.mistral-large-2402-*'], price(4, 12)),
  ...family('bedrock', ['*mistral.mistral-large-2407-*'], price(2, 6)),
  ...family('bedrock', ['*mistral.pixtral-large-2502-*'], price(2, 6)),
  // OpenAI's open-weight models, served by Bedrock.
  ...family('bedrock', ['*openai.gpt-oss-120b-*'], price(0.15, 0.6)),
  ...family('bedrock', ['*openai.gpt-oss-20b-*'], price(0.07, 0.3)),
];

// ---------------------------------------------------------------------------------------------------
// Globs

/**
 * Whether `value` matches `pattern`, where `*` matches any run of characters (none included) and every
 * other character matches itself, case-sensitively. The whole value must match.
 *
 * No regular expression and no backtracking: the pattern is split at `*`, the first piece must be a
 * prefix, the last a suffix, and the pieces between are found left to right, each at its first place
 * after the previous one. Taking the first place is always right for `*`-only globs (a later place can
 * only leave less room for the rest), so the cost is at most pieces x value length, never exponential.
 */
export function globMatches(pattern: string, value: string): boolean {
  const pieces = pattern.split('*');
  if (pieces.length === 1) return pattern === value;
  const first = pieces[0]!;
  const last = pieces[pieces.length - 1]!;
  if (value.length < first.length + last.length) return false;
  if (!value.startsWith(first) || !value.endsWith(last)) return false;
  let at = first.length;
  const end = value.length - last.length;
  for (let i = 1; i < pieces.length - 1; i++) {
    const piece = pieces[i]!;
    if (piece === '') continue;
    const found = value.indexOf(piece, at);
    if (found < 0 || found + piece.length > end) return false;
    at = found + piece.length;
  }
  return true;
}

export interface GlobSpecificity {
  /** Characters other than `*`. */
  literalLength: number;
  /** Runs of `*` (`**` counts once: it matches what `*` matches). */
  wildcards: number;
}

export function globSpecificity(pattern: string): GlobSpecificity {
  let literalLength = 0;
  let wildcards = 0;
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] !== '*') literalLength++;
    else if (i === 0 || pattern[i - 1] !== '*') wildcards++;
  }
  return { literalLength, wildcards };
}

/**
 * Orders globs most specific first: the longer literal part first, then the fewer wildcards. Zero means
 * equally specific (which does not make them equal: `claude-*` and `*-sonnet` tie).
 */
export function compareGlobSpecificity(a: string, b: string): number {
  const sa = globSpecificity(a);
  const sb = globSpecificity(b);
  return sb.literalLength - sa.literalLength || sa.wildcards - sb.wildcards;
}

/** Whether a glob matches every model id: it is made of `*` alone. */
export function globMatchesAll(pattern: string): boolean {
  return pattern.length > 0 && /^\*+$/.test(pattern);
}

// ---------------------------------------------------------------------------------------------------
// The price table

export interface PriceTableEntry {
  pattern: string;
  provider: ProviderName | null;
  price: ModelPrice;
  override: boolean;
}

/** The price of a model no pattern matches, and what it was taken from (the audit event records it). */
export interface FallbackPrice {
  price: ModelPrice;
  /** `prices.default`, `prices.<provider>:default`, or the pattern of the dearest known model (`claude-opus-4-1*`). */
  pricedAs: string;
}

/** Build it with `createPriceTable`; its fields are internal. */
export interface PriceTable {
  /** In lookup order: the first entry that matches is the answer. */
  readonly entries: readonly PriceTableEntry[];
  readonly cache: Map<string, ModelPrice | null>;
  /** Per provider, the price of an unknown model (`fallbackPrice`). */
  readonly fallbacks: ReadonlyMap<ProviderName, FallbackPrice>;
  /** The fallbacks the overrides set themselves (`default`, `<provider>:default`; null: every provider). */
  readonly configured: ReadonlyMap<ProviderName | null, FallbackPrice>;
}

/** The config key of the fallback price: `default` (every provider) or `<provider>:default`. */
export const FALLBACK_KEY = 'default';

/**
 * Kinds that run another provider's models at its list prices: Azure OpenAI runs OpenAI's (global deployments), so
 * its calls match OpenAI's entries, and an unknown model falls back to OpenAI's dearest.
 */
export const LISTED_AS: Readonly<Partial<Record<ProviderName, ProviderName>>> = { 'azure-openai': 'openai' };

/** Whether an entry written for `entryProvider` (null: every provider) prices a call on `provider`. */
function pricesFor(entryProvider: ProviderName | null, provider: ProviderName): boolean {
  return entryProvider === null || entryProvider === provider || entryProvider === LISTED_AS[provider];
}

/**
 * The model strings come from clients; a bound keeps a client that sends a new model id per request
 * from growing the cache without limit. Past the bound the oldest entry goes.
 */
const CACHE_ENTRIES = 4096;
const CACHE_MODEL_CHARS = 256;

/**
 * An override key is a model glob for every provider (`gpt-4o*`), or one provider kind's (`bedrock:*`,
 * `gemini:default`). Only the kinds' names are taken as a qualifier, so Bedrock ids and ARNs and Ollama's
 * `llama3:8b`, which contain `:`, stay plain globs.
 */
function parseOverrideKey(key: string): { provider: ProviderName | null; pattern: string } {
  const colon = key.indexOf(':');
  if (colon > 0) {
    const provider = PROVIDER_KINDS.find((p) => p === key.slice(0, colon));
    if (provider) return { provider, pattern: key.slice(colon + 1) };
  }
  return { provider: null, pattern: key };
}

function checkPrice(where: string, p: ModelPrice): ModelPrice {
  const fields = ['inputPerMTok', 'outputPerMTok', 'cacheReadPerMTok', 'cacheWritePerMTok'] as const;
  const out: ModelPrice = { inputPerMTok: 0, outputPerMTok: 0 };
  for (const field of fields) {
    const v: unknown = p[field];
    const optional = field === 'cacheReadPerMTok' || field === 'cacheWritePerMTok';
    if (v === undefined && optional) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      throw new Error(`${where}: ${field} must be a finite number of USD per million tokens, at least 0`);
    }
    out[field] = v;
  }
  return Object.freeze(out);
}

/**
 * The lookup order, decided once here so that a lookup is the first match: an admin's override before
 * any default; then the longer literal part, then fewer wildcards, then a provider-qualified pattern
 * before an unqualified one; the given order last (JavaScript keeps object keys in insertion order).
 */
function rank(a: PriceTableEntry & { index: number }, b: PriceTableEntry & { index: number }): number {
  return (
    Number(b.override) - Number(a.override) ||
    compareGlobSpecificity(a.pattern, b.pattern) ||
    Number(b.provider !== null) - Number(a.provider !== null) ||
    a.index - b.index
  );
}

/**
 * A price table from config overrides (`{ "gpt-4o*": {...}, "bedrock:*": {...} }`) on top of `defaults`.
 * Throws on an override that is not a price (negative, not finite): a configuration error to report at
 * start-up, not at the first call.
 */
export function createPriceTable(
  overrides: Readonly<Record<string, ModelPrice>>,
  defaults: readonly PriceEntry[] = DEFAULT_PRICES,
): PriceTable {
  const all: Array<PriceTableEntry & { index: number; premium: boolean }> = [];
  const configured = new Map<ProviderName | null, FallbackPrice>();
  for (const [key, p] of Object.entries(overrides)) {
    const { provider, pattern } = parseOverrideKey(key);
    if (pattern === '') throw new Error(`price override "${key}": the model pattern is empty`);
    const checked = checkPrice(`price override "${key}"`, p);
    // `default` prices unknown models rather than a model called "default".
    if (pattern === FALLBACK_KEY) configured.set(provider, { price: checked, pricedAs: `prices.${key}` });
    else all.push({ pattern, provider, price: checked, override: true, index: all.length, premium: false });
  }
  for (const entry of defaults) {
    all.push({
      pattern: entry.pattern,
      provider: entry.provider ?? null,
      price: checkPrice(`default price "${entry.pattern}"`, entry.price),
      override: false,
      index: all.length,
      premium: entry.premium === true,
    });
  }
  all.sort(rank);
  const fallbacks = new Map<ProviderName, FallbackPrice>();
  for (const provider of PROVIDER_KINDS) {
    const fallback = configured.get(provider) ?? configured.get(null) ?? dearest(all, provider);
    fallbacks.set(provider, Object.freeze(fallback));
  }
  return { entries: all.map(({ pattern, provider, price: p, override }) => ({ pattern, provider, price: p, override })), cache: new Map(), fallbacks, configured };
}

/**
 * With no price configured for unknown models: the dearest known standard model of the provider (output, then input
 * price), from the built-in list and the overrides qualified with that provider (Azure: OpenAI's too). A kind with no
 * list (openai-compatible: self-hosted models) has none: such a call is costed at 0, marked estimated.
 */
function dearest(entries: readonly (PriceTableEntry & { premium: boolean })[], provider: ProviderName): FallbackPrice {
  let best: (PriceTableEntry & { premium: boolean }) | null = null;
  for (const e of entries) {
    // The provider's own models only: an unqualified override (`in-house-llm-*`) names no provider's model.
    if (e.premium || e.provider === null || !pricesFor(e.provider, provider)) continue;
    if (!best || e.price.outputPerMTok > best.price.outputPerMTok || (e.price.outputPerMTok === best.price.outputPerMTok && e.price.inputPerMTok > best.price.inputPerMTok)) best = e;
  }
  // No entry at all (an empty table): nothing is known, so nothing is charged, and the cost says it is estimated.
  return best ? { price: best.price, pricedAs: best.pattern } : { price: Object.freeze({ inputPerMTok: 0, outputPerMTok: 0 }), pricedAs: 'none' };
}

/**
 * The price of a model no pattern matches on `provider`: `prices.<provider>:default`, else `prices.default`, else
 * the dearest known standard model of that provider, so a budget is never kept with less than the call may cost.
 * A missing price is never a reason to refuse a call; its cost is marked estimated.
 */
export function fallbackPrice(table: PriceTable, provider: ProviderName): FallbackPrice {
  return table.fallbacks.get(provider) ?? { price: Object.freeze({ inputPerMTok: 0, outputPerMTok: 0 }), pricedAs: 'none' };
}

/** The fallback the table's overrides set for `provider` (`<provider>:default`, else `default`), or null. */
export function configuredFallback(table: PriceTable, provider: ProviderName): FallbackPrice | null {
  return table.configured.get(provider) ?? table.configured.get(null) ?? null;
}

/**
 * The price of `model` on `provider`, or null when no pattern matches (the caller decides what an
 * unpriced call means for a budget). Overrides win over defaults; among either, the most specific
 * pattern wins (see `rank`). The returned object is frozen and shared.
 */
export function priceOf(table: PriceTable, provider: ProviderName, model: string | null): ModelPrice | null {
  if (model === null || model === '') return null;
  const key = `${provider}\u0000${model}`;
  const cached = table.cache.get(key);
  if (cached !== undefined) return cached;
  let found: ModelPrice | null = null;
  for (const entry of table.entries) {
    if (pricesFor(entry.provider, provider) && globMatches(entry.pattern, model)) {
      found = entry.price;
      break;
    }
  }
  if (model.length <= CACHE_MODEL_CHARS) {
    if (table.cache.size >= CACHE_ENTRIES) {
      const oldest = table.cache.keys().next();
      if (!oldest.done) table.cache.delete(oldest.value);
    }
    table.cache.set(key, found);
  }
  return found;
}

// ---------------------------------------------------------------------------------------------------
// Costs

/** Rounds to a billionth of a dollar, so that float noise (3 x 1.1 = 3.3000000000000003) never shows. */
function round9(usd: number): number {
  return Math.round(usd * 1e9) / 1e9;
}

/** A token count as a cost may use it: negative, NaN, infinite or missing counts are 0. */
function tokens(n: number | undefined): number {
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : 0;
}

/**
 * USD cost of a finished call, rounded to 1e-9 USD. Never negative: a malformed count costs nothing
 * rather than crediting the budget. Cache reads and writes without their own price cost the input price.
 */
export function costOf(p: ModelPrice, usage: MeteredUsage): number {
  // The sum is in USD per million tokens x tokens, i.e. micro-dollars; one division at the end.
  const microUsd =
    tokens(usage.inputTokens) * p.inputPerMTok +
    tokens(usage.outputTokens) * p.outputPerMTok +
    tokens(usage.cacheReadTokens) * (p.cacheReadPerMTok ?? p.inputPerMTok) +
    tokens(usage.cacheWriteTokens) * (p.cacheWritePerMTok ?? p.inputPerMTok);
  return Math.round(microUsd * 1e3) / 1e9;
}

/** Output tokens assumed when a request sets no cap. */
export const DEFAULT_ESTIMATE_OUTPUT_TOKENS = 1024;
/** Bytes per input token in the estimate: the usual rule of thumb for English text and JSON. */
export const ESTIMATE_BYTES_PER_TOKEN = 4;

/**
 * What a call is expected to cost before it is made, for a budget reservation that the real cost
 * replaces when the call ends. Input: the whole request body at 4 bytes a token (rounded up), priced as
 * uncached input, so JSON framing, tool schemas and cacheable prefixes are all counted at full price.
 * Output: the request's own cap, or 1024 tokens when it sets none.
 *
 * It errs high for text-heavy requests and far high for base64 images and documents (a 1 MB image is
 * ~250K estimated tokens, ~1.6K real ones); it errs low for an uncapped reasoning model that thinks past
 * 1024 tokens. Both are corrected by the real cost at the end of the call.
 */
export function estimateCost(p: ModelPrice, request: CostEstimateInput): number {
  const inputTokens = Math.ceil(tokens(request.inputBytes) / ESTIMATE_BYTES_PER_TOKEN);
  const cap = request.maxTokens;
  const outputTokens = typeof cap === 'number' && Number.isFinite(cap) && cap >= 0 ? Math.ceil(cap) : DEFAULT_ESTIMATE_OUTPUT_TOKENS;
  return costOf(p, { inputTokens, outputTokens });
}
