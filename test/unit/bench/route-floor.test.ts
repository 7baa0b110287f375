/**
 * bench/reconciliation's route floor (route-floor.ts): the least an HTTP ingest route does, against which the real
 * route's throughput is read. It must store what the real route stores for a report (the rows and the node's
 * counter), answer as the route answers, and refuse what the route refuses before storing anything (a wrong token,
 * a body that is no report): a floor that skipped a step would flatter nothing, one that stored less would be no
 * floor. With --index (the indexed floor) it keeps the observation index current beside it, every row stored.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { type Child, startServer } from '../../../bench/gateway-overhead/processes.js';
import { migrate } from '../../../src/store/migrate.js';
import { PostgresDb } from '../../../src/store/postgres.js';
import { freshPostgresDatabase, postgresReachable } from '../../helpers/stores.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const FLOOR = join(HERE, '../../../bench/reconciliation/route-floor.ts');
const PATH = '/api/v1/runtime/sensor/reports';
const TOKEN = 'rs_floor_test_token';

function report(node: string, items: number, at = 1_790_000_000): string {
  const observations = Array.from({ length: items }, (_, i) => ({
    family: 'dns',
    rule: 'reins-monitor-dns',
    behavior: 'dns-query',
    subject: 'agent/alpha',
    destIP: '10.0.0.1',
    destName: 'api.openai.com',
    count: 1 + i,
    podName: `pod-${i}`,
    podIP: '10.1.0.1',
    namespace: 'team-a',
    result: 'allowed',
    mode: 'monitor',
    observedAt: at + i,
  }));
  return JSON.stringify({ node, observations });
}

/** A floor on a fresh migrated database of its own, stopped and dropped after its suite. */
function floorForSuite(extra: string[] = []): { database: { url: string; drop: () => Promise<void> }; floor: { child: Child; url: string } } {
  const started = {} as { database: { url: string; drop: () => Promise<void> }; floor: { child: Child; url: string } };
  before(async () => {
    started.database = await freshPostgresDatabase();
    const db = new PostgresDb(started.database.url);
    await migrate(db).finally(() => db.close());
    const hash = createHash('sha256').update(TOKEN).digest('hex');
    started.floor = await startServer(extra.length > 0 ? 'indexed floor' : 'route floor', ['--import', 'tsx', FLOOR, started.database.url, hash, ...extra]);
  });
  after(async () => {
    await started.floor?.child.stop();
    await started.database?.drop();
  });
  return started;
}

describe('bench/reconciliation route floor', { skip: !(await postgresReachable()) && 'PostgreSQL unreachable' }, () => {
  const started = floorForSuite();

  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${started.floor.url}${PATH}`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...headers }, body });

  const rows = async (): Promise<{ observations: number; counted: number }> => {
    const client = new pg.Client({ connectionString: started.database.url });
    await client.connect();
    try {
      const observations = Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM runtime_observations')).rows[0]!.n);
      const counted = Number((await client.query<{ n: string | null }>('SELECT sum(stored_items) AS n FROM runtime_node_items')).rows[0]!.n ?? 0);
      return { observations, counted };
    } finally {
      await client.end();
    }
  };

  test('stores a report as the route does: every item, the node counter raised by as many, {"stored": n}', async () => {
    const res = await post(report('node-a', 500));
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { stored: 500 });
    assert.deepEqual(await rows(), { observations: 500, counted: 500 });
  });

  test('refuses a wrong token, a body that is no report and a report over 500 items, storing nothing', async () => {
    const before = await rows();
    assert.equal((await post(report('node-b', 3), { authorization: 'Bearer rs_someone_else' })).status, 401);
    assert.equal((await post(report('node-b', 3), { authorization: '' })).status, 401);
    assert.equal((await post('{"node": "node-b", "observations": ')).status, 400);
    assert.equal((await post('{"observations": []}')).status, 400);
    assert.equal((await post('{"node": "node-b", "observations": {}}')).status, 400);
    assert.equal((await post(report('node-b', 501))).status, 400);
    assert.equal((await post(report('node-b', 3), { 'content-type': 'text/plain' })).status, 415);
    assert.deepEqual(await rows(), before);
  });

  test('answers 404 off its one route', async () => {
    const res = await fetch(`${started.floor.url}/api/v1/runtime/sensor/status`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 404);
  });

  test('without --index it has no index to ask', async () => {
    assert.equal((await fetch(`${started.floor.url}/index`)).status, 404);
  });
});

describe('bench/reconciliation indexed floor (--index)', { skip: !(await postgresReachable()) && 'PostgreSQL unreachable' }, () => {
  const started = floorForSuite(['--index']);

  test('indexes every row it stored, as the replica does, including rows another writer stored', async () => {
    const post = (body: string) =>
      fetch(`${started.floor.url}${PATH}`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body });
    // Observed within the day: the index keeps no older rows.
    const at = Math.floor(Date.now() / 1000) - 3600;
    for (const node of ['node-a', 'node-b', 'node-c']) assert.equal((await post(report(node, 200, at))).status, 200);
    // A row stored by another writer (another replica) is indexed too: the index reads the table, not the reports.
    const db = new PostgresDb(started.database.url);
    await db
      .query(
        `INSERT INTO runtime_observations (node, family, rule, behavior, subject, dest_ip, dest_name, count, pod_name, pod_ip, namespace, result, mode, observed_at)
         VALUES ('node-z', 'dns', 'r', 'dns-query', 's', '', 'example.com', 1, 'pod-z', '', 'team-z', 'allowed', 'monitor', $1)`,
        [at],
      )
      .finally(() => db.close());
    const res = await fetch(`${started.floor.url}/index`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { rows: 601 });
  });
});

