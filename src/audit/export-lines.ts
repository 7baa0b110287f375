/**
 * `reins audit export`: audit events as JSON lines, one event per line in the API's shape (AuditEvent, the items of
 * `GET /api/v1/audit-events`), newest first as the API pages them. Streaming: one page at a time is in memory, and
 * the next page is read only once the output took the previous one. The pages come from the store (the reader
 * behind the route) or from a running server's API; either way the lines are the same.
 */
import type { Queryable } from '../store/db.js';
import { decodeCursor, listAuditEvents } from './audit.js';
import type { AuditEventPage } from './contract.js';

export interface ExportFilter {
  since: Date;
  until?: Date;
  type?: string;
}

/** Reads one page: `cursor` is the previous page's nextCursor (null for the first page). */
export type PageSource = (cursor: string | null) => Promise<AuditEventPage>;

/** The API's page limit: the largest page a request may ask for. */
export const EXPORT_PAGE = 500;

export function storePages(q: Queryable, filter: ExportFilter): PageSource {
  return (cursor) =>
    listAuditEvents(q, {
      limit: EXPORT_PAGE,
      since: filter.since,
      ...(filter.until ? { until: filter.until } : {}),
      ...(filter.type ? { type: filter.type } : {}),
      ...(cursor ? { cursor: decodeCursor(cursor)! } : {}),
    });
}

export function apiPages(baseUrl: string, token: string, filter: ExportFilter): PageSource {
  return async (cursor) => {
    const url = new URL('/api/v1/audit-events', baseUrl);
    url.searchParams.set('limit', String(EXPORT_PAGE));
    url.searchParams.set('since', filter.since.toISOString());
    if (filter.until) url.searchParams.set('until', filter.until.toISOString());
    if (filter.type) url.searchParams.set('type', filter.type);
    if (cursor) url.searchParams.set('cursor', cursor);
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    const body = (await res.json().catch(() => ({}))) as AuditEventPage & { error?: { message?: string } };
    if (!res.ok) throw new Error(`${res.status}: ${body.error?.message ?? res.statusText}`);
    return body;
  };
}

/** Writes every event of the pages as a line; resolves with how many. `write` resolves once the output took it. */
export async function exportAuditLines(pages: PageSource, write: (chunk: string) => Promise<void>): Promise<number> {
  let cursor: string | null = null;
  let n = 0;
  do {
    const page = await pages(cursor);
    if (page.items.length > 0) await write(page.items.map((e) => `${JSON.stringify(e)}\n`).join(''));
    n += page.items.length;
    cursor = page.nextCursor;
  } while (cursor);
  return n;
}
