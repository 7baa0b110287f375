/**
 * The embedded store checkpoints as its WAL grows (src/store/pglite-checkpoints.ts): PGlite has no checkpointer, and
 * without one every WAL segment written is kept, in memory or in the data directory's pg_wal.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PgliteDb } from '../../../src/store/pglite.js';
import { WAIT_MS, waitFor } from '../../helpers/harness.js';

const SEGMENT = 16 * 1024 * 1024;

/**
 * Writes `megabytes` of WAL in steps of 8 MB, each step waited on by `afterStep`. A logical decoding message is a
 * WAL record of any size that touches no table: WAL as the audit's inserts write it, without the time they take.
 */
async function writeWal(db: PgliteDb, megabytes: number, afterStep: () => Promise<void>): Promise<void> {
  for (let written = 0; written < megabytes; written += 8) {
    await db.query(`SELECT pg_logical_emit_message(false, 'reins-test', repeat('x', 8 * 1024 * 1024))`);
    await afterStep();
  }
}

async function walSince(db: PgliteDb): Promise<number> {
  const r = await db.query<{ since: string }>(`SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), redo_lsn)::int8::text AS since FROM pg_control_checkpoint()`);
  return Number(r.rows[0]!.since);
}

async function walFiles(db: PgliteDb): Promise<number> {
  return (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'`)).rows[0]!.n;
}

describe('the embedded store checkpoints as its WAL grows', () => {
  it('keeps a few WAL segments however much is written, where without checkpoints every segment stays', async () => {
    const [checked, unchecked] = await Promise.all([
      PgliteDb.open('memory', { checkpoints: { walBytes: 4 * 1024 * 1024, everyMs: 20 } }),
      PgliteDb.open('memory', { checkpoints: { walBytes: Number.MAX_SAFE_INTEGER, everyMs: 60_000 } }),
    ]);
    try {
      // After each step, wait for the store's own check to have run CHECKPOINT: the redo point moves up to the end.
      await writeWal(checked, 64, async () => {
        assert.notEqual(await waitFor(async () => (await walSince(checked)) < 4 * 1024 * 1024, WAIT_MS, 20), -1, 'a checkpoint came');
      });
      await writeWal(unchecked, 64, async () => {});
      const kept = await walFiles(checked);
      const all = await walFiles(unchecked);
      // 64 MB is four segments: all of them stay without checkpoints; with them PostgreSQL recycles the old ones.
      assert.ok(all >= 4, `without checkpoints ${all} segments (${(all * SEGMENT) / 1e6} MB) stay`);
      assert.ok(kept <= 2, `with checkpoints ${kept} segments stay`);
    } finally {
      await Promise.all([checked.close(), unchecked.close()]);
    }
  });
});
