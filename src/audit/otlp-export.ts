/**
 * Every audit event exported as an OpenTelemetry log record over OTLP/HTTP (the SDK's OTLPLogExporter) to the
 * organization's Collector, at least once. The position is an outbox cursor in the store (audit_export_cursors:
 * the last exported id), moved only after the Collector accepted a batch, so a restart, a kill -9 or a Collector
 * outage resumes where delivery stopped; a batch sent but not yet recorded is sent again (a duplicate, never a
 * gap). One replica at a time exports (the `audit-export` lease); every replica with the exporter configured
 * reports the lag (`reins_audit_export_lag_events`).
 *
 * Ids come from a sequence and are given out before commit, so a smaller id can become visible after a larger one.
 * The exporter stops at a missing id while the event after it is recent (younger than `gapWaitMs`): the missing
 * one may still commit. Past that, the id is taken as a rolled-back insert (or an event retention removed).
 */
import { SeverityNumber, type AnyValueMap } from '@opentelemetry/api-logs';
import { ExportResultCode, type ExportResult, type InstrumentationScope } from '@opentelemetry/core';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import type { ReadableLogRecord } from '@opentelemetry/sdk-logs';
import type { Db } from '../store/db.js';
import { Lease } from '../store/lease.js';

const CURSOR = 'otlp';

export interface AuditOtlpOptions {
  /** The full logs URL (`…/v1/logs`). */
  url: string;
  batchSize: number;
  intervalMs: number;
  /** How long a missing id is waited for (default 10 s). */
  gapWaitMs?: number;
  serviceName?: string;
  /** Reins' version, for the resource and the instrumentation scope. */
  serviceVersion?: string;
  /** Per export request (the SDK's own retries of 429/503 happen inside it). */
  timeoutMs?: number;
  onError?: (err: Error) => void;
}

interface Row {
  id: string;
  at: Date;
  type: string;
  action: string;
  outcome: string;
  actor_kind: string;
  actor_id: string | null;
  subject: string | null;
  host: string | null;
  data: Record<string, unknown> | string;
  settled: boolean;
}

export class AuditOtlpExporter {
  /** Events written but not yet exported (ids after the cursor), as last measured. */
  lag = 0;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private readonly lease: Lease;
  private readonly otlp: OTLPLogExporter;
  private readonly resource: Resource;
  private readonly scope: InstrumentationScope;

  constructor(
    private readonly db: Db,
    private readonly options: AuditOtlpOptions,
  ) {
    this.lease = new Lease(db, 'audit-export', Math.max(30_000, options.intervalMs * 10));
    this.otlp = new OTLPLogExporter({ url: options.url, timeoutMillis: options.timeoutMs ?? 10_000 });
    // The records are the SDK's ReadableLogRecord, built here rather than emitted through a LoggerProvider: the
    // provider's per-attribute validation and copying was half of the exporter's CPU (bench/audit-scale), and the
    // attributes built below are valid by construction. The SDK's OTLPLogExporter encodes and sends them, and this
    // class moves the cursor only once the Collector took them.
    this.resource = resourceFromAttributes({ 'service.name': options.serviceName ?? 'reins', 'service.version': options.serviceVersion ?? 'unknown' });
    this.scope = { name: 'reins.audit', ...(options.serviceVersion ? { version: options.serviceVersion } : {}) };
  }

  start(): void {
    const tick = () => {
      this.timer = null;
      void this.run().finally(() => {
        if (!this.stopped) this.timer = setTimeout(tick, this.options.intervalMs).unref();
      });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running?.catch(() => {});
    await this.lease.release().catch(() => {});
    await this.otlp.shutdown().catch(() => {});
  }

  /** One round: measure the lag; if this replica holds the lease, export until caught up (or a failure). */
  run(): Promise<void> {
    this.running ??= this.round()
      .catch((err: Error) => this.options.onError?.(err))
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  private async round(): Promise<void> {
    await this.db.query(`INSERT INTO audit_export_cursors (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, [CURSOR]);
    try {
      if (this.stopped || !(await this.lease.acquire())) return;
      const c = await this.db.query<{ last_id: string }>('SELECT last_id::text AS last_id FROM audit_export_cursors WHERE name = $1', [CURSOR]);
      let batch = await this.readBatch(BigInt(c.rows[0]!.last_id));
      // While one batch is on its way to the Collector the next one is read: the store and the network overlap.
      // The read-ahead is only a read; the cursor still moves batch by batch, each after the Collector's answer.
      while (batch.length > 0) {
        const full = batch.length === this.options.batchSize;
        const last = BigInt(batch[batch.length - 1]!.id);
        const next = full ? this.readBatch(last) : null;
        next?.catch(() => {});
        await this.send(batch);
        if (!full || this.stopped || !(await this.lease.acquire())) break;
        batch = await next!;
      }
    } finally {
      await this.measureLag();
    }
  }

  private async measureLag(): Promise<void> {
    const r = await this.db.query<{ lag: string }>(
      `SELECT greatest(coalesce((SELECT max(id) FROM audit_events), 0) - (SELECT last_id FROM audit_export_cursors WHERE name = $1), 0)::text AS lag`,
      [CURSOR],
    );
    this.lag = Number(r.rows[0]?.lag ?? 0);
  }

  /**
   * The events after `from` in id order, up to `batchSize`, stopping at the first missing id whose successor is
   * still recent (the missing one may yet commit).
   */
  private async readBatch(from: bigint): Promise<Row[]> {
    // Ordered by the column, qualified: the select list's text id would sort "10" before "9".
    const r = await this.db.query<Row>(
      `SELECT id::text AS id, at, type, action, outcome, actor_kind, actor_id, subject, host, data,
              at < now() - make_interval(secs => $3) AS settled
         FROM audit_events WHERE audit_events.id > $1::bigint ORDER BY audit_events.id LIMIT $2`,
      [from.toString(), this.options.batchSize, (this.options.gapWaitMs ?? 10_000) / 1000],
    );
    const batch: Row[] = [];
    let expected = from + 1n;
    for (const row of r.rows) {
      if (BigInt(row.id) !== expected && !row.settled) break;
      batch.push(row);
      expected = BigInt(row.id) + 1n;
    }
    return batch;
  }

  /** Sends one batch and, once the Collector took it, moves the cursor past it. */
  private async send(batch: Row[]): Promise<void> {
    const observed = hrTime(new Date());
    const records: ReadableLogRecord[] = batch.map((row) => toLogRecord(row, observed, this.resource, this.scope));
    const result = await new Promise<ExportResult>((resolve) => this.otlp.export(records, resolve));
    if (result.code !== ExportResultCode.SUCCESS) throw new Error(`OTLP audit export to ${this.options.url} failed: ${result.error?.message ?? 'unknown error'}`);
    const last = batch[batch.length - 1]!.id;
    // Conditional: a replica that lost the lease mid-batch never moves the cursor back.
    await this.db.query(`UPDATE audit_export_cursors SET last_id = $2::bigint, updated_at = now() WHERE name = $1 AND last_id < $2::bigint`, [CURSOR, last]);
  }
}

/** A Date as OpenTelemetry's [seconds, nanoseconds]. */
function hrTime(d: Date): [number, number] {
  const ms = d.getTime();
  const seconds = Math.floor(ms / 1000);
  return [seconds, (ms - seconds * 1000) * 1_000_000];
}

function severity(outcome: string): { severityNumber: SeverityNumber; severityText: string } {
  if (outcome === 'error') return { severityNumber: SeverityNumber.ERROR, severityText: 'ERROR' };
  if (outcome === 'refused') return { severityNumber: SeverityNumber.WARN, severityText: 'WARN' };
  return { severityNumber: SeverityNumber.INFO, severityText: 'INFO' };
}

/** The event's fields as attributes (`reins.audit.*`), with the GenAI semantic conventions' names where they apply. */
export function toLogRecord(row: Omit<Row, 'settled'>, observed: [number, number], resource: Resource, scope: InstrumentationScope): ReadableLogRecord {
  const data = typeof row.data === 'string' ? (JSON.parse(row.data) as Record<string, unknown>) : row.data;
  const a: AnyValueMap = {
    'reins.audit.id': row.id,
    'reins.audit.type': row.type,
    'reins.audit.action': row.action,
    'reins.audit.outcome': row.outcome,
    'reins.audit.actor.kind': row.actor_kind,
  };
  if (row.actor_id !== null) a['reins.audit.actor.id'] = row.actor_id;
  if (row.subject !== null) a['reins.audit.subject'] = row.subject;
  if (row.host !== null) a['server.address'] = row.host;
  for (const [k, v] of Object.entries(data)) {
    a[`reins.audit.data.${k}`] = v === null || typeof v === 'object' ? JSON.stringify(v) : (v as string | number | boolean);
  }
  if (typeof data.callId === 'string') a['reins.call.id'] = data.callId;
  if (typeof data.model === 'string') a[row.action.endsWith('_end') ? 'gen_ai.response.model' : 'gen_ai.request.model'] = data.model;
  if (typeof data.provider === 'string') a['gen_ai.provider.name'] = data.provider;
  if (typeof data.tool === 'string') a['gen_ai.tool.name'] = data.tool;
  const usage = data.usage as { inputTokens?: number; outputTokens?: number } | null | undefined;
  if (usage && typeof usage === 'object') {
    if (typeof usage.inputTokens === 'number') a['gen_ai.usage.input_tokens'] = usage.inputTokens;
    if (typeof usage.outputTokens === 'number') a['gen_ai.usage.output_tokens'] = usage.outputTokens;
  }
  const trace = data.trace as { traceId?: string } | undefined;
  if (trace && typeof trace.traceId === 'string') a['trace_id'] = trace.traceId;
  const { severityNumber, severityText } = severity(row.outcome);
  return {
    hrTime: hrTime(row.at),
    hrTimeObserved: observed,
    severityNumber,
    severityText,
    eventName: `reins.audit.${row.action}`,
    body: row.action,
    attributes: a,
    droppedAttributesCount: 0,
    resource,
    instrumentationScope: scope,
  };
}
