import { mkdirSync } from 'node:fs';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import type { Db, ListenOptions, QueryResult, Queryable } from './db.js';

/**
 * Embedded store: PGlite in this process, on a directory or in memory. One connection, so PGlite itself
 * serializes queries and transactions; LISTEN/NOTIFY works in-process.
 */
export class PgliteDb implements Db {
  readonly kind = 'pglite' as const;

  private constructor(private readonly pg: PGlite) {}

  static async open(dataDir: string | 'memory'): Promise<PgliteDb> {
    if (dataDir !== 'memory') mkdirSync(dataDir, { recursive: true });
    const pg = await PGlite.create(dataDir === 'memory' ? undefined : dataDir);
    return new PgliteDb(pg);
  }

  async query<T>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<T>> {
    const r = await this.pg.query<T>(sql, params as unknown[]);
    return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
  }

  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.pg.transaction(async (t: Transaction) => {
      const tx: Queryable = {
        async query<R>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<R>> {
          const r = await t.query<R>(sql, params as unknown[]);
          return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
        },
      };
      return fn(tx);
    });
  }

  // The in-process connection cannot be lost, so onResync is never needed.
  async listen(channel: string, onPayload: (payload: string) => void, _options?: ListenOptions): Promise<() => Promise<void>> {
    const unlisten = await this.pg.listen(channel, onPayload);
    return () => unlisten();
  }

  async ping(): Promise<void> {
    await this.pg.query('SELECT 1');
  }

  async close(): Promise<void> {
    if (!this.pg.closed) await this.pg.close();
  }
}
