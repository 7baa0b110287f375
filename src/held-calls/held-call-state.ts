// The held-call state machine. Pure: plain data in, a decision out as data. The registry (registry.ts) reads the
// row, calls `decideHeldCall`, applies `nextState` with a conditional UPDATE guarded by `guard`, and carries out
// `effects` only when that UPDATE matched (the pattern of approvals/decision-state.ts; see README.md).
import { actsAs, type Decider, type Vote } from '../shared/decider.js';
import { isBlank, refuse, type AuditAction, type Refusal } from '../shared/refusal.js';
import type { HeldCallState, TimeoutOutcome } from './contract.js';

export interface HeldCallSnapshot {
  state: HeldCallState;
  /** Null for a call made with an agent key: no session, so no requester to compare. */
  requester: string | null;
  /** Unix milliseconds at which the approval window elapses, when known. */
  expiresAt?: number | null;
}

export type HeldCallAction =
  | { kind: 'approve' }
  | { kind: 'deny'; note: string }
  | { kind: 'time_out'; timeoutOutcome: TimeoutOutcome };

export type HeldCallEffect =
  | { type: 'record_decision'; approver: string; decision: Vote; note?: string; at: number }
  | { type: 'release_calls'; cause: 'approved' | 'timed_out' }
  | { type: 'stop_calls'; cause: 'denied' | 'timed_out'; note?: string }
  | { type: 'relay_timeout_notice' }
  | { type: 'audit'; action: AuditAction; timeoutOutcome?: TimeoutOutcome };

export type HeldCallDecision =
  | {
      ok: true;
      nextState: HeldCallState;
      timeoutOutcome: TimeoutOutcome | null;
      guard: { state: HeldCallState };
      effects: HeldCallEffect[];
    }
  | Refusal;

/** Decide on a held call: release (approve), stop (deny), or the approval window elapsing. */
export function decideHeldCall(
  heldCall: HeldCallSnapshot,
  action: HeldCallAction,
  actor: Decider,
  now: number,
): HeldCallDecision {
  const guard = { state: heldCall.state };
  const resolved = heldCall.state !== 'pending';

  if (action.kind === 'time_out') {
    const auditAction = 'held_call.time_out';
    if (actor.role !== 'system') {
      return refuse('forbidden_role', auditAction, 'A held call times out on its own; release or deny it instead.');
    }
    if (resolved) {
      return { ok: true, nextState: heldCall.state, timeoutOutcome: null, guard, effects: [] };
    }
    if (heldCall.expiresAt !== undefined && heldCall.expiresAt !== null && now < heldCall.expiresAt) {
      return refuse('too_early', auditAction, 'The approval window of this held call has not elapsed.');
    }
    const outcome = action.timeoutOutcome;
    return {
      ok: true,
      nextState: 'timed_out',
      timeoutOutcome: outcome,
      guard,
      effects: [
        outcome === 'allow'
          ? { type: 'release_calls', cause: 'timed_out' }
          : { type: 'stop_calls', cause: 'timed_out' },
        { type: 'relay_timeout_notice' },
        // A let-through call is audited like any other; the outcome makes it findable.
        { type: 'audit', action: auditAction, timeoutOutcome: outcome },
      ],
    };
  }

  const auditAction = action.kind === 'approve' ? 'held_call.approve' : 'held_call.deny';
  const verb = action.kind === 'approve' ? 'Releasing' : 'Denying';
  if (actor.role !== 'admin') {
    return refuse('forbidden_role', auditAction, `${verb} a held call needs the admin role.`);
  }
  // A call made with a bare agent key has no requester, so there is nobody to compare and it proceeds.
  if (action.kind === 'approve' && actsAs(actor, heldCall.requester)) {
    return refuse('self_approval', auditAction, 'You cannot release your own held call; another admin must decide it.');
  }
  if (action.kind === 'deny' && isBlank(action.note)) {
    return refuse('note_required', auditAction, 'Denying a held call needs a note; the developer sees it verbatim.');
  }
  if (resolved) {
    return refuse('final_state', auditAction, `This held call is already ${heldCall.state.replace('_', ' ')}.`);
  }
  if (action.kind === 'approve') {
    return {
      ok: true,
      nextState: 'released',
      timeoutOutcome: null,
      guard,
      // Release is silent to the developer: the call completes as if allowed, and only the audit log shows it.
      effects: [
        { type: 'record_decision', approver: actor.id, decision: 'approve', at: now },
        { type: 'release_calls', cause: 'approved' },
        { type: 'audit', action: auditAction },
      ],
    };
  }
  return {
    ok: true,
    nextState: 'stopped',
    timeoutOutcome: null,
    guard,
    effects: [
      { type: 'record_decision', approver: actor.id, decision: 'deny', note: action.note, at: now },
      { type: 'stop_calls', cause: 'denied', note: action.note },
      { type: 'audit', action: auditAction },
    ],
  };
}
