/**
 * Every replica's view of agent tiers and owners, read on the request path without a query: policies read the
 * tier, and the caller check reads the owners (which developers may name the agent in X-Reins-Agent).
 *
 * Two ways in: a change announced over NOTIFY (applied within milliseconds on every replica) and a full
 * re-read every `refreshSeconds` (the safety net when a notification is lost). Each entry carries the
 * identity's revision, so applying an older value over a newer one is impossible whichever way arrives
 * first. Changes that arrive while a re-read is in flight are replayed over its snapshot: a change that
 * committed before the snapshot is in it, one that committed after is in that replay.
 */
import type { Db } from '../store/db.js';
import { Channels } from '../store/db.js';
import type { IdentityChange } from './identity-change.js';
import { ownerCovers } from './owners.js';
import { resolveTier, type ResolvedTier, type Tier } from './tiers.js';

interface Entry {
  tier: Tier | null;
  owners: readonly string[];
  revision: bigint;
}

/** How many deleted developers are remembered (see `deleted`); deletions are rare, the oldest go first. */
const DELETED_MEMORY = 10_000;

export interface TierCacheOptions {
  refreshSeconds: number;
  /** Subscribe to NOTIFY. Off only in tests that prove the periodic re-read alone converges. */
  listen?: boolean;
  onError?: (err: Error) => void;
}

export class TierCache {
  private agents = new Map<string, Entry>();
  /**
   * Developers deleted, with the revision of their deletion. The store deletes their owner entries with them;
   * an owners list announced at an older revision (a late notification) may still name them, and must not let a
   * developer created later with the same id inherit the binding.
   */
  private readonly deleted = new Map<string, bigint>();
  private replay: IdentityChange[] | null = null;
  private timer: NodeJS.Timeout | null = null;
  private unlisten: (() => Promise<void>) | null = null;
  private reloading: Promise<void> | null = null;
  /** Unix ms of the last completed full re-read. */
  lastReloadAt = 0;

  constructor(
    private readonly db: Db,
    private readonly options: TierCacheOptions,
  ) {}

  async start(): Promise<void> {
    if (this.options.listen !== false) {
      this.unlisten = await this.db.listen(Channels.identity, (payload) => this.onNotification(payload), {
        onResync: () => void this.reload(),
      });
    }
    await this.reload();
    this.timer = setInterval(() => void this.reload(), this.options.refreshSeconds * 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.unlisten?.();
    this.unlisten = null;
    await this.reloading?.catch(() => {});
  }

  /** The agent's resolved tier, or null when no agent identity has this id. */
  resolve(agentId: string): ResolvedTier | null {
    const e = this.agents.get(agentId);
    return e ? resolveTier(e.tier) : null;
  }

  /**
   * Whether this developer may name this agent in X-Reins-Agent: the agent exists and one of its owners covers
   * the developer (the developer's own id, or a `<namespace>/*` rule of the developer's namespace).
   */
  isBound(agentId: string, developerId: string): boolean {
    const e = this.agents.get(agentId);
    if (!e) return false;
    for (const owner of e.owners) {
      if (!ownerCovers(owner, developerId)) continue;
      if (owner !== developerId) return true;
      const deletedAt = this.deleted.get(developerId);
      if (deletedAt === undefined || deletedAt < e.revision) return true;
    }
    return false;
  }

  /** Applies a change; ignored when the cache already holds this revision or a newer one. */
  apply(change: IdentityChange): void {
    this.replay?.push(change);
    this.remember(change);
    applyTo(this.agents, change);
  }

  private remember(change: IdentityChange): void {
    if (change.op !== 'delete' || change.kind !== 'developer') return;
    const revision = BigInt(change.revision);
    if ((this.deleted.get(change.id) ?? -1n) >= revision) return;
    this.deleted.delete(change.id);
    this.deleted.set(change.id, revision);
    if (this.deleted.size > DELETED_MEMORY) this.deleted.delete(this.deleted.keys().next().value!);
  }

  reload(): Promise<void> {
    this.reloading ??= this.readAll().finally(() => {
      this.reloading = null;
    });
    return this.reloading;
  }

  private async readAll(): Promise<void> {
    this.replay = [];
    try {
      // One statement: the owners are those of the same snapshot as the revision.
      const r = await this.db.query<{ id: string; autonomy_tier: Tier | null; revision: string; owners: string[] | null }>(
        `SELECT i.id, i.autonomy_tier, i.revision::text AS revision,
                ARRAY(SELECT o.owner FROM agent_owners o WHERE o.agent_id = i.id) AS owners
           FROM identities i WHERE i.kind = 'agent'`,
      );
      const next = new Map<string, Entry>();
      for (const row of r.rows) next.set(row.id, { tier: row.autonomy_tier, owners: row.owners ?? [], revision: BigInt(row.revision) });
      for (const change of this.replay) applyTo(next, change);
      this.agents = next;
      this.lastReloadAt = Date.now();
    } catch (err) {
      this.options.onError?.(err as Error);
    } finally {
      this.replay = null;
    }
  }

  private onNotification(payload: string): void {
    let change: IdentityChange;
    try {
      change = JSON.parse(payload) as IdentityChange;
    } catch {
      return;
    }
    if (typeof change?.id !== 'string' || typeof change.revision !== 'string') return;
    this.apply(change);
  }
}

function applyTo(agents: Map<string, Entry>, change: IdentityChange): void {
  const revision = BigInt(change.revision);
  const current = agents.get(change.id);
  if (current && current.revision >= revision) return;
  if (change.op === 'delete' || change.kind !== 'agent') agents.delete(change.id);
  else agents.set(change.id, { tier: change.tier, owners: Array.isArray(change.owners) ? change.owners : (current?.owners ?? []), revision });
}
