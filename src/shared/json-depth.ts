/**
 * How deep a JSON body may nest. JSON.parse copes with any depth, but what Reins does with a parsed body walks it
 * recursively (the held-call key's canonical JSON, prompt excerpts, the policy object, schema validation), and
 * 200,000 levels overflow the stack. Every plane refuses a body nested deeper than this right after parsing,
 * before anything recursive runs: the control plane and the LLM gateway with 400 (the LLM gateway in the
 * provider's error shape), the MCP planes with JSON-RPC -32600. Real requests stay far below it (a JSON Schema
 * of a tool rarely passes 20).
 */
export const MAX_JSON_DEPTH = 100;

/** The sentence of a refusal, the same on every plane. */
export const TOO_DEEP_MESSAGE = `the JSON body nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects, which Reins does not accept`;

/**
 * Whether a parsed JSON value nests more than `max` arrays and objects inside one another. Iterative (an explicit
 * stack), so any depth is safe, and it stops at the first path past the limit. It visits only arrays and objects,
 * never string contents: a prompt (a few dozen objects around long strings) costs a couple of microseconds, where
 * scanning its bytes cost as much as parsing them.
 */
export function nestedTooDeep(value: unknown, max = MAX_JSON_DEPTH): boolean {
  if (value === null || typeof value !== 'object') return false;
  const stack: object[] = [value];
  const depths: number[] = [1];
  while (stack.length > 0) {
    const v = stack.pop()!;
    const depth = depths.pop()!;
    if (depth > max) return true;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const item: unknown = v[i];
        if (item !== null && typeof item === 'object') {
          stack.push(item);
          depths.push(depth + 1);
        }
      }
    } else {
      for (const key in v) {
        const item: unknown = (v as Record<string, unknown>)[key];
        if (item !== null && typeof item === 'object') {
          stack.push(item);
          depths.push(depth + 1);
        }
      }
    }
  }
  return false;
}
