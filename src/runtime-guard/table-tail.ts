/**
 * Reads the rows appended to a table with a bigserial id, as they commit, so that a replica keeps an in-memory
 * copy up to date with one cheap query (`id > last`) instead of re-reading the window per request.
 *
 * Ids come from a sequence, taken when a row is inserted, not when its transaction commits: two writers can
 * commit out of id order, and a reader can see row 205 while row 180 is still uncommitted. So a read remembers
 * every id it skipped over (a gap) and asks for the gaps again on the next reads, until the row shows up or the gap
 * is older than `gapTimeoutMs` (its transaction rolled back, or the row was deleted before it was read). Writers
 * here are single short statements, so a gap closes within milliseconds in practice.
 */

/**
 * A batch of rows: an array, or anything that counts its rows and hands them out in order (the tail reads each row
 * once, in turn, and keeps none, so a source may hand out one object rewritten row by row).
 */
export interface TailBatch<Row> extends Iterable<Row> {
  readonly length: number;
}

export interface TailSource<Row> {
  /** Rows with an id above `afterId`, in id order, at most `limit`. */
  after(afterId: number, limit: number): Promise<TailBatch<Row>>;
  /** The rows with these ids (those that exist and are visible). */
  byIds(ids: number[]): Promise<Row[]>;
  /** Where a fresh reader starts: the id below the first row worth reading (default 0). */
  start?(): Promise<number>;
}

export interface TableTailOptions {
  /** Unix milliseconds. */
  nowMs: () => number;
  /** Rows per query. */
  batchSize?: number;
  /** How long a skipped id is asked for again. */
  gapTimeoutMs?: number;
  /** A jump in ids larger than this (a sequence moved on purpose) is not tracked id by id. */
  maxTrackedGap?: number;
}

export class TableTail<Row extends { id: string | number }> {
  private maxId = -1;
  /** Skipped id -> when it was first skipped (ms). */
  private readonly gaps = new Map<number, number>();
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  private readonly batchSize: number;
  private readonly gapTimeoutMs: number;
  private readonly maxTrackedGap: number;

  constructor(
    private readonly source: TailSource<Row>,
    private readonly onRow: (row: Row) => void,
    private readonly options: TableTailOptions,
  ) {
    this.batchSize = options.batchSize ?? 20_000;
    this.gapTimeoutMs = options.gapTimeoutMs ?? 60_000;
    this.maxTrackedGap = options.maxTrackedGap ?? 100_000;
  }

  /** Ids skipped and still asked for. */
  get pendingGaps(): number {
    return this.gaps.size;
  }

  /**
   * Reads every row committed before the call. Callers arriving while a read runs share one further read after
   * it (that read may have started before their rows committed).
   */
  catchUp(): Promise<void> {
    if (!this.running) {
      this.running = this.read().finally(() => {
        this.running = null;
      });
      return this.running;
    }
    this.queued ??= this.running
      .catch(() => {})
      .then(() => {
        this.queued = null;
        return this.catchUp();
      });
    return this.queued;
  }

  /** Waits for the reads under way (before the store closes). */
  async settle(): Promise<void> {
    await this.queued?.catch(() => {});
    await this.running?.catch(() => {});
  }

  private async read(): Promise<void> {
    // A fresh reader starts where the source says; ids below it are not gaps.
    if (this.maxId < 0) this.maxId = (await this.source.start?.()) ?? 0;
    const now = this.options.nowMs();
    for (const [id, since] of this.gaps) if (now - since > this.gapTimeoutMs) this.gaps.delete(id);
    if (this.gaps.size > 0) {
      for (const row of await this.source.byIds([...this.gaps.keys()])) {
        this.gaps.delete(Number(row.id));
        this.onRow(row);
      }
    }
    for (;;) {
      const rows = await this.source.after(this.maxId, this.batchSize);
      for (const row of rows) {
        const id = Number(row.id);
        const skipped = id - this.maxId - 1;
        if (skipped > 0 && skipped <= this.maxTrackedGap) {
          for (let gap = this.maxId + 1; gap < id; gap++) this.gaps.set(gap, now);
        }
        this.maxId = id;
        this.onRow(row);
      }
      if (rows.length < this.batchSize) break;
    }
  }
}
