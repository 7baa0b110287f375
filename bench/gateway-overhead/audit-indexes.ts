/**
 * What the audit log's search indexes cost Reins on PostgreSQL at its maximum, on this machine: one Reins replica
 * (pinned to CPU 1, the fake upstream and the load generator on CPU 0, as the main bench places them) measured in
 * alternating rounds with the audit table's secondary indexes and without them (dropped, then created again from
 * their own definitions in pg_indexes). Per round: at the maximum, requests/s, Reins' CPU per request and how busy its
 * core was, and the PostgreSQL server's CPU per request; at 1,000 requests/s (paced, as the main bench), the p99.
 *
 *   node --import tsx bench/gateway-overhead/audit-indexes.ts [--rounds 3]
 *
 * Why it exists: at its maximum Reins' core idled 15-20% of the time while the bare proxy's and the floor's were
 * busy. PostgreSQL runs beside the generator (pinned there, as in the main bench); each Reins call's two audit rows
 * cost it about 60 µs with the indexes, and the generator then sends fewer requests. Reins runs from dist/ (build it first:
 * `npx tsc -p tsconfig.build.json`).
 */
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createBenchDatabase } from './bench-database.js';
import type { LoadJob, LoadResult } from './load.js';
import { type Child, canPin, cpuSpentBetween, pinPostgres, postgresCpuMs, processCpuMs, startServer } from './processes.js';
import { setUpReins } from './reins-setup.js';
import { startUpstreamAndLoader } from './rig.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const { values: args } = parseArgs({ options: { rounds: { type: 'string', default: '3' } } });
const rounds = Number(args.rounds);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds: a whole number from 1, got "${args.rounds}"`);
const pin = canPin();
if (pin) pinPostgres(0);

const children: Child[] = [];
const db = await createBenchDatabase();
try {
  const { upstream, loader } = await startUpstreamAndLoader(pin ? 0 : null, children);
  const admin = randomBytes(24).toString('hex');
  const reins = await startServer('reins', ['--import', 'tsx', join(HERE, 'reins-server.ts'), upstream, admin, db.url], { cpu: pin ? 1 : null });
  children.push(reins.child);
  const { target } = await setUpReins(reins.url, admin, { allowPartial: false });
  const store = new pg.Client({ connectionString: db.url });
  await store.connect();
  // The secondary indexes as the migrations made them (on the partitioned table; each partition has its own copy).
  const { rows: indexes } = await store.query<{ indexname: string; indexdef: string }>(
    `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'audit_events' AND indexname <> 'audit_events_pkey'`,
  );
  const job: LoadJob = { kind: 'max', target, connections: 50, warmupSeconds: 1, seconds: 3 };
  const paced: LoadJob = { kind: 'paced', target, rate: 1000, warmupSeconds: 0.5, seconds: 3, connections: 32 };
  await loader.run({ ...job, warmupSeconds: 0 });
  process.stdout.write(`audit_events: ${indexes.length} secondary indexes (${indexes.map((i) => i.indexname).join(', ')}); ${pin ? 'Reins on CPU 1' : 'unpinned'}\n`);
  for (let r = 1; r <= rounds; r++) {
    for (const indexed of r % 2 === 1 ? [true, false] : [false, true]) {
      if (!indexed) for (const i of indexes) await store.query(`DROP INDEX ${i.indexname}`);
      await store.query('VACUUM ANALYZE audit_events');
      const cpuBefore = processCpuMs(reins.child.pid);
      const pgBefore = postgresCpuMs();
      const started = performance.now();
      const result: LoadResult = await loader.run(job);
      const wallMs = performance.now() - started;
      const cpuMs = processCpuMs(reins.child.pid) - cpuBefore;
      const pgMs = cpuSpentBetween(pgBefore, postgresCpuMs());
      const calls = result.ok + result.warmupOk;
      const at1000 = await loader.run(paced);
      process.stdout.write(
        `round ${r}, ${indexed ? 'with the indexes' : 'primary key only'}: ${Math.round(result.rps)} requests/s, Reins ${((cpuMs * 1000) / calls).toFixed(0)} µs/request, ` +
          `its core busy ${((100 * cpuMs) / wallMs).toFixed(0)}%, PostgreSQL ${pgMs === null ? '-' : ((pgMs * 1000) / calls).toFixed(0)} µs/request; ` +
          `at 1000/s p50 ${at1000.latency?.p50.toFixed(3) ?? '-'} ms, p99 ${at1000.latency?.p99.toFixed(3) ?? '-'} ms\n`,
      );
      // pg_indexes gives a partitioned table's index as `ON ONLY`, which would leave every partition without it.
      if (!indexed) for (const i of indexes) await store.query(i.indexdef.replace(' ON ONLY ', ' ON '));
    }
  }
  await store.end();
} finally {
  for (const c of children.reverse()) await c.stop();
  await db.drop();
}
