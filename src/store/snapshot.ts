/**
 * A replica's in-memory copy of a small table set that the request path reads without a query: the
 * policy set, budget rules, model-access rules. It is re-read whole when a change is announced on its
 * NOTIFY channel and every `refreshSeconds` as the safety net under a lost notification.
 *
 * Reads are serialised: a notification that arrives while a read is in flight schedules one more read
 * after it, so the last read always starts after the last announced change committed. A failed read
 * keeps the previous value (and reports the error); it never leaves the replica with nothing.
 */
import type { Db, Queryable } from './db.js';

export interface SnapshotOptions<T> {
  channel: string;
  refreshSeconds: number;
  load: (q: Queryable) => Promise<T>;
  /** Subscribe to NOTIFY (default true). */
  listen?: boolean;
  onError?: (err: Error) => void;
}

export class Snapshot<T> {
  private current: T | undefined;
  private timer: NodeJS.Timeout | null = null;
  private unlisten: (() => Promise<void>) | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  /** Increments on every successful read; lets tests and callers see that a read happened. */
  version = 0;

  constructor(
    private readonly db: Db,
    private readonly options: SnapshotOptions<T>,
  ) {}

  /** Reads once (throwing when that first read fails) and starts listening and re-reading. */
  async start(): Promise<void> {
    if (this.options.listen !== false) {
      this.unlisten = await this.db.listen(this.options.channel, () => void this.reload(), {
        onResync: () => void this.reload(),
      });
    }
    this.current = await this.options.load(this.db);
    this.version++;
    this.timer = setInterval(() => void this.reload(), this.options.refreshSeconds * 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.unlisten?.();
    this.unlisten = null;
    this.again = false;
    await this.running?.catch(() => {});
  }

  get value(): T {
    if (this.current === undefined) throw new Error(`snapshot of ${this.options.channel} read before start()`);
    return this.current;
  }

  /** Re-reads now; resolves when a read that started after this call has finished. */
  reload(): Promise<void> {
    if (this.running) {
      // The loop in flight reads once more before it resolves.
      this.again = true;
      return this.running;
    }
    this.running = this.loop().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        this.current = await this.options.load(this.db);
        this.version++;
      } catch (err) {
        this.options.onError?.(err as Error);
      }
    } while (this.again);
  }
}
