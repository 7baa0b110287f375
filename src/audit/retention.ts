/**
 * The audit log's upkeep, run by one replica at a time (the `audit-maintenance` lease): day partitions created
 * ahead of time, and retention. Retention drops whole expired day partitions (detach, drop: no row-by-row delete,
 * no vacuum storm) and deletes in small batches the expired rows the default partition caught. An event newer than
 * the cutoff (now - retentionDays) is never touched: the append-only trigger (migration 017) lets a DELETE through
 * only inside a transaction that declared the cutoff, and only for events before it. Each removal is audited in the
 * same transaction (`audit.retention`: what went, its time range and count).
 */
import type { Db, Queryable } from '../store/db.js';
import { Lease } from '../store/lease.js';
import { recordAudit } from './audit.js';

const ACTOR = { kind: 'system', name: 'retention' } as const;
const PARTITION = /^audit_events_p(\d{4})(\d{2})(\d{2})$/;
const DAY_MS = 86_400_000;

export interface AuditMaintenanceOptions {
  /** 0 keeps everything. */
  retentionDays: number;
  intervalMs: number;
  /** Day partitions kept ready ahead of today (UTC). */
  daysAhead?: number;
  /** Rows a batched delete removes per transaction. */
  batchSize?: number;
  onError?: (err: Error) => void;
}

export interface MaintenanceRun {
  /** False when another replica holds the lease: this one did nothing. */
  leader: boolean;
  partitionsCreated: number;
  partitionsDropped: string[];
  rowsDeleted: number;
}

interface PartitionDay {
  name: string;
  from: Date;
  to: Date;
}

/** The day partitions of audit_events, oldest first, read from the catalogue. */
export async function auditPartitions(q: Queryable): Promise<PartitionDay[]> {
  const r = await q.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'audit_events'::regclass ORDER BY c.relname`,
  );
  const out: PartitionDay[] = [];
  for (const { name } of r.rows) {
    const m = PARTITION.exec(name);
    if (!m) continue;
    const from = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
    out.push({ name, from, to: new Date(from.getTime() + DAY_MS) });
  }
  return out;
}

export class AuditMaintenance {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<MaintenanceRun> | null = null;
  private readonly lease: Lease;

  constructor(
    private readonly db: Db,
    private readonly options: AuditMaintenanceOptions,
  ) {
    // Outlives a missed run or two, so a slow store does not hand the chore back and forth.
    this.lease = new Lease(db, 'audit-maintenance', options.intervalMs * 3);
  }

  start(): void {
    void this.run();
    this.timer = setInterval(() => void this.run(), this.options.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => {});
    await this.lease.release().catch(() => {});
  }

  /** One run (joins the one under way); errors go to onError and resolve as a run that did nothing. */
  run(): Promise<MaintenanceRun> {
    this.running ??= this.once()
      .catch((err: Error) => {
        this.options.onError?.(err);
        return { leader: false, partitionsCreated: 0, partitionsDropped: [], rowsDeleted: 0 };
      })
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  private async once(): Promise<MaintenanceRun> {
    const run: MaintenanceRun = { leader: false, partitionsCreated: 0, partitionsDropped: [], rowsDeleted: 0 };
    if (!(await this.lease.acquire())) return run;
    run.leader = true;
    const ahead = this.options.daysAhead ?? 7;
    const made = await this.db.query<{ n: number }>(
      `SELECT audit_events_ensure_partitions((now() AT TIME ZONE 'UTC')::date, ((now() AT TIME ZONE 'UTC')::date + $1::integer)) AS n`,
      [ahead],
    );
    run.partitionsCreated = Number(made.rows[0]?.n ?? 0);
    if (this.options.retentionDays <= 0) return run;

    const c = await this.db.query<{ cutoff: Date }>(`SELECT now() - make_interval(days => $1::integer) AS cutoff`, [this.options.retentionDays]);
    const cutoff = c.rows[0]!.cutoff;
    for (const p of await auditPartitions(this.db)) {
      if (p.to.getTime() > cutoff.getTime()) break;
      if (await this.dropPartition(p, cutoff)) run.partitionsDropped.push(p.name);
    }
    run.rowsDeleted = await this.deleteExpiredRows(cutoff);
    return run;
  }

  /** Detaches and drops one expired day, audited in the same transaction. */
  private async dropPartition(p: PartitionDay, cutoff: Date): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      // Gone already (another holder's run, before a lease hand-over): nothing to do.
      const exists = await tx.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [p.name]);
      if (exists.rows[0]?.t == null) return false;
      const stats = await tx.query<{ n: string; first: Date | null; last: Date | null }>(
        `SELECT count(*)::text AS n, min(at) AS first, max(at) AS last FROM ${p.name}`,
      );
      const s = stats.rows[0]!;
      await tx.query(`ALTER TABLE audit_events DETACH PARTITION ${p.name}`);
      await tx.query(`DROP TABLE ${p.name}`);
      await recordAudit(tx, {
        type: 'control',
        action: 'audit.retention',
        actor: ACTOR,
        data: {
          partition: p.name,
          from: p.from.toISOString(),
          to: p.to.toISOString(),
          count: Number(s.n),
          firstAt: s.first?.toISOString() ?? null,
          lastAt: s.last?.toISOString() ?? null,
          cutoff: cutoff.toISOString(),
          retentionDays: this.options.retentionDays,
        },
      });
      return true;
    });
  }

  /**
   * Expired rows outside the day partitions (the default partition caught them), in small batches: each batch its
   * own transaction, audited with its count and range.
   */
  private async deleteExpiredRows(cutoff: Date): Promise<number> {
    const batch = this.options.batchSize ?? 1000;
    let total = 0;
    for (;;) {
      const n = await this.db.transaction(async (tx) => {
        await tx.query(`SELECT set_config('reins.audit_retention_before', $1, true)`, [cutoff.toISOString()]);
        const r = await tx.query<{ n: string; first: Date | null; last: Date | null }>(
          `WITH gone AS (
             DELETE FROM audit_events_default WHERE id IN (
               SELECT id FROM audit_events_default WHERE at < $1 ORDER BY at LIMIT $2
             ) RETURNING at
           ) SELECT count(*)::text AS n, min(at) AS first, max(at) AS last FROM gone`,
          [cutoff, batch],
        );
        const s = r.rows[0]!;
        const count = Number(s.n);
        if (count > 0) {
          await recordAudit(tx, {
            type: 'control',
            action: 'audit.retention',
            actor: ACTOR,
            data: { partition: 'audit_events_default', from: s.first!.toISOString(), to: s.last!.toISOString(), count, cutoff: cutoff.toISOString(), retentionDays: this.options.retentionDays },
          });
        }
        return count;
      });
      total += n;
      if (n < batch) return total;
    }
  }
}
