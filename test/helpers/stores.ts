/**
 * The store matrix: every integration suite runs against embedded PGlite and against PostgreSQL
 * (127.0.0.1:5432 by default, TEST_DATABASE_URL to change), each run on a fresh database.
 * REINS_TEST_STORES=pglite (or postgres) narrows the matrix. Outside CI an unreachable PostgreSQL skips
 * its half with a notice; in CI it fails.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export type StoreKind = 'pglite' | 'postgres';

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function storeKinds(): StoreKind[] {
  const wanted = (process.env.REINS_TEST_STORES ?? 'pglite,postgres').split(',').map((s) => s.trim());
  return wanted.filter((s): s is StoreKind => s === 'pglite' || s === 'postgres');
}

let reachable: Promise<boolean> | null = null;

export function postgresReachable(): Promise<boolean> {
  reachable ??= (async () => {
    const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 30_000 });
    try {
      await client.connect();
      await client.end();
      return true;
    } catch (err) {
      if (process.env.CI) throw new Error(`PostgreSQL is required in CI but unreachable at ${ADMIN_URL}: ${(err as Error).message}`);
      process.stderr.write(`notice: PostgreSQL unreachable at ${ADMIN_URL}; skipping the PostgreSQL half of the suite\n`);
      return false;
    }
  })();
  return reachable;
}

/** Creates an empty database and returns its URL and a function that drops it. */
export async function freshPostgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `reins_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: ADMIN_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
