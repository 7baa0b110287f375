/**
 * Stored observations: read into the replica's ObservationIndex by tailing the table by id (table-tail.ts), and
 * swept when a day (plus a margin) old.
 */
import type { Queryable } from '../store/db.js';
import { GROUP_KEY_COLUMNS, ObservationIndex, REST_KEY_COLUMNS } from './observation-index.js';
import { TableTail, type TableTailOptions } from './table-tail.js';

/** The widest window is 24 h; the index and the table keep a margin beyond it. */
export const RETENTION_SECONDS = 24 * 3600 + 3600;
/** The index drops rows slightly later than the widest window needs. */
export const INDEX_RETENTION_SECONDS = 24 * 3600 + 300;

// A row as the index takes it: the tuple as its two key strings built by PostgreSQL (two columns to parse instead of
// twelve, and no object per row when the tuple is known), plus the two numbers that vary.
const GROUP_KEY = `concat_ws(E'\\x01', ${GROUP_KEY_COLUMNS.join(', ')})`;
const REST_KEY = `concat_ws(E'\\x01', ${REST_KEY_COLUMNS.join(', ')})`;
const COLUMNS = `id, count, observed_at, ${GROUP_KEY} AS g, ${REST_KEY} AS r`;
/** The tail's batch: the rows after an id ($1), at most $2, in id order. */
const AFTER = 'FROM runtime_observations WHERE id > $1 ORDER BY id LIMIT $2';

/**
 * The rows after an id as one text, a row a line: node-postgres parsing one message per row was a tenth of the
 * replica's CPU during a fleet's ingest, and the rows' keys, split out of the text, are views that cost no copy
 * (bench/reconciliation/RESULTS.md; the index copies the keys it keeps, observation-index.ts). Fields end at U+0002
 * and rows at U+0003, which no stored field holds (ingest replaces control characters); `n` counts the rows, so that
 * a batch where that does not hold (rows written by other means) is found out and read row by row instead. The
 * aggregate takes the rows in the order the batch gives them (an ORDER BY of its own sorted them again: a quarter of
 * the statement's time); rowsOfText puts them in id order should they come otherwise.
 */
const ROWS_AS_TEXT = `SELECT count(*)::int AS n, string_agg(concat_ws(E'\\x02', id, count, observed_at, ${GROUP_KEY}, ${REST_KEY}), E'\\x03') AS text
  FROM (SELECT * ${AFTER}) AS batch`;

/** The rows of a ROWS_AS_TEXT answer in id order, or null when its text does not split into `n` rows of five fields. */
export function rowsOfText(n: number, text: string | null): KeyedRow[] | null {
  if (n === 0) return [];
  if (text === null) return null;
  const lines = text.split('\u0003');
  if (lines.length !== n) return null;
  const rows: KeyedRow[] = new Array(n);
  let inOrder = true;
  let previous = -Infinity;
  for (let i = 0; i < n; i++) {
    const f = lines[i]!.split('\u0002');
    if (f.length !== 5) return null;
    const id = Number(f[0]);
    if (id < previous) inOrder = false;
    previous = id;
    rows[i] = { id: f[0]!, count: Number(f[1]), observed_at: f[2]!, g: f[3]!, r: f[4]! };
  }
  return inOrder ? rows : rows.sort((a, b) => Number(a.id) - Number(b.id));
}

export interface KeyedRow {
  id: string;
  count: number;
  observed_at: string;
  g: string;
  r: string;
}

export interface ObservationFeedOptions extends TableTailOptions {
  /** How often the index drops rows older than INDEX_RETENTION_SECONDS. */
  evictEveryMs?: number;
}

/**
 * Ids below the first stored row minus this margin are not read at start: a report committing out of order at
 * that moment still lands above it.
 */
export const START_MARGIN_IDS = 1000;

/** The replica's ObservationIndex, kept up to date by tailing the table (see table-tail.ts). */
export class ObservationFeed {
  readonly index = new ObservationIndex();
  private readonly tail: TableTail<KeyedRow>;
  private lastEvictMs = 0;
  private cutoffUnix = 0;
  private readonly evictEveryMs: number;

  constructor(
    db: Queryable,
    private readonly options: ObservationFeedOptions,
  ) {
    this.evictEveryMs = options.evictEveryMs ?? 60_000;
    this.tail = new TableTail<KeyedRow>(
      {
        after: async (afterId, limit) => {
          const batch = (await db.query<{ n: number; text: string | null }>(ROWS_AS_TEXT, [afterId, limit])).rows[0];
          return (
            rowsOfText(batch?.n ?? 0, batch?.text ?? null) ??
            (await db.query<KeyedRow>(`SELECT ${COLUMNS} ${AFTER}`, [afterId, limit])).rows
          );
        },
        byIds: async (ids) => (await db.query<KeyedRow>(`SELECT ${COLUMNS} FROM runtime_observations WHERE id = ANY($1::bigint[])`, [ids])).rows,
        start: async () => {
          const r = await db.query<{ first: string | null }>('SELECT min(id) AS first FROM runtime_observations');
          return Math.max(0, Number(r.rows[0]?.first ?? 0) - START_MARGIN_IDS);
        },
      },
      (row) => this.append(row),
      options,
    );
  }

  /** Ids skipped and still asked for. */
  get pendingGaps(): number {
    return this.tail.pendingGaps;
  }

  /** Brings the index up to date with every row committed before the call; drops old rows now and then. */
  async catchUp(): Promise<void> {
    this.cutoffUnix = this.options.nowMs() / 1000 - INDEX_RETENTION_SECONDS;
    await this.tail.catchUp();
    const now = this.options.nowMs();
    if (now - this.lastEvictMs >= this.evictEveryMs) {
      this.lastEvictMs = now;
      this.index.evictBefore(now / 1000 - INDEX_RETENTION_SECONDS);
    }
  }

  settle(): Promise<void> {
    return this.tail.settle();
  }

  private append(row: KeyedRow): void {
    const observedAt = Number(row.observed_at);
    // Older than the index keeps: not worth holding (the sweep deletes it soon).
    if (observedAt >= this.cutoffUnix) this.index.addKeyed(row.g, row.r, row.count, observedAt);
  }
}

/** Deletes observations observed before `cutoffUnix`, in batches so that no statement holds locks for long. */
export async function sweepObservations(q: Queryable, cutoffUnix: number, batch = 50_000): Promise<number> {
  let total = 0;
  for (;;) {
    const r = await q.query<{ n: number }>(
      `WITH gone AS (
         DELETE FROM runtime_observations WHERE id IN (SELECT id FROM runtime_observations WHERE observed_at < $1 LIMIT $2) RETURNING 1
       )
       SELECT count(*)::int AS n FROM gone`,
      [Math.floor(cutoffUnix), batch],
    );
    const n = r.rows[0]?.n ?? 0;
    total += n;
    if (n < batch) return total;
  }
}

/** Items stored per node since its first report (never lowered by the sweep: the lag compares totals). */
export async function readStoredItems(q: Queryable): Promise<Map<string, number>> {
  const r = await q.query<{ node: string; stored_items: string }>('SELECT node, stored_items FROM runtime_node_items');
  return new Map(r.rows.map((row) => [row.node, Number(row.stored_items)]));
}
