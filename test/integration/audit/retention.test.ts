/**
 * Audit retention on both stores (both hold audit_events partitioned by day, migration 017): expired days go as
 * whole partitions (asserted on the catalogue), expired rows the default partition caught go in batches, nothing
 * inside the window is touched, each removal is audited, one replica at a time does it (the lease), and the
 * append-only rule holds for every other path.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Db } from '../../../src/store/db.js';
import { migrate } from '../../../src/store/migrate.js';
import { openStore } from '../../../src/store/open.js';
import { AuditMaintenance, auditPartitions } from '../../../src/audit/retention.js';
import { auditListSql, decodeCursor, listAuditEvents } from '../../../src/audit/audit.js';
import { describeEachStore } from '../../helpers/harness.js';

const DAY = 86_400_000;

async function insertAt(db: Db, at: Date, marker: string): Promise<string> {
  const r = await db.query<{ id: string }>(
    `INSERT INTO audit_events (at, type, action, actor_kind, actor_id, data) VALUES ($1, 'llm', 'llm.request', 'agent', 'eng/bot', $2) RETURNING id::text AS id`,
    [at, JSON.stringify({ marker })],
  );
  return r.rows[0]!.id;
}

const markers = async (db: Db) =>
  (await db.query<{ m: string }>(`SELECT data->>'marker' AS m FROM audit_events WHERE data ? 'marker' ORDER BY id`)).rows.map((r) => r.m);

describeEachStore('audit retention', ({ store, kind }) => {
  let db: Db;
  before(async () => {
    const s = store();
    db = s.db ?? (await openStore({ kind: 'postgres', url: s.url! }));
    await migrate(db);
  });
  after(async () => {
    if (kind === 'postgres') await db.close();
  });

  test('partitions are made ahead; expired days are dropped whole, the window is untouched, each removal audited', async () => {
    const now = Date.now();
    // Day partitions for the past 100 days, as a replica running that long would have made them.
    await db.query(`SELECT audit_events_ensure_partitions((now() AT TIME ZONE 'UTC')::date - 100, (now() AT TIME ZONE 'UTC')::date)`);
    await insertAt(db, new Date(now - 99 * DAY), 'old-99');
    await insertAt(db, new Date(now - 95 * DAY), 'old-95a');
    await insertAt(db, new Date(now - 95 * DAY + 1000), 'old-95b');
    await insertAt(db, new Date(now - 91 * DAY), 'old-91');
    // No day partition this far back: the default partition catches these two.
    await insertAt(db, new Date(now - 300 * DAY), 'default-300');
    await insertAt(db, new Date(now - 299 * DAY), 'default-299');
    await insertAt(db, new Date(now - 90 * DAY + 3_600_000), 'window-edge');
    await insertAt(db, new Date(now - DAY), 'recent');
    await insertAt(db, new Date(now - 400 * DAY), 'default-400');
    const before = (await auditPartitions(db)).map((p) => p.name);

    const m = new AuditMaintenance(db, { retentionDays: 90, intervalMs: 60_000, batchSize: 1 });
    const run = await m.run();
    await m.stop();
    assert.equal(run.leader, true);

    // Seven days ahead of today exist.
    const after = await auditPartitions(db);
    const newest = after[after.length - 1]!;
    assert.ok(newest.from.getTime() >= now + 6 * DAY, `newest partition ${newest.name}`);
    // Dropped, not deleted from: the expired days are gone from the catalogue, the window's days are all there.
    const cutoff = now - 90 * DAY;
    const gone = before.filter((n) => !after.some((p) => p.name === n));
    assert.ok(gone.length >= 9, `dropped ${gone.join(',')}`);
    assert.deepEqual(run.partitionsDropped.sort(), gone.sort());
    for (const p of after) assert.ok(p.to.getTime() > cutoff, `${p.name} should have been dropped`);
    const inherits = await db.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'audit_events'::regclass AND c.relname = ANY($1::text[])`,
      [gone],
    );
    assert.equal(inherits.rows[0]!.n, '0');
    const tables = await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM pg_class WHERE relname = ANY($1::text[])`, [gone]);
    assert.equal(tables.rows[0]!.n, '0');

    assert.deepEqual(await markers(db), ['window-edge', 'recent']);
    assert.equal(run.rowsDeleted, 3);

    // Each removal audited: the partitions with their range and count, the batches with theirs.
    const audits = await db.query<{ data: Record<string, unknown> | string }>(`SELECT data FROM audit_events WHERE action = 'audit.retention' ORDER BY id`);
    const data = audits.rows.map((r) => (typeof r.data === 'string' ? JSON.parse(r.data) : r.data) as { partition: string; count: number; from: string; to: string });
    const byPartition = data.filter((d) => d.partition !== 'audit_events_default');
    assert.deepEqual(byPartition.map((d) => d.partition).sort(), gone.sort());
    assert.equal(byPartition.reduce((s, d) => s + d.count, 0), 4);
    const day95 = byPartition.find((d) => d.count === 2)!;
    assert.ok(Date.parse(day95.from) <= now - 95 * DAY && Date.parse(day95.to) > now - 95 * DAY + 1000);
    const batches = data.filter((d) => d.partition === 'audit_events_default');
    assert.equal(batches.length, 3); // batchSize 1
    assert.equal(batches.reduce((s, d) => s + d.count, 0), 3);

    // A second run finds nothing more to do.
    const again = new AuditMaintenance(db, { retentionDays: 90, intervalMs: 60_000 });
    const run2 = await again.run();
    await again.stop();
    assert.deepEqual([run2.partitionsDropped, run2.rowsDeleted], [[], 0]);
    assert.deepEqual(await markers(db), ['window-edge', 'recent']);
  });

  test('retentionDays 0 keeps everything', async () => {
    await insertAt(db, new Date(Date.now() - 3000 * DAY), 'ancient');
    const m = new AuditMaintenance(db, { retentionDays: 0, intervalMs: 60_000 });
    const run = await m.run();
    await m.stop();
    assert.equal(run.leader, true);
    assert.deepEqual([run.partitionsDropped, run.rowsDeleted], [[], 0]);
    assert.ok((await markers(db)).includes('ancient'));
  });

  test('append-only: no UPDATE, no DELETE outside retention, and retention cannot reach inside its cutoff', async () => {
    const recent = await insertAt(db, new Date(), 'guarded');
    const ancient = await insertAt(db, new Date(Date.now() - 5000 * DAY), 'guarded-old');
    await assert.rejects(db.query(`UPDATE audit_events SET action = 'x' WHERE id = $1`, [recent]), /append-only/);
    await assert.rejects(db.query(`UPDATE audit_events SET action = 'x' WHERE id = $1`, [ancient]), /append-only/);
    await assert.rejects(db.query(`DELETE FROM audit_events WHERE id = $1`, [ancient]), /append-only/);
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query(`SELECT set_config('reins.audit_retention_before', $1, true)`, [new Date(Date.now() - 10 * DAY).toISOString()]);
        await tx.query(`DELETE FROM audit_events WHERE id = $1`, [recent]);
      }),
      /append-only/,
    );
    // The setting is the transaction's own: it does not outlive it.
    await assert.rejects(db.query(`DELETE FROM audit_events WHERE id = $1`, [ancient]), /append-only/);
    // Migration 019: a declared cutoff opens only the default partition (day partitions go whole, by DROP), and only
    // a cutoff at least a day old: an event of a day partition, or any event with a cutoff of now, stays.
    await db.query(`SELECT audit_events_ensure_partitions((now() AT TIME ZONE 'UTC')::date - 30, (now() AT TIME ZONE 'UTC')::date)`);
    const inDay = await insertAt(db, new Date(Date.now() - 20 * DAY), 'guarded-day');
    const where = await db.query<{ t: string }>(`SELECT tableoid::regclass::text AS t FROM audit_events WHERE id = $1`, [inDay]);
    assert.match(where.rows[0]!.t, /^audit_events_p\d{8}$/);
    const retentionDelete = (cutoff: Date, id: string) =>
      db.transaction(async (tx) => {
        await tx.query(`SELECT set_config('reins.audit_retention_before', $1, true)`, [cutoff.toISOString()]);
        await tx.query(`DELETE FROM audit_events WHERE id = $1`, [id]);
      });
    await assert.rejects(retentionDelete(new Date(Date.now() - 10 * DAY), inDay), /append-only/);
    await assert.rejects(retentionDelete(new Date(Date.now() + DAY), ancient), /append-only/);
    await assert.rejects(retentionDelete(new Date(), ancient), /append-only/);
    assert.deepEqual((await markers(db)).filter((x) => x.startsWith('guarded')), ['guarded', 'guarded-old', 'guarded-day']);
    // What retention itself does still passes: an expired row of the default partition, under a cutoff days old.
    const expired = await insertAt(db, new Date(Date.now() - 6000 * DAY), 'expired-default');
    await retentionDelete(new Date(Date.now() - 10 * DAY), expired);
    assert.ok(!(await markers(db)).includes('expired-default'));
  });

  test('one replica at a time: the lease', async () => {
    const a = new AuditMaintenance(db, { retentionDays: 0, intervalMs: 60_000 });
    const b = new AuditMaintenance(db, { retentionDays: 0, intervalMs: 60_000 });
    const [ra, rb] = await Promise.all([a.run(), b.run()]);
    assert.equal(Number(ra.leader) + Number(rb.leader), 1);
    // The holder keeps it on its next run; the other still does not get it.
    const holder = ra.leader ? a : b;
    const other = ra.leader ? b : a;
    assert.equal((await holder.run()).leader, true);
    assert.equal((await other.run()).leader, false);
    // A clean stop gives it up at once.
    await holder.stop();
    assert.equal((await other.run()).leader, true);
    await other.stop();
  });
});

describeEachStore('audit queries on day partitions', ({ store, kind }) => {
  let db: Db;
  before(async () => {
    const s = store();
    db = s.db ?? (await openStore({ kind: 'postgres', url: s.url! }));
    await migrate(db);
    await db.query(`SELECT audit_events_ensure_partitions((now() AT TIME ZONE 'UTC')::date - 20, (now() AT TIME ZONE 'UTC')::date)`);
  });
  after(async () => {
    if (kind === 'postgres') await db.close();
  });

  test('a since/until window reads only its days (partition pruning)', async () => {
    const until = new Date(Date.UTC(2030, 0, 1));
    const since = new Date(Date.now() - 10 * DAY);
    const windowEnd = new Date(since.getTime() + 2 * DAY);
    const { sql, params } = auditListSql({ limit: 50, since, until: windowEnd });
    const plan = await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
    const text = JSON.stringify(plan.rows[0]!['QUERY PLAN']);
    const scanned = new Set(text.match(/audit_events_p\d{8}/g) ?? []);
    // Two days and a bit: at most the three days the window touches, never the other 18.
    assert.ok(scanned.size >= 2 && scanned.size <= 3, `partitions read: ${[...scanned].join(', ')}`);
    const all = auditListSql({ limit: 50, until });
    const full = JSON.stringify((await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${all.sql}`, all.params)).rows[0]!['QUERY PLAN']);
    assert.ok(new Set(full.match(/audit_events_p\d{8}/g) ?? []).size >= 20);
  });

  test('keyset pages stay stable across partitions while new events arrive', async () => {
    const now = Date.now();
    for (let d = 0; d < 6; d++) for (let i = 0; i < 3; i++) await insertAt(db, new Date(now - d * DAY - i * 1000), `page-${d}-${i}`);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await listAuditEvents(db, { limit: 4, action: 'llm.request', ...(cursor ? { cursor } : {}) });
      seen.push(...page.items.map((e) => String(e.data.marker)));
      // An event arriving mid-way lands before the first page, never inside the pages being read.
      await insertAt(db, new Date(), 'late');
      if (!page.nextCursor) break;
      cursor = decodeCursor(page.nextCursor)!;
    }
    const ids = seen.filter((m) => m.startsWith('page-'));
    assert.equal(ids.length, 18);
    assert.equal(new Set(ids).size, 18);
    assert.ok(!seen.includes('late'));
  });

  test('a window inside one day is read by its time, not by walking the day back to it (the (at) index)', async () => {
    // 40,000 events over one day, 2 s apart, 20 agents. Without an index on `at` (the embedded store between
    // migrations 022 and 023) a page of a minute early in the day walked the day's primary key from its newest event
    // back to the window: every index page of the day, early minutes costing the most.
    const day = Math.floor(Date.now() / DAY) * DAY - 3 * DAY;
    await db.query(`SELECT audit_events_ensure_partitions($1::date, $1::date)`, [new Date(day).toISOString().slice(0, 10)]);
    await db.query(
      `INSERT INTO audit_events (at, type, action, actor_kind, actor_id, subject, data)
         SELECT $1::timestamptz + g * interval '2 seconds', 'llm', 'llm.request', 'agent', 'team/agent-' || (g % 20), 'team/agent-' || (g % 20), '{}'
           FROM generate_series(0, 39999) g`,
      [new Date(day)],
    );
    await db.query('ANALYZE audit_events');
    /** Index and table pages a page's query touched (EXPLAIN's shared buffers, hits and reads). */
    const pagesRead = async (query: Parameters<typeof auditListSql>[0]) => {
      const { sql, params } = auditListSql(query);
      const plan = await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, params);
      const top = (plan.rows[0]!['QUERY PLAN'] as { Plan: Record<string, number> }[])[0]!.Plan;
      return (top['Shared Hit Blocks'] ?? 0) + (top['Shared Read Blocks'] ?? 0);
    };
    const minute = (hour: number) => ({ since: new Date(day + hour * 3_600_000), until: new Date(day + hour * 3_600_000 + 60_000) });
    for (const filter of [{}, { identity: 'team/agent-3' }, { action: 'llm.request' }]) {
      const early = await pagesRead({ limit: 50, ...filter, ...minute(1) });
      const whole = await pagesRead({ limit: 50, ...filter, since: new Date(day), until: new Date(day + DAY) });
      // A minute holds 30 of the day's events: a handful of pages (4-8 on both stores), as for the day's newest page
      // (3-36). Walking the day back to 01:00 read 157 on PGlite without the index.
      assert.ok(early <= whole + 40, `${JSON.stringify(filter)}: a minute at 01:00 read ${early} pages, the day's newest page ${whole}`);
    }
  });
});
