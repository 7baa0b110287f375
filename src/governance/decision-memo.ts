/**
 * Policy decisions memoised by the complete policy object, for every plane (LLM, MCP, egress). Policies are pure
 * functions of the object (CEL has no clock or I/O), so an identical object under the same compiled set gets the
 * identical decision, and agents repeat the same call shape, tool call and destination all session long. Each
 * plane builds the key from every field its policy object is made of; the memo is dropped whenever the policy set
 * changes (a re-read that finds nothing changed keeps the same set object: policy/policy-set.ts), is bounded, and is
 * not used when a grant exempts the caller (grants are read on every call).
 */
import type { CompiledPolicy } from '../policy/compile-policy.js';
import type { Decision } from '../policy/decision.js';

const MAX_ENTRIES = 50_000;
/** The memo is dropped when its keys reach this many characters in all (about 16 MB). */
const MAX_KEY_CHARACTERS = 8_000_000;

export class DecisionMemo {
  private memo = new Map<string, Decision>();
  private characters = 0;
  private forSet: readonly CompiledPolicy[] | null = null;

  /** The decision for `key` under `policies`: `evaluateNow` on a miss, and every time when `key` is null. */
  recall(policies: readonly CompiledPolicy[], key: string | null, evaluateNow: () => Decision): Decision {
    if (key === null) return evaluateNow();
    if (policies !== this.forSet) {
      this.memo = new Map();
      this.characters = 0;
      this.forSet = policies;
    }
    let decision = this.memo.get(key);
    if (decision === undefined) {
      decision = evaluateNow();
      if (this.memo.size >= MAX_ENTRIES || this.characters + key.length > MAX_KEY_CHARACTERS) {
        this.memo = new Map();
        this.characters = 0;
      }
      this.memo.set(key, decision);
      this.characters += key.length;
    }
    return decision;
  }
}
