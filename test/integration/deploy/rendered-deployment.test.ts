/**
 * The rendered Deployment runs: `reins migrate` (the CLI, as the migrate Job runs it) migrates a fresh PostgreSQL
 * database, then the server starts as the Deployment's container would, with its env (secretKeyRefs resolved from a
 * Secret of the test's) and the ConfigMap's reins.yaml, applies no migration again, answers /healthz and /readyz,
 * and leaves on SIGTERM with exit code 0. The only changes: the ports are ephemeral (PORT=0, egress.port 0), the
 * config file is where the test wrote it rather than at the mount path, and the program runs from src/ through tsx
 * (the command's dist/main.js is src/main.ts built). PostgreSQL only: the manifests run on PostgreSQL.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { listMigrations } from '../../../src/store/migrate.js';
import { ADMIN_TOKEN, Client } from '../../helpers/harness.js';
import { find, kubectlMissing, render, type K8sObject, type Rendering } from '../../helpers/kustomize.js';
import { runToEnd, startReplicaProcess, stopReplicaProcess, type ReplicaProcess } from '../../helpers/replica-process.js';
import { freshPostgresDatabase, postgresReachable, storeKinds } from '../../helpers/stores.js';

const skip = !storeKinds().includes('postgres') ? 'PostgreSQL not in REINS_TEST_STORES' : (kubectlMissing() ?? false);
const TSX = ['--import', 'tsx'];

/** The container's env and config file from a rendering, secrets from `secret` (Secret reins-secrets' keys). */
function containerOf(objects: K8sObject[], secret: Record<string, string>, dir: string): { argv: string[]; env: NodeJS.ProcessEnv; probes: { readiness: string; liveness: string; startup: string } } {
  const spec = find(objects, 'Deployment', 'reins').spec.template.spec;
  const [container] = spec.containers;
  const configMap = find(objects, 'ConfigMap', spec.volumes.find((v: any) => v.name === 'config').configMap.name);
  const file = parseYaml(configMap.data['reins.yaml']) as { egress?: { port: number } };
  if (file.egress) file.egress.port = 0;
  const configPath = join(dir, `reins-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(configPath, stringifyYaml(file));
  // Only what a container gets: PATH for the child's own tools, nothing of the test runner's environment.
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH };
  for (const e of container.env) {
    if (e.value !== undefined) env[e.name] = e.value;
    else {
      const ref = e.valueFrom.secretKeyRef;
      assert.ok(ref.name.startsWith('reins-secrets'), `${e.name} from Secret reins-secrets`);
      if (secret[ref.key] !== undefined) env[e.name] = secret[ref.key];
      else assert.equal(ref.optional, true, `${e.name}: the Secret lacks ${ref.key}, so it must be optional`);
    }
  }
  assert.equal(env.REINS_CONFIG, `${container.volumeMounts.find((m: any) => m.name === 'config').mountPath}/reins.yaml`);
  env.REINS_CONFIG = configPath;
  const command: string[] = container.command;
  assert.equal(command[0], 'node');
  assert.equal(command.at(-1), 'dist/main.js');
  // npm start's command, without npm (as the image's CMD): the two must not drift apart.
  const start = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } }).scripts.start;
  assert.deepEqual(command, start.split(' '), "the container's command is npm start's");
  for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) assert.equal(probe.httpGet.port, 'http');
  assert.equal(container.ports.find((p: any) => p.name === 'http').containerPort, Number(env.PORT));
  env.PORT = '0';
  const probes = { readiness: container.readinessProbe.httpGet.path, liveness: container.livenessProbe.httpGet.path, startup: container.startupProbe.httpGet.path };
  return { argv: [...command.slice(1, -1), ...TSX, 'src/main.ts'], env, probes };
}

// Two chains on two databases, run side by side (each step is a process start under tsx, about a minute on a loaded
// machine: one after the other they would not fit the test runner's per-file limit): the refusal with
// REINS_MIGRATE=off on a fresh database, and `reins migrate` followed by the two renderings' containers.
describe('the rendered Deployment starts the server [postgres]', { skip, concurrency: true }, async () => {
  if (skip || !(await postgresReachable())) return;
  const databases: { url: string; drop: () => Promise<void> }[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'reins-rendered-'));
  const replicas: ReplicaProcess[] = [];
  const freshDatabase = async () => {
    const database = await freshPostgresDatabase();
    databases.push(database);
    return database;
  };
  after(async () => {
    for (const r of replicas) await stopReplicaProcess(r);
    for (const d of databases) await d.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const migrationCount = async (url: string): Promise<number> => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const t = await c.query(`SELECT to_regclass('schema_migrations')::text AS t`);
      return t.rows[0].t === null ? 0 : Number((await c.query('SELECT count(*)::int AS n FROM schema_migrations')).rows[0].n);
    } finally {
      await c.end();
    }
  };

  test('REINS_MIGRATE=off on a fresh database: the replica refuses to start and says to run `reins migrate`', async () => {
    const database = await freshDatabase();
    const { argv, env } = containerOf(render('production+migrate-job'), { DATABASE_URL: database.url }, dir);
    assert.equal(env.REINS_MIGRATE, 'off');
    const run = await runToEnd(argv, env);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /^reins: failed to start: the store has migrations not applied and REINS_MIGRATE is off: run `reins migrate` first/);
    assert.equal(await migrationCount(database.url), 0);
  });

  test('`reins migrate` migrates a fresh database once; then each rendering\'s container starts without migrating, answers its probes, and SIGTERM ends it with 0', { concurrency: true }, async (t) => {
    const database = await freshDatabase();
    await t.test('`reins migrate` applies every migration once; a second run has nothing to do', async () => {
      const env = { PATH: process.env.PATH, DATABASE_URL: database.url };
      const first = await runToEnd([...TSX, 'src/cli-main.ts', 'migrate'], env);
      assert.equal(first.code, 0, first.stderr);
      const all = listMigrations();
      assert.match(first.stdout, new RegExp(`^applied ${all.length} migrations: 001_foundation, `));
      assert.equal(await migrationCount(database.url), all.length);
      const second = await runToEnd([...TSX, 'src/cli-main.ts', 'migrate'], env);
      assert.equal(second.code, 0, second.stderr);
      assert.equal(second.stdout.trim(), 'schema up to date: no migration to apply');
    });

    // The two renderings side by side on the migrated database, as two replicas would run.
    await Promise.all(
      (['overlays/production', 'production+migrate-job'] as Rendering[]).map((rendering) =>
        t.test(`${rendering}: the container starts without migrating again, /readyz answers ready, SIGTERM ends it with 0`, async () => {
          const { argv, env, probes } = containerOf(render(rendering), { DATABASE_URL: database.url, REINS_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN }, dir);
          const replica = await startReplicaProcess(rendering, env, argv);
          replicas.push(replica);
          assert.deepEqual(replica.listening.migrationsApplied, [], 'the migrations were applied by `reins migrate`');
          assert.equal(replica.listening.store, 'postgres');
          // The probes as rendered: the kubelet would find this replica started, live and ready.
          const ready = await fetch(`${replica.url}${probes.readiness}`);
          assert.equal(ready.status, 200);
          assert.deepEqual(await ready.json(), { status: 'ready', store: 'postgres' });
          assert.equal((await fetch(`${replica.url}${probes.liveness}`)).status, 200);
          assert.equal((await fetch(`${replica.url}${probes.startup}`)).status, 200);
          // The Secret's bootstrap token made the first admin; reins.yaml's egress proxy and runtime guard are on.
          const me = await new Client(replica.url, ADMIN_TOKEN).get('/api/v1/auth/me');
          assert.equal(me.status, 200);
          assert.match(String(replica.listening.egressUrl), /^http:\/\/0\.0\.0\.0:\d+$/, 'the egress proxy listens (egress.port in reins.yaml)');
          const status = await new Client(replica.url, ADMIN_TOKEN).get('/api/v1/runtime/status');
          assert.equal(status.status, 200);
          replica.proc.kill('SIGTERM');
          const exit = await replica.exited;
          assert.equal(exit.code, 0, replica.output());
        }),
      ),
    );
  });
});
