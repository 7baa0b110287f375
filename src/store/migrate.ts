import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db } from './db.js';

// Resolves to src/store/migrations from both src/store (tsx) and dist/store (built): the SQL files are
// shipped as they are, never copied, so PGlite and PostgreSQL run the very same text.
const MIGRATIONS_DIR = fileURLToPath(new URL('../../src/store/migrations/', import.meta.url));

// Any constant: every replica takes the same transaction-level advisory lock, so replicas starting together
// apply each migration exactly once.
const MIGRATION_LOCK = 72_657_301;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function listMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.slice(0, 3)), name: f.slice(4, -4), sql: readFileSync(`${dir}/${f}`, 'utf8') }));
}

/** Applies the migrations not yet applied, in order, each in its own transaction. Returns their names. */
export async function migrate(db: Db, migrations: Migration[] = listMigrations()): Promise<string[]> {
  // Nothing to apply is the common case (every restart, every CLI command): one read, without the lock and the
  // transaction per migration. Migrations are only ever added, so a schema found complete stays complete.
  if (await allApplied(db, migrations)) return [];
  // Under the lock too: two replicas' concurrent CREATE TABLE IF NOT EXISTS can both try to create it.
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         version integer PRIMARY KEY,
         name text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
  });
  const applied: string[] = [];
  for (const m of migrations) {
    const done = await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      const seen = await tx.query('SELECT 1 FROM schema_migrations WHERE version = $1', [m.version]);
      if (seen.rows.length > 0) return false;
      for (const statement of splitStatements(m.sql)) await tx.query(statement);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      return true;
    });
    if (done) applied.push(`${String(m.version).padStart(3, '0')}_${m.name}`);
  }
  return applied;
}

async function allApplied(db: Db, migrations: Migration[]): Promise<boolean> {
  const table = await db.query<{ t: string | null }>(`SELECT to_regclass('schema_migrations')::text AS t`);
  if (table.rows[0]?.t == null) return false;
  const r = await db.query<{ version: number }>('SELECT version FROM schema_migrations');
  const done = new Set(r.rows.map((x) => Number(x.version)));
  return migrations.every((m) => done.has(m.version));
}

export async function pendingMigrations(db: Db): Promise<number> {
  const all = listMigrations();
  const r = await db.query<{ version: number }>('SELECT version FROM schema_migrations');
  const done = new Set(r.rows.map((x) => Number(x.version)));
  return all.filter((m) => !done.has(m.version)).length;
}

/**
 * Splits a migration into statements so both drivers run them with the extended protocol. Statements end
 * with `;` at the end of a line; function bodies use $$ quoting, inside which nothing is split.
 */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let current: string[] = [];
  let inDollar = false;
  for (const line of sql.split('\n')) {
    if (/^\s*--/.test(line) && !inDollar) continue;
    current.push(line);
    const dollars = line.match(/\$\$/g)?.length ?? 0;
    if (dollars % 2 === 1) inDollar = !inDollar;
    if (!inDollar && /;\s*$/.test(line)) {
      const stmt = current.join('\n').trim();
      if (stmt.replace(/;$/, '').trim()) out.push(stmt);
      current = [];
    }
  }
  const rest = current.join('\n').trim();
  if (rest) out.push(rest);
  return out;
}
