/**
 * Migration 017 on a populated log: audit_events as every earlier version left it (unpartitioned) is moved to
 * day partitions with every event unchanged (id, at to the microsecond, every column, data byte for byte as jsonb
 * renders it), new events continue the same id sequence, and the append-only rule still holds.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Db } from '../../../src/store/db.js';
import { listMigrations, migrate } from '../../../src/store/migrate.js';
import { openStore } from '../../../src/store/open.js';
import { auditPartitions } from '../../../src/audit/retention.js';
import { describeEachStore } from '../../helpers/harness.js';

const DAY = 86_400_000;
const SNAPSHOT = `SELECT id::text, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS at, type, action, outcome, actor_kind, actor_id, subject, host, data::text AS data
  FROM audit_events ORDER BY id`;

describeEachStore('audit partition migration', ({ store, kind }) => {
  let db: Db;
  before(async () => {
    const s = store();
    db = s.db ?? (await openStore({ kind: 'postgres', url: s.url! }));
  });
  after(async () => {
    if (kind === 'postgres') await db.close();
  });

  test('a populated unpartitioned table migrates with every event unchanged', async () => {
    await migrate(db, listMigrations().filter((m) => m.version < 17));
    const kindRow = await db.query<{ relkind: string }>(`SELECT relkind::text AS relkind FROM pg_class WHERE relname = 'audit_events'`);
    assert.equal(kindRow.rows[0]!.relkind, 'r');
    const now = Date.now();
    // 40 days back to now, with the shapes events take: nulls, hosts, nested data, text beyond ASCII.
    for (let i = 0; i < 400; i++) {
      const at = new Date(now - (i % 40) * DAY - i * 137);
      await db.query(
        `INSERT INTO audit_events (at, type, action, outcome, actor_kind, actor_id, subject, host, data) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [
          at,
          i % 3 === 0 ? 'egress' : 'llm',
          i % 3 === 0 ? 'egress.request' : 'llm.request',
          i % 5 === 0 ? 'refused' : 'ok',
          i % 7 === 0 ? 'system' : 'agent',
          i % 7 === 0 ? null : `eng/bot-${i % 4}`,
          i % 2 ? `eng/bot-${i % 4}` : null,
          i % 3 === 0 ? 'api.example.com' : null,
          JSON.stringify({ callId: `c${i}`, n: i, nested: { list: [1, 'two', null], ok: true }, text: 'é ✓ 𝄞' }),
        ],
      );
    }
    // Microseconds, which a JavaScript Date cannot carry.
    await db.query(`INSERT INTO audit_events (at, type, action, actor_kind, actor_id) VALUES ('2026-01-02 03:04:05.123456+00', 'control', 'identity.create', 'system', 'cli')`);
    const before = (await db.query(SNAPSHOT)).rows;
    assert.equal(before.length, 401);

    await migrate(db);

    const partitioned = await db.query<{ relkind: string }>(`SELECT relkind::text AS relkind FROM pg_class WHERE relname = 'audit_events'`);
    assert.equal(partitioned.rows[0]!.relkind, 'p');
    assert.deepEqual((await db.query(SNAPSHOT)).rows, before);
    // Day partitions cover every day that had events, and a week ahead; none of the events went to the default.
    const days = await auditPartitions(db);
    assert.ok(days.length >= 40 + 7, `${days.length} partitions`);
    const inDefault = await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM audit_events_default`);
    assert.equal(inDefault.rows[0]!.n, '0');
    assert.equal(await db.query(`SELECT to_regclass('audit_events_unpartitioned')::text AS t`).then((r) => r.rows[0]!.t), null);

    // The sequence goes on: a new event gets a larger id, and the old table's rule still holds.
    const maxBefore = BigInt((before[before.length - 1] as { id: string }).id);
    const next = await db.query<{ id: string }>(`INSERT INTO audit_events (type, action, actor_kind) VALUES ('control', 'x.y', 'system') RETURNING id::text AS id`);
    assert.ok(BigInt(next.rows[0]!.id) > maxBefore);
    await assert.rejects(db.query(`UPDATE audit_events SET outcome = 'error'`), /append-only/);
    await assert.rejects(db.query(`DELETE FROM audit_events`), /append-only/);
  });
}, undefined, { emptyStore: true });
