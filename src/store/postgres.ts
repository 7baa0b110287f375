import pg from 'pg';
import type { Db, ListenOptions, QueryResult, Queryable } from './db.js';
import { storableParams } from './storable.js';

// Keep bigint (int8) and numeric as strings from the driver; domains cast what they need in SQL.
// Timestamps come back as Date objects on both drivers.

interface Subscription {
  channel: string;
  onPayload: (payload: string) => void;
  options: ListenOptions;
}

/**
 * One connection of its own, opened on first use, that no other query shares: the store's `liveness` lane. Its
 * queries run one at a time in order; a lost connection is dropped and the next query opens another.
 */
class DedicatedConnection implements Queryable {
  private client: pg.Client | null = null;
  /** The last query queued: the next one starts after it settles, so connecting happens once at a time. */
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly onError: (err: Error) => void,
  ) {}

  query<T>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<T>> {
    const run = this.tail.then(async () => {
      const client = await this.connect();
      const r = await client.query(sql, storableParams(params) as unknown[]);
      return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
    });
    this.tail = run.catch(() => {});
    return run;
  }

  private async connect(): Promise<pg.Client> {
    if (this.closed) throw new Error('the store is closed');
    if (this.client) return this.client;
    const client = new pg.Client({ connectionString: this.url, keepAlive: true });
    const lost = (err?: Error) => {
      if (this.client !== client) return;
      this.client = null;
      if (err) this.onError(err);
      client.end().catch(() => {});
    };
    client.on('error', lost);
    client.on('end', () => lost());
    await client.connect();
    this.client = client;
    return client;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.tail;
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }
}

/**
 * PostgreSQL store: a pool for queries and transactions, one dedicated connection for LISTEN that reconnects with
 * backoff and tells subscribers to resync, since NOTIFY has no replay, and one for liveness stamps (`liveness`).
 */
export class PostgresDb implements Db {
  readonly kind = 'postgres' as const;
  private readonly pool: pg.Pool;
  private listener: pg.Client | null = null;
  private readonly subscriptions = new Set<Subscription>();
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private connecting: Promise<void> | null = null;
  readonly liveness: DedicatedConnection;

  constructor(
    private readonly url: string,
    private readonly onError: (err: Error) => void = () => {},
  ) {
    this.pool = new pg.Pool({ connectionString: url, max: 20, idleTimeoutMillis: 30_000 });
    this.pool.on('error', (err) => this.onError(err));
    this.liveness = new DedicatedConnection(url, (err) => this.onError(err));
  }

  async query<T>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<T>> {
    const r = await this.pool.query(sql, storableParams(params) as unknown[]);
    return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const tx: Queryable = {
      async query<R>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<R>> {
        const r = await client.query(sql, storableParams(params) as unknown[]);
        return { rows: r.rows as R[], rowCount: r.rowCount ?? 0 };
      },
    };
    try {
      await client.query('BEGIN');
      const result = await fn(tx);
      await client.query('COMMIT');
      client.release();
      return result;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
        client.release();
      } catch (rollbackErr) {
        client.release(rollbackErr as Error);
      }
      throw err;
    }
  }

  async listen(channel: string, onPayload: (payload: string) => void, options: ListenOptions = {}): Promise<() => Promise<void>> {
    const sub: Subscription = { channel, onPayload, options };
    this.subscriptions.add(sub);
    await this.ensureListener();
    if (this.listener) await this.listener.query(`LISTEN ${quoteIdent(channel)}`);
    return async () => {
      this.subscriptions.delete(sub);
      const stillWanted = [...this.subscriptions].some((s) => s.channel === channel);
      if (!stillWanted && this.listener) await this.listener.query(`UNLISTEN ${quoteIdent(channel)}`).catch(() => {});
    };
  }

  private ensureListener(): Promise<void> {
    if (this.listener || this.closed) return Promise.resolve();
    this.connecting ??= this.connectListener().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async connectListener(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    client.on('notification', (msg) => {
      for (const s of this.subscriptions) if (s.channel === msg.channel) s.onPayload(msg.payload ?? '');
    });
    const lost = (err?: Error) => {
      if (this.listener !== client) return;
      this.listener = null;
      if (err) this.onError(err);
      client.end().catch(() => {});
      this.scheduleReconnect(250);
    };
    client.on('error', lost);
    client.on('end', () => lost());
    await client.connect();
    this.listener = client;
    for (const channel of new Set([...this.subscriptions].map((s) => s.channel))) {
      await client.query(`LISTEN ${quoteIdent(channel)}`);
    }
  }

  private scheduleReconnect(delayMs: number): void {
    if (this.closed || this.reconnectTimer) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.ensureListener().then(
        () => {
          for (const s of this.subscriptions) s.options.onResync?.();
        },
        (err: Error) => {
          this.onError(err);
          this.scheduleReconnect(Math.min(delayMs * 2, 10_000));
        },
      );
    }, delayMs);
    this.reconnectTimer.unref();
  }

  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => {});
    await this.liveness.close();
    await this.pool.end();
  }
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
