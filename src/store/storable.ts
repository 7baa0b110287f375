/**
 * Text PostgreSQL cannot store, made storable in one place for both stores (PostgreSQL and PGlite, which is the
 * same server compiled to WebAssembly and refuses the same things):
 *
 * - `text` refuses the character U+0000 (0x00 is not valid in a UTF-8 database);
 * - `jsonb` refuses the escape `\u0000` and an escaped surrogate that is not half of a pair (`\ud800`);
 * - a lone surrogate in a JS string would reach the wire as U+FFFD anyway (UTF-8 cannot encode it).
 *
 * The control plane refuses such text with 400 before it gets here (shared/request-text.ts); what reaches this
 * point is data-plane content that must flow: an LLM prompt held for review, MCP tool arguments, the audit data
 * built from them. The rewrite is visible and documented (README, "Text PostgreSQL cannot store"):
 *
 * - U+0000 in a text parameter is stored as the six characters `\u0000`;
 * - in JSON text (a parameter that starts with `{` or `[`), the escape `\u0000` is stored as `\\u0000`, which is
 *   the same six characters `\u0000` once the JSON is read back, and an escaped lone surrogate as `\ufffd`;
 * - a lone surrogate becomes U+FFFD.
 *
 * Every query passes through `storableParams`, so it is cheap when there is nothing to do: a string is scanned
 * by native `indexOf` and `isWellFormed` and returned as is; only a string with something to rewrite is copied.
 */

declare global {
  // ES2024 (Node 20 has them); the project's lib is ES2023.
  interface String {
    isWellFormed(): boolean;
    toWellFormed(): string;
  }
}

/** What a stored U+0000 reads as. */
export const STORED_NUL = '\\u0000';

/** `\u` escapes in JSON text that jsonb refuses: `\u0000`, and surrogate escapes (checked for pairing below). */
const JSON_ESCAPE = /(\\+)u(0000|[dD][89abAB][0-9a-fA-F]{2}(?:\\u[dD][c-fC-F][0-9a-fA-F]{2})?|[dD][c-fC-F][0-9a-fA-F]{2})/g;

function rewriteJsonEscapes(text: string): string {
  return text.replace(JSON_ESCAPE, (match: string, slashes: string, code: string) => {
    // An even run of backslashes is escaped backslashes followed by a plain "u": not an escape.
    if (slashes.length % 2 === 0) return match;
    if (code === '0000') return `\\${match}`;
    // A high surrogate followed by a low one is a pair, which jsonb stores; anything else is lone.
    if (code.length > 4) return match;
    return `${slashes.slice(1)}\\ufffd`;
  });
}

/** A string PostgreSQL can store as text (or, for JSON text, as jsonb); the string itself when it already is. */
export function storableText(s: string): string {
  let out = s;
  const first = s.charCodeAt(0);
  // 0x7b "{", 0x5b "[": JSON text for a jsonb column or cast. JSON.stringify writes `\u` only for control
  // characters and lone surrogates, so most JSON has none.
  if ((first === 0x7b || first === 0x5b) && s.indexOf('\\u') !== -1) out = rewriteJsonEscapes(out);
  if (out.indexOf('\u0000') !== -1) out = out.replaceAll('\u0000', STORED_NUL);
  if (!out.isWellFormed()) out = out.toWellFormed();
  return out;
}

function isPlainObject(v: object): boolean {
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

function storableValue(v: unknown): unknown {
  if (typeof v === 'string') return storableText(v);
  if (v === null || typeof v !== 'object') return v;
  // Arrays are PostgreSQL arrays for both drivers: their string elements are text.
  if (Array.isArray(v)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < v.length; i++) {
      const item = v[i] as unknown;
      const next = storableValue(item);
      if (next !== item) (copy ??= v.slice())[i] = next;
    }
    return copy ?? v;
  }
  // A plain object is sent as JSON by both drivers (they stringify it themselves): the same text, made storable.
  // JSON.stringify escapes U+0000 and lone surrogates, so the JSON-text rewrite covers them.
  if (isPlainObject(v)) {
    const text = JSON.stringify(v);
    const storable = storableText(text);
    return storable === text ? v : storable;
  }
  return v; // Date, Buffer and the like: the driver's own serialization
}

/** The parameters of a query, each made storable; the same array when none needed it (the common case). */
export function storableParams(params: readonly unknown[]): readonly unknown[] {
  let copy: unknown[] | null = null;
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    const next = storableValue(p);
    if (next !== p) (copy ??= params.slice())[i] = next;
  }
  return copy ?? params;
}
