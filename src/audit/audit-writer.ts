/**
 * Writes gateway audit events off the request path, in batches, without ever dropping one.
 *
 * `enqueue` adds an event to an in-memory queue and returns at once while the queue has room. A flush
 * (every `flushMs`, or as soon as `batchSize` events wait) writes up to `batchSize` events in one
 * multi-row INSERT. A failed write keeps the events at the head of the queue and retries with backoff.
 * When the queue is full, `enqueue` returns a promise that settles once there is room again: the caller
 * (the gateway, before it admits a call) waits, which slows intake instead of losing events.
 * `close` writes everything still queued.
 *
 * The gateway hands each governed call's decision event to `enqueue` when the call is decided, before it forwards
 * anything, and its end event when it is over (call-events.ts). A queued event reaches the store within `flushMs`
 * (25 ms, the default the server runs with) while the store answers: a call that
 * lives longer than the flush interval is never lost, even if its replica is killed mid-call; a replica killed within
 * that interval of a decision may lose that decision with the call it was about to forward. While the store is
 * failing, queued events wait in memory (and intake slows once the queue is full) until it answers again.
 */
import { actorId } from '../shared/actor.js';
import type { Queryable } from '../store/db.js';
import type { AuditInput } from './audit.js';

export interface AuditWriterOptions {
  batchSize?: number;
  flushMs?: number;
  /** Events held in memory before intake waits. */
  maxQueue?: number;
  onError?: (err: Error) => void;
}

/** An event as the INSERT unpacks it. Serialised for the whole batch at once, when it is flushed (one call is cheaper). */
function rowOf(e: AuditInput): unknown[] {
  return [e.type, e.action, e.outcome ?? 'ok', e.actor.kind, actorId(e.actor), e.subject ?? null, e.host ?? null, e.data ?? {}];
}

/**
 * The row of an event whose data is no JSON (a BigInt, a cycle: a defect of whatever recorded it): the event is
 * still written, who did what and how it ended, with its data replaced by why it could not be kept. Without this
 * the batch could never be written and every later event would wait behind it.
 */
function writableRowOf(e: AuditInput): unknown[] {
  const row = rowOf(e);
  try {
    JSON.stringify(row);
    return row;
  } catch (err) {
    row[7] = { unwritableData: `the event's data could not be written as JSON: ${(err as Error).message}` };
    return row;
  }
}

export class AuditWriter {
  private queue: AuditInput[] = [];
  private waiters: (() => void)[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private failures = 0;
  private closed = false;
  private readonly batchSize: number;
  private readonly flushMs: number;
  private readonly maxQueue: number;
  /** Events written since start; for metrics and tests. */
  written = 0;

  constructor(
    private readonly db: Queryable,
    private readonly options: AuditWriterOptions = {},
  ) {
    // 200 events are ~100 KB of JSON: a larger batch's text (and the driver's copy of it) is a large object in V8,
    // given fresh pages each flush, and their page faults cost more at a high call rate than the extra statements.
    this.batchSize = options.batchSize ?? 200;
    this.flushMs = options.flushMs ?? 25;
    this.maxQueue = options.maxQueue ?? 20_000;
  }

  get pending(): number {
    return this.queue.length;
  }

  /** Resolves at once while the queue has room; otherwise when it has drained below the limit. */
  ready(): Promise<void> | undefined {
    if (this.queue.length < this.maxQueue) return undefined;
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Queues one event. Never drops it: past the limit the event is still queued and the returned promise waits for room. */
  enqueue(event: AuditInput): Promise<void> | undefined {
    if (event.host && event.type !== 'egress') throw new Error('only egress audit events carry a host');
    this.queue.push(event);
    this.schedule();
    return this.ready();
  }

  /** Writes everything queued now; resolves when the queue is empty or, with the store failing, at the deadline. */
  async drain(deadlineMs = Number.POSITIVE_INFINITY): Promise<void> {
    const until = Date.now() + deadlineMs;
    while ((this.queue.length > 0 || this.flushing) && Date.now() < until) {
      await (this.flushing ?? this.flush());
    }
  }

  /** Stops the timer and writes what is queued, giving a failing store `deadlineMs` before giving up (and saying so). */
  async close(deadlineMs = 10_000): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.drain(deadlineMs);
    if (this.queue.length > 0) {
      this.options.onError?.(new Error(`${this.queue.length} audit events could not be written before shutdown: the store is unreachable`));
    }
    this.release();
  }

  private schedule(): void {
    if (this.flushing) return;
    if (this.queue.length >= this.batchSize) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      void this.flush();
      return;
    }
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = null;
        void this.flush();
      }, this.flushMs);
    }
  }

  private flush(): Promise<void> {
    this.flushing ??= this.writeBatch().finally(() => {
      this.flushing = null;
      if (this.queue.length > 0 && !this.closed) this.schedule();
    });
    return this.flushing;
  }

  private async writeBatch(): Promise<void> {
    const batch = this.queue.slice(0, this.batchSize);
    if (batch.length === 0) return;
    // The whole batch as one JSON parameter, unpacked by the database in order: one bind value instead of eight
    // per event, and one statement text whatever the batch size (the embedded store pays per bind and per parse).
    let rows: string;
    try {
      rows = JSON.stringify(batch.map(rowOf));
    } catch {
      rows = JSON.stringify(batch.map(writableRowOf));
    }
    try {
      await this.db.query(
        `INSERT INTO audit_events (type, action, outcome, actor_kind, actor_id, subject, host, data)
         SELECT e->>0, e->>1, e->>2, e->>3, e->>4, e->>5, e->>6, e->7
           FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS t(e, n) ORDER BY n`,
        [rows],
      );
    } catch (err) {
      this.failures++;
      this.options.onError?.(err as Error);
      // Keep the batch; back off up to 5 s. Intake waits once the queue is full.
      await new Promise((r) => setTimeout(r, Math.min(5000, 50 * 2 ** Math.min(this.failures, 7))));
      return;
    }
    this.failures = 0;
    this.queue.splice(0, batch.length);
    this.written += batch.length;
    this.release();
  }

  private release(): void {
    while (this.waiters.length > 0 && (this.queue.length < this.maxQueue || this.closed)) this.waiters.shift()!();
  }
}
