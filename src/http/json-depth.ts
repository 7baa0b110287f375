/**
 * How deep a JSON body may nest. JSON.parse copes with any depth, but what Reins does with a parsed body walks it
 * recursively (the held-call key's canonical JSON, prompt excerpts, schema validation), and 200,000 levels
 * overflow the stack. Every plane refuses a body nested deeper than this before anything recursive runs: the
 * control plane and the LLM gateway with 400 (the LLM gateway in the provider's error shape), the MCP planes
 * with JSON-RPC -32600. Real requests stay far below it (a JSON Schema of a tool rarely passes 20).
 */
export const MAX_JSON_DEPTH = 100;

/** The sentence of a refusal, the same on every plane. */
export const TOO_DEEP_MESSAGE = `the JSON body nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects, which Reins does not accept`;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;

/**
 * Whether JSON text (raw bytes or a string) opens more than `max` arrays and objects inside one another. One
 * linear pass that needs no valid JSON: it counts brackets outside strings and jumps over each string with a
 * native search for its closing quote, so a prompt (mostly string content) costs little. In UTF-8 no byte of a
 * multi-byte character is an ASCII quote, backslash or bracket, so scanning bytes is exact.
 */
export function jsonTooDeep(text: Uint8Array | string, max = MAX_JSON_DEPTH): boolean {
  const bytes = typeof text !== 'string';
  const at = bytes ? (i: number) => (text as Uint8Array)[i]! : (i: number) => (text as string).charCodeAt(i);
  const len = text.length;
  let depth = 0;
  let i = 0;
  while (i < len) {
    const c = at(i);
    if (c === QUOTE) {
      // Find the closing quote: the next quote not preceded by an odd run of backslashes.
      let j = i;
      for (;;) {
        j = bytes ? (text as Uint8Array).indexOf(QUOTE, j + 1) : (text as string).indexOf('"', j + 1);
        if (j === -1) return false; // an unterminated string: JSON.parse will refuse it
        let slashes = 0;
        while (at(j - 1 - slashes) === BACKSLASH) slashes++;
        if (slashes % 2 === 0) break;
      }
      i = j + 1;
      continue;
    }
    if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) {
      depth--;
    }
    i++;
  }
  return false;
}
