import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { READERS } from '../shared/access.js';
import { invalid } from '../shared/errors.js';
import { AUTH_ERRORS, responses } from '../shared/schemas.js';
import type { Db } from '../store/db.js';
import { decodeCursor, listAuditEvents } from './audit.js';

const AuditEvent = Type.Object({
  id: Type.String(),
  at: Type.String({ format: 'date-time' }),
  type: Type.String({ description: 'llm, mcp, egress (gateway request types) or control' }),
  action: Type.String({ description: '{entity}.{verb}, e.g. identity.tier_set' }),
  outcome: Type.String({ description: 'ok, refused or error' }),
  actor: Type.Object({ kind: Type.String(), id: Type.Union([Type.String(), Type.Null()]) }),
  subject: Type.Union([Type.String(), Type.Null()]),
  host: Type.Union([Type.String(), Type.Null()], { description: 'Destination host; egress events only' }),
  data: Type.Record(Type.String(), Type.Unknown()),
  callEnded: Type.Optional(
    Type.Boolean({
      description:
        'Only on the decision event of a governed call that was allowed or held (llm.request, mcp.tool_call, egress.request, egress.connect without data.end): ' +
        'whether its end event (the same action with _end, same data.callId) exists. False: the call is in flight, or the replica serving it stopped ' +
        'before it ended, so its outcome is unknown.',
    }),
  ),
});

function parseDate(raw: string | undefined, field: string): Date | undefined {
  if (raw === undefined || raw === '') return undefined;
  const d = /^\d+$/.test(raw) ? new Date(Number(raw) * 1000) : new Date(raw);
  if (Number.isNaN(d.getTime())) throw invalid(`query.${field}: must be an ISO 8601 date-time or Unix seconds`);
  return d;
}

export function registerAuditRoutes(app: FastifyInstance, db: Db): void {
  app.get('/api/v1/audit-events', {
    config: { access: READERS },
    schema: {
      tags: ['audit'],
      summary: 'Audit events, newest first, with filters and cursor pagination',
      querystring: Type.Object(
        {
          type: Type.Optional(Type.String({ maxLength: 40 })),
          action: Type.Optional(Type.String({ maxLength: 80 })),
          identity: Type.Optional(Type.String({ maxLength: 320, description: 'Events whose actor or subject is this identity' })),
          callId: Type.Optional(Type.String({ maxLength: 64, description: "A governed call's events (data.callId): its decision event and its end event" })),
          since: Type.Optional(Type.String({ description: 'ISO 8601 or Unix seconds, inclusive' })),
          until: Type.Optional(Type.String({ description: 'ISO 8601 or Unix seconds, exclusive' })),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
          cursor: Type.Optional(Type.String({ maxLength: 100, description: 'nextCursor of the previous page' })),
        },
        { additionalProperties: false },
      ),
      response: responses({ 200: Type.Object({ items: Type.Array(AuditEvent), nextCursor: Type.Union([Type.String(), Type.Null()]) }) }, ...AUTH_ERRORS),
    },
    handler: async (request) => {
      const q = request.query as { type?: string; action?: string; identity?: string; callId?: string; since?: string; until?: string; limit?: number; cursor?: string };
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
