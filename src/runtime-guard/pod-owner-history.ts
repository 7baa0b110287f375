/**
 * The owner chain of every pod seen, kept in the store (issue 18: one row per workload across rollouts). A rollout
 * deletes the old pods and, in time, their ReplicaSet; a CronJob's Jobs go with their pods. Their evidence stays in
 * the window for up to 24 h, and without the chain it would fall back to a pod-level row of its own: the workload
 * would split in two and its bypass would leave its row. So each replica writes the workload of every pod whose
 * chain resolves (confirmed), and every answer reads back what any replica saw within the memory (25 h).
 *
 * Cheap on purpose: a pod's row is written when first seen (or its workload changed) and refreshed hourly while it
 * lives; the rows are read back on the background tick at most every `READ_EVERY_MS`, and only when their count and
 * hash sum in the store moved, and the list handed to the engine keeps its identity while its content does not
 * change (the classifier's memo compares it by identity).
 */
import type { Queryable } from '../store/db.js';
import { buildOwnerIndex, resolveWorkload } from './workload.js';
import type { ClusterFacts, PodOwnerFact } from './types.js';

export const POD_OWNER_MEMORY_MS = 25 * 60 * 60 * 1000;
const REFRESH_MS = 60 * 60 * 1000;
const READ_EVERY_MS = 5_000;
/** Rows per INSERT statement. */
const BATCH = 5_000;

export class PodOwnerHistory {
  /** `<ns>/<pod>` -> `<kind>/<workload>` and when this replica last wrote it. */
  private readonly written = new Map<string, { owner: string; atMs: number }>();
  private lastPods: readonly unknown[] | null = null;
  private lastPodsWrittenMs = -Infinity;
  private list: PodOwnerFact[] = [];
  private signature = '';
  /** The stored rows' count and hash sum when `list` was last read (see `read`). */
  private fingerprint = '';
  private lastReadMs = -Infinity;
  private busy: Promise<void> | null = null;

  constructor(
    private readonly db: Queryable,
    private readonly nowMs: () => number,
    private readonly memoryMs = POD_OWNER_MEMORY_MS,
  ) {}

  /** The remembered owners as last read (stable identity while unchanged). */
  current(): PodOwnerFact[] {
    return this.list;
  }

  /** On the background tick: write the pods of `facts` whose owner is new or due a refresh, then read back when due. */
  tick(facts: ClusterFacts | null): Promise<void> {
    if (this.busy) return this.busy;
    this.busy = this.run(facts).finally(() => {
      this.busy = null;
    });
    return this.busy;
  }

  /** Writes and reads now (tests, and the first answer). */
  async refresh(facts: ClusterFacts | null): Promise<void> {
    await this.busy;
    this.lastPods = null;
    this.lastReadMs = -Infinity;
    this.fingerprint = '';
    await this.tick(facts);
  }

  private async run(facts: ClusterFacts | null): Promise<void> {
    const now = this.nowMs();
    if (facts && facts.complete && (facts.pods !== this.lastPods || now - this.lastPodsWrittenMs >= REFRESH_MS / 4)) {
      await this.write(facts, now);
      this.lastPods = facts.pods;
      this.lastPodsWrittenMs = now;
    }
    if (now - this.lastReadMs >= READ_EVERY_MS) {
      await this.read(now);
      this.lastReadMs = now;
    }
  }

  private async write(facts: ClusterFacts, now: number): Promise<void> {
    const owners = buildOwnerIndex(facts);
    const due: Array<[string, string, string, string]> = [];
    for (const pod of facts.pods) {
      const ref = resolveWorkload(pod, owners);
      // Only a chain that resolved is worth remembering; a bare pod is its own workload anyway.
      if (!ref.attributionConfirmed) continue;
      const key = `${pod.namespace}/${pod.name}`;
      const owner = `${ref.kind}/${ref.name}`;
      const known = this.written.get(key);
      if (known && known.owner === owner && now - known.atMs < REFRESH_MS) continue;
      due.push([pod.namespace, pod.name, ref.kind, ref.name]);
      this.written.set(key, { owner, atMs: now });
    }
    const nowUnix = Math.floor(now / 1000);
    for (let i = 0; i < due.length; i += BATCH) {
      await this.db.query(
        `INSERT INTO runtime_pod_owners (namespace, name, kind, workload, last_seen_at)
         SELECT e->>0, e->>1, e->>2, e->>3, to_timestamp($2) FROM jsonb_array_elements($1::jsonb) AS t(e)
         ON CONFLICT (namespace, name) DO UPDATE SET kind = EXCLUDED.kind, workload = EXCLUDED.workload,
           last_seen_at = greatest(runtime_pod_owners.last_seen_at, EXCLUDED.last_seen_at)`,
        [JSON.stringify(due.slice(i, i + BATCH)), nowUnix],
      );
    }
    for (const [key, entry] of this.written) if (now - entry.atMs >= this.memoryMs) this.written.delete(key);
    await this.db.query('DELETE FROM runtime_pod_owners WHERE last_seen_at < to_timestamp($1)', [(now - this.memoryMs) / 1000]);
  }

  private async read(now: number): Promise<void> {
    const since = (now - this.memoryMs) / 1000;
    // The rows' fingerprint first (how many, and the sum of their hashes), computed by the store: the rows themselves
    // (60,000 at 20,000 workloads, 5 MB) are read only when it moved, not every READ_EVERY_MS on every replica. A
    // write landing between the two reads moves the fingerprint again, so the next read takes the rows once more.
    const { rows: sums } = await this.db.query<{ n: number; h: string }>(
      `SELECT count(*)::int AS n, coalesce(sum(hashtext(namespace || '/' || name || '/' || kind || '/' || workload)::bigint), 0)::text AS h
         FROM runtime_pod_owners WHERE last_seen_at >= to_timestamp($1)`,
      [since],
    );
    const fingerprint = `${sums[0]?.n ?? 0}:${sums[0]?.h ?? '0'}`;
    if (fingerprint === this.fingerprint) return;
    const { rows } = await this.db.query<{ namespace: string; name: string; kind: string; workload: string }>(
      'SELECT namespace, name, kind, workload FROM runtime_pod_owners WHERE last_seen_at >= to_timestamp($1) ORDER BY namespace, name',
      [since],
    );
    this.fingerprint = fingerprint;
    const signature = rows.map((r) => `${r.namespace}/${r.name}/${r.kind}/${r.workload}`).join('\n');
    if (signature === this.signature) return;
    this.signature = signature;
    this.list = rows.map((r) => ({ namespace: r.namespace, name: r.name, kind: r.kind, workload: r.workload }));
  }
}
