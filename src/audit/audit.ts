/**
 * The append-only audit log. Control-plane changes write their event in the same transaction as the
 * change (`recordAudit(tx, …)`), so an event exists exactly when the change does. Secrets never enter:
 * callers pass ids and prefixes, never token values.
 */
import type { Queryable } from '../store/db.js';
import { actorId, type Actor } from '../shared/actor.js';
import { CALL_END_ACTIONS, isCallDecision } from './call-events.js';
import type { AuditEvent, AuditEventFilter, AuditEventPage } from './contract.js';

export type AuditType = 'llm' | 'mcp' | 'egress' | 'control';

export interface AuditInput {
  type: AuditType;
  /** `{entity}.{verb}`, e.g. `identity.tier_set`. */
  action: string;
  actor: Actor;
  outcome?: 'ok' | 'refused' | 'error';
  subject?: string | null;
  /** Only egress events carry a destination host. */
  host?: string | null;
  data?: Record<string, unknown>;
}

/** The columns an event is written to, in the order of `auditValues`. */
export const AUDIT_INSERT_COLUMNS = 'type, action, outcome, actor_kind, actor_id, subject, host, data';

/** An event's values for `AUDIT_INSERT_COLUMNS` (data as JSON text). */
export function auditValues(e: AuditInput): unknown[] {
  if (e.host && e.type !== 'egress') throw new Error('only egress audit events carry a host');
  return [e.type, e.action, e.outcome ?? 'ok', e.actor.kind, actorId(e.actor), e.subject ?? null, e.host ?? null, JSON.stringify(e.data ?? {})];
}

export async function recordAudit(q: Queryable, e: AuditInput): Promise<void> {
  await q.query(`INSERT INTO audit_events (${AUDIT_INSERT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, auditValues(e));
}

/**
 * The reader's query: the wire filter (contract.ts) with its dates parsed, the page size settled and the cursor
 * decoded (opaque on the wire: the id of the last event of the previous page; newest first).
 */
export type AuditQuery = Pick<AuditEventFilter, 'type' | 'action' | 'identity' | 'callId' | 'cursor'> & { since?: Date; until?: Date; limit: number };

interface AuditRow {
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
}

export function encodeCursor(id: string): string {
  return Buffer.from(`a:${id}`).toString('base64url');
}

/** Returns the event id a cursor stands for, or null when it is not one of ours. */
export function decodeCursor(cursor: string): string | null {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const m = /^a:(\d{1,18})$/.exec(text);
  return m ? m[1]! : null;
}

const COLUMNS = 'id, at, type, action, outcome, actor_kind, actor_id, subject, host, data';

/**
 * The list query's SQL and parameters. `since`/`until` are plain comparisons on `at`, the partition key, so the
 * planner reads only the day partitions of the window (tested with EXPLAIN in test/integration/audit/retention.test.ts).
 *
 * Every page is the newest `limit` events by id before the cursor, read by walking an index backwards in each day
 * partition (the primary key, or the (type, id), (action, id), (actor_id, id) or subject index) and merging the
 * partitions, so that a page costs the same at any depth. An identity matches the actor or the subject: an OR that no
 * single index walks in id order, so it is two walks, each stopping after a page, merged. The actor's walk finds the
 * events the identity did, its own subject or not; the subject's walk only those about it that someone else did
 * (`subject IS DISTINCT FROM actor_id`), which is what the subject indexes hold (migration 024: an event about its own
 * actor, most of the log, costs them nothing to write). So the two walks never meet the same event.
 */
export function auditListSql(query: AuditQuery): { sql: string; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  const param = (value: unknown) => `$${params.push(value)}`;
  const add = (clause: (n: string) => string, value: unknown) => where.push(clause(param(value)));
  if (query.type) add((p) => `type = ${p}`, query.type);
  if (query.action) add((p) => `action = ${p}`, query.action);
  // Both conditions, so that the partial index on callId (migration 010) serves it.
  if (query.callId) add((p) => `data ? 'callId' AND data->>'callId' = ${p}`, query.callId);
  if (query.since) add((p) => `at >= ${p}`, query.since);
  if (query.until) add((p) => `at < ${p}`, query.until);
  // Qualified: the select list renames id to its text form, which must not be what sorts or compares.
  if (query.cursor) add((p) => `audit_events.id < ${p}::bigint`, query.cursor);
  const limit = param(query.limit + 1);
  const select = (extra: string[]) => {
    const all = [...extra, ...where];
    return `SELECT ${COLUMNS} FROM audit_events ${all.length ? `WHERE ${all.join(' AND ')}` : ''} ORDER BY audit_events.id DESC LIMIT ${limit}`;
  };
  const text = 'e.id::text AS id, e.at, e.type, e.action, e.outcome, e.actor_kind, e.actor_id, e.subject, e.host, e.data';
  if (!query.identity) return { sql: `SELECT ${text} FROM (${select([])}) e ORDER BY e.id DESC`, params };
  const identity = param(query.identity);
  const sql = `SELECT ${text}
     FROM ((${select([`actor_id = ${identity}`])}) UNION ALL (${select([`subject = ${identity}`, 'subject IS DISTINCT FROM actor_id'])})) e
     ORDER BY e.id DESC LIMIT ${limit}`;
  return { sql, params };
}

export async function listAuditEvents(q: Queryable, query: AuditQuery): Promise<AuditEventPage> {
  const { sql, params } = auditListSql(query);
  const r = await q.query<AuditRow>(sql, params);
  const page = r.rows.slice(0, query.limit);
  const last = page[page.length - 1];
  const items = page.map(toEvent);
  await markCallEnds(q, items);
  return {
    items,
    nextCursor: r.rows.length > query.limit && last ? encodeCursor(last.id) : null,
  };
}

/**
 * Sets `callEnded` on the decision events of the page that wait for an end event (no `data.end` of their own), by
 * one indexed look-up whatever the filters and paging: the end may be on another page, or filtered out.
 */
async function markCallEnds(q: Queryable, items: AuditEvent[]): Promise<void> {
  const waiting = new Map<string, AuditEvent[]>();
  for (const e of items) {
    const callId = e.data.callId;
    if (typeof callId !== 'string' || e.data.end !== undefined || !isCallDecision(e.action)) continue;
    const list = waiting.get(callId);
    if (list) list.push(e);
    else waiting.set(callId, [e]);
  }
  if (waiting.size === 0) return;
  // The callId index alone (two events a call): the actions are checked here, since a condition on action lets the
  // planner combine the (action, id) index, which reads every end event of each partition (bench/audit-scale).
  // One probe per call, each LIMITed: the planner has no statistics for a partial index's expression, so it guesses
  // 0.5 % of a partition per value, and with `= ANY(page's callIds)` it read every row of every partition instead
  // (0.3-0.65 s a filtered page at 300,000 events over 30 days, docs/audit.md). The LIMIT tells it a probe wants a
  // few rows; it is well above a call's two events (a batch the writer retried after its INSERT did commit can
  // repeat a pair).
  const r = await q.query<{ call_id: string; action: string }>(
    `SELECT c.id AS call_id, e.action
       FROM unnest($1::text[]) AS c(id)
       CROSS JOIN LATERAL (SELECT action FROM audit_events WHERE data ? 'callId' AND data->>'callId' = c.id LIMIT 8) e`,
    [[...waiting.keys()]],
  );
  const ends = new Set<string>(CALL_END_ACTIONS);
  const ended = new Set(r.rows.filter((row) => ends.has(row.action)).map((row) => row.call_id));
  for (const [callId, events] of waiting) for (const e of events) e.callEnded = ended.has(callId);
}

function toEvent(r: AuditRow): AuditEvent {
  return {
    id: r.id,
    at: r.at.toISOString(),
    type: r.type,
    action: r.action,
    outcome: r.outcome,
    actor: { kind: r.actor_kind, id: r.actor_id },
    subject: r.subject,
    host: r.host,
    data: typeof r.data === 'string' ? (JSON.parse(r.data) as Record<string, unknown>) : r.data,
  };
}
