/** Schemas shared by every route: the error body and the status codes a route may answer with it. */
import { Type, type TSchema } from 'typebox';

export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Type.String({
        description:
          'snake_case. Besides the generic codes (invalid_request, unauthenticated, forbidden, not_found, conflict, ...), a refused approval or held-call decision answers its own: self_approval, not_a_co_signer, vote_for_other (403); already_voted, final_state, not_under_review, already_under_review, grant_not_active, too_early (409); reason_required, note_required, raise_not_applicable, permanent_limit_required, requester_as_approver (400)',
      }),
      message: Type.String(),
      field: Type.Optional(Type.String({ description: 'The offending field, when the error is about one' })),
      line: Type.Optional(Type.Integer({ description: 'For a CEL expression: 1-based line of the error' })),
      column: Type.Optional(Type.Integer({ description: 'For a CEL expression: 1-based column of the error' })),
    }),
  },
  { $id: 'ErrorBody', description: 'Every 4xx/5xx answer of the control plane' },
);

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Bad input (including U+0000 or a lone surrogate in any string, bad percent-encoding, JSON nested over 100 levels); the message names the field',
  401: 'No credential, or an unknown, revoked or expired one',
  403: 'The credential is known but its role or ownership refuses',
  404: 'Unknown resource',
  409: 'State conflict',
  413: 'Body too large',
  415: 'Unsupported content type',
  429: 'rate_limited: too many failed credentials from this address; Retry-After says when to try again',
};

/** Response schemas for a route: its success schemas plus the error statuses it may answer. */
export function responses(success: Record<number, TSchema>, ...errorStatuses: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = { ...success };
  for (const status of errorStatuses) out[status] = { ...ErrorBody, description: ERROR_DESCRIPTIONS[status] ?? 'Error' };
  return out;
}

/** Statuses every authenticated JSON route can answer (429: the failed-credential throttle). */
export const AUTH_ERRORS = [400, 401, 403, 429] as const;

export const IdentityIdQuery = Type.Object(
  { id: Type.String({ description: 'The identity id <namespace>/<name>, URL-encoded' }) },
  { additionalProperties: false },
);

/** A field that is the schema's value or null. */
export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

/** The `:id` of a route on one resource. */
export const IdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });
