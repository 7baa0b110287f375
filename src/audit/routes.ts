import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { READERS } from '../shared/access.js';
import { invalid } from '../shared/errors.js';
import { AUTH_ERRORS, responses } from '../shared/schemas.js';
import type { Db } from '../store/db.js';
import { decodeCursor, listAuditEvents } from './audit.js';
import { AuditEventPageSchema, AuditEventQuery } from './contract.js';

function parseDate(raw: string | undefined, field: string): Date | undefined {
  if (raw === undefined || raw === '') return undefined;
  const d = /^\d+$/.test(raw) ? new Date(Number(raw) * 1000) : new Date(raw);
  if (Number.isNaN(d.getTime())) throw invalid(`query.${field}: must be an ISO 8601 date-time or Unix seconds`);
  return d;
}

export function registerAuditRoutes(fastify: FastifyInstance, db: Db): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get('/api/v1/audit-events', {
    config: { access: READERS },
    schema: {
      tags: ['audit'],
      summary: 'Audit events, newest first, with filters and cursor pagination',
      querystring: AuditEventQuery,
      response: responses({ 200: AuditEventPageSchema }, ...AUTH_ERRORS),
    },
    handler: async (request) => {
      const q = request.query;
      let cursor: string | undefined;
      if (q.cursor !== undefined) {
        cursor = decodeCursor(q.cursor) ?? undefined;
        if (!cursor) throw invalid('query.cursor: not a cursor this server issued');
      }
      const since = parseDate(q.since, 'since');
      const until = parseDate(q.until, 'until');
      return listAuditEvents(db, {
        limit: q.limit ?? 50,
        ...(q.type ? { type: q.type } : {}),
        ...(q.action ? { action: q.action } : {}),
        ...(q.identity ? { identity: q.identity } : {}),
        ...(q.callId ? { callId: q.callId } : {}),
        ...(since ? { since } : {}),
        ...(until ? { until } : {}),
        ...(cursor ? { cursor } : {}),
      });
    },
  });
}
