/**
 * The store's `liveness` lane (src/store/db.ts): on PostgreSQL a connection of its own, so a liveness stamp is
 * answered while every pooled connection is held, and a lost connection is replaced on the next query. On PGlite it
 * is the store itself.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PostgresDb } from '../../../src/store/postgres.js';
import { describeEachStore, WAIT_MS, waitFor } from '../../helpers/harness.js';
import { freshPostgresDatabase, postgresReachable, storeKinds } from '../../helpers/stores.js';

describe('the liveness lane on PostgreSQL', { skip: !storeKinds().includes('postgres') }, async () => {
  if (!(await postgresReachable())) return;
  let database: { url: string; drop: () => Promise<void> };
  let db: PostgresDb;
  let admin: PostgresDb;
  before(async () => {
    database = await freshPostgresDatabase();
    db = new PostgresDb(database.url);
    admin = new PostgresDb(database.url);
  });
  after(async () => {
    await db?.close();
    await admin?.close();
    await database?.drop();
  });

  const pid = async () => (await db.liveness.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;

  it('answers while every pooled connection is busy, on a connection no pooled query uses', async () => {
    let released = false;
    // More long queries than the pool's 20 connections: pooled queries queue; each ends once the test lets it.
    await admin.query('CREATE TABLE gate (open boolean NOT NULL)');
    await admin.query('INSERT INTO gate VALUES (false)');
    const held = Promise.all(
      Array.from({ length: 25 }, () =>
        db.query(`DO $$ BEGIN WHILE NOT (SELECT open FROM gate) LOOP PERFORM pg_sleep(0.05); END LOOP; END $$`).then(() => {
          released = true;
        }),
      ),
    );
    const busy = async () => Number((await admin.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'DO $$ BEGIN WHILE%' AND state = 'active'`)).rows[0]!.n);
    assert.notEqual(await waitFor(async () => (await busy()) === 20, WAIT_MS), -1, 'the pool is saturated');
    // Were it pooled it would wait for the gate, which opens only below: fail after WAIT_MS instead of hanging.
    const lane = await Promise.race([pid(), new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the liveness query waited behind the pool')), WAIT_MS).unref())]);
    const pooled = (await admin.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'DO $$ BEGIN WHILE%'`)).rows.map((r) => r.pid);
    assert.equal(released, false, 'answered while the pool was still held');
    assert.ok(!pooled.includes(lane));
    await admin.query('UPDATE gate SET open = true');
    await held;
  });

  it('replaces a lost connection on the next query', async () => {
    const before = await pid();
    await admin.query('SELECT pg_terminate_backend($1)', [before]);
    let after = before;
    // The query racing the termination may fail; a later one opens a new connection.
    assert.notEqual(await waitFor(async () => (after = await pid().catch(() => before)) !== before, WAIT_MS, 50), -1);
    assert.notEqual(after, before);
  });

  it('refuses queries once the store is closed', async () => {
    const other = new PostgresDb(database.url);
    await other.liveness.query('SELECT 1');
    await other.close();
    await assert.rejects(other.liveness.query('SELECT 1'), /closed/);
  });
});

describeEachStore('the liveness lane', ({ store, kind }) => {
  it('runs statements like the store itself', { skip: kind !== 'pglite' }, async () => {
    const db = store().db!;
    assert.equal(db.liveness, db);
    assert.equal((await db.liveness.query<{ n: number }>('SELECT 1 AS n')).rows[0]!.n, 1);
  });
});
