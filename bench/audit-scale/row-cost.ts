/**
 * What one audit event costs the store to write, by index set: the audit writer's own statement (a batch of 100
 * events as one JSON parameter, audit/audit-writer.ts) timed on a fresh store, one batch at a time, so that the
 * figure is the store's work per event and not the gateway's. Per store, in alternating rounds:
 *
 * - `migrated`: the indexes the migrations leave on that store;
 * - `full subject index` (PGlite): as before migration 024, the full `(subject, id)` index instead of the one that
 *   leaves out events about their own actor;
 * - `full subject indexes retired` (PostgreSQL): the three full subject indexes dropped, as a later release will and
 *   as docs/audit.md tells an operator how to do sooner; the ones without the actor's own events stay;
 * - `with time indexes`: the same plus whichever of `(at)` and `(type, at)` the store lacks (PGlite: `(type, at)`,
 *   dropped by migration 022, which dropped `(at)` too until 023 put it back);
 * - `without time indexes`: the same minus whichever of the two the store has;
 * - `primary key only`: every secondary index dropped (what the governed floor's table has, bench/gateway-overhead).
 *
 *   node --import tsx bench/audit-scale/row-cost.ts [--rounds 2] [--store pglite,postgres] [--out DIR]
 *
 * Why it exists: a whole-gateway comparison (bench/gateway-overhead/flags-ab.ts) of PGlite with and without the two
 * time indexes could not resolve the change on a noisy 2-core machine (the two start orders disagreed by 30%). The
 * store's own time per event, measured here with nothing else running, still moves between rounds on such a machine
 * (one variant's six rounds ran from 50 to 83 µs), but no start order favours a variant: read the median of six or
 * more rounds, each listed in the report. On PGlite the store thread runs in the gateway's process, so each µs here is the gateway's CPU; on
 * PostgreSQL it is the database server's.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Db } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { openStore } from '../../src/store/open.js';
import { createBenchDatabase } from '../gateway-overhead/bench-database.js';
import { machineFacts, machineSpeedMs } from '../gateway-overhead/processes.js';
import { median } from '../gateway-overhead/report.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const { values: args } = parseArgs({
  options: { rounds: { type: 'string', default: '2' }, store: { type: 'string', default: 'pglite,postgres' }, out: { type: 'string' } },
});
const rounds = Number(args.rounds);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds: a whole number from 1, got "${args.rounds}"`);
const stores = args.store!.split(',');
for (const s of stores) if (s !== 'pglite' && s !== 'postgres') throw new Error(`--store: pglite or postgres, got "${s}"`);

const BATCH = 100;
const WARM_BATCHES = 50;
const MEASURED_BATCHES = 300;
// The audit writer's statement (audit/audit-writer.ts writeBatch), word for word.
const INSERT = `INSERT INTO audit_events (type, action, outcome, actor_kind, actor_id, subject, host, data)
         SELECT e->>0, e->>1, e->>2, e->>3, e->>4, e->>5, e->>6, e->7
           FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS t(e, n) ORDER BY n`;
// The two time indexes as migration 017 made them (on PGlite 022 dropped both and 023 made (at) again).
const TIME_INDEXES: Record<string, string> = { audit_events_at: '(at)', audit_events_type_at: '(type, at)' };

/**
 * A governed LLM call's two events, shaped as Reins writes them (audit-record.ts): decision, then end. Made with an
 * agent key, so each is about its own actor (subject = actor_id): the events the subject indexes of migration 024
 * leave out. An event about someone else (a developer's call on an agent's behalf) costs what it did before 024.
 */
function batchText(first: number): string {
  const rows = Array.from({ length: BATCH }, (_, k) => {
    const i = first + k;
    const agent = `team/agent-${i % 50}`;
    const end = k % 2 === 1;
    const data = end
      ? { callId: randomUUID(), status: 200, end: 'completed', durationMs: 3, usage: { inputTokens: 20, outputTokens: 10 }, costUsd: 0.00001 }
      : { callId: randomUUID(), provider: 'openai', model: 'gpt-4o-mini', agent: { id: agent, tier: 2, explicitTier: true }, developer: null, session: null, tokenId: 'tok_1', decision: 'allow', policy: null, matched: [], flagged: false };
    return ['llm', end ? 'llm.request_end' : 'llm.request', 'ok', 'agent', agent, agent, 'api.openai.com', data];
  });
  return JSON.stringify(rows);
}

type Variant = 'migrated' | 'full subject index' | 'full subject indexes retired' | 'with time indexes' | 'without time indexes' | 'primary key only';
/** The full subject indexes: PGlite's one, which migration 024 replaced, and PostgreSQL's three, which it keeps for now. */
const FULL_SUBJECT_INDEXES: Record<string, string> = { audit_events_subject: '(subject, id)', audit_events_subject_action: '(subject, action, id)', audit_events_subject_type: '(subject, type, id)' };

async function secondaryIndexes(db: Db): Promise<string[]> {
  const r = await db.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE tablename = 'audit_events' AND indexname <> 'audit_events_pkey' ORDER BY indexname`);
  return r.rows.map((x) => x.indexname);
}

/** µs per event written, on a fresh store with the variant's indexes; and the index names it had. */
async function measure(store: string, variant: Variant): Promise<{ usPerEvent: number; indexes: string[] }> {
  const bench = store === 'postgres' ? await createBenchDatabase() : null;
  const db = await openStore(bench ? { kind: 'postgres', url: bench.url } : { kind: 'pglite', dataDir: 'memory' });
  try {
    await migrate(db);
    const had = await secondaryIndexes(db);
    for (const [name, columns] of Object.entries(TIME_INDEXES)) {
      if (variant === 'with time indexes' && !had.includes(name)) await db.query(`CREATE INDEX ${name} ON audit_events ${columns}`);
      if (variant === 'without time indexes' && had.includes(name)) await db.query(`DROP INDEX ${name}`);
    }
    // PGlite as before migration 024: its full (subject, id) index in place of the one without the actor's own events.
    if (variant === 'full subject index') {
      await db.query('DROP INDEX audit_events_subject_not_actor');
      await db.query(`CREATE INDEX audit_events_subject ON audit_events ${FULL_SUBJECT_INDEXES.audit_events_subject}`);
    }
    // PostgreSQL once the full subject indexes are dropped (docs/audit.md, "Retiring the full subject indexes").
    if (variant === 'full subject indexes retired') for (const name of Object.keys(FULL_SUBJECT_INDEXES)) await db.query(`DROP INDEX ${name}`);
    if (variant === 'primary key only') for (const name of had) await db.query(`DROP INDEX ${name}`);
    const indexes = await secondaryIndexes(db);
    const batches = Array.from({ length: WARM_BATCHES + MEASURED_BATCHES }, (_, b) => batchText(b * BATCH));
    for (let b = 0; b < WARM_BATCHES; b++) await db.query(INSERT, [batches[b]]);
    const started = performance.now();
    for (let b = WARM_BATCHES; b < batches.length; b++) await db.query(INSERT, [batches[b]]);
    const usPerEvent = ((performance.now() - started) * 1000) / (MEASURED_BATCHES * BATCH);
    return { usPerEvent, indexes };
  } finally {
    await db.close();
    await bench?.drop();
  }
}

const VARIANTS: Record<string, Variant[]> = {
  pglite: ['migrated', 'full subject index', 'with time indexes', 'without time indexes', 'primary key only'],
  postgres: ['migrated', 'full subject indexes retired', 'without time indexes', 'primary key only'],
};
const speedMs = machineSpeedMs();
const results: { store: string; variant: Variant; round: number; usPerEvent: number; indexes: string[] }[] = [];
for (let round = 1; round <= rounds; round++) {
  for (const store of stores) {
    const order = round % 2 === 1 ? VARIANTS[store]! : [...VARIANTS[store]!].reverse();
    for (const variant of order) {
      const r = await measure(store, variant);
      results.push({ store, variant, round, ...r });
      process.stderr.write(`${store} ${variant} round ${round}: ${r.usPerEvent.toFixed(1)} µs/event (${r.indexes.length} secondary indexes)\n`);
    }
  }
}

const lines = [
  '# bench/audit-scale/row-cost: what one audit event costs the store to write',
  '',
  `${new Date().toISOString()}; machine speed ${speedMs} ms (bench/gateway-overhead/processes.ts machineSpeedMs, lower is faster). ` +
    `The audit writer's statement, ${BATCH} events a batch, one batch at a time, ${MEASURED_BATCHES * BATCH} events measured after ${WARM_BATCHES * BATCH} on a fresh store per variant; ` +
    `median of ${rounds} round(s), variants in alternating order. How to run: bench/audit-scale/row-cost.ts.`,
  '',
  '| store | indexes | secondary indexes | µs per event (rounds) |',
  '| --- | --- | ---: | ---: |',
];
for (const store of stores) {
  for (const variant of VARIANTS[store]!) {
    const mine = results.filter((r) => r.store === store && r.variant === variant);
    lines.push(`| ${store} | ${variant} | ${mine[0]!.indexes.length} | ${median(mine.map((r) => r.usPerEvent)).toFixed(1)} (${mine.map((r) => r.usPerEvent.toFixed(1)).join(', ')}) |`);
  }
}
lines.push('', ...stores.map((s) => `- ${s}, as migrated: ${results.find((r) => r.store === s && r.variant === 'migrated')!.indexes.join(', ')}`), '');
const text = lines.join('\n');
process.stdout.write(`${text}\n`);
if (args.out !== undefined) {
  mkdirSync(args.out, { recursive: true });
  writeFileSync(join(args.out, 'audit-row-cost.md'), text);
  writeFileSync(join(args.out, 'audit-row-cost.json'), `${JSON.stringify({ machine: machineFacts(ROOT, ['@electric-sql/pglite', 'pg']), speedMs, batch: BATCH, measuredEvents: MEASURED_BATCHES * BATCH, results }, null, 2)}\n`);
}
