/**
 * The audit log at scale on PostgreSQL (issue 23): seeds N events over D days into a fresh database (day
 * partitions, migration 017), then measures p50/p95 of the list route's work (first page and a deep page) for each
 * filter combination, the runtime guard's reads, the log's size per million events, the OTLP exporter's sustained
 * events/s against a local receiver that accepts and counts, and one retention run.
 *
 *   npm run bench:audit -- --events 20000000 --days 30 --record   # the figures: ~1 h of seeding, ~15 GB
 *   npm run bench:audit -- --events 100000 --days 30              # a smoke run
 *
 * `--database NAME` keeps the seeded database (created when missing, seeded only when empty) so that the
 * measurements can be repeated without seeding again; `--skip-retention` leaves its days in place.
 * Method and caveats: bench/audit-scale/README.md.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import pg from 'pg';
import { auditListSql, listAuditEvents, type AuditQuery } from '../../src/audit/audit.js';
import { AuditOtlpExporter } from '../../src/audit/otlp-export.js';
import { AuditMaintenance } from '../../src/audit/retention.js';
import { migrate } from '../../src/store/migrate.js';
import { openStore } from '../../src/store/open.js';
import { ADMIN_DATABASE_URL, createBenchDatabase } from '../gateway-overhead/bench-database.js';
import { machineFacts } from '../gateway-overhead/processes.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '100000' },
    days: { type: 'string', default: '30' },
    rounds: { type: 'string', default: '20' },
    'export-events': { type: 'string', default: '2000000' },
    database: { type: 'string' },
    'skip-retention': { type: 'boolean', default: false },
    // Comma-separated phases to run after seeding: pages,guard,size,export,retention (default: all).
    only: { type: 'string' },
    record: { type: 'boolean', default: false },
  },
});
const N = Number(values.events);
const DAYS = Number(values.days);
const ROUNDS = Number(values.rounds);
const EXPORT_EVENTS = Math.min(N, Number(values['export-events']));
const DAY_MS = 86_400_000;
const ROOT = new URL('../../', import.meta.url).pathname;
const PHASES = new Set((values.only ?? 'pages,guard,size,export,retention').split(','));
if (values['skip-retention']) PHASES.delete('retention');

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
const log = (m: string) => console.error(`[${new Date().toISOString()}] ${m}`);

/** A named database (kept) or a fresh one (dropped at the end). */
async function benchDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  if (!values.database) return createBenchDatabase();
  const name = values.database;
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error('--database: a plain lower-case name');
  const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await admin.connect();
  const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: async () => {} };
}

const machine = machineFacts(ROOT, ['pg', '@opentelemetry/exporter-logs-otlp-http']);
const bench = await benchDatabase();
const db = await openStore({ kind: 'postgres', url: bench.url });
try {
  await migrate(db);
  await db.query(`CREATE TABLE IF NOT EXISTS bench_seed (events bigint, days integer, seconds jsonb)`);
  let seed = (await db.query<{ events: string; days: number; seconds: Record<string, number> }>('SELECT events::text, days, seconds FROM bench_seed')).rows[0];
  if (seed && (Number(seed.events) !== N || seed.days !== DAYS)) throw new Error(`--database holds ${seed.events} events over ${seed.days} days, not --events ${N} --days ${DAYS}`);
  if (!seed) {
    await db.query(`SELECT audit_events_ensure_partitions((now() AT TIME ZONE 'UTC')::date - $1::integer, (now() AT TIME ZONE 'UTC')::date + 7)`, [DAYS + 1]);
    // A bulk load: the secondary indexes (as migration 017 defines them, read from the catalogue) are dropped and
    // built again after the load, as one would load a large table; the primary key stays.
    const indexes = (
      await db.query<{ name: string; def: string }>(
        `SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE tablename = 'audit_events' AND indexname <> 'audit_events_pkey'`,
      )
    ).rows;
    for (const i of indexes) await db.query(`DROP INDEX ${i.name}`);
    // The catalogue writes a partitioned table's index as `ON ONLY` (the parent alone): built again on every partition.
    // Server-side INSERT … SELECT in chunks, oldest first (ids grow with time, as in production).
    const loadStart = performance.now();
    const CHUNK = 500_000;
    for (let done = 0; done < N; done += CHUNK) {
      const n = Math.min(CHUNK, N - done);
      await db.query(
        `INSERT INTO audit_events (at, type, action, outcome, actor_kind, actor_id, subject, host, data)
         SELECT now() - make_interval(secs => $3::double precision * (1 - (($1::bigint + g)::double precision / $2::double precision))),
                (ARRAY['llm','llm','mcp','egress','control'])[1 + (g % 5)],
                (ARRAY['llm.request','llm.request_end','mcp.tool_call','egress.request','token.create'])[1 + (g % 5)],
                CASE WHEN g % 23 = 0 THEN 'refused' ELSE 'ok' END, 'agent', 'team/agent-' || (g % 200), 'team/agent-' || (g % 200),
                CASE WHEN g % 5 = 3 THEN 'api' || (g % 50) || '.example.com' END,
                jsonb_build_object('callId', md5(($1::bigint + g / 2)::text), 'model', 'gpt-4o', 'usage', jsonb_build_object('inputTokens', g % 1000, 'outputTokens', g % 300))
           FROM generate_series(1, $4::integer) AS g`,
        [done, N, DAYS * 86_400, n],
      );
      if ((done / CHUNK) % 4 === 0) log(`seeded ${done + n} of ${N}`);
    }
    const loadSeconds = (performance.now() - loadStart) / 1000;
    const indexStart = performance.now();
    await db.transaction(async (tx) => {
      await tx.query(`SET LOCAL maintenance_work_mem = '512MB'`);
      for (const i of indexes) {
        await tx.query(i.def.replace(' ON ONLY ', ' ON '));
        log(`built ${i.name}`);
      }
    });
    const indexSeconds = (performance.now() - indexStart) / 1000;
    await db.query('VACUUM ANALYZE audit_events');
    const seconds = { load: loadSeconds, indexes: indexSeconds, total: (performance.now() - loadStart) / 1000 };
    await db.query('INSERT INTO bench_seed VALUES ($1, $2, $3)', [N, DAYS, JSON.stringify(seconds)]);
    seed = { events: String(N), days: DAYS, seconds };
    log(`seeded in ${seconds.total.toFixed(0)} s`);
  }

  const ids = (await db.query<{ lo: string; hi: string }>('SELECT min(id)::text AS lo, max(id)::text AS hi FROM audit_events')).rows[0]!;
  const deepCursor = String(BigInt(ids.lo) + (BigInt(ids.hi) - BigInt(ids.lo)) / 5n); // 80 % of the way back
  const now = Date.now();
  const ago = (days: number) => new Date(now - days * DAY_MS);
  const combos: Record<string, Omit<AuditQuery, 'limit'>> = {
    none: {},
    type: { type: 'egress' },
    action: { action: 'llm.request_end' },
    identity: { identity: 'team/agent-7' },
    'type + action': { type: 'llm', action: 'llm.request' },
    'type + identity': { type: 'mcp', identity: 'team/agent-7' },
    'action + identity': { action: 'llm.request', identity: 'team/agent-7' },
    since: { since: ago(25) },
    until: { until: ago(6) },
    'since/until 1 day, 25 days ago': { since: ago(25), until: ago(24) },
    'type + since/until': { type: 'llm', since: ago(25), until: ago(24) },
    'action + until': { action: 'egress.request', until: ago(6) },
    'identity + since/until': { identity: 'team/agent-7', since: ago(25), until: ago(24) },
    'type + action + identity + since/until': { type: 'llm', action: 'llm.request_end', identity: 'team/agent-7', since: ago(26), until: ago(22) },
  };
  const pages: Record<string, { firstP50: number; firstP95: number; deepP50: number; deepP95: number; firstItems: number; deepItems: number }> = {};
  const plans: string[] = [];
  for (const [name, filter] of PHASES.has('pages') ? Object.entries(combos) : []) {
    // The route's whole work: the page's query and the callEnded look-up (listAuditEvents).
    const time = async (q: AuditQuery) => {
      const ms: number[] = [];
      let items = 0;
      for (let i = 0; i < ROUNDS; i++) {
        const t = performance.now();
        items = (await listAuditEvents(db, q)).items.length;
        ms.push(performance.now() - t);
      }
      return { ms: ms.sort((a, b) => a - b), items };
    };
    const firstQ: AuditQuery = { limit: 50, ...filter };
    const deepQ: AuditQuery = { limit: 50, ...filter, cursor: deepCursor };
    const first = await time(firstQ);
    const deep = await time(deepQ);
    pages[name] = {
      firstP50: percentile(first.ms, 50),
      firstP95: percentile(first.ms, 95),
      deepP50: percentile(deep.ms, 50),
      deepP95: percentile(deep.ms, 95),
      firstItems: first.items,
      deepItems: deep.items,
    };
    for (const [which, q] of [['first', firstQ], ['deep', deepQ]] as const) {
      const { sql, params } = auditListSql(q);
      const plan = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${sql}`, params);
      plans.push(`## ${name}, ${which} page\n${plan.rows.map((r) => r['QUERY PLAN']).join('\n')}\n`);
    }
    log(`pages ${name}: ${JSON.stringify(pages[name])}`);
  }

  // The runtime guard's reads (runtime-guard/governed-calls.ts): where its feed starts (the first event of the last
  // day) and one tail batch from there; its counts are then summed in memory.
  const guardStart: number[] = [];
  const guardTail: number[] = [];
  for (let i = 0; i < (PHASES.has('guard') ? ROUNDS : 0); i++) {
    let t = performance.now();
    const first = await db.query<{ first: string }>(
      `SELECT coalesce((SELECT min(id) FROM audit_events WHERE at >= to_timestamp($1)), (SELECT coalesce(max(id), 0) + 1 FROM audit_events))::text AS first`,
      [Math.floor(now / 1000) - 86_400],
    );
    guardStart.push(performance.now() - t);
    t = performance.now();
    await db.query(`SELECT id, type, action, subject, host, floor(extract(epoch FROM at))::bigint AS at FROM audit_events WHERE id > $1 ORDER BY id LIMIT 1000`, [first.rows[0]!.first]);
    guardTail.push(performance.now() - t);
  }
  guardStart.sort((a, b) => a - b);
  guardTail.sort((a, b) => a - b);

  const size = await db.query<{ bytes: string; tables: string; indexes: string }>(
    `SELECT sum(pg_total_relation_size(c.oid))::text AS bytes, sum(pg_table_size(c.oid))::text AS tables, sum(pg_indexes_size(c.oid))::text AS indexes
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'audit_events'::regclass`,
  );
  const perMillion = (bytes: string) => Math.round((Number(bytes) / N) * 1_000_000);

  // The exporter: the last EXPORT_EVENTS events to a receiver (its own process) that only counts, as fast as it goes.
  let exported: Record<string, number> | null = null;
  if (PHASES.has('export')) {
  const receiver = spawn(process.execPath, ['--import', 'tsx', new URL('./receiver.ts', import.meta.url).pathname], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve) => createInterface({ input: receiver.stdout! }).once('line', (l) => resolve(Number(l))));
  const received = async () => Number(await (await fetch(`http://127.0.0.1:${port}/count`)).text());
  await db.query(
    `INSERT INTO audit_export_cursors (name, last_id) VALUES ('otlp', $1::bigint) ON CONFLICT (name) DO UPDATE SET last_id = EXCLUDED.last_id`,
    [String(BigInt(ids.hi) - BigInt(EXPORT_EVENTS))],
  );
  const exporter = new AuditOtlpExporter(db, { url: `http://127.0.0.1:${port}/v1/logs`, batchSize: 5000, intervalMs: 10, gapWaitMs: 0 });
  const exportStart = performance.now();
  const cpuStart = process.cpuUsage();
  exporter.start();
  while ((await received()) < EXPORT_EVENTS) await new Promise((r) => setTimeout(r, 50));
  const exportSeconds = (performance.now() - exportStart) / 1000;
  const cpu = process.cpuUsage(cpuStart);
  const exportCpuSeconds = (cpu.user + cpu.system) / 1e6;
  await exporter.stop();
  receiver.kill();
  log(`exported ${EXPORT_EVENTS} in ${exportSeconds.toFixed(1)} s (${exportCpuSeconds.toFixed(1)} s of CPU)`);
  exported = { events: EXPORT_EVENTS, batchSize: 5000, seconds: exportSeconds, eventsPerSecond: Math.round(EXPORT_EVENTS / exportSeconds), cpuSeconds: exportCpuSeconds, eventsPerCpuSecond: Math.round(EXPORT_EVENTS / exportCpuSeconds) };
  }

  // Retention: a third of the days expire.
  let retention: Record<string, unknown> | null = null;
  if (PHASES.has('retention')) {
    const keep = Math.floor((DAYS * 2) / 3);
    const retentionStart = performance.now();
    const run = await new AuditMaintenance(db, { retentionDays: keep, intervalMs: 60_000 }).run();
    retention = { retentionDays: keep, seconds: (performance.now() - retentionStart) / 1000, partitionsDropped: run.partitionsDropped.length, rowsDeleted: run.rowsDeleted };
  }

  const result = {
    at: new Date().toISOString(),
    machine: { ...machine, loadAverageAtEnd: os.loadavg() },
    postgres: (await db.query<{ v: string }>('SELECT version() AS v')).rows[0]!.v,
    events: N,
    days: DAYS,
    rounds: ROUNDS,
    seedSeconds: seed.seconds,
    pagesMs: pages,
    runtimeGuardMs: guardStart.length === 0 ? null : { feedStartP50: percentile(guardStart, 50), feedStartP95: percentile(guardStart, 95), tailBatchP50: percentile(guardTail, 50), tailBatchP95: percentile(guardTail, 95) },
    bytesPerMillionEvents: { total: perMillion(size.rows[0]!.bytes), tables: perMillion(size.rows[0]!.tables), indexes: perMillion(size.rows[0]!.indexes) },
    // eventsPerCpuSecond: the exporter process's own CPU time (user + system), which a loaded machine does not inflate.
    exporter: exported,
    retention,
  };
  console.log(JSON.stringify(result, null, 2));
  if (values.record) {
    // A partial run (--only) records its phases beside the file's others.
    const file = new URL('../results/audit-scale.json', import.meta.url);
    let previous = PHASES.size < 5 && existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>) : {};
    if (previous.events !== N || previous.days !== DAYS) previous = {};
    const merged: Record<string, unknown> = { ...previous, ...result };
    if (!PHASES.has('pages')) merged.pagesMs = previous.pagesMs ?? null;
    if (!PHASES.has('guard')) merged.runtimeGuardMs = previous.runtimeGuardMs ?? null;
    if (!PHASES.has('export')) merged.exporter = previous.exporter ?? null;
    if (!PHASES.has('retention')) merged.retention = previous.retention ?? null;
    writeFileSync(file, `${JSON.stringify(merged, null, 2)}\n`);
    if (PHASES.has('pages')) writeFileSync(new URL('../results/audit-scale-plans.md', import.meta.url), `# bench/audit-scale: the list query's plans (${N} events over ${DAYS} days)\n\n\`\`\`\n${plans.join('\n')}\`\`\`\n`);
  }
} finally {
  await db.close();
  await bench.drop();
}
