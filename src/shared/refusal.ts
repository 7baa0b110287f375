/**
 * How the pure decision cores (approvals/decision-state.ts, held-calls/held-call-state.ts) refuse: a code, the
 * sentence the person sees, and the refused action the audit log records. The edges map the code to a status
 * with `refusalError`.
 */
import { AppError, statusOf, type ErrorCode } from './errors.js';

export type RefusalCode =
  | 'forbidden_role'
  | 'self_approval'
  | 'not_a_required_approver'
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
  | 'requester_as_approver';

export type AuditAction =
  | 'access_request.approve'
  | 'access_request.escalate'
  | 'access_request.vote'
  | 'access_request.deny'
  | 'grant.revoke'
  | 'grant.expire'
  | 'held_call.approve'
  | 'held_call.deny'
  | 'held_call.time_out';

/** Every refusal is written to the audit log as a refused `auditAction`. */
export interface Refusal {
  ok: false;
  code: RefusalCode;
  message: string;
  audit: true;
  auditAction: AuditAction;
}

/**
 * The one place a refusal becomes what the client sees: the error code (and through it the status, `statusOf`).
 * Each refusal keeps its own code, so a client can tell a self-approval from a vote on a final request; only a
 * refusal by role is the generic `forbidden`, and `not_a_required_approver` is named for the person: `not_a_co_signer`.
 */
const REFUSAL_ERROR: Record<RefusalCode, ErrorCode> = {
  forbidden_role: 'forbidden',
  self_approval: 'self_approval',
  not_a_required_approver: 'not_a_co_signer',
  vote_for_other: 'vote_for_other',
  already_voted: 'already_voted',
  final_state: 'final_state',
  not_under_review: 'not_under_review',
  already_under_review: 'already_under_review',
  grant_not_active: 'grant_not_active',
  too_early: 'too_early',
  reason_required: 'reason_required',
  note_required: 'note_required',
  raise_not_applicable: 'raise_not_applicable',
  permanent_limit_required: 'permanent_limit_required',
  requester_as_approver: 'requester_as_approver',
};

/** The error code a client sees for a refusal. */
export function refusalErrorCode(code: RefusalCode): ErrorCode {
  return REFUSAL_ERROR[code];
}

/** HTTP status for a refusal code: 403 who, 409 state, 400 input. */
export function refusalStatus(code: RefusalCode): 400 | 403 | 409 {
  return statusOf(REFUSAL_ERROR[code]) as 400 | 403 | 409;
}

/** The error an edge throws for a refusal (after auditing it). */
export function refusalError(refusal: Pick<Refusal, 'code' | 'message'>): AppError {
  return new AppError(REFUSAL_ERROR[refusal.code], refusal.message);
}

export function refuse(code: RefusalCode, auditAction: AuditAction, message: string): Refusal {
  return { ok: false, code, message, audit: true, auditAction };
}

/** A reason or note that says nothing: absent or only blanks. */
export function isBlank(text: string | undefined): boolean {
  return text === undefined || text.trim() === '';
}
