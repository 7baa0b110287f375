/**
 * The OTLP audit exporter against a local OTLP/HTTP log receiver (a node:http server decoding the JSON export
 * requests of the SDK's OTLPLogExporter), on both stores: every event arrives with its fields as attributes; the
 * receiver down, events written, the receiver back: they arrive, none lost; two exporters on one store: one
 * exports (the lease); a replica configured with `audit.export.otlp.endpoint` exports and reports its lag. On
 * PostgreSQL, an event whose insert commits after a later one is not skipped (the exporter waits at the gap), and a
 * replica process killed with -9 mid-batch leaves no gap after a restart.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { recordAudit } from '../../../src/audit/audit.js';
import { AuditOtlpExporter } from '../../../src/audit/otlp-export.js';
import type { Db } from '../../../src/store/db.js';
import { migrate } from '../../../src/store/migrate.js';
import { openStore } from '../../../src/store/open.js';
import { closable } from '../../fakes/closable.js';
import { ADMIN_TOKEN, Client, describeEachStore, startTestReplica, waitFor, WAIT_MS } from '../../helpers/harness.js';

type OtlpValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
const valueOf = (v: OtlpValue): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.doubleValue ?? v.boolValue));

interface Received {
  service: string;
  timeUnixNano: string;
  severityText: string;
  body: unknown;
  eventName?: string;
  attributes: Record<string, unknown>;
}

/** An OTLP/HTTP log receiver that can be stopped and started again on the same port (a Collector outage). */
class Receiver {
  records: Received[] = [];
  /** When set and true for a request's records, the request is recorded but never answered (a replica killed mid-batch). */
  hold: ((records: Received[]) => boolean) | null = null;
  held = 0;
  private server: Server | null = null;
  private closeServer: (() => Promise<void>) | null = null;
  port = 0;

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/logs') return void res.writeHead(404).end();
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceLogs?: any[] };
        const got: Received[] = [];
        for (const rl of body.resourceLogs ?? []) {
          const service = String(valueOf(rl.resource.attributes.find((a: any) => a.key === 'service.name').value));
          for (const sl of rl.scopeLogs ?? []) {
            for (const r of sl.logRecords ?? []) {
              got.push({
                service,
                timeUnixNano: String(r.timeUnixNano),
                severityText: r.severityText,
                body: valueOf(r.body ?? {}),
                eventName: r.eventName,
                attributes: Object.fromEntries((r.attributes ?? []).map((a: { key: string; value: OtlpValue }) => [a.key, valueOf(a.value)])),
              });
            }
          }
        }
        this.records.push(...got);
        if (this.hold?.(got)) {
          this.held++;
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    this.closeServer = closable(server);
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    await this.closeServer?.();
    this.server = null;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  markers(prefix: string): string[] {
    return this.records.map((r) => String(r.attributes['reins.audit.data.marker'] ?? '')).filter((m) => m.startsWith(prefix));
  }
}

const actor = { kind: 'agent', identityId: 'eng/bot', tokenId: 'tok_1' } as const;
/** How long a replica process may take to start (tsx compiles it first). */
const START_LIMIT_MS = 120_000;

describeEachStore('OTLP audit export', ({ store, kind }) => {
  let db: Db;
  const receiver = new Receiver();
  before(async () => {
    const s = store();
    db = s.db ?? (await openStore({ kind: 'postgres', url: s.url! }));
    await migrate(db);
    await receiver.start();
  });
  after(async () => {
    await receiver.stop();
    if (kind === 'postgres') await db.close();
  });

  const exporter = (serviceName = 'reins', batchSize = 50) =>
    new AuditOtlpExporter(db, { url: `${receiver.url}/v1/logs`, batchSize, intervalMs: 50, gapWaitMs: 2000, serviceName, timeoutMs: 2000 });

  test('every event arrives with its fields as attributes', async () => {
    const e = exporter();
    e.start();
    try {
      for (let i = 0; i < 120; i++) {
        await recordAudit(db, { type: 'llm', action: 'llm.request_end', actor, subject: 'eng/bot', outcome: i === 0 ? 'refused' : 'ok', data: { marker: `a-${i}`, callId: `c-${i}`, model: 'gpt-4o', usage: { inputTokens: 10, outputTokens: 5 } } });
      }
      await recordAudit(db, { type: 'egress', action: 'egress.request', actor, host: 'api.example.com', data: { marker: 'a-egress' } });
      assert.ok((await waitFor(() => receiver.markers('a-').length >= 121, WAIT_MS)) >= 0, `${receiver.markers('a-').length} arrived`);
      assert.equal(new Set(receiver.markers('a-')).size, 121, JSON.stringify(receiver.records.map((r) => r.attributes['reins.audit.id'])));
      const row = (await db.query<{ id: string; at: Date }>(`SELECT id::text AS id, at FROM audit_events WHERE data->>'marker' = 'a-0'`)).rows[0]!;
      const first = receiver.records.find((r) => r.attributes['reins.audit.data.marker'] === 'a-0')!;
      assert.equal(first.attributes['reins.audit.id'], row.id);
      assert.equal(first.attributes['reins.audit.action'], 'llm.request_end');
      assert.equal(first.attributes['reins.audit.type'], 'llm');
      assert.equal(first.attributes['reins.audit.outcome'], 'refused');
      assert.equal(first.severityText, 'WARN');
      assert.equal(first.attributes['reins.audit.actor.kind'], 'agent');
      assert.equal(first.attributes['reins.audit.actor.id'], 'eng/bot');
      assert.equal(first.attributes['reins.audit.subject'], 'eng/bot');
      assert.equal(first.attributes['reins.call.id'], 'c-0');
      assert.equal(first.attributes['gen_ai.response.model'], 'gpt-4o');
      assert.equal(first.attributes['gen_ai.usage.input_tokens'], 10);
      assert.equal(first.attributes['gen_ai.usage.output_tokens'], 5);
      assert.equal(first.attributes['reins.audit.data.usage'], JSON.stringify({ inputTokens: 10, outputTokens: 5 }));
      assert.equal(first.eventName, 'reins.audit.llm.request_end');
      assert.equal(BigInt(first.timeUnixNano) / 1_000_000n, BigInt(row.at.getTime()));
      const egress = receiver.records.find((r) => r.attributes['reins.audit.data.marker'] === 'a-egress')!;
      assert.equal(egress.attributes['server.address'], 'api.example.com');
      await waitFor(() => e.lag === 0, WAIT_MS);
      assert.equal(e.lag, 0);
    } finally {
      await e.stop();
    }
  });

  test('the receiver down, events written, the receiver back: they arrive, none lost', async () => {
    const e = exporter();
    e.start();
    try {
      await receiver.stop();
      for (let i = 0; i < 80; i++) await recordAudit(db, { type: 'control', action: 'identity.create', actor: { kind: 'system', name: 'cli' }, data: { marker: `b-${i}` } });
      // The exporter tries, fails, keeps its position: the lag shows the backlog.
      assert.ok((await waitFor(() => e.lag >= 80, WAIT_MS)) >= 0, `lag ${e.lag}`);
      assert.deepEqual(receiver.markers('b-'), []);
      await receiver.start();
      assert.ok((await waitFor(() => new Set(receiver.markers('b-')).size === 80, WAIT_MS)) >= 0, `${receiver.markers('b-').length} arrived`);
      await waitFor(() => e.lag === 0, WAIT_MS);
      assert.equal(e.lag, 0);
    } finally {
      await e.stop();
    }
  });

  test('a new exporter (a restart) resumes at the cursor; two exporters: one exports', async () => {
    const before = receiver.records.length;
    const a = exporter('reins-a');
    const b = exporter('reins-b');
    a.start();
    b.start();
    try {
      for (let i = 0; i < 60; i++) await recordAudit(db, { type: 'control', action: 'token.create', actor: { kind: 'system', name: 'cli' }, data: { marker: `c-${i}` } });
      assert.ok((await waitFor(() => new Set(receiver.markers('c-')).size === 60, WAIT_MS)) >= 0);
      const fresh = receiver.records.slice(before);
      // Nothing exported before was sent again, and one exporter sent them all.
      assert.deepEqual(fresh.filter((r) => !String(r.attributes['reins.audit.data.marker']).startsWith('c-')), []);
      assert.equal(new Set(fresh.map((r) => r.service)).size, 1);
      assert.equal(fresh.length, 60);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  if (kind === 'postgres') {
    test('an insert that commits after a later one is waited for, not skipped', async () => {
      const e = exporter();
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let inserted!: () => void;
      const insertedOnce = new Promise<void>((resolve) => (inserted = resolve));
      const slow = db.transaction(async (tx) => {
        await recordAudit(tx, { type: 'control', action: 'policy.create', actor: { kind: 'system', name: 'cli' }, data: { marker: 'd-slow' } });
        inserted();
        await held;
      });
      await insertedOnce;
      await recordAudit(db, { type: 'control', action: 'policy.create', actor: { kind: 'system', name: 'cli' }, data: { marker: 'd-fast' } });
      e.start();
      try {
        // The later event is committed, but the exporter stops at the missing id while it is recent.
        await e.run();
        assert.deepEqual(receiver.markers('d-'), []);
        release();
        await slow;
        assert.ok((await waitFor(() => receiver.markers('d-').length === 2, WAIT_MS)) >= 0);
        assert.deepEqual(receiver.markers('d-'), ['d-slow', 'd-fast']);
      } finally {
        release();
        await e.stop();
      }
    });
  }

  if (kind === 'postgres') {
    test('the exporting replica killed with -9 mid-batch: after a restart every event arrives (a duplicate allowed)', async () => {
      for (let i = 0; i < 50; i++) await recordAudit(db, { type: 'control', action: 'token.revoke', actor: { kind: 'system', name: 'cli' }, data: { marker: `k-${i}` } });
      const dir = mkdtempSync(join(tmpdir(), 'reins-otlp-'));
      const configFile = join(dir, 'reins.yaml');
      writeFileSync(configFile, `audit:\n  export:\n    otlp:\n      endpoint: "${receiver.url}"\n      batchSize: 20\n      intervalSeconds: 0.05\n`);
      // The first batch holding a k- event is taken by the receiver and never answered: the replica is killed while
      // it waits, its cursor not moved past that batch.
      receiver.hold = (got) => got.some((r) => String(r.attributes['reins.audit.data.marker']).startsWith('k-'));
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
        env: { ...process.env, DATABASE_URL: store().url!, HOST: '127.0.0.1', PORT: '0', REINS_CONFIG: configFile, OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      // Both streams drained for the process's life (a full pipe would block it), the last lines kept for a failure.
      const output: string[] = [];
      let listening = false;
      const keep = (line: string) => {
        output.push(line);
        if (output.length > 40) output.shift();
        if (line.includes('reins is listening')) listening = true;
      };
      createInterface({ input: child.stdout! }).on('line', keep);
      createInterface({ input: child.stderr! }).on('line', keep);
      try {
        // A replica process starts in seconds, but on a loaded machine compiling it can take longer than a wait.
        assert.ok((await waitFor(() => listening || child.exitCode !== null, START_LIMIT_MS)) >= 0 && listening, `the replica did not start:\n${output.join('\n')}`);
        assert.ok((await waitFor(() => receiver.held > 0, WAIT_MS)) >= 0, `the replica never sent the batch:\n${output.join('\n')}`);
        child.kill('SIGKILL');
        await exited;
        receiver.hold = null;
        // Its lease is still in the store until it expires (30 s): the restarted exporter takes it over then.
        await db.query(`UPDATE leases SET expires_at = now() WHERE name = 'audit-export'`);
        const e = exporter();
        e.start();
        try {
          assert.ok((await waitFor(() => new Set(receiver.markers('k-')).size === 50, WAIT_MS)) >= 0, `${new Set(receiver.markers('k-')).size} of 50`);
          // The held batch arrived twice at most: at least once, never a gap.
          assert.ok(receiver.markers('k-').length >= 50);
        } finally {
          await e.stop();
        }
      } finally {
        child.kill('SIGKILL');
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  test('a replica with audit.export.otlp.endpoint exports and reports reins_audit_export_lag_events', async () => {
    const configured = await startTestReplica(store(), {
      audit: { retentionDays: 90, maintenanceSeconds: 300, otlp: { logsUrl: `${receiver.url}/v1/logs`, batchSize: 500, intervalSeconds: 0.05 } },
    });
    try {
      await recordAudit(configured.db, { type: 'control', action: 'settings.human_review', actor: { kind: 'system', name: 'cli' }, data: { marker: 'e-1' } });
      assert.ok((await waitFor(() => receiver.markers('e-').length >= 1, WAIT_MS)) >= 0);
      const metrics = await new Client(configured.url, ADMIN_TOKEN).request('GET', '/metrics');
      assert.match(String(metrics.body), /^reins_audit_export_lag_events \d+$/m);
    } finally {
      await configured.close();
    }
  });
});
