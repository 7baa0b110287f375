/**
 * One error vocabulary for the control plane. A service verb throws an AppError with a code; the
 * HTTP layer maps the code to a status in one place (`statusOf`) and answers the single error body of
 * docs/api.md: {"error": {"code", "message"}}.
 */
export type ErrorCode =
  | 'invalid_request'
  | 'invalid_tier'
  | 'invalid_identity_id'
  | 'not_an_agent'
  | 'malformed_json'
  | 'unsupported_media_type'
  | 'payload_too_large'
  | 'unauthenticated'
  | 'csrf_required'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'already_exists'
  | 'already_revoked'
  | 'invalid_policy'
  | 'built_in_policy'
  // An approval or held-call decision refused by its decision core (shared/refusal.ts maps each refusal here).
  | 'self_approval'
  | 'not_a_co_signer'
  | 'vote_for_other'
  | 'already_voted'
  | 'final_state'
  | 'not_under_review'
  | 'already_under_review'
  | 'grant_not_active'
  | 'too_early'
  | 'reason_required'
  | 'note_required'
  | 'raise_not_applicable'
  | 'permanent_limit_required'
  | 'requester_as_approver'
  | 'rate_limited'
  // OpenID Connect sign-in (identity/oidc-*.ts): the flow could not be completed / the provider's answer is not let in.
  | 'sign_in_failed'
  | 'sign_in_refused'
  | 'internal_error'
  | 'unavailable';

const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  invalid_tier: 400,
  invalid_identity_id: 400,
  not_an_agent: 400,
  malformed_json: 400,
  unsupported_media_type: 415,
  payload_too_large: 413,
  unauthenticated: 401,
  csrf_required: 403,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  already_exists: 409,
  already_revoked: 409,
  invalid_policy: 400,
  built_in_policy: 409,
  self_approval: 403,
  not_a_co_signer: 403,
  vote_for_other: 403,
  already_voted: 409,
  final_state: 409,
  not_under_review: 409,
  already_under_review: 409,
  grant_not_active: 409,
  too_early: 409,
  reason_required: 400,
  note_required: 400,
  raise_not_applicable: 400,
  permanent_limit_required: 400,
  requester_as_approver: 400,
  rate_limited: 429,
  sign_in_failed: 400,
  sign_in_refused: 403,
  internal_error: 500,
  unavailable: 503,
};

export function statusOf(code: ErrorCode): number {
  return STATUS[code];
}

/** Extra members of the error object, e.g. where in a CEL expression the error is. */
export interface ErrorDetails {
  field?: string;
  line?: number;
  column?: number;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails | undefined;
  constructor(code: ErrorCode, message: string, details?: ErrorDetails) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.details = details;
  }
}

export function errorBody(
  code: ErrorCode | string,
  message: string,
  details?: ErrorDetails,
): { error: { code: string; message: string } & ErrorDetails } {
  return { error: { code, message, ...details } };
}

export const invalid = (message: string): AppError => new AppError('invalid_request', message);
export const notFound = (message: string): AppError => new AppError('not_found', message);
export const forbidden = (message: string): AppError => new AppError('forbidden', message);
export const conflict = (message: string): AppError => new AppError('conflict', message);
