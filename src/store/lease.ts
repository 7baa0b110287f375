/**
 * A named lease in the shared store: one replica at a time runs a fleet-wide chore (audit partitions and
 * retention). A lease is taken when free or expired and renewed by its holder, by one conditional upsert, so it
 * works the same on PostgreSQL (several replicas) and PGlite (one process, which always gets it). A holder that
 * dies simply stops renewing: another replica takes the lease once it expires.
 */
import { randomUUID } from 'node:crypto';
import type { Queryable } from './db.js';

export class Lease {
  /** This process's name as a holder: unique per lease object, so two replicas in one process differ too. */
  readonly holder = randomUUID();

  constructor(
    private readonly db: Queryable,
    readonly name: string,
    private readonly ttlMs: number,
  ) {}

  /** Takes or renews the lease; true when this holder has it until now + ttl. */
  async acquire(): Promise<boolean> {
    const r = await this.db.query<{ holder: string }>(
      `INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
       ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
         WHERE leases.holder = EXCLUDED.holder OR leases.expires_at < now()
       RETURNING holder`,
      [this.name, this.holder, this.ttlMs / 1000],
    );
    return r.rows[0]?.holder === this.holder;
  }

  /** Gives the lease up (on a clean stop), so another replica need not wait for it to expire. */
  async release(): Promise<void> {
    await this.db.query('DELETE FROM leases WHERE name = $1 AND holder = $2', [this.name, this.holder]);
  }
}
