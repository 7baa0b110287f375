/**
 * The index's tail of the observations table: new rows by id, rows whose transaction committed after a later id
 * was read (out of id order), a rolled-back gap given up after its timeout, and the retention sweep.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { storeReport, type SensorReport } from '../../../src/runtime-guard/ingest.js';
import { ObservationFeed, readStoredItems, sweepObservations } from '../../../src/runtime-guard/observation-store.js';
import type { Db } from '../../../src/store/db.js';
import { migrate } from '../../../src/store/migrate.js';
import { openStore } from '../../../src/store/open.js';
import { describeEachStore } from '../../helpers/harness.js';
import { item } from './helpers.js';

const NOW = Math.floor(Date.now() / 1000);
const ALL = { windowStartUnix: 0, windowEndUnix: NOW + 3600 };

function reportOf(node: string, n: number, observedAt = NOW - 10): SensorReport {
  return { node, sentAtUnix: NOW, observations: Array.from({ length: n }, (_, i) => item({ destIP: `10.9.0.${i % 250}`, observedAt, node })) as SensorReport['observations'] };
}

describeEachStore('observation feed', ({ store, kind }) => {
  let db: Db;
  let ms = Date.now();
  before(async () => {
    const s = store();
    db = s.db ?? (await openStore({ kind: 'postgres', url: s.url! }));
    await migrate(db);
  });
  after(async () => {
    if (!store().db) await db.close();
  });

  test('reads new rows by id, in batches, and nothing twice', async () => {
    const feed = new ObservationFeed(db, { nowMs: () => ms, batchSize: 7 });
    await storeReport(db, reportOf('node-1', 20));
    await feed.catchUp();
    assert.equal(feed.index.size, 20);
    await storeReport(db, reportOf('node-1', 5));
    await Promise.all([feed.catchUp(), feed.catchUp(), feed.catchUp()]);
    assert.equal(feed.index.size, 25);
    assert.equal(feed.pendingGaps, 0);
    assert.equal((await readStoredItems(db)).get('node-1'), 25);
  });

  test("storeReport with the body's bytes stores what the bytes say, on this store too (the route's path)", async () => {
    // The parsed report and the bytes disagree on purpose: the stored subject shows which one was stored.
    const parsed = reportOf('node-bytes', 2);
    const sent = { ...parsed, observations: parsed.observations.map((o) => ({ ...o, subject: '/from/the/bytes' })) };
    assert.equal(await storeReport(db, parsed, Buffer.from(JSON.stringify(sent))), 2);
    const rows = await db.query<{ subject: string }>("SELECT subject FROM runtime_observations WHERE node = 'node-bytes'");
    assert.deepEqual(
      rows.rows.map((r) => r.subject),
      ['/from/the/bytes', '/from/the/bytes'],
    );
    assert.equal((await readStoredItems(db)).get('node-bytes'), 2);
  });

  test('a row committed after a later id was read is still picked up; a rolled-back id is given up after the timeout', { skip: kind === 'pglite' ? 'PGlite runs one transaction at a time: commits cannot overtake each other' : false }, async () => {
    const feed = new ObservationFeed(db, { nowMs: () => ms, gapTimeoutMs: 60_000 });
    await feed.catchUp();
    const before = feed.index.size;
    const slow = new pg.Client({ connectionString: store().url });
    const rolled = new pg.Client({ connectionString: store().url });
    await slow.connect();
    await rolled.connect();
    try {
      await slow.query('BEGIN');
      await rolled.query('BEGIN');
      // Ids are taken now, in this order; the commits come in another.
      await storeReport(slow, reportOf('node-slow', 3));
      await storeReport(rolled, reportOf('node-rolled', 2));
      await storeReport(db, reportOf('node-fast', 4));
      await feed.catchUp();
      assert.equal(feed.index.size, before + 4);
      assert.equal(feed.pendingGaps, 5);
      await slow.query('COMMIT');
      await rolled.query('ROLLBACK');
      await feed.catchUp();
      assert.equal(feed.index.size, before + 7);
      assert.equal(feed.pendingGaps, 2);
      ms += 61_000;
      await feed.catchUp();
      assert.equal(feed.pendingGaps, 0);
      assert.equal(feed.index.size, before + 7);
    } finally {
      await slow.end();
      await rolled.end();
    }
  });

  test('rows read back as stored, whether a batch reads as one text or, holding the separators, row by row', async () => {
    const feed = new ObservationFeed(db, { nowMs: () => ms, batchSize: 4 });
    await feed.catchUp();
    const node = 'node-text';
    const stored = [
      item({ observedAt: NOW - 5, node, subject: '/opt/ünïcode/bin/agent ✓', destName: 'api.openai.com', destIP: '2001:db8::7', count: 41 }),
      item({ observedAt: NOW - 4, node, family: 'dns', behavior: 'dns-query', destName: 'x'.repeat(300), podIP: '', count: 2_147_483_647 }),
      item({ observedAt: NOW - 3, node, rule: '', result: '', mode: '' }),
    ];
    await storeReport(db, { node, sentAtUnix: NOW, observations: stored } as SensorReport);
    // Written by other means than the ingest, which replaces control characters: fields holding the batch text's
    // row and field separators, then a plain row again.
    const odd = [item({ observedAt: NOW - 2, node, rule: 'a\u0002b' }), item({ observedAt: NOW - 1, node, subject: 'c\u0003d' }), item({ observedAt: NOW, node })];
    for (const o of odd) {
      await db.query(
        `INSERT INTO runtime_observations (node, family, rule, behavior, subject, dest_ip, dest_name, count, pod_name, pod_ip, namespace, result, mode, observed_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
        [node, o.family, o.rule, o.behavior, o.subject, o.destIP, o.destName, o.count, o.podName, o.podIP, o.namespace, o.result, o.mode, o.observedAt],
      );
    }
    await feed.catchUp();
    const byTime = (a: { observedAt: number }, b: { observedAt: number }) => a.observedAt - b.observedAt;
    const got = feed.index.select(ALL, (t) => t.node === node).sort(byTime);
    assert.deepEqual(got, [...stored, ...odd].map((o) => ({ ...o, node })).sort(byTime));
  });

  test('the sweep deletes rows observed before the cutoff; the stored-items counter keeps its total', async () => {
    await storeReport(db, reportOf('node-old', 3, NOW - 30 * 3600));
    await storeReport(db, reportOf('node-old', 2, NOW - 60));
    assert.equal(await sweepObservations(db, NOW - 25 * 3600, 2), 3);
    const left = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM runtime_observations WHERE node = 'node-old'");
    assert.equal(left.rows[0]!.n, 2);
    assert.equal((await readStoredItems(db)).get('node-old'), 5);
    // A fresh index never takes in rows older than its retention.
    const feed = new ObservationFeed(db, { nowMs: () => ms });
    await storeReport(db, reportOf('node-old', 1, NOW - 26 * 3600));
    await feed.catchUp();
    assert.equal(feed.index.select(ALL, (t) => t.node === 'node-old').length, 2);
  });
});
