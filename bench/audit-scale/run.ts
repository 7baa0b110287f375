/**
 * The audit log at scale on PostgreSQL (issue 23): seeds N events over D days into a fresh database (day
 * partitions, migration 017), then measures p50/p95 of the list route's query (first page and a deep page) for
 * each filter combination, one retention run, the OTLP exporter's sustained events/s against a local receiver
 * that accepts and counts, and the log's size per million events.
 *
 *   npm run bench:audit -- --events 20000000 --days 30     # the figures: hours of seeding, GBs of disk
 *   npm run bench:audit -- --events 100000 --days 30       # a smoke run
 *
 * Writes bench/results/audit-scale.json (with --record). Method and caveats: bench/audit-scale/README.md.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { writeFileSync } from 'node:fs';
import { auditListSql, encodeCursor, type AuditQuery } from '../../src/audit/audit.js';
import { AuditOtlpExporter } from '../../src/audit/otlp-export.js';
import { AuditMaintenance } from '../../src/audit/retention.js';
import { migrate } from '../../src/store/migrate.js';
import { openStore } from '../../src/store/open.js';
import { createBenchDatabase } from '../gateway-overhead/bench-database.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '100000' },
    days: { type: 'string', default: '30' },
    rounds: { type: 'string', default: '20' },
    record: { type: 'boolean', default: false },
  },
});
const N = Number(values.events);
const DAYS = Number(values.days);
const ROUNDS = Number(values.rounds);
const DAY_MS = 86_400_000;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const bench = await createBenchDatabase();
const db = await openStore({ kind: 'postgres', url: bench.url });
try {
  await migrate(db);
  await db.query(`SELECT audit_events_ensure_partitions((now() AT TIME ZONE 'UTC')::date - $1::integer, (now() AT TIME ZONE 'UTC')::date + 7)`, [DAYS + 1]);

  // Seeding: server-side INSERT … SELECT in chunks, oldest first (ids grow with time, as in production).
  const seedStart = performance.now();
  const CHUNK = 100_000;
  for (let done = 0; done < N; done += CHUNK) {
    const n = Math.min(CHUNK, N - done);
    await db.query(
      `INSERT INTO audit_events (at, type, action, outcome, actor_kind, actor_id, subject, host, data)
       SELECT now() - make_interval(secs => $3::double precision * (1 - (($1::bigint + g)::double precision / $2::double precision))),
              (ARRAY['llm','llm','mcp','egress','control'])[1 + (g % 5)],
              (ARRAY['llm.request','llm.request_end','mcp.tool_call','egress.request','token.create'])[1 + (g % 5)],
              CASE WHEN g % 23 = 0 THEN 'refused' ELSE 'ok' END, 'agent', 'team/agent-' || (g % 200), 'team/agent-' || (g % 200),
              CASE WHEN g % 5 = 3 THEN 'api' || (g % 50) || '.example.com' END,
              jsonb_build_object('callId', md5(($1::bigint + g)::text), 'model', 'gpt-4o', 'usage', jsonb_build_object('inputTokens', g % 1000, 'outputTokens', g % 300))
         FROM generate_series(1, $4::integer) AS g`,
      [done, N, DAYS * 86_400, n],
    );
  }
  await db.query('ANALYZE audit_events');
  const seedSeconds = (performance.now() - seedStart) / 1000;

  const ids = (await db.query<{ lo: string; hi: string }>('SELECT min(id)::text AS lo, max(id)::text AS hi FROM audit_events')).rows[0]!;
  const deepCursor = String(BigInt(ids.lo) + (BigInt(ids.hi) - BigInt(ids.lo)) / 5n); // 80 % of the way back
  const now = Date.now();
  const combos: Record<string, Omit<AuditQuery, 'limit'>> = {
    none: {},
    type: { type: 'egress' },
    action: { action: 'llm.request_end' },
    identity: { identity: 'team/agent-7' },
    'since/until 1 day, 25 days ago': { since: new Date(now - 25 * DAY_MS), until: new Date(now - 24 * DAY_MS) },
    'until 6 days ago': { until: new Date(now - 6 * DAY_MS) },
    'type + since/until': { type: 'llm', since: new Date(now - 20 * DAY_MS), until: new Date(now - 19 * DAY_MS) },
  };
  const pages: Record<string, { firstP50: number; firstP95: number; deepP50: number; deepP95: number }> = {};
  for (const [name, filter] of Object.entries(combos)) {
    const time = async (q: AuditQuery) => {
      const { sql, params } = auditListSql(q);
      const ms: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const t = performance.now();
        await db.query(sql, params);
        ms.push(performance.now() - t);
      }
      return ms.sort((a, b) => a - b);
    };
    const first = await time({ limit: 50, ...filter });
    const deep = await time({ limit: 50, ...filter, cursor: deepCursor });
    pages[name] = { firstP50: percentile(first, 50), firstP95: percentile(first, 95), deepP50: percentile(deep, 50), deepP95: percentile(deep, 95) };
    void encodeCursor;
  }

  const size = await db.query<{ bytes: string }>(
    `SELECT sum(pg_total_relation_size(c.oid))::text AS bytes FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'audit_events'::regclass`,
  );
  const bytesPerMillion = (Number(size.rows[0]!.bytes) / N) * 1_000_000;

  // The exporter: every event to a receiver that only counts, as fast as it goes.
  let received = 0;
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received += (Buffer.concat(chunks).toString().match(/"timeUnixNano"/g) ?? []).length;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const exporter = new AuditOtlpExporter(db, { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/logs`, batchSize: 5000, intervalMs: 10, gapWaitMs: 0 });
  const exportStart = performance.now();
  exporter.start();
  while (received < N) await new Promise((r) => setTimeout(r, 50));
  const exportSeconds = (performance.now() - exportStart) / 1000;
  await exporter.stop();
  receiver.close();

  // Retention: a third of the days expire.
  const keep = Math.floor((DAYS * 2) / 3);
  const retentionStart = performance.now();
  const run = await new AuditMaintenance(db, { retentionDays: keep, intervalMs: 60_000 }).run();
  const retentionSeconds = (performance.now() - retentionStart) / 1000;

  const result = {
    at: new Date().toISOString(),
    events: N,
    days: DAYS,
    rounds: ROUNDS,
    seedSeconds,
    pagesMs: pages,
    bytesPerMillionEvents: Math.round(bytesPerMillion),
    exporterEventsPerSecond: Math.round(N / exportSeconds),
    retention: { retentionDays: keep, seconds: retentionSeconds, partitionsDropped: run.partitionsDropped.length, rowsDeleted: run.rowsDeleted },
  };
  console.log(JSON.stringify(result, null, 2));
  if (values.record) writeFileSync(new URL('../results/audit-scale.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
} finally {
  await db.close();
  await bench.drop();
}
