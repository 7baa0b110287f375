/**
 * The compiled policy set every replica evaluates calls against. Compiled when read, re-read whole on
 * NOTIFY (reins_policy) and periodically, so a change made on one replica is evaluated on all of them
 * within milliseconds. Policy sets are small (tens of policies), so reading them whole is cheaper than
 * tracking deltas.
 */
import type { Db, Queryable } from '../store/db.js';
import { Channels } from '../store/db.js';
import { Snapshot } from '../store/snapshot.js';
import { compilePolicy, type CompiledPolicy } from './compile-policy.js';
import { listPolicies } from './store.js';

export interface PolicySetOptions {
  refreshSeconds: number;
  listen?: boolean;
  onError?: (err: Error) => void;
}

export class PolicySet {
  private readonly snapshot: Snapshot<readonly CompiledPolicy[]>;
  /** The last compiled form of each policy, by its content: a re-read recompiles only what changed. */
  private compiledByContent = new Map<string, CompiledPolicy>();
  /** The set the last read gave. */
  private current: readonly CompiledPolicy[] | null = null;

  constructor(db: Db, options: PolicySetOptions) {
    const onError = options.onError ?? (() => undefined);
    this.snapshot = new Snapshot(db, {
      channel: Channels.policy,
      refreshSeconds: options.refreshSeconds,
      ...(options.listen === undefined ? {} : { listen: options.listen }),
      onError,
      load: (q: Queryable) => this.loadCompiled(q, onError),
    });
  }

  start(): Promise<void> {
    return this.snapshot.start();
  }

  stop(): Promise<void> {
    return this.snapshot.stop();
  }

  /** The compiled policies in evaluation order. */
  get policies(): readonly CompiledPolicy[] {
    return this.snapshot.value;
  }

  /** Re-reads now (this replica's own change applies before its answer). */
  reload(): Promise<void> {
    return this.snapshot.reload();
  }

  private async loadCompiled(q: Queryable, onError: (err: Error) => void): Promise<readonly CompiledPolicy[]> {
    const out: CompiledPolicy[] = [];
    const next = new Map<string, CompiledPolicy>();
    for (const policy of await listPolicies(q)) {
      const key = JSON.stringify(policy);
      const known = this.compiledByContent.get(key);
      if (known) {
        out.push(known);
        next.set(key, known);
        continue;
      }
      const result = compilePolicy(policy);
      if (result.ok) {
        out.push(result.compiled);
        next.set(key, result.compiled);
      } else {
        // Every stored policy compiled when it was saved; failing now means the engine changed under it.
        onError(new Error(`policy ${policy.name} no longer compiles (${result.errors.map((e) => e.message).join('; ')}); it is skipped`));
      }
    }
    this.compiledByContent = next;
    // A re-read that found nothing changed keeps the very same set: the decision memo (governance/decision-memo.ts)
    // starts over whenever the set is another object, and the periodic re-read would otherwise empty it every time.
    const previous = this.current;
    if (previous !== null && previous.length === out.length && previous.every((p, i) => p === out[i])) return previous;
    this.current = Object.freeze(out);
    return this.current;
  }
}
