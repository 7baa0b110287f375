/**
 * The store adapter's contract (src/store/db.ts) on both stores: rows and types, transactions, errors with their
 * SQLSTATE, NOTIFY at commit only. Then what is particular to the embedded store, which runs PGlite in a worker
 * thread: its work does not hold the event loop, its thread runs at a lower priority, a forgotten store does not
 * hold the process open, a data directory survives a restart.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Db } from '../../../src/store/db.js';
import { PgliteDb } from '../../../src/store/pglite.js';
import { STORE_THREAD_NICE } from '../../../src/store/pglite-worker.js';
import { PostgresDb } from '../../../src/store/postgres.js';
import { listMigrations } from '../../../src/store/migrate.js';
import { describeEachStore, WAIT_MS, waitFor } from '../../helpers/harness.js';
import { migratedTemplate } from '../../helpers/pglite-template.js';

describeEachStore('store adapter', ({ store, kind }) => {
  let db: Db;
  before(async () => {
    db = kind === 'pglite' ? store().db! : new PostgresDb(store().url!);
    await db.query('CREATE TABLE adapter_t (id int PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), doc jsonb, n int NOT NULL DEFAULT 0)');
  });
  after(async () => {
    if (kind === 'postgres') await db.close();
  });

  it('stores what PostgreSQL refuses as is, escaped: U+0000 in text and JSON, lone surrogates, in and out of transactions', async () => {
    await db.query('CREATE TABLE adapter_text (id int PRIMARY KEY, t text, doc jsonb, tags text[])');
    const doc = { prompt: 'a\u0000b', lone: 'x\ud800', pair: '\ud83e\udd16', literal: 'text \\u0000', [`k\u0000`]: 1 };
    await db.query('INSERT INTO adapter_text VALUES (1, $1, $2, $3)', ['a\u0000b \udfff', JSON.stringify(doc), ['t\u0000']]);
    await db.transaction((tx) => tx.query('INSERT INTO adapter_text (id, doc) VALUES (2, $1::jsonb)', [doc]));
    // The audit writer's way: a batch as one JSON parameter unpacked by the database.
    await db.query(`INSERT INTO adapter_text (id, t) SELECT (e->>0)::int, e->>1 FROM jsonb_array_elements($1::jsonb) AS e`, [JSON.stringify([[3, 'nul\u0000 in a batch']])]);
    const { rows } = await db.query<{ id: number; t: string | null; doc: Record<string, unknown> | null; tags: string[] | null }>('SELECT id, t, doc, tags FROM adapter_text ORDER BY id');
    const stored = { prompt: 'a\\u0000b', lone: 'x\ufffd', pair: '\ud83e\udd16', literal: 'text \\u0000', 'k\\u0000': 1 };
    assert.deepEqual(rows[0], { id: 1, t: 'a\\u0000b \ufffd', doc: stored, tags: ['t\\u0000'] });
    assert.deepEqual(rows[1]!.doc, stored);
    assert.equal(rows[2]!.t, 'nul\\u0000 in a batch');
    // Lookups use the same rewriting, so a stored value is found with the value that was given.
    assert.equal((await db.query('SELECT id FROM adapter_text WHERE t = $1', ['a\u0000b \udfff'])).rows.length, 1);
  });

  it('answers rows with timestamps as Dates and jsonb as values, and counts the rows a statement changed', async () => {
    const inserted = await db.query('INSERT INTO adapter_t (id, doc) VALUES (1, $1), (2, $2)', [JSON.stringify({ a: [1, 'x'] }), null]);
    assert.equal(inserted.rowCount, 2);
    const { rows } = await db.query<{ id: number; at: Date; doc: unknown }>('SELECT id, at, doc FROM adapter_t ORDER BY id');
    assert.equal(rows.length, 2);
    assert.ok(rows[0]!.at instanceof Date);
    assert.deepEqual(rows[0]!.doc, { a: [1, 'x'] });
    assert.equal(rows[1]!.doc, null);
    assert.equal((await db.query('UPDATE adapter_t SET n = n + 1')).rowCount, 2);
    assert.equal((await db.query('DELETE FROM adapter_t WHERE id = 99')).rowCount, 0);
  });

  it('rejects a failing statement with its SQLSTATE and constraint', async () => {
    await assert.rejects(db.query('INSERT INTO adapter_t (id) VALUES (1)'), (err: Error & { code?: string; constraint?: string }) => {
      assert.equal(err.code, '23505');
      assert.equal(err.constraint, 'adapter_t_pkey');
      assert.match(err.message, /duplicate key/);
      return true;
    });
    await assert.rejects(db.query('SELECT * FROM no_such_table'), { code: '42P01' });
  });

  it('commits a transaction as one, and delivers its NOTIFY at commit only', async () => {
    const heard: string[] = [];
    const unlisten = await db.listen('adapter_channel', (payload) => heard.push(payload));
    const result = await db.transaction(async (tx) => {
      await tx.query('INSERT INTO adapter_t (id) VALUES (10)');
      await tx.query(`SELECT pg_notify('adapter_channel', 'committed')`);
      return 'done';
    });
    assert.equal(result, 'done');
    const boom = new Error('the callback failed');
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query('INSERT INTO adapter_t (id) VALUES (11)');
        await tx.query(`SELECT pg_notify('adapter_channel', 'rolled back')`);
        throw boom;
      }),
      (err) => err === boom,
    );
    assert.notEqual(await waitFor(() => heard.length > 0, WAIT_MS), -1, 'the committed notification arrives');
    await db.query(`SELECT pg_notify('adapter_channel', 'marker')`);
    assert.notEqual(await waitFor(() => heard.includes('marker'), WAIT_MS), -1);
    assert.deepEqual(heard, ['committed', 'marker']);
    const ids = (await db.query<{ id: number }>('SELECT id FROM adapter_t WHERE id >= 10 ORDER BY id')).rows.map((r) => r.id);
    assert.deepEqual(ids, [10]);

    await unlisten();
    await db.query(`SELECT pg_notify('adapter_channel', 'after unlisten')`);
    await db.query('SELECT 1');
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(!heard.includes('after unlisten'));
  });

  it('rolls back a transaction whose statement failed, and the store goes on', async () => {
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query('INSERT INTO adapter_t (id) VALUES (20)');
        await tx.query('INSERT INTO adapter_t (id) VALUES (20)');
      }),
      { code: '23505' },
    );
    assert.equal((await db.query('SELECT 1 FROM adapter_t WHERE id = 20')).rowCount, 0);
    assert.equal((await db.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one, 1);
  });

  it('keeps concurrent transactions apart: twenty read-modify-write increments make twenty', async () => {
    await db.query('INSERT INTO adapter_t (id) VALUES (30)');
    await Promise.all(
      Array.from({ length: 20 }, () =>
        db.transaction(async (tx) => {
          const { rows } = await tx.query<{ n: number }>('SELECT n FROM adapter_t WHERE id = 30 FOR UPDATE');
          await tx.query('UPDATE adapter_t SET n = $1 WHERE id = 30', [rows[0]!.n + 1]);
        }),
      ),
    );
    assert.equal((await db.query<{ n: number }>('SELECT n FROM adapter_t WHERE id = 30')).rows[0]!.n, 20);
  });
});

describe('the embedded store runs PGlite in a worker thread', () => {
  it('does not hold the event loop while the store works', async () => {
    const db = await PgliteDb.open('memory');
    try {
      let ticks = 0;
      let worstGap = 0;
      let last = performance.now();
      const timer = setInterval(() => {
        const now = performance.now();
        worstGap = Math.max(worstGap, now - last);
        last = now;
        ticks++;
      }, 1);
      const started = performance.now();
      // A statement that keeps PGlite busy for a while: on the main thread it would hold every timer until it ended.
      await db.query('SELECT sum(g) FROM generate_series(1, 3000000) AS g');
      const took = performance.now() - started;
      clearInterval(timer);
      assert.ok(took > 50, `the statement took ${took.toFixed(0)} ms; too short to tell`);
      assert.ok(ticks > 5, `the timer ticked ${ticks} times in ${took.toFixed(0)} ms`);
      assert.ok(worstGap < took / 2, `the longest gap between timer ticks was ${worstGap.toFixed(0)} ms of the statement's ${took.toFixed(0)} ms`);
    } finally {
      await db.close();
    }
  });

  it('runs its thread below the thread that answers calls (Linux: a lower priority, that thread only)', { skip: process.platform !== 'linux' }, async () => {
    const nice = (tid: string) => Number(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]);
    const threads = () => readdirSync('/proc/self/task').map((tid) => ({ tid, nice: nice(tid) }));
    const mine = nice(String(process.pid));
    const lowered = () => threads().filter((t) => t.nice === mine + STORE_THREAD_NICE).length;
    const before = lowered();
    const db = await PgliteDb.open('memory');
    try {
      await db.query('SELECT 1');
      // The thread lowers itself once PGlite is loaded, after answering ready: wait for it rather than assume.
      assert.notEqual(await waitFor(() => lowered() === before + 1, WAIT_MS), -1, `one more thread runs ${STORE_THREAD_NICE} below the process: ${JSON.stringify(threads())}`);
      const others = threads().filter((t) => t.nice !== mine && t.nice !== mine + STORE_THREAD_NICE);
      assert.deepEqual(others, [], "every other thread (the event loop, libuv's pool, V8's) keeps the process's priority");
    } finally {
      await db.close();
    }
  });

  it('refuses queries once closed, and close is idempotent', async () => {
    const db = await PgliteDb.open('memory');
    await db.close();
    await db.close();
    await assert.rejects(db.query('SELECT 1'), /closed/);
  });

  it('keeps a data directory across a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'reins-pglite-'));
    try {
      const first = await PgliteDb.open(dir);
      await first.query('CREATE TABLE kept (v text)');
      await first.query(`INSERT INTO kept VALUES ('still here')`);
      await first.close();
      const second = await PgliteDb.open(dir);
      assert.deepEqual((await second.query('SELECT v FROM kept')).rows, [{ v: 'still here' }]);
      await second.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('starts an in-memory store from a dumped data directory (the suite\'s migrated template), and only an in-memory one', async () => {
    const template = await migratedTemplate();
    const db = await PgliteDb.open('memory', { loadDataDir: template });
    try {
      const applied = await db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
      assert.deepEqual(applied.rows.map((r) => r.version), listMigrations().map((m) => m.version));
    } finally {
      await db.close();
    }
    const dir = mkdtempSync(join(tmpdir(), 'reins-pglite-'));
    try {
      await assert.rejects(PgliteDb.open(dir, { loadDataDir: template }), /loadDataDir: only an in-memory store/);
      // The refusal left no lock in the directory.
      assert.deepEqual(readdirSync(dir), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('does not keep the process alive when nobody closed it', () => {
    const pgliteModule = fileURLToPath(new URL('../../../src/store/pglite.ts', import.meta.url));
    const script = `
      const { PgliteDb } = await import(${JSON.stringify(pgliteModule)});
      const db = await PgliteDb.open('memory');
      const { rows } = await db.query('SELECT 41 + 1 AS answer');
      console.log(rows[0].answer);
    `;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(run.error, undefined, 'the process ended by itself');
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout.trim(), '42');
  });
});
