/**
 * Sensor ingest (docs/api.md, "Runtime sensor ingest"): the report and status bodies, their validation, and the one
 * statement that stores a report's observations together with the node's count of stored items.
 */
import { isIP } from 'node:net';
import { AppError } from '../shared/errors.js';
import type { Queryable } from '../store/db.js';
import type { NodeStatusReport } from './node-status.js';
import { MAX_OBSERVATIONS_PER_REPORT, ObservationInput, type SensorReport } from './contract.js';

export { IngestAnswer, MAX_OBSERVATIONS_PER_REPORT, ObservationInput, SensorReport, SensorStatus } from './contract.js';

/**
 * The largest body a valid report can have: 500 items of maximum field sizes (issue 18 item 7). A report whose items
 * are all valid must never be refused for its size by the control plane's general body limit (1 MiB by default), so
 * the ingest route takes this much. Each string character counted at 6 bytes (JSON's `\uXXXX` escape, more than any
 * UTF-8 encoding), plus each item's keys, punctuation and numbers, plus the report's own fields.
 */
export const MAX_REPORT_BODY_BYTES = ((): number => {
  const strings = ['rule', 'behavior', 'subject', 'destIP', 'destName', 'node', 'podName', 'podIP', 'namespace', 'result', 'mode'];
  const properties = ObservationInput.properties as Record<string, { maxLength?: number }>;
  const chars = strings.reduce((sum, key) => sum + (properties[key]?.maxLength ?? 0), 0);
  const perItem = 6 * chars + 512;
  return MAX_OBSERVATIONS_PER_REPORT * perItem + 6 * 253 + 1024;
})();

/** A node status with its text cleaned (see cleanText). */
export function cleanStatus(status: NodeStatusReport): NodeStatusReport {
  return { ...status, node: cleanText(status.node), reason: cleanText(status.reason) };
}

/** Refuses a report over the limit before its items are validated one by one. */
export function checkReportSize(body: unknown): void {
  const observations = (body as { observations?: unknown } | null)?.observations;
  if (Array.isArray(observations) && observations.length > MAX_OBSERVATIONS_PER_REPORT) {
    throw new AppError(
      'payload_too_large',
      `observations: at most ${MAX_OBSERVATIONS_PER_REPORT} per report, got ${observations.length}; the whole report was refused and nothing of it stored (the sensor's counter shows the loss as ingest lag)`,
      { field: 'observations' },
    );
  }
}

const CONTROL = /[\u0000-\u001f\u007f]/;
const CONTROL_ALL = /[\u0000-\u001f\u007f]/g;

/**
 * Control characters become U+FFFD: the store cannot hold NUL, and the index keys rows on U+0001. Replaced, not
 * refused: a process name crafted with one must not get a whole report, everyone's evidence, thrown away.
 */
export function cleanText(s: string): string {
  return CONTROL.test(s) ? s.replace(CONTROL_ALL, '\ufffd') : s;
}

const TEXT_FIELDS = ['rule', 'behavior', 'subject', 'destName', 'podName', 'namespace', 'result', 'mode', 'node'] as const;

/**
 * Whether a report's JSON (its UTF-8 bytes) can be stored as it was sent, without cleaning its items and serialising
 * them again (storeReport): JSON text holds control characters, U+0000 and lone surrogates only as backslash
 * escapes, so text without a backslash has nothing for cleanText to replace but DEL (U+007F), which JSON allows
 * unescaped. A byte order mark, which the body parser skips and PostgreSQL refuses, sends the report the other way
 * too. (In UTF-8 the bytes of a backslash and of DEL never occur inside another character.) Sensors send process
 * paths, pod names and DNS names: nearly every report is stored as sent.
 */
export function storableAsSent(json: Buffer): boolean {
  const bom = json.length >= 3 && json[0] === 0xef && json[1] === 0xbb && json[2] === 0xbf;
  return !bom && json.indexOf(0x5c) === -1 && json.indexOf(0x7f) === -1;
}

/** Replaces control characters in the report's text fields, in place (see cleanText). */
export function cleanReport(report: SensorReport): void {
  report.node = cleanText(report.node);
  for (const o of report.observations) {
    for (const field of TEXT_FIELDS) {
      const value = o[field];
      if (value !== undefined) o[field] = cleanText(value);
    }
  }
}

/** What schema validation cannot say: addresses are addresses, a pod is named or addressed, one node per report. */
export function checkReport(report: SensorReport): void {
  const { observations } = report;
  for (let i = 0; i < observations.length; i++) {
    const o = observations[i]!;
    if (o.destIP !== '' && isIP(o.destIP) === 0) throw fieldError(`observations[${i}].destIP`, 'must be an IP address or ""');
    if (o.podIP !== '' && isIP(o.podIP) === 0) throw fieldError(`observations[${i}].podIP`, 'must be an IP address or ""');
    if (o.podName === '' && o.podIP === '') throw fieldError(`observations[${i}].podName`, 'a pod name or a podIP is required');
    if (o.node !== undefined && o.node !== report.node) {
      throw fieldError(`observations[${i}].node`, `must equal the report's node "${report.node}" (a report covers one node)`);
    }
  }
}

function fieldError(field: string, message: string): AppError {
  return new AppError('invalid_request', `${field}: ${message}`, { field });
}

/**
 * Stores a report: every item, and the node's stored-items counter raised by as many, in one statement (so one
 * transaction: the lag never sees the rows without the count or the count without the rows). The items go over
 * as one JSON parameter: one round trip and one multi-row INSERT whatever the report's size. With `json` (the
 * report's body as sent, its UTF-8 bytes, validated and `storableAsSent`) that parameter is the body itself, sent as
 * bytes and read as UTF-8 by PostgreSQL, which reads its `observations`: no second serialisation of 500 items, and no
 * 150 KB string in the replica's heap while the INSERT is under way (bytes that are not UTF-8 fail the statement,
 * and the report goes the other way).
 * `count` and `observedAt` are read as numeric and cast, since the sent text may spell a valid integer `1.0` or `1e3`.
 */
export async function storeReport(q: Queryable, report: SensorReport, json?: Buffer): Promise<number> {
  if (report.observations.length === 0) return 0;
  if (json !== undefined) {
    try {
      return await insertItems(q, report, json);
    } catch (err) {
      // PostgreSQL reads JSON numbers as numeric, so text JavaScript reads fine may not parse there: a number of
      // 200,000 digits in a field the route ignores; or the bytes are not UTF-8 (the parser read them as U+FFFD).
      // Nothing was stored (one statement): the items as parsed, then.
      // (Outside a transaction only: a failed statement would end one.)
      if (!String((err as { code?: unknown }).code).startsWith('22')) throw err;
    }
  }
  return insertItems(q, report, undefined);
}

async function insertItems(q: Queryable, report: SensorReport, json: Buffer | undefined): Promise<number> {
  const items = json === undefined ? '$2::jsonb' : `convert_from($2::bytea, 'UTF8')::jsonb -> 'observations'`;
  await q.query(
    `WITH inserted AS (
       INSERT INTO runtime_observations
         (node, family, rule, behavior, subject, dest_ip, dest_name, count, pod_name, pod_ip, namespace, result, mode, observed_at)
       SELECT $1, o.family, o.rule, o.behavior, o.subject, o."destIP", o."destName", o.count::integer, o."podName", o."podIP", o.namespace,
              o.result, o.mode, o."observedAt"::bigint
         FROM jsonb_to_recordset(${items}) AS o(family text, rule text, behavior text, subject text, "destIP" text, "destName" text,
              count numeric, "podName" text, "podIP" text, namespace text, result text, mode text, "observedAt" numeric)
       RETURNING 1
     )
     INSERT INTO runtime_node_items (node, stored_items) SELECT $1, count(*) FROM inserted
     ON CONFLICT (node) DO UPDATE SET stored_items = runtime_node_items.stored_items + excluded.stored_items`,
    [report.node, json ?? JSON.stringify(report.observations)],
  );
  return report.observations.length;
}

export type { NodeStatusReport };
