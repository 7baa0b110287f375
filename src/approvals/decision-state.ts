// The decision state machine for access requests and their grants (held calls have their own:
// held-calls/held-call-state.ts). Pure: plain data in, a decision out as data. The edge reads the row, calls a
// decide* function, applies `nextState` with a conditional UPDATE guarded by `guard`,
// and carries out `effects` only when that UPDATE matched (see README.md).
import { actsAs, type Decider, type Vote } from '../shared/decider.js';
import { isBlank, refuse, type AuditAction, type Refusal } from '../shared/refusal.js';

import type { AccessRequestType, GrantState, RequestState } from './contract.js';

export type { AccessRequestType, GrantState, RequestState } from './contract.js';

export interface RecordedDecision {
  approver: string;
  decision: Vote;
  reason?: string;
  /** Unix milliseconds. */
  at: number;
}

export interface AccessRequestSnapshot {
  state: RequestState;
  /** Developer identity of the requester; null only for items without a developer session. */
  requester: string | null;
  /** Named co-signers: the request's own list merged with the exception rule's, by the edge. */
  requiredApprovers: string[];
  decisions: RecordedDecision[];
  grantState?: GrantState | null;
  /** Unix milliseconds; when known, `expire` is refused before it. */
  grantExpiresAt?: number | null;
  type?: AccessRequestType;
}

export type RequestAction =
  | {
      kind: 'approve';
      additionalApprovers?: string[];
      raiseBudgetRule?: boolean;
      permanentLimitUsd?: number;
    }
  | { kind: 'deny'; reason: string }
  /** `approver` is what a client claimed, if anything; it must be the actor. */
  | { kind: 'vote'; decision: Vote; reason?: string; approver?: string }
  | { kind: 'revoke' }
  | { kind: 'expire' };

export type GrantAction = { kind: 'revoke' } | { kind: 'expire' };

export interface GrantSnapshot {
  state: GrantState | null;
  expiresAt?: number | null;
}

export type NotificationKind =
  | 'request_approved'
  | 'request_under_review'
  | 'request_denied'
  | 'grant_revoked'
  | 'grant_expired';

export type RequestEffect =
  | { type: 'record_decision'; approver: string; decision: Vote; reason?: string; at: number }
  | { type: 'set_required_approvers'; approvers: string[] }
  | { type: 'create_grant'; approvers: string[] }
  | { type: 'raise_budget_rule'; permanentLimitUsd: number }
  | { type: 'revoke_grant' }
  | { type: 'notify_requester'; kind: NotificationKind; by?: string; reason?: string }
  | { type: 'notify_approvers'; kind: 'cosign_requested'; approvers: string[]; by: string }
  | { type: 'notify_admins'; kind: 'grant_revoked'; by: string }
  | { type: 'relay_retry_instruction' }
  | { type: 'relay_denial_reason'; reason: string }
  | { type: 'audit'; action: AuditAction };

export type GrantEffect = Extract<
  RequestEffect,
  { type: 'revoke_grant' | 'notify_requester' | 'notify_admins' | 'audit' }
>;

/** What the decision was computed from; the edge's conditional UPDATE must match it. */
export interface RequestGuard {
  requestState: RequestState;
  decisionCount: number;
  grantState: GrantState | null;
}

export type RequestDecision =
  | {
      ok: true;
      nextState: RequestState;
      nextGrantState: GrantState | null;
      guard: RequestGuard;
      effects: RequestEffect[];
    }
  | Refusal;

export type GrantDecision =
  | { ok: true; nextState: GrantState | null; guard: { grantState: GrantState | null }; effects: GrantEffect[] }
  | Refusal;

function isFinal(state: RequestState): boolean {
  return state === 'approved' || state === 'denied';
}

function unique(ids: readonly string[]): string[] {
  return [...new Set(ids)];
}

/**
 * Required approvers who have not yet recorded an approval. The requester is never waited for: an exception
 * rule may name her as a co-signer of everyone's requests, her request is still accepted, and only her own
 * approval is refused (self-approval), so the others' signatures complete it.
 */
export function pendingApprovers(requiredApprovers: readonly string[], decisions: readonly RecordedDecision[], requester: string | null = null): string[] {
  const approved = new Set(decisions.filter((d) => d.decision === 'approve').map((d) => d.approver));
  return unique(requiredApprovers).filter((id) => !approved.has(id) && id !== requester);
}

/**
 * Decide an action on an access request (approve, deny, vote) or on its grant
 * (revoke, expire). `now` is Unix milliseconds, stamped on recorded decisions.
 */
export function decideRequest(
  request: AccessRequestSnapshot,
  action: RequestAction,
  actor: Decider,
  now: number,
): RequestDecision {
  const guard: RequestGuard = {
    requestState: request.state,
    decisionCount: request.decisions.length,
    grantState: request.grantState ?? null,
  };
  switch (action.kind) {
    case 'approve':
      return approve(request, action, actor, now, guard);
    case 'deny':
      return deny(request, action.reason, actor, now, guard, 'access_request.deny');
    case 'vote':
      return vote(request, action, actor, now, guard);
    case 'revoke':
    case 'expire': {
      const decided = decideGrant(
        { state: guard.grantState, expiresAt: request.grantExpiresAt ?? null },
        action,
        actor,
        now,
      );
      if (!decided.ok) return decided;
      // A grant's end leaves the request where it was: its decision history stays as decided.
      return { ok: true, nextState: request.state, nextGrantState: decided.nextState, guard, effects: decided.effects };
    }
  }
}

function approve(
  request: AccessRequestSnapshot,
  action: Extract<RequestAction, { kind: 'approve' }>,
  actor: Decider,
  now: number,
  guard: RequestGuard,
): RequestDecision {
  const auditAction = 'access_request.approve';
  if (actor.role !== 'admin') {
    return refuse('forbidden_role', auditAction, 'Approving a request needs the admin role.');
  }
  if (actsAs(actor, request.requester)) {
    return refuse(
      'self_approval',
      auditAction,
      actor.id === request.requester
        ? 'You cannot approve your own request; another admin must decide it.'
        : `You are deciding with a token that the requester ${request.requester} minted, which counts as deciding your own request; another admin must decide it with their own credential.`,
    );
  }
  if (isFinal(request.state)) {
    return refuse('final_state', auditAction, `This request is already ${request.state}; decisions are final.`);
  }
  const hasOptions =
    (action.additionalApprovers?.length ?? 0) > 0 || action.raiseBudgetRule === true;
  if (request.state === 'under_review') {
    if (hasOptions) {
      return refuse(
        'already_under_review',
        auditAction,
        'This request is already under review; approval options can only be set on the first approval. Record a vote instead.',
      );
    }
    // Under review, "approve" is the admin's own co-sign vote.
    return vote(request, { kind: 'vote', decision: 'approve' }, actor, now, guard);
  }
  if (request.state === 'pending' && action.raiseBudgetRule === true) {
    if (request.type !== 'budget_topup') {
      return refuse('raise_not_applicable', auditAction, 'Only a budget top-up can raise the persisted budget rule.');
    }
    const limit = action.permanentLimitUsd;
    if (limit === undefined || !Number.isFinite(limit) || limit <= 0) {
      return refuse(
        'permanent_limit_required',
        auditAction,
        'Raising the persisted budget rule needs permanentLimitUsd, a positive absolute limit in USD.',
      );
    }
  }

  if (request.requester !== null && (action.additionalApprovers ?? []).includes(request.requester)) {
    // Their vote would be refused as self-approval, leaving the request under review for ever.
    return refuse('requester_as_approver', auditAction, `additionalApprovers: ${request.requester} is the requester and cannot co-sign their own request.`);
  }
  const required = unique([...request.requiredApprovers, ...(action.additionalApprovers ?? [])]);
  // The approving admin's decision is recorded; it counts as their co-sign when they are listed.
  const decisions = [...request.decisions, { approver: actor.id, decision: 'approve' as const, at: now }];
  const stillPending = pendingApprovers(required, decisions, request.requester);

  const effects: RequestEffect[] = [{ type: 'record_decision', approver: actor.id, decision: 'approve', at: now }];
  if (required.length !== unique(request.requiredApprovers).length) {
    effects.push({ type: 'set_required_approvers', approvers: required });
  }
  effects.push({ type: 'create_grant', approvers: [actor.id] });
  if (action.raiseBudgetRule === true && action.permanentLimitUsd !== undefined) {
    // Applied at approval and kept even if a co-signer later denies: only the temporary grant is revoked then.
    effects.push({ type: 'raise_budget_rule', permanentLimitUsd: action.permanentLimitUsd });
  }

  if (stillPending.length === 0) {
    effects.push(
      { type: 'notify_requester', kind: 'request_approved', by: actor.id },
      { type: 'relay_retry_instruction' },
      { type: 'audit', action: 'access_request.approve' },
    );
    return { ok: true, nextState: 'approved', nextGrantState: 'active', guard, effects };
  }
  // Escalation to co-sign: the grant is active from this moment, so the developer's
  // tool is told it may retry now rather than after the last co-signer.
  effects.push(
    { type: 'notify_requester', kind: 'request_under_review', by: actor.id },
    { type: 'relay_retry_instruction' },
    { type: 'notify_approvers', kind: 'cosign_requested', approvers: stillPending, by: actor.id },
    { type: 'audit', action: 'access_request.escalate' },
  );
  return { ok: true, nextState: 'under_review', nextGrantState: 'active', guard, effects };
}

function deny(
  request: AccessRequestSnapshot,
  reason: string | undefined,
  actor: Decider,
  now: number,
  guard: RequestGuard,
  auditAction: 'access_request.deny' | 'access_request.vote',
): RequestDecision {
  if (auditAction === 'access_request.deny' && actor.role !== 'admin') {
    return refuse('forbidden_role', auditAction, 'Denying a request needs the admin role.');
  }
  if (reason === undefined || reason.trim() === '') {
    return refuse('reason_required', auditAction, 'A denial needs a reason; it is relayed to the developer.');
  }
  if (isFinal(request.state)) {
    return refuse('final_state', auditAction, `This request is already ${request.state}; decisions are final.`);
  }
  if (request.decisions.some((d) => d.approver === actor.id)) {
    return refuse('already_voted', auditAction, 'You have already recorded your decision on this request.');
  }
  // Denying one's own request is allowed (withdrawing it); only approving it is not.
  const effects: RequestEffect[] = [{ type: 'record_decision', approver: actor.id, decision: 'deny', reason, at: now }];
  const grantActive = guard.grantState === 'active';
  if (grantActive) {
    // A co-signer's denial revokes the temporary grant at once; a budget rule raised at approval stays.
    effects.push({ type: 'revoke_grant' });
  }
  effects.push(
    { type: 'notify_requester', kind: 'request_denied', by: actor.id, reason },
    { type: 'relay_denial_reason', reason },
    { type: 'audit', action: auditAction },
  );
  return {
    ok: true,
    nextState: 'denied',
    nextGrantState: grantActive ? 'revoked' : guard.grantState,
    guard,
    effects,
  };
}

function vote(
  request: AccessRequestSnapshot,
  action: Extract<RequestAction, { kind: 'vote' }>,
  actor: Decider,
  now: number,
  guard: RequestGuard,
): RequestDecision {
  const auditAction = 'access_request.vote';
  if (actor.role === 'system') {
    return refuse('forbidden_role', auditAction, 'Only a named approver can vote.');
  }
  if (action.approver !== undefined && action.approver !== actor.id) {
    return refuse('vote_for_other', auditAction, 'A vote can only be recorded for yourself.');
  }
  // Co-signing is the exception to the admin requirement: any role, if named.
  if (!request.requiredApprovers.includes(actor.id)) {
    return refuse('not_a_required_approver', auditAction, 'You are not a required approver of this request.');
  }
  if (action.decision === 'approve' && actsAs(actor, request.requester)) {
    return refuse(
      'self_approval',
      auditAction,
      actor.id === request.requester
        ? 'You cannot approve your own request, even as a listed co-signer; you may deny it.'
        : `You are voting with a token that the requester ${request.requester} minted, which counts as approving their own request; vote with a token of your own.`,
    );
  }
  if (isFinal(request.state)) {
    return refuse('final_state', auditAction, `This request is already ${request.state}; decisions are final.`);
  }
  if (request.state !== 'under_review') {
    return refuse('not_under_review', auditAction, 'Votes open once an admin has approved the request for co-signing.');
  }
  if (action.decision === 'deny') {
    return deny(request, action.reason, actor, now, guard, auditAction);
  }
  if (request.decisions.some((d) => d.approver === actor.id)) {
    return refuse('already_voted', auditAction, 'You have already recorded your decision on this request.');
  }

  const recorded: RequestEffect = {
    type: 'record_decision',
    approver: actor.id,
    decision: 'approve',
    ...(action.reason === undefined ? {} : { reason: action.reason }),
    at: now,
  };
  const decisions = [...request.decisions, { approver: actor.id, decision: 'approve' as const, at: now }];
  if (pendingApprovers(request.requiredApprovers, decisions, request.requester).length > 0) {
    return {
      ok: true,
      nextState: 'under_review',
      nextGrantState: guard.grantState,
      guard,
      effects: [recorded, { type: 'audit', action: auditAction }],
    };
  }
  // The grant has been active since escalation: the last co-sign changes the request only.
  return {
    ok: true,
    nextState: 'approved',
    nextGrantState: guard.grantState,
    guard,
    effects: [
      recorded,
      { type: 'notify_requester', kind: 'request_approved', by: actor.id },
      { type: 'audit', action: auditAction },
    ],
  };
}

/** Revoke (admin) or expire (system, once the expiry time is reached) a grant. */
export function decideGrant(grant: GrantSnapshot, action: GrantAction, actor: Decider, now: number): GrantDecision {
  const guard = { grantState: grant.state };
  if (action.kind === 'revoke') {
    const auditAction = 'grant.revoke';
    if (actor.role !== 'admin') {
      return refuse('forbidden_role', auditAction, 'Revoking a grant needs the admin role.');
    }
    if (grant.state !== 'active') {
      return refuse(
        'grant_not_active',
        auditAction,
        grant.state === null ? 'There is no grant to revoke.' : `This grant is already ${grant.state}.`,
      );
    }
    return {
      ok: true,
      nextState: 'revoked',
      guard,
      effects: [
        { type: 'revoke_grant' },
        { type: 'notify_requester', kind: 'grant_revoked', by: actor.id },
        { type: 'notify_admins', kind: 'grant_revoked', by: actor.id },
        { type: 'audit', action: auditAction },
      ],
    };
  }

  const auditAction = 'grant.expire';
  if (actor.role !== 'system') {
    return refuse('forbidden_role', auditAction, 'Grants expire on schedule; nobody can expire one by hand. Revoke it instead.');
  }
  // Expiry is already in force from expires_at at read time; this only announces it,
  // and a second announcement (another sweeper, another replica) is a silent no-op.
  if (grant.state !== 'active') {
    return { ok: true, nextState: grant.state, guard, effects: [] };
  }
  if (grant.expiresAt !== undefined && grant.expiresAt !== null && now < grant.expiresAt) {
    return refuse('too_early', auditAction, 'This grant has not reached its expiry time.');
  }
  return {
    ok: true,
    nextState: 'expired',
    guard,
    effects: [
      { type: 'notify_requester', kind: 'grant_expired' },
      { type: 'audit', action: auditAction },
    ],
  };
}
