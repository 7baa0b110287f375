/**
 * The floors' audit log: where a floor keeps its rows and the bounded, batched queue it writes them through. Shared by
 * the LLM floors (governed-floor.ts) and the egress floor (bench/planes-overhead/egress-floor.ts), so that every floor
 * audits the same way: the cheapest insert path measured for Reins' writer, bounded as Reins' writer is bounded.
 *
 * Where the rows go:
 *  - `own`: a table of the floor's own with a primary key only, the cheapest place to keep them;
 *  - `search`: Reins' own audit table, made by Reins' migrations (on PostgreSQL its day partitions and fourteen
 *    secondary indexes, on the embedded store six: docs/audit.md), each row in Reins' columns. Those indexes are what
 *    the audit search (by time, type, action, actor, subject, call id) reads; a gateway whose audit log can be searched
 *    at a fleet's volume keeps them up on every write.
 *
 * The store: a PostgreSQL URL (a pool of 4, node-postgres as Reins uses), or `memory` for PGlite in memory in this
 * process (the embedded store's CPU is the process's, as Reins' worker thread's is).
 */
import { randomUUID } from 'node:crypto';
import { migrate } from '../../src/store/migrate.js';
import { openStore as openReinsStore } from '../../src/store/open.js';
import { checkpointWhenWalGrows } from '../../src/store/pglite-checkpoints.js';
import { migrateInProcess } from '../../test/helpers/pglite-template.js';

export type FloorTable = 'own' | 'search';

/** One row as a floor records it: Reins' event type, action, the caller (actor and subject) and the data. */
export interface FloorRow {
  type: string;
  action: string;
  actor: string;
  /** The destination host (egress events only, as in Reins' `host` column). */
  host?: string | null;
  data: unknown;
}

export interface FloorAudit {
  /** Queues one row; never waits (call `room()` before admitting a call). */
  audit(row: FloorRow): void;
  /** Resolves when the queue has room for another call's rows; undefined (no wait) while it has. */
  room(): Promise<void> | undefined;
  /** Writes everything queued. */
  drain(): Promise<void>;
  /** The rows in the table, after writing what is queued: the runner's check that the floor did its work. */
  count(): Promise<number>;
  close(): Promise<void>;
}

interface Db {
  query(sql: string, params?: unknown[]): Promise<unknown>;
  close(): Promise<void>;
}

async function openStore(where: string, search: boolean): Promise<Db> {
  if (where === 'memory') {
    const { PGlite } = await import('@electric-sql/pglite');
    const db = new PGlite();
    if (search) await migrateInProcess(db);
    // Checkpoints as Reins' embedded store takes them (src/store/pglite-checkpoints.ts): without them every WAL
    // segment is a new file zero-filled in memory, and the floor would pay for work Reins no longer does.
    const stop = checkpointWhenWalGrows(db);
    return { query: (sql, params) => db.query(sql, params), close: () => (stop(), db.close()) };
  }
  if (search) {
    const reins = await openReinsStore({ kind: 'postgres', url: where });
    await migrate(reins);
    await reins.close();
  }
  const pg = (await import('pg')).default;
  const pool = new pg.Pool({ connectionString: where, max: 4 });
  return { query: (sql, params) => pool.query(sql, params), close: () => pool.end() };
}

/**
 * The queue, bounded as Reins' audit writer bounds it (src/audit/audit-writer.ts): at most BATCH rows a statement, one
 * statement at a time, and once MAX_QUEUE rows wait, a call waits for room before it is admitted. Without the bound
 * a floor whose store is slower than its calls keeps taking calls and leaves the writes for later: on PostgreSQL at
 * its maximum the floor wrote 55-70% of its rows during the job (2026-11-29), so it showed more throughput and less
 * database CPU a call than a gateway that keeps up with its audit log can.
 */
const BATCH = 200;
const MAX_QUEUE = 20_000;
const FLUSH_MS = 20;

export async function openFloorAudit(store: string, table: FloorTable): Promise<FloorAudit> {
  const search = table === 'search';
  const db = await openStore(store, search);
  if (!search) {
    await db.query(`CREATE TABLE IF NOT EXISTS floor_audit (
      id uuid PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), action text NOT NULL, actor text NOT NULL, data jsonb NOT NULL)`);
  }
  const tableName = search ? 'audit_events' : 'floor_audit';
  const insert = search
    ? // Reins' audit writer's statement (src/audit/audit-writer.ts), into its table.
      `INSERT INTO audit_events (type, action, outcome, actor_kind, actor_id, subject, host, data)
       SELECT e->>0, e->>1, e->>2, e->>3, e->>4, e->>5, e->>6, e->7
         FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS t(e, n) ORDER BY n`
    : `INSERT INTO floor_audit (id, action, actor, data)
       SELECT (e->>0)::uuid, e->>1, e->>2, e->3 FROM jsonb_array_elements($1::jsonb) AS t(e)`;
  /** A call made with the agent's own key: the actor is the subject, as in Reins' events of the benches' calls. */
  const rowOf = search
    ? (r: FloorRow) => [r.type, r.action, 'ok', 'agent', r.actor, r.actor, r.host ?? null, r.data]
    : (r: FloorRow) => [randomUUID(), r.action, r.actor, r.data];

  let queue: unknown[][] = [];
  let timer: NodeJS.Timeout | null = null;
  let flushing: Promise<void> | null = null;
  let waiting: (() => void)[] = [];

  function schedule(): void {
    if (flushing) return;
    if (queue.length >= BATCH) {
      if (timer) clearTimeout(timer);
      timer = null;
      void flush();
    } else timer ??= setTimeout(() => void flush(), FLUSH_MS);
  }

  function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = null;
    flushing ??= (async () => {
      const batch = queue.slice(0, BATCH);
      if (batch.length > 0) await db.query(insert, [JSON.stringify(batch)]);
      // Rows queued while the statement ran stay: only the batch's leave.
      queue = queue.slice(batch.length);
    })().finally(() => {
      flushing = null;
      if (queue.length < MAX_QUEUE && waiting.length > 0) {
        const ready = waiting;
        waiting = [];
        for (const resolve of ready) resolve();
      }
      if (queue.length > 0) schedule();
    });
    return flushing;
  }

  async function drain(): Promise<void> {
    while (queue.length > 0 || flushing) await (flushing ?? flush());
  }

  return {
    audit(row) {
      queue.push(rowOf(row));
      schedule();
    },
    room: () => (queue.length < MAX_QUEUE ? undefined : new Promise((resolve) => waiting.push(resolve))),
    drain,
    async count() {
      await drain();
      const r = (await db.query(`SELECT count(*)::int AS n FROM ${tableName}`)) as { rows: { n: number }[] };
      return r.rows[0]!.n;
    },
    async close() {
      await drain();
      await db.close();
    },
  };
}
