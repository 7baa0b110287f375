/**
 * How the pure decision cores (approvals/decision-state.ts, held-calls/held-call-state.ts) refuse: a code, the
 * sentence the person sees, and the refused action the audit log records. The edges map the code to a status
 * with `refusalStatus`.
 */

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

const REFUSAL_STATUS: Record<RefusalCode, 400 | 403 | 409> = {
  forbidden_role: 403,
  self_approval: 403,
  not_a_required_approver: 403,
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
};

/** HTTP status for a refusal code, for the edge's single error-to-status mapping. */
export function refusalStatus(code: RefusalCode): 400 | 403 | 409 {
  return REFUSAL_STATUS[code];
}

export function refuse(code: RefusalCode, auditAction: AuditAction, message: string): Refusal {
  return { ok: false, code, message, audit: true, auditAction };
}

/** A reason or note that says nothing: absent or only blanks. */
export function isBlank(text: string | undefined): boolean {
  return text === undefined || text.trim() === '';
}
