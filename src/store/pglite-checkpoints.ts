/**
 * Checkpoints for the embedded store. PGlite runs PostgreSQL as a single process: there is no checkpointer, and
 * the checkpoint PostgreSQL asks for once `max_wal_size` of WAL has been written never comes. Without one, every WAL
 * segment (16 MB) is kept for good: the store held 33 segments (528 MB) after 600,000 audit events written as the
 * audit writer writes them, in its process's memory when the store is in memory (which grew to 1.8 GB), in `pg_wal`
 * of its directory otherwise. Each new segment is also a new file written full of zeros first.
 *
 * So the store's thread checks, every `everyMs`, how much WAL has been written since the last checkpoint's redo
 * point and runs CHECKPOINT once that reaches `walBytes`: PostgreSQL then recycles the old segments instead of
 * creating new ones. Measured on the audit writer's statement in memory (500,000 events, a checkpoint per 10 MB of
 * WAL, three pairs of runs): two segments throughout instead of 28, 1.30-1.36 GB peak resident instead of 1.74-1.76,
 * the checkpoints themselves 0.5-0.8 µs of CPU an event; the CPU an event was within the runs' noise (27-36 s in all
 * with checkpoints, 31-41 without), as it was for the whole gateway (bench/gateway-overhead/flags-ab.ts, 2026-11-29).
 */
import type { PGlite } from '@electric-sql/pglite';

export interface CheckpointOptions {
  /** WAL written since the last checkpoint's redo point that calls for the next one. */
  walBytes: number;
  /** How often that is looked at. */
  everyMs: number;
}

/** One segment: PostgreSQL keeps the current one and a recycled one or two beside it. */
export const CHECKPOINT_DEFAULTS: CheckpointOptions = { walBytes: 16 * 1024 * 1024, everyMs: 2_000 };

/**
 * Starts the checks on `pg`; the returned function stops them. A check waits behind whatever the store is running
 * (PGlite runs one statement at a time, an open transaction first), so it never interleaves with one. The timer does
 * not keep the process alive: a CLI command ends when its work does.
 */
export function checkpointWhenWalGrows(pg: PGlite, options: CheckpointOptions = CHECKPOINT_DEFAULTS): () => void {
  let running = false;
  const check = async (): Promise<void> => {
    if (running || pg.closed) return;
    running = true;
    try {
      const r = await pg.query<{ since: string }>(
        `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), redo_lsn)::int8::text AS since FROM pg_control_checkpoint()`,
      );
      if (Number(r.rows[0]?.since ?? 0) >= options.walBytes && !pg.closed) await pg.query('CHECKPOINT');
    } catch {
      // A store closing under the check, or one that cannot checkpoint now: the next check tries again. Nothing is
      // lost meanwhile; the WAL only grows until one succeeds.
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void check(), options.everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
