/**
 * `reins audit export` on both stores: through a running server's API (`--url`) and from the store, the lines are
 * the API's items (the same objects, in the same order, over several pages), filtered by --since/--until/--type;
 * bad options exit 2 naming the option. The CLI runs as its own process, as an operator runs it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import type { Replica } from '../../../src/app/server.js';
import { exportAuditLines, storePages } from '../../../src/audit/export-lines.js';
import { ADMIN_TOKEN, Client, describeEachStore, startTestReplica } from '../../helpers/harness.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function reins(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    const childEnv = { ...process.env, DATABASE_URL: '', REINS_DATA_DIR: 'memory', REINS_URL: '', REINS_TOKEN: '', ...env };
    execFile(process.execPath, ['--import', 'tsx', 'src/cli-main.ts', ...args], { env: childEnv, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

const lines = (out: string) =>
  out
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describeEachStore('reins audit export', ({ store, kind }) => {
  let replica: Replica;
  let api: Client;
  const since = new Date(Date.now() - 3 * 86_400_000);
  before(async () => {
    replica = await startTestReplica(store());
    api = new Client(replica.url, ADMIN_TOKEN);
    // 1,200 governed-call events over two days (three pages of 500), half of them decision events without an end
    // (callEnded: false in the API's shape), text beyond ASCII; one event before the window.
    await replica.db.query(
      `INSERT INTO audit_events (at, type, action, actor_kind, actor_id, subject, host, data)
       SELECT now() - make_interval(secs => g * 120), CASE WHEN g % 2 = 0 THEN 'llm' ELSE 'egress' END,
              CASE WHEN g % 2 = 0 THEN 'llm.request' ELSE 'egress.request' END, 'agent', 'eng/bot', 'eng/bot',
              CASE WHEN g % 2 = 0 THEN NULL ELSE 'api.example.com' END,
              jsonb_build_object('callId', 'call-' || g, 'n', g, 'text', 'é ✓ 𝄞')
         FROM generate_series(1, 1200) AS g`,
    );
    await replica.db.query(
      `INSERT INTO audit_events (at, type, action, actor_kind, actor_id) VALUES (now() - interval '10 days', 'llm', 'llm.request', 'agent', 'eng/old')`,
    );
  });
  after(() => replica.close());

  /** Every item of the API's pages for the filter, newest first. */
  async function apiItems(query: string): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let cursor = '';
    for (;;) {
      const page = await api.get(`/api/v1/audit-events?limit=200&${query}${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(page.status, 200);
      items.push(...page.body.items);
      if (!page.body.nextCursor) return items;
      cursor = page.body.nextCursor;
    }
  }

  test('through --url: the lines are the API items, in order, across pages', async () => {
    const run = await reins(['audit', 'export', '--since', since.toISOString()], { REINS_URL: replica.url, REINS_TOKEN: ADMIN_TOKEN });
    assert.equal(run.code, 0, run.stderr);
    const exported = lines(run.stdout);
    const expected = await apiItems(`since=${encodeURIComponent(since.toISOString())}`);
    assert.ok(expected.length > 1200, `${expected.length} events`);
    assert.deepEqual(exported, expected);
    assert.ok(!exported.some((e) => (e.actor as { id: string }).id === 'eng/old'));
    assert.ok(exported.some((e) => e.callEnded === false));
    assert.match(run.stderr, new RegExp(`exported ${expected.length} audit events`));
  });

  test('--type and --until (Unix seconds) filter as the API does', async () => {
    const until = Math.floor((Date.now() - 86_400_000) / 1000);
    const run = await reins(['audit', 'export', '--since', since.toISOString(), '--until', String(until), '--type', 'egress'], {
      REINS_URL: replica.url,
      REINS_TOKEN: ADMIN_TOKEN,
    });
    assert.equal(run.code, 0, run.stderr);
    const exported = lines(run.stdout);
    assert.ok(exported.length > 100);
    assert.ok(exported.every((e) => e.type === 'egress' && Date.parse(e.at as string) < until * 1000));
    assert.deepEqual(exported, await apiItems(`since=${encodeURIComponent(since.toISOString())}&until=${until}&type=egress`));
  });

  test('from the store: the same lines as the API', async () => {
    const out: string[] = [];
    const n = await exportAuditLines(storePages(replica.db, { since }), async (chunk) => void out.push(chunk));
    const fromStore = lines(out.join(''));
    assert.equal(n, fromStore.length);
    // The API's items are a snapshot taken after: events the replica wrote since then (none here) would only add.
    assert.deepEqual(fromStore, await apiItems(`since=${encodeURIComponent(since.toISOString())}`));
  });

  if (kind === 'postgres') {
    test('the CLI process on DATABASE_URL writes the same lines', async () => {
      const run = await reins(['audit', 'export', '--since', since.toISOString(), '--type', 'llm'], { DATABASE_URL: store().url! });
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(lines(run.stdout), await apiItems(`since=${encodeURIComponent(since.toISOString())}&type=llm`));
    });
  }

  test('bad options exit 2 and name the option', async () => {
    const env = { REINS_URL: replica.url, REINS_TOKEN: ADMIN_TOKEN };
    const missing = await reins(['audit', 'export'], env);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--since/);
    const bad = await reins(['audit', 'export', '--since', 'yesterday'], env);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--since must be/);
    const backwards = await reins(['audit', 'export', '--since', '2026-01-02T00:00:00Z', '--until', '2026-01-01T00:00:00Z'], env);
    assert.equal(backwards.code, 2);
    assert.match(backwards.stderr, /--until/);
  });
});
