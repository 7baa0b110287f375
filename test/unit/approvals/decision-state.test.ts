import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  decideRequest,
  decideGrant,
  type AccessRequestSnapshot,
  type RequestAction,
  type RequestDecision,
  type RequestEffect,
  type RequestState,
  type GrantState,
} from '../../../src/approvals/decision-state.js';
import { decideHeldCall, type HeldCallSnapshot } from '../../../src/held-calls/held-call-state.js';
import { SYSTEM_DECIDER, type Decider } from '../../../src/shared/decider.js';
import { refusalStatus, type RefusalCode } from '../../../src/shared/refusal.js';

const NOW = 1_763_700_000_000;

const ada: Decider = { id: 'eng/ada', role: 'admin' };
const bob: Decider = { id: 'eng/bob', role: 'admin' };
const dev: Decider = { id: 'eng/dev', role: 'developer' }; // the requester in most rows
const devAdmin: Decider = { id: 'eng/dev', role: 'admin' }; // the same requester, holding the admin role
const carl: Decider = { id: 'eng/carl', role: 'developer' }; // named co-signer
const vera: Decider = { id: 'eng/vera', role: 'viewer' }; // named co-signer who is a viewer
const olga: Decider = { id: 'eng/olga', role: 'developer' }; // not listed anywhere
const viewer: Decider = { id: 'eng/viv', role: 'viewer' };

function request(over: Partial<AccessRequestSnapshot> = {}): AccessRequestSnapshot {
  return { state: 'pending', requester: dev.id, requiredApprovers: [], decisions: [], grantState: null, ...over };
}

/** A multi-approver request after ada escalated it to co-sign (carl and vera named). */
function underReview(over: Partial<AccessRequestSnapshot> = {}): AccessRequestSnapshot {
  return request({
    state: 'under_review',
    requiredApprovers: [carl.id, vera.id],
    decisions: [{ approver: ada.id, decision: 'approve', at: NOW - 1000 }],
    grantState: 'active',
    ...over,
  });
}

function approved(result: RequestDecision): Extract<RequestDecision, { ok: true }> {
  assert.equal(result.ok, true, result.ok ? '' : `refused: ${result.code} ${result.message}`);
  return result as Extract<RequestDecision, { ok: true }>;
}

function typesOf(effects: readonly RequestEffect[]): string[] {
  return effects.map((e) => e.type);
}

function notifications(effects: readonly RequestEffect[]): RequestEffect[] {
  return effects.filter((e) => e.type === 'notify_requester');
}

function assertRefused(result: { ok: boolean }, code: RefusalCode): void {
  assert.equal(result.ok, false, `expected refusal ${code}`);
  const refusal = result as { ok: false; code: RefusalCode; audit: boolean; message: string };
  assert.equal(refusal.code, code, refusal.message);
  assert.equal(refusal.audit, true, 'every refusal is audited');
  assert.ok(refusal.message.length > 0);
}

describe('request and grant lifecycle table', () => {
  interface Row {
    rule: string;
    request: AccessRequestSnapshot;
    action: RequestAction;
    actor: Decider;
    next: RequestState;
    grant: GrantState | null;
    effects: string[];
  }
  const rows: Row[] = [
    {
      rule: 'single approver: approve by an admin who is not the requester approves and activates the grant at once',
      request: request(),
      action: { kind: 'approve' },
      actor: ada,
      next: 'approved',
      grant: 'active',
      effects: ['record_decision', 'create_grant', 'notify_requester', 'relay_retry_instruction', 'audit'],
    },
    {
      rule: 'single approver: deny by an admin denies and relays the reason',
      request: request(),
      action: { kind: 'deny', reason: 'Use the staging budget.' },
      actor: ada,
      next: 'denied',
      grant: null,
      effects: ['record_decision', 'notify_requester', 'relay_denial_reason', 'audit'],
    },
    {
      rule: 'single approver: the requester, as admin, may deny their own request',
      request: request(),
      action: { kind: 'deny', reason: 'Withdrawn.' },
      actor: devAdmin,
      next: 'denied',
      grant: null,
      effects: ['record_decision', 'notify_requester', 'relay_denial_reason', 'audit'],
    },
    {
      rule: 'multi approver: the admin approval escalates to co-sign and the grant is active from that moment',
      request: request({ requiredApprovers: [carl.id, vera.id] }),
      action: { kind: 'approve' },
      actor: ada,
      next: 'under_review',
      grant: 'active',
      effects: [
        'record_decision',
        'create_grant',
        'notify_requester',
        'relay_retry_instruction',
        'notify_approvers',
        'audit',
      ],
    },
    {
      rule: 'multi approver: additionalApprovers on approve make a single-approver request a co-signed one',
      request: request(),
      action: { kind: 'approve', additionalApprovers: [carl.id, carl.id] },
      actor: ada,
      next: 'under_review',
      grant: 'active',
      effects: [
        'record_decision',
        'set_required_approvers',
        'create_grant',
        'notify_requester',
        'relay_retry_instruction',
        'notify_approvers',
        'audit',
      ],
    },
    {
      rule: 'under review: an approve vote while others are pending stays under review with nothing but the record',
      request: underReview(),
      action: { kind: 'vote', decision: 'approve' },
      actor: carl,
      next: 'under_review',
      grant: 'active',
      effects: ['record_decision', 'audit'],
    },
    {
      rule: 'under review: the last required approval approves, notifies the requester once and leaves the grant',
      request: underReview({
        decisions: [
          { approver: ada.id, decision: 'approve', at: NOW - 2000 },
          { approver: carl.id, decision: 'approve', at: NOW - 1000 },
        ],
      }),
      action: { kind: 'vote', decision: 'approve' },
      actor: vera,
      next: 'approved',
      grant: 'active',
      effects: ['record_decision', 'notify_requester', 'audit'],
    },
    {
      rule: 'under review: a deny by any required approver denies at once and revokes the grant at once',
      request: underReview(),
      action: { kind: 'vote', decision: 'deny', reason: 'Not for production data.' },
      actor: vera,
      next: 'denied',
      grant: 'revoked',
      effects: ['record_decision', 'revoke_grant', 'notify_requester', 'relay_denial_reason', 'audit'],
    },
    {
      rule: 'under review: a deny after other approvals still denies at once',
      request: underReview({
        decisions: [
          { approver: ada.id, decision: 'approve', at: NOW - 2000 },
          { approver: carl.id, decision: 'approve', at: NOW - 1000 },
        ],
      }),
      action: { kind: 'vote', decision: 'deny', reason: 'No.' },
      actor: vera,
      next: 'denied',
      grant: 'revoked',
      effects: ['record_decision', 'revoke_grant', 'notify_requester', 'relay_denial_reason', 'audit'],
    },
    {
      rule: 'grant active: revoke by an admin revokes and notifies the developer and the admin audience',
      request: request({ state: 'approved', grantState: 'active' }),
      action: { kind: 'revoke' },
      actor: ada,
      next: 'approved',
      grant: 'revoked',
      effects: ['revoke_grant', 'notify_requester', 'notify_admins', 'audit'],
    },
    {
      rule: 'grant active: expiry expires the grant with its own notification',
      request: request({ state: 'approved', grantState: 'active', grantExpiresAt: NOW }),
      action: { kind: 'expire' },
      actor: SYSTEM_DECIDER,
      next: 'approved',
      grant: 'expired',
      effects: ['notify_requester', 'audit'],
    },
  ];
  for (const row of rows) {
    test(row.rule, () => {
      const result = approved(decideRequest(row.request, row.action, row.actor, NOW));
      assert.equal(result.nextState, row.next);
      assert.equal(result.nextGrantState, row.grant);
      assert.deepEqual(typesOf(result.effects), row.effects);
      assert.ok(notifications(result.effects).length <= 1, 'at most one notification to the requester');
    });
  }

  test('approve by the requester is refused, audited, and leaves the request unchanged', () => {
    for (const snapshot of [request(), request({ requiredApprovers: [carl.id] })]) {
      assertRefused(decideRequest(snapshot, { kind: 'approve' }, devAdmin, NOW), 'self_approval');
    }
    assert.equal(refusalStatus('self_approval'), 403);
  });

  test('approved and denied are final: every further decision is a 409, no undo', () => {
    const actions: Array<[RequestAction, Decider]> = [
      [{ kind: 'approve' }, ada],
      [{ kind: 'deny', reason: 'changed my mind' }, ada],
      [{ kind: 'vote', decision: 'approve' }, carl],
      [{ kind: 'vote', decision: 'deny', reason: 'late' }, carl],
    ];
    for (const state of ['approved', 'denied'] as const) {
      for (const [action, actor] of actions) {
        // Single approver for the admin's actions; carl named so that his votes reach the state check.
        const required = action.kind === 'vote' ? [carl.id] : [];
        const result = decideRequest(request({ state, requiredApprovers: required }), action, actor, NOW);
        assertRefused(result, 'final_state');
      }
    }
    assert.equal(refusalStatus('final_state'), 409);
  });

  test('the approver is recorded from the actor with the time passed in', () => {
    const result = approved(decideRequest(request(), { kind: 'approve' }, ada, NOW));
    assert.deepEqual(result.effects[0], { type: 'record_decision', approver: ada.id, decision: 'approve', at: NOW });
    assert.deepEqual(notifications(result.effects), [{ type: 'notify_requester', kind: 'request_approved', by: ada.id }]);
  });

  test('the denial reason is relayed verbatim', () => {
    const reason = '  Use <b>staging</b>; "prod" is off limits.  ';
    const result = approved(decideRequest(request(), { kind: 'deny', reason }, ada, NOW));
    assert.deepEqual(
      result.effects.find((e) => e.type === 'relay_denial_reason'),
      { type: 'relay_denial_reason', reason },
    );
  });

  test('escalation asks the still-pending co-signers, not the admin who escalated', () => {
    const result = approved(
      decideRequest(request({ requiredApprovers: [ada.id, carl.id] }), { kind: 'approve' }, ada, NOW),
    );
    assert.equal(result.nextState, 'under_review');
    assert.deepEqual(result.effects.find((e) => e.type === 'notify_approvers'), {
      type: 'notify_approvers',
      kind: 'cosign_requested',
      approvers: [carl.id],
      by: ada.id,
    });
  });

  test('an admin who is the only listed approver completes the request with their own approval', () => {
    const result = approved(decideRequest(request({ requiredApprovers: [ada.id] }), { kind: 'approve' }, ada, NOW));
    assert.equal(result.nextState, 'approved');
  });

  test('the decision carries the guard the edge must match: the state and decision count it read', () => {
    const snapshot = underReview();
    const result = approved(decideRequest(snapshot, { kind: 'vote', decision: 'approve' }, carl, NOW));
    assert.deepEqual(result.guard, { requestState: 'under_review', decisionCount: 1, grantState: 'active' });
  });
});

describe('who may decide', () => {
  interface Row {
    who: string;
    actor: Decider;
    request: AccessRequestSnapshot;
    action: RequestAction;
    outcome: RefusalCode | RequestState;
  }
  const cosigned = underReview({ requiredApprovers: [carl.id, vera.id, dev.id] });
  const rows: Row[] = [
    { who: 'admin approves', actor: ada, request: request(), action: { kind: 'approve' }, outcome: 'approved' },
    { who: 'viewer cannot approve', actor: viewer, request: request(), action: { kind: 'approve' }, outcome: 'forbidden_role' },
    { who: 'developer cannot approve', actor: olga, request: request(), action: { kind: 'approve' }, outcome: 'forbidden_role' },
    { who: 'requester cannot approve', actor: devAdmin, request: request(), action: { kind: 'approve' }, outcome: 'self_approval' },
    { who: 'the system cannot approve', actor: SYSTEM_DECIDER, request: request(), action: { kind: 'approve' }, outcome: 'forbidden_role' },
    { who: 'admin denies', actor: ada, request: request(), action: { kind: 'deny', reason: 'r' }, outcome: 'denied' },
    { who: 'requester with admin role denies', actor: devAdmin, request: request(), action: { kind: 'deny', reason: 'r' }, outcome: 'denied' },
    { who: 'requester without admin role cannot deny', actor: dev, request: request(), action: { kind: 'deny', reason: 'r' }, outcome: 'forbidden_role' },
    { who: 'viewer cannot deny', actor: viewer, request: request(), action: { kind: 'deny', reason: 'r' }, outcome: 'forbidden_role' },
    { who: 'admin may deny a request under review', actor: bob, request: underReview(), action: { kind: 'deny', reason: 'r' }, outcome: 'denied' },
    { who: 'named developer co-signer votes', actor: carl, request: cosigned, action: { kind: 'vote', decision: 'approve' }, outcome: 'under_review' },
    { who: 'named viewer co-signer votes, regardless of role', actor: vera, request: cosigned, action: { kind: 'vote', decision: 'approve' }, outcome: 'under_review' },
    { who: 'requester listed as co-signer cannot approve', actor: dev, request: cosigned, action: { kind: 'vote', decision: 'approve' }, outcome: 'self_approval' },
    { who: 'requester listed as co-signer may deny', actor: dev, request: cosigned, action: { kind: 'vote', decision: 'deny', reason: 'withdrawn' }, outcome: 'denied' },
    { who: 'non-listed admin cannot vote', actor: bob, request: cosigned, action: { kind: 'vote', decision: 'approve' }, outcome: 'not_a_required_approver' },
    { who: 'non-listed developer cannot vote', actor: olga, request: cosigned, action: { kind: 'vote', decision: 'deny', reason: 'r' }, outcome: 'not_a_required_approver' },
    { who: 'non-listed viewer cannot vote', actor: viewer, request: cosigned, action: { kind: 'vote', decision: 'approve' }, outcome: 'not_a_required_approver' },
    { who: 'a vote for another approver is refused', actor: carl, request: cosigned, action: { kind: 'vote', decision: 'approve', approver: vera.id }, outcome: 'vote_for_other' },
    { who: 'the system cannot vote', actor: SYSTEM_DECIDER, request: cosigned, action: { kind: 'vote', decision: 'approve' }, outcome: 'forbidden_role' },
    {
      who: 'a second vote by the same approver is refused',
      actor: carl,
      request: underReview({ decisions: [{ approver: carl.id, decision: 'approve', at: NOW - 5 }] }),
      action: { kind: 'vote', decision: 'deny', reason: 'second thoughts' },
      outcome: 'already_voted',
    },
    {
      who: 'a second approve by the same approver is refused',
      actor: carl,
      request: underReview({ decisions: [{ approver: carl.id, decision: 'approve', at: NOW - 5 }] }),
      action: { kind: 'vote', decision: 'approve' },
      outcome: 'already_voted',
    },
    { who: 'votes wait for the admin escalation', actor: carl, request: request({ requiredApprovers: [carl.id] }), action: { kind: 'vote', decision: 'approve' }, outcome: 'not_under_review' },
    { who: 'a listed admin approving under review casts their vote', actor: { id: carl.id, role: 'admin' }, request: underReview(), action: { kind: 'approve' }, outcome: 'under_review' },
    { who: 'a non-listed admin approving under review is not a co-signer', actor: bob, request: underReview(), action: { kind: 'approve' }, outcome: 'not_a_required_approver' },
    { who: 'approval options cannot change a request under review', actor: ada, request: underReview(), action: { kind: 'approve', additionalApprovers: [olga.id] }, outcome: 'already_under_review' },
    { who: 'a denial needs a reason', actor: ada, request: request(), action: { kind: 'deny', reason: '   ' }, outcome: 'reason_required' },
    { who: 'a co-signer denial needs a reason', actor: carl, request: underReview(), action: { kind: 'vote', decision: 'deny' }, outcome: 'reason_required' },
  ];
  for (const row of rows) {
    test(row.who, () => {
      const result = decideRequest(row.request, row.action, row.actor, NOW);
      if (['pending', 'under_review', 'approved', 'denied'].includes(row.outcome)) {
        assert.equal(approved(result).nextState, row.outcome);
      } else {
        assertRefused(result, row.outcome as RefusalCode);
      }
    });
  }

  test('refusal codes map to the statuses a client sees', () => {
    const expected: Array<[RefusalCode, number]> = [
      ['forbidden_role', 403],
      ['self_approval', 403],
      ['not_a_required_approver', 403],
      ['vote_for_other', 403],
      ['already_voted', 409],
      ['final_state', 409],
      ['grant_not_active', 409],
      ['reason_required', 400],
    ];
    for (const [code, status] of expected) assert.equal(refusalStatus(code), status, code);
  });

  test('a request naming its own requester as co-signer can still be denied after their approve is refused', () => {
    const snapshot = underReview({ requiredApprovers: [dev.id] });
    assertRefused(decideRequest(snapshot, { kind: 'vote', decision: 'approve' }, dev, NOW), 'self_approval');
    assert.equal(
      approved(decideRequest(snapshot, { kind: 'vote', decision: 'deny', reason: 'withdraw' }, dev, NOW)).nextState,
      'denied',
    );
  });
});

describe('grants', () => {
  test('revoke needs the admin role', () => {
    for (const actor of [viewer, dev, carl, SYSTEM_DECIDER]) {
      assertRefused(decideGrant({ state: 'active' }, { kind: 'revoke' }, actor, NOW), 'forbidden_role');
    }
  });

  test('revoking a grant that is not active is a 409', () => {
    for (const state of ['revoked', 'expired', null] as const) {
      const result = decideGrant({ state }, { kind: 'revoke' }, ada, NOW);
      assertRefused(result, 'grant_not_active');
      assert.equal(refusalStatus('grant_not_active'), 409);
    }
  });

  test('revoke notifies the developer and the admin audience, naming who revoked', () => {
    const result = decideGrant({ state: 'active' }, { kind: 'revoke' }, ada, NOW);
    assert.ok(result.ok);
    assert.deepEqual(result.effects, [
      { type: 'revoke_grant' },
      { type: 'notify_requester', kind: 'grant_revoked', by: ada.id },
      { type: 'notify_admins', kind: 'grant_revoked', by: ada.id },
      { type: 'audit', action: 'grant.revoke' },
    ]);
  });

  test('expiry is announced exactly once: a second expire is a no-op without effects', () => {
    const first = decideGrant({ state: 'active', expiresAt: NOW }, { kind: 'expire' }, SYSTEM_DECIDER, NOW);
    assert.ok(first.ok);
    assert.equal(first.nextState, 'expired');
    assert.deepEqual(first.effects, [
      { type: 'notify_requester', kind: 'grant_expired' },
      { type: 'audit', action: 'grant.expire' },
    ]);
    const second = decideGrant({ state: 'expired', expiresAt: NOW }, { kind: 'expire' }, SYSTEM_DECIDER, NOW + 1);
    assert.ok(second.ok);
    assert.equal(second.nextState, 'expired');
    assert.deepEqual(second.effects, []);
  });

  test('a revoked grant reaching its expiry time is not announced again', () => {
    const result = decideGrant({ state: 'revoked', expiresAt: NOW }, { kind: 'expire' }, SYSTEM_DECIDER, NOW);
    assert.ok(result.ok);
    assert.equal(result.nextState, 'revoked');
    assert.deepEqual(result.effects, []);
  });

  test('a grant does not expire before its expiry time, and nobody expires one by hand', () => {
    assertRefused(decideGrant({ state: 'active', expiresAt: NOW + 1 }, { kind: 'expire' }, SYSTEM_DECIDER, NOW), 'too_early');
    assertRefused(decideGrant({ state: 'active', expiresAt: NOW }, { kind: 'expire' }, ada, NOW), 'forbidden_role');
  });

  test('a deny after the grant expired does not revoke it again', () => {
    const result = approved(
      decideRequest(underReview({ grantState: 'expired' }), { kind: 'vote', decision: 'deny', reason: 'r' }, carl, NOW),
    );
    assert.equal(result.nextState, 'denied');
    assert.equal(result.nextGrantState, 'expired');
    assert.ok(!typesOf(result.effects).includes('revoke_grant'));
  });
});

describe('budget top-up raise option', () => {
  const topup = request({ type: 'budget_topup', requiredApprovers: [carl.id] });

  test('the persisted budget rule is raised at approval, and a later co-signer denial revokes only the grant', () => {
    const escalation = approved(
      decideRequest(topup, { kind: 'approve', raiseBudgetRule: true, permanentLimitUsd: 250 }, ada, NOW),
    );
    assert.deepEqual(escalation.effects.find((e) => e.type === 'raise_budget_rule'), {
      type: 'raise_budget_rule',
      permanentLimitUsd: 250,
    });
    const denial = approved(
      decideRequest(
        { ...topup, state: 'under_review', grantState: 'active', decisions: [{ approver: ada.id, decision: 'approve', at: NOW }] },
        { kind: 'vote', decision: 'deny', reason: 'too much' },
        carl,
        NOW + 1,
      ),
    );
    assert.ok(typesOf(denial.effects).includes('revoke_grant'));
    assert.ok(!typesOf(denial.effects).includes('raise_budget_rule'));
  });

  test('raising needs a positive permanent limit and a budget top-up', () => {
    for (const permanentLimitUsd of [undefined, 0, -5, Number.NaN]) {
      const action: RequestAction = { kind: 'approve', raiseBudgetRule: true };
      if (permanentLimitUsd !== undefined) action.permanentLimitUsd = permanentLimitUsd;
      assertRefused(decideRequest(topup, action, ada, NOW), 'permanent_limit_required');
    }
    assertRefused(
      decideRequest(request({ type: 'exception' }), { kind: 'approve', raiseBudgetRule: true, permanentLimitUsd: 5 }, ada, NOW),
      'raise_not_applicable',
    );
  });
});

describe('concurrent decisions complete exactly once', () => {
  // A model of the edge: read a snapshot, decide, apply only if the guard still matches
  // (the conditional UPDATE), else re-read and decide again.
  interface Store {
    snapshot: AccessRequestSnapshot;
    applied: RequestEffect[];
  }
  function tryApply(store: Store, read: AccessRequestSnapshot, decision: RequestDecision): 'applied' | 'stale' | 'refused' {
    if (!decision.ok) return 'refused';
    const current = store.snapshot;
    if (
      current.state !== decision.guard.requestState ||
      current.decisions.length !== decision.guard.decisionCount ||
      (current.grantState ?? null) !== decision.guard.grantState
    ) {
      return 'stale';
    }
    const recorded = decision.effects.flatMap((e) =>
      e.type === 'record_decision'
        ? [{ approver: e.approver, decision: e.decision, at: e.at, ...(e.reason === undefined ? {} : { reason: e.reason }) }]
        : [],
    );
    store.snapshot = {
      ...read,
      state: decision.nextState,
      grantState: decision.nextGrantState,
      decisions: [...current.decisions, ...recorded],
    };
    store.applied.push(...decision.effects);
    return 'applied';
  }

  function race(votes: Array<{ actor: Decider; action: RequestAction }>): Store {
    const store: Store = { snapshot: underReview(), applied: [] };
    // Everyone reads the same snapshot first, then they write in the given order.
    const reads = votes.map(() => store.snapshot);
    votes.forEach((v, i) => {
      let read = reads[i]!;
      for (;;) {
        const outcome = tryApply(store, read, decideRequest(read, v.action, v.actor, NOW + i));
        if (outcome !== 'stale') break;
        read = store.snapshot;
      }
    });
    return store;
  }

  const approveVote: RequestAction = { kind: 'vote', decision: 'approve' };
  const denyVote: RequestAction = { kind: 'vote', decision: 'deny', reason: 'no' };

  for (const order of [[carl, vera], [vera, carl]]) {
    test(`two last approvals racing (${order.map((a) => a.id).join(' then ')}) approve once, notify once`, () => {
      const store = race(order.map((actor) => ({ actor, action: approveVote })));
      assert.equal(store.snapshot.state, 'approved');
      assert.equal(store.applied.filter((e) => e.type === 'notify_requester').length, 1);
    });
  }

  for (const [first, second] of [
    [{ actor: carl, action: approveVote }, { actor: vera, action: denyVote }],
    [{ actor: vera, action: denyVote }, { actor: carl, action: approveVote }],
  ] as const) {
    test(`an approval racing a denial (${first.actor.id} first) ends in one outcome with one notification`, () => {
      const store = race([first, second]);
      assert.equal(store.snapshot.state, 'denied');
      const sent = store.applied.filter((e) => e.type === 'notify_requester');
      assert.equal(sent.length, 1);
      assert.equal(store.applied.filter((e) => e.type === 'revoke_grant').length, 1);
    });
  }
});

describe('held call table', () => {
  const held = (over: Partial<HeldCallSnapshot> = {}): HeldCallSnapshot => ({
    state: 'pending',
    requester: dev.id,
    expiresAt: NOW + 300_000,
    ...over,
  });

  test('approve by an admin who is not the requester releases silently, recorded in the audit log', () => {
    const result = decideHeldCall(held(), { kind: 'approve' }, ada, NOW);
    assert.ok(result.ok);
    assert.equal(result.nextState, 'released');
    assert.deepEqual(result.effects, [
      { type: 'record_decision', approver: ada.id, decision: 'approve', at: NOW },
      { type: 'release_calls', cause: 'approved' },
      { type: 'audit', action: 'held_call.approve' },
    ]);
  });

  test('a held call from an agent key has no requester, so an admin release proceeds', () => {
    const result = decideHeldCall(held({ requester: null }), { kind: 'approve' }, ada, NOW);
    assert.ok(result.ok);
    assert.equal(result.nextState, 'released');
  });

  test('the requester cannot release their own held call, and the attempt is audited', () => {
    assertRefused(decideHeldCall(held(), { kind: 'approve' }, devAdmin, NOW), 'self_approval');
  });

  test('deny by an admin, the requester included, stops the call with the note verbatim', () => {
    const note = 'Do not send customer data to this model. "See policy 4."';
    for (const actor of [ada, devAdmin]) {
      const result = decideHeldCall(held(), { kind: 'deny', note }, actor, NOW);
      assert.ok(result.ok);
      assert.equal(result.nextState, 'stopped');
      assert.deepEqual(result.effects.find((e) => e.type === 'stop_calls'), { type: 'stop_calls', cause: 'denied', note });
    }
  });

  test('viewers and developers cannot release or deny', () => {
    for (const actor of [viewer, olga, dev]) {
      assertRefused(decideHeldCall(held(), { kind: 'approve' }, actor, NOW), 'forbidden_role');
      assertRefused(decideHeldCall(held(), { kind: 'deny', note: 'n' }, actor, NOW), 'forbidden_role');
    }
  });

  test('a deny without a note is refused', () => {
    assertRefused(decideHeldCall(held(), { kind: 'deny', note: '' }, ada, NOW), 'note_required');
  });

  const timeouts = [
    { timeoutOutcome: 'deny' as const, release: { type: 'stop_calls', cause: 'timed_out' } },
    { timeoutOutcome: 'allow' as const, release: { type: 'release_calls', cause: 'timed_out' } },
  ];
  for (const { timeoutOutcome, release } of timeouts) {
    test(`the approval window elapsing with outcome ${timeoutOutcome} tells the developer and is audited`, () => {
      const result = decideHeldCall(held({ expiresAt: NOW }), { kind: 'time_out', timeoutOutcome }, SYSTEM_DECIDER, NOW);
      assert.ok(result.ok);
      assert.equal(result.nextState, 'timed_out');
      assert.equal(result.timeoutOutcome, timeoutOutcome);
      assert.deepEqual(result.effects, [
        release,
        { type: 'relay_timeout_notice' },
        { type: 'audit', action: 'held_call.time_out', timeoutOutcome },
      ]);
    });
  }

  test('a held call does not time out before its window elapses, nor by a person', () => {
    assertRefused(decideHeldCall(held(), { kind: 'time_out', timeoutOutcome: 'deny' }, SYSTEM_DECIDER, NOW), 'too_early');
    assertRefused(decideHeldCall(held({ expiresAt: NOW }), { kind: 'time_out', timeoutOutcome: 'deny' }, ada, NOW), 'forbidden_role');
  });

  for (const state of ['released', 'stopped', 'timed_out'] as const) {
    test(`a ${state} held call is final: decisions are 409 and a late time-out is a silent no-op`, () => {
      assertRefused(decideHeldCall(held({ state }), { kind: 'approve' }, ada, NOW), 'final_state');
      assertRefused(decideHeldCall(held({ state }), { kind: 'deny', note: 'n' }, ada, NOW), 'final_state');
      const late = decideHeldCall(held({ state, expiresAt: NOW }), { kind: 'time_out', timeoutOutcome: 'allow' }, SYSTEM_DECIDER, NOW);
      assert.ok(late.ok);
      assert.equal(late.nextState, state);
      assert.deepEqual(late.effects, []);
    });
  }
});

describe('the requester by any path', () => {
  const mintedByDev = (a: Decider): Decider => ({ ...a, issuedBy: dev.id });

  test("an admin deciding with a token the requester minted approves the requester's own request: refused", () => {
    assertRefused(decideRequest(request(), { kind: 'approve' }, mintedByDev(ada), NOW), 'self_approval');
    assert.equal(approved(decideRequest(request(), { kind: 'approve' }, { ...ada, issuedBy: bob.id }, NOW)).nextState, 'approved');
  });

  test("a co-signer voting with a token the requester minted is the requester: approve refused, deny allowed", () => {
    assertRefused(decideRequest(underReview(), { kind: 'vote', decision: 'approve' }, mintedByDev(carl), NOW), 'self_approval');
    assert.equal(approved(decideRequest(underReview(), { kind: 'vote', decision: 'deny', reason: 'no' }, mintedByDev(carl), NOW)).nextState, 'denied');
  });

  test("releasing a held call with a token its requester minted is self-release: refused", () => {
    const held: HeldCallSnapshot = { state: 'pending', requester: dev.id, expiresAt: NOW + 60_000 };
    assertRefused(decideHeldCall(held, { kind: 'approve' }, mintedByDev(ada), NOW), 'self_approval');
  });

  test('the requester as an additional approver is refused at approval with 400 (her vote could never count)', () => {
    const r = decideRequest(request(), { kind: 'approve', additionalApprovers: [dev.id] }, ada, NOW);
    assertRefused(r, 'requester_as_approver');
    assert.equal(refusalStatus('requester_as_approver'), 400);
  });

  test('an exception rule naming the requester: she is never waited for, the others complete the request', () => {
    const listed = request({ requiredApprovers: [dev.id, carl.id] });
    const escalated = approved(decideRequest(listed, { kind: 'approve' }, ada, NOW));
    assert.equal(escalated.nextState, 'under_review');
    const asked = escalated.effects.find((e) => e.type === 'notify_approvers') as Extract<RequestEffect, { type: 'notify_approvers' }>;
    assert.deepEqual(asked.approvers, [carl.id]);
    const review = underReview({ requiredApprovers: [dev.id, carl.id] });
    assertRefused(decideRequest(review, { kind: 'vote', decision: 'approve' }, dev, NOW), 'self_approval');
    assert.equal(approved(decideRequest(review, { kind: 'vote', decision: 'approve' }, carl, NOW)).nextState, 'approved');
    // Named alone, nobody else is waited for: the admin's approval completes it.
    assert.equal(approved(decideRequest(request({ requiredApprovers: [dev.id] }), { kind: 'approve' }, ada, NOW)).nextState, 'approved');
  });
});
