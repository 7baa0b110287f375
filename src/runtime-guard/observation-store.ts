/**
 * Stored observations: read into the replica's ObservationIndex by tailing the table by id (table-tail.ts), and
 * swept when a day (plus a margin) old.
 */
import type { Queryable } from '../store/db.js';
import { GROUP_KEY_COLUMNS, ObservationIndex, REST_KEY_COLUMNS } from './observation-index.js';
import { type TailBatch, TableTail, type TableTailOptions } from './table-tail.js';

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

/**
 * The rows of a ROWS_AS_TEXT answer in id order, or null when its text does not split into `n` rows of five fields.
 * Read in place: the text is checked whole first (so that a batch is appended entirely or not at all), then handed
 * out row by row through one object rewritten for each, each row's two keys views into the text. A batch of 20,000
 * rows made as arrays and objects (the lines, each line's fields, a row object) stayed alive until its last row was
 * appended, so the young collector found them alive and moved them to the old generation, which then needed a full
 * collection every second or two during a fleet's ingest (bench/reconciliation/RESULTS.md). Rows out of id order
 * (not seen from PostgreSQL) are made as objects and sorted.
 */
export function rowsOfText(n: number, text: string | null): TailBatch<KeyedRow> | null {
  if (n === 0) return [];
  if (text === null) return null;
  // Where each row's five fields end (the last one's end is the row's).
  const ends = new Uint32Array(5 * n);
  const ids = new Float64Array(n);
  let inOrder = true;
  let start = 0;
  for (let i = 0; i < n; i++) {
    // Every row but the last ends at a row separator; the last runs to the end of the text.
    const next = text.indexOf(ROW_END, start);
    if ((next === -1) !== (i === n - 1)) return null;
    const end = next === -1 ? text.length : next;
    let at = start;
    for (let f = 0; f < 4; f++) {
      const sep = text.indexOf(FIELD_END, at);
      if (sep === -1 || sep >= end) return null;
      ends[5 * i + f] = sep;
      at = sep + 1;
    }
    const sixth = text.indexOf(FIELD_END, at);
    if (sixth !== -1 && sixth < end) return null;
    ends[5 * i + 4] = end;
    ids[i] = Number(text.slice(start, ends[5 * i]));
    if (i > 0 && ids[i]! < ids[i - 1]!) inOrder = false;
    start = end + 1;
  }
  const batch = new TextBatch(text, ends, ids);
  return inOrder ? batch : Array.from(batch, (row) => ({ ...row })).sort((x, y) => Number(x.id) - Number(y.id));
}

/** A row as the index takes it: from the batch's text (numbers) or from a row-by-row query (text). */
export interface KeyedRow {
  id: string | number;
  count: number;
  observed_at: string | number;
  g: string;
  r: string;
}

const FIELD_END = '\u0002';
const ROW_END = '\u0003';

/** A checked ROWS_AS_TEXT batch (rowsOfText), handed out in place: one row object, rewritten for each row. */
class TextBatch implements TailBatch<KeyedRow> {
  constructor(
    private readonly text: string,
    /** Where each row's five fields end. */
    private readonly ends: Uint32Array,
    private readonly ids: Float64Array,
  ) {}

  get length(): number {
    return this.ids.length;
  }

  *[Symbol.iterator](): Iterator<KeyedRow> {
    const { text, ends, ids } = this;
    const row: KeyedRow = { id: 0, count: 0, observed_at: 0, g: '', r: '' };
    for (let i = 0; i < ids.length; i++) {
      const e = 5 * i;
      row.id = ids[i]!;
      row.count = Number(text.slice(ends[e]! + 1, ends[e + 1]));
      row.observed_at = Number(text.slice(ends[e + 1]! + 1, ends[e + 2]));
      row.g = text.slice(ends[e + 2]! + 1, ends[e + 3]);
      row.r = text.slice(ends[e + 3]! + 1, ends[e + 4]);
      yield row;
    }
  }
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
