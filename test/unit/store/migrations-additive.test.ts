/**
 * Migrations only add (deploy/README.md "Upgrades"): during a rolling update the previous version runs on the new
 * schema beside the new one, and a rollback needs no down-migration. So a migration creates (tables, indexes,
 * sequences, functions, triggers) or adds a column that the previous version's INSERTs can leave out (nullable, or
 * NOT NULL with a DEFAULT); it never drops, renames, retypes, or tightens what a released version reads or writes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listMigrations, splitStatements } from '../../../src/store/migrate.js';

const ADDITIVE = [
  /^CREATE (UNIQUE )?INDEX (IF NOT EXISTS )?\w+ ON /i,
  /^CREATE TABLE (IF NOT EXISTS )?\w+ \(/i,
  /^CREATE SEQUENCE (IF NOT EXISTS )?\w+/i,
  /^CREATE (OR REPLACE )?FUNCTION \w+\(/i,
  /^CREATE TRIGGER \w+ /i,
];
const ADD_COLUMN = /^ALTER TABLE (\w+) ADD COLUMN (IF NOT EXISTS )?(\w+) ([^;]*?);?$/i;
/**
 * Relaxing a column (015: an OIDC console session has no token) is additive too: every row and INSERT the previous
 * version makes still fits. A row it cannot read (a session without a token) is one it never made; it refuses it.
 */
const DROP_NOT_NULL = /^ALTER TABLE \w+ ALTER COLUMN \w+ DROP NOT NULL;?$/i;

/**
 * A block that runs additive statements only on one store (021: PostgreSQL's identity indexes, which PGlite skips):
 * additive when every statement inside is.
 */
const CONDITIONAL_BLOCK = /^DO \$\$ BEGIN IF ([^;]+?) THEN (.+) END IF; END; \$\$;?$/i;

/**
 * A block that runs only on the embedded store (022: PGlite drops two audit indexes) may also drop an index. The
 * embedded store is one process holding its data directory's lock, so no previous version runs beside the new one,
 * and a version rolled back to still runs every query it has (an index is never named by a query, only chosen).
 */
const EMBEDDED_ONLY = /^version\(\) LIKE '%PGlite%'$/i;
const DROP_INDEX = /^DROP INDEX (IF EXISTS )?\w+;?$/i;

/** Why a statement is not additive, or null. */
function notAdditive(statement: string, embeddedOnly = false): string | null {
  const s = statement.replace(/\s+/g, ' ').trim();
  const block = CONDITIONAL_BLOCK.exec(s);
  if (block) {
    const embedded = EMBEDDED_ONLY.test(block[1]!.trim());
    const inner = block[2]!.split(';').map((x) => x.trim()).filter((x) => x !== '');
    const why = inner.map((x) => notAdditive(x, embedded)).find((x) => x !== null);
    return why ?? null;
  }
  if (embeddedOnly && DROP_INDEX.test(s)) return null;
  if (ADDITIVE.some((r) => r.test(s)) || DROP_NOT_NULL.test(s)) return null;
  const add = ADD_COLUMN.exec(s);
  if (add) {
    const definition = add[4]!;
    if (/\bNOT NULL\b/i.test(definition) && !/\bDEFAULT\b/i.test(definition)) return `column ${add[1]}.${add[3]} is NOT NULL without a DEFAULT: the previous version's INSERTs would fail`;
    if (/\b(REFERENCES|CHECK|UNIQUE|PRIMARY KEY)\b/i.test(definition)) return `column ${add[1]}.${add[3]} adds a constraint the previous version may break`;
    return null;
  }
  return `not an additive statement: ${s.slice(0, 120)}`;
}

/**
 * Migration 017 replaces audit_events by a table partitioned by day under the same name, with the same columns,
 * defaults and sequence: the previous version's INSERTs and SELECTs run on it unchanged (docs/audit.md).
 */
const REPLACES_IN_PLACE = new Set([17]);

test('every migration only adds', () => {
  const problems: string[] = [];
  for (const m of listMigrations()) {
    if (REPLACES_IN_PLACE.has(m.version)) continue;
    for (const statement of splitStatements(m.sql)) {
      const why = notAdditive(statement);
      if (why) problems.push(`${String(m.version).padStart(3, '0')}_${m.name}: ${why}`);
    }
  }
  assert.deepEqual(problems, []);
});

test('the check refuses what a rolling update cannot run beside', () => {
  for (const s of [
    'DROP TABLE grants',
    'ALTER TABLE grants DROP COLUMN note',
    'ALTER TABLE grants RENAME COLUMN note TO notes',
    'ALTER TABLE grants ALTER COLUMN note TYPE integer',
    'ALTER TABLE grants ADD COLUMN weight integer NOT NULL',
    'ALTER TABLE grants ADD COLUMN parent text REFERENCES grants(id)',
    'ALTER TABLE grants ADD CONSTRAINT x CHECK (true)',
    "DO $$ BEGIN IF version() NOT LIKE '%PGlite%' THEN CREATE INDEX a ON grants (note); DROP TABLE grants; END IF; END; $$",
    // An index dropped on PostgreSQL (replicas of two versions side by side), or anything but an index on PGlite.
    'DROP INDEX audit_events_at',
    "DO $$ BEGIN IF version() NOT LIKE '%PGlite%' THEN DROP INDEX audit_events_at; END IF; END; $$",
    "DO $$ BEGIN IF version() LIKE '%PGlite%' THEN DROP TABLE grants; END IF; END; $$",
  ]) {
    assert.notEqual(notAdditive(s), null, s);
  }
  assert.equal(notAdditive('ALTER TABLE grants ADD COLUMN weight integer NOT NULL DEFAULT 0'), null);
  assert.equal(notAdditive('ALTER TABLE grants ADD COLUMN note text'), null);
  assert.equal(notAdditive("DO $$ BEGIN IF version() LIKE '%PGlite%' THEN DROP INDEX audit_events_at; END IF; END; $$"), null);
});
