/**
 * Governed calls for the reconciliation's `n` and `governedCalls`, from the audit log: the gateway writes one event
 * per call of type `llm`, `mcp` or `egress`, with `subject` the call's agent (or the developer when no agent was
 * named) and, for egress only, the destination `host`.
 *
 * A day of gateway traffic is too much to aggregate in SQL per answer (100,000 events take 50–200 ms), so each
 * replica keeps the last day of call events in memory, tailing `audit_events` by id like the observations
 * (table-tail.ts): per event a tuple id (type, identity, host) and a second. For a window the events are summed per
 * tuple, and the engine gets one call per tuple with its `count`.
 */
import type { Queryable } from '../store/db.js';
import { INDEX_RETENTION_SECONDS, START_MARGIN_IDS } from './observation-store.js';
import { TableTail, type TableTailOptions } from './table-tail.js';
import type { GovernedCall, GovernedCallType, ReconciliationWindow } from './types.js';

const CALL_TYPES: ReadonlySet<string> = new Set<GovernedCallType>(['llm', 'mcp', 'egress']);

interface AuditRow {
  id: string;
  type: string;
  subject: string | null;
  host: string | null;
  /** Whole Unix seconds. */
  at: string;
}

const COLUMNS = 'id, type, subject, host, floor(extract(epoch FROM at))::bigint AS at';

interface CallTuple {
  type: GovernedCallType;
  identityId: string;
  host: string | null;
}

/** The call events of the last day, compact: a tuple id and a second per event. */
export class GovernedCallIndex {
  private tuples: CallTuple[] = [];
  private byKey = new Map<string, number>();
  private tupleOf = new Uint32Array(1024);
  private at = new Float64Array(1024);
  private length = 0;
  private oldest = Infinity;

  get size(): number {
    return this.length;
  }

  add(type: GovernedCallType, identityId: string, host: string | null, atUnix: number): void {
    const key = `${type}\u0001${identityId}\u0001${host ?? '\u0000'}`;
    let t = this.byKey.get(key);
    if (t === undefined) {
      t = this.tuples.length;
      this.tuples.push({ type, identityId, host });
      this.byKey.set(key, t);
    }
    if (this.length === this.tupleOf.length) {
      const tupleOf = new Uint32Array(this.length * 2);
      tupleOf.set(this.tupleOf);
      const at = new Float64Array(this.length * 2);
      at.set(this.at);
      this.tupleOf = tupleOf;
      this.at = at;
    }
    this.tupleOf[this.length] = t;
    this.at[this.length] = atUnix;
    this.length += 1;
    if (atUnix < this.oldest) this.oldest = atUnix;
  }

  /** One call per (type, identity, host) with an event in the window (bounds inclusive): its count, its latest second. */
  aggregate(window: ReconciliationWindow): GovernedCall[] {
    const { windowStartUnix: start, windowEndUnix: end } = window;
    const counts = new Float64Array(this.tuples.length);
    const latest = new Float64Array(this.tuples.length);
    const touched: number[] = [];
    for (let i = 0; i < this.length; i++) {
      const at = this.at[i]!;
      if (at < start || at > end) continue;
      const t = this.tupleOf[i]!;
      if (counts[t] === 0) touched.push(t);
      counts[t] = counts[t]! + 1;
      if (at > latest[t]!) latest[t] = at;
    }
    return touched.map((t) => {
      const tuple = this.tuples[t]!;
      return {
        type: tuple.type,
        identityId: tuple.identityId,
        ...(tuple.host !== null ? { host: tuple.host } : {}),
        atUnix: latest[t]!,
        count: counts[t]!,
      };
    });
  }

  /** Drops the events before `cutoffUnix`. */
  evictBefore(cutoffUnix: number): void {
    if (this.oldest >= cutoffUnix) return;
    let kept = 0;
    let oldest = Infinity;
    for (let i = 0; i < this.length; i++) {
      const at = this.at[i]!;
      if (at < cutoffUnix) continue;
      this.tupleOf[kept] = this.tupleOf[i]!;
      this.at[kept] = at;
      if (at < oldest) oldest = at;
      kept += 1;
    }
    this.length = kept;
    this.oldest = oldest;
  }
}

/** The replica's GovernedCallIndex, kept up to date by tailing `audit_events`. */
export class GovernedCallFeed {
  readonly index = new GovernedCallIndex();
  private readonly tail: TableTail<AuditRow>;
  private lastEvictMs = 0;
  private cutoffUnix = 0;

  constructor(
    db: Queryable,
    private readonly options: TableTailOptions,
  ) {
    this.tail = new TableTail<AuditRow>(
      {
        after: async (afterId, limit) =>
          (await db.query<AuditRow>(`SELECT ${COLUMNS} FROM audit_events WHERE id > $1 ORDER BY id LIMIT $2`, [afterId, limit])).rows,
        byIds: async (ids) => (await db.query<AuditRow>(`SELECT ${COLUMNS} FROM audit_events WHERE id = ANY($1::bigint[])`, [ids])).rows,
        // The audit log keeps everything: start at the first event of the last day, not at the beginning of time.
        start: async () => {
          const cutoff = Math.floor(options.nowMs() / 1000) - INDEX_RETENTION_SECONDS;
          const r = await db.query<{ first: string | null }>(
            `SELECT coalesce((SELECT min(id) FROM audit_events WHERE at >= to_timestamp($1)), (SELECT coalesce(max(id), 0) + 1 FROM audit_events)) AS first`,
            [cutoff],
          );
          return Math.max(0, Number(r.rows[0]?.first ?? 0) - 1 - START_MARGIN_IDS);
        },
      },
      (row) => this.append(row),
      options,
    );
  }

  async catchUp(): Promise<void> {
    this.cutoffUnix = this.options.nowMs() / 1000 - INDEX_RETENTION_SECONDS;
    await this.tail.catchUp();
    const now = this.options.nowMs();
    if (now - this.lastEvictMs >= 60_000) {
      this.lastEvictMs = now;
      this.index.evictBefore(now / 1000 - INDEX_RETENTION_SECONDS);
    }
  }

  settle(): Promise<void> {
    return this.tail.settle();
  }

  private append(row: AuditRow): void {
    if (!CALL_TYPES.has(row.type) || row.subject === null) return;
    const at = Number(row.at);
    if (at < this.cutoffUnix) return;
    this.index.add(row.type as GovernedCallType, row.subject, row.host, at);
  }
}
