/**
 * The audit log's wire shapes, written once: the TypeBox schemas the route validates and documents with, and their
 * `Static<>` types, which the reader returns and the console imports (type-only). Keep this module to schemas and
 * types: the console's compiler reads it.
 */
import { Type, type Static } from 'typebox';

export const AuditEventSchema = Type.Object({
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
export type AuditEvent = Static<typeof AuditEventSchema>;

export const AuditEventQuery = Type.Object(
  {
    type: Type.Optional(Type.String({ maxLength: 40 })),
    action: Type.Optional(Type.String({ maxLength: 80 })),
    identity: Type.Optional(
      Type.String({
        maxLength: 320,
        description: 'Events whose actor.id or subject is exactly this id (an identity id, or system:<name>, sensor:<name>); an id named only inside data does not match',
      }),
    ),
    callId: Type.Optional(Type.String({ maxLength: 64, description: "A governed call's events (data.callId): its decision event and its end event" })),
    since: Type.Optional(Type.String({ description: 'Events with at at or after this: ISO 8601 or Unix seconds, inclusive' })),
    until: Type.Optional(Type.String({ description: 'Events with at before this: ISO 8601 or Unix seconds, exclusive' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
    cursor: Type.Optional(Type.String({ maxLength: 100, description: 'nextCursor of the previous page' })),
  },
  { additionalProperties: false },
);
export type AuditEventFilter = Static<typeof AuditEventQuery>;

export const AuditEventPageSchema = Type.Object({ items: Type.Array(AuditEventSchema), nextCursor: Type.Union([Type.String(), Type.Null()]) });
export type AuditEventPage = Static<typeof AuditEventPageSchema>;
