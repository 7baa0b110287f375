/**
 * The service's own pods as every replica saw them, kept in the store. The spec drops findings of the service's own
 * pods "including a previous pod of the service" before any counting; a replica knows the previous pods it saw go
 * (kube/cluster-facts.ts), but one started after a pod of the service went away never saw it, and would answer
 * differently from the others. So each replica writes the self pods it knows (a current pod as seen now, a previous
 * one as of when it went), and every answer merges in the rows seen within the memory: 25 h, longer than the widest
 * window (24 h).
 */
import type { Queryable } from '../store/db.js';
import type { SelfPodFact } from './types.js';

/** How long a pod of the service is remembered after it was last seen as one. */
export const SELF_POD_MEMORY_MS = 25 * 60 * 60 * 1000;
/** A current pod's row is refreshed this often while it lives, and whenever the set of pods changes. */
const REFRESH_MS = 60_000;

export class SelfPodHistory {
  private lastWritten = '';
  private lastWrittenMs = -Infinity;

  constructor(
    private readonly db: Queryable,
    private readonly nowMs: () => number,
    private readonly memoryMs = SELF_POD_MEMORY_MS,
  ) {}

  /** Writes the pods this replica knows as the service's own, when they changed or the last write is a minute old. */
  async remember(pods: readonly SelfPodFact[]): Promise<void> {
    const now = this.nowMs();
    const signature = pods.map((p) => `${p.namespace}/${p.name}/${p.ip}/${p.goneAtUnix ?? ''}`).sort().join('\n');
    if (signature === this.lastWritten && now - this.lastWrittenMs < REFRESH_MS) return;
    const nowUnix = Math.floor(now / 1000);
    const rows = JSON.stringify(pods.map((p) => [p.namespace, p.name, p.ip, p.goneAtUnix ?? nowUnix]));
    // Seen again later than recorded: the later time wins; an earlier sighting never moves a row back.
    await this.db.query(
      `INSERT INTO runtime_self_pods (namespace, name, ip, last_seen_at)
       SELECT e->>0, e->>1, e->>2, to_timestamp((e->>3)::bigint) FROM jsonb_array_elements($1::jsonb) AS t(e)
       ON CONFLICT (namespace, name, ip) DO UPDATE SET last_seen_at = greatest(runtime_self_pods.last_seen_at, EXCLUDED.last_seen_at)`,
      [rows],
    );
    await this.db.query('DELETE FROM runtime_self_pods WHERE last_seen_at < to_timestamp($1)', [(now - this.memoryMs) / 1000]);
    this.lastWritten = signature;
    this.lastWrittenMs = now;
  }

  /**
   * `live` (this replica's cluster facts) with every pod any replica saw as the service's own within the memory,
   * one entry per (namespace, name, ip), in a stable order (the classifier's memo compares the list by value).
   */
  async merged(live: readonly SelfPodFact[]): Promise<SelfPodFact[]> {
    const since = (this.nowMs() - this.memoryMs) / 1000;
    const { rows } = await this.db.query<{ namespace: string; name: string; ip: string }>(
      'SELECT namespace, name, ip FROM runtime_self_pods WHERE last_seen_at >= to_timestamp($1)',
      [since],
    );
    const byKey = new Map<string, SelfPodFact>();
    for (const p of [...live, ...rows]) {
      const key = `${p.namespace}\u0000${p.name}\u0000${p.ip}`;
      if (!byKey.has(key)) byKey.set(key, { namespace: p.namespace, name: p.name, ip: p.ip });
    }
    return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, p]) => p);
  }
}
