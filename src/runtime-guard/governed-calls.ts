/**
 * Governed calls for the reconciliation's `n` and `governedCalls`, from the audit log: the gateway writes one decision
 * event per call of type `llm`, `mcp` or `egress`, with `subject` the call's agent (or the developer when no agent was
 * named) and, for egress only, the destination `host`. An allowed call also gets an end event (`…_end`, same
 * `callId`) when it is over; only decision events are counted, so each call counts once, also when its replica
 * stopped before the end event was written (audit/call-events.ts).
 *
 * A day of gateway traffic is too much to aggregate in SQL per answer (100,000 events take 50–200 ms), so each
 * replica keeps the last day of call events in memory, tailing `audit_events` by id like the observations
 * (table-tail.ts): per tuple (type, identity, host) and second, a count. For a window the counts are summed per
 * tuple, and the engine gets one call per tuple with its `count`.
 */
import { isCallEnd } from '../audit/call-events.js';
import type { Queryable } from '../store/db.js';
import { INDEX_RETENTION_SECONDS, START_MARGIN_IDS } from './observation-store.js';
import { TableTail, type TableTailOptions } from './table-tail.js';
import { GOVERNED_CALL_TYPES, type GovernedCallType } from '../shared/governed-call.js';
import type { GovernedCall, ReconciliationWindow } from './types.js';

const CALL_TYPES: ReadonlySet<string> = new Set<string>(GOVERNED_CALL_TYPES);

interface AuditRow {
  id: string;
  type: string;
  action: string;
  subject: string | null;
  host: string | null;
  /** Whole Unix seconds. */
  at: string;
}

const COLUMNS = 'id, type, action, subject, host, floor(extract(epoch FROM at))::bigint AS at';

interface CallTuple {
  type: GovernedCallType;
  identityId: string;
  host: string | null;
}

/**
 * The call events of the last day, compact: one entry per (tuple, second) with a count. Events of one tuple in one
 * second (a busy agent's calls to one host) add to the tuple's latest entry instead of taking one each, so memory
 * follows the distinct tuples active per second, not the call rate: 12 bytes per entry, where one entry per event
 * would be 1 GB a day per replica at 1,000 calls/s. Sums over a window are exact at the second, as before.
 */
export class GovernedCallIndex {
  private tuples: CallTuple[] = [];
  private byKey = new Map<string, number>();
  /** Per tuple, its latest entry: where an event of the same second adds its count. */
  private latestEntry: number[] = [];
  private tupleOf = new Uint32Array(1024);
  /** Whole Unix seconds (a Uint32 holds them until 2106). */
  private at = new Uint32Array(1024);
  private count = new Uint32Array(1024);
  private entries = 0;
  private events = 0;
  private oldest = Infinity;

  /** Events held. */
  get size(): number {
    return this.events;
  }

  /** Entries stored: at most one per tuple and second. */
  get entryCount(): number {
    return this.entries;
  }

  add(type: GovernedCallType, identityId: string, host: string | null, atUnix: number): void {
    const key = `${type}\u0001${identityId}\u0001${host ?? '\u0000'}`;
    let t = this.byKey.get(key);
    if (t === undefined) {
      t = this.tuples.length;
      this.tuples.push({ type, identityId, host });
      this.byKey.set(key, t);
      this.latestEntry.push(-1);
    }
    this.events += 1;
    if (atUnix < this.oldest) this.oldest = atUnix;
    const latest = this.latestEntry[t]!;
    if (latest >= 0 && this.at[latest] === atUnix) {
      this.count[latest] = this.count[latest]! + 1;
      return;
    }
    if (this.entries === this.tupleOf.length) this.grow();
    this.tupleOf[this.entries] = t;
    this.at[this.entries] = atUnix;
    this.count[this.entries] = 1;
    this.latestEntry[t] = this.entries;
    this.entries += 1;
  }

  /** One call per (type, identity, host) with an event in the window (bounds inclusive): its count, its latest second. */
  aggregate(window: ReconciliationWindow): GovernedCall[] {
    const { windowStartUnix: start, windowEndUnix: end } = window;
    const counts = new Float64Array(this.tuples.length);
    const latest = new Float64Array(this.tuples.length);
    const touched: number[] = [];
    for (let i = 0; i < this.entries; i++) {
      const at = this.at[i]!;
      if (at < start || at > end) continue;
      const t = this.tupleOf[i]!;
      if (counts[t] === 0) touched.push(t);
      counts[t] = counts[t]! + this.count[i]!;
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
    let events = 0;
    let oldest = Infinity;
    this.latestEntry.fill(-1);
    for (let i = 0; i < this.entries; i++) {
      const at = this.at[i]!;
      if (at < cutoffUnix) continue;
      const t = this.tupleOf[i]!;
      this.tupleOf[kept] = t;
      this.at[kept] = at;
      this.count[kept] = this.count[i]!;
      // Entries stay in arrival order, so the last one kept for a tuple is its latest.
      this.latestEntry[t] = kept;
      events += this.count[i]!;
      if (at < oldest) oldest = at;
      kept += 1;
    }
    this.entries = kept;
    this.events = events;
    this.oldest = oldest;
  }

  private grow(): void {
    const size = this.tupleOf.length * 2;
    const tupleOf = new Uint32Array(size);
    tupleOf.set(this.tupleOf);
    const at = new Uint32Array(size);
    at.set(this.at);
    const count = new Uint32Array(size);
    count.set(this.count);
    this.tupleOf = tupleOf;
    this.at = at;
    this.count = count;
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
    if (!CALL_TYPES.has(row.type) || row.subject === null || isCallEnd(row.action)) return;
    const at = Number(row.at);
    if (at < this.cutoffUnix) return;
    this.index.add(row.type as GovernedCallType, row.subject, row.host, at);
  }
}
