/**
 * Decisions on access requests (approve, deny, vote) and their effects: the I/O edge of `decision-state.ts`.
 *
 * Every decision is one transaction: the request row is locked (`FOR UPDATE`), the pure core decides on what
 * was read, and the new state, the decision row, the grant, notifications and the audit event are written
 * together. Racing deciders on any replica serialise on the row lock, so a request completes exactly once
 * with exactly one notification. A refused decision is audited (in its own transaction) and answered 4xx.
 */
import { recordAudit } from '../audit/audit.js';
import { credentialOf, type Actor } from '../shared/actor.js';
import { parseIdentityId } from '../shared/ids.js';
import { invalid, notFound } from '../shared/errors.js';
import { matchingRule } from '../budgets/budget-rules.js';
import { listBudgetRules, replaceBudgetRuleIn } from '../budgets/budget-store.js';
import { Channels, notify, type Db, type Queryable } from '../store/db.js';
import { deciderOf } from '../shared/decider.js';
import { refusalError } from '../shared/refusal.js';
import type { ApproveInput, DecisionOutcome } from './contract.js';
import { decideRequest, type RequestAction, type RequestEffect } from './decision-state.js';
import { addNotification, notifyAdmins } from './notifications.js';
import {
  GRANT_COLUMNS,
  REQUEST_COLUMNS,
  decisionsOf,
  describe,
  effectiveGrantState,
  identityCreatedAt,
  involves,
  isAdminOrViewer,
  newId,
  toGrant,
  toRequest,
  type GrantRow,
  type RequestRow,
  type Settled,
} from './request-rows.js';

export const DEFAULT_GRANT_SECONDS = 24 * 3600;
const MAX_GRANT_SECONDS = 90 * 86_400;

/** The approval's options as the service takes them: the wire body with `expiresAt` parsed. */
export type ApproveOptions = Omit<ApproveInput, 'expiresAt'> & { expiresAt?: Date };

export async function decideOnRequest(db: Db, caller: Actor, id: string, action: RequestAction, options: ApproveOptions = {}): Promise<DecisionOutcome> {
  const approver = deciderOf(caller);
  for (const extra of options.additionalApprovers ?? []) {
    if (parseIdentityId(extra) === null) throw invalid(`body.additionalApprovers: "${extra}" is not an identity id`);
  }
  const result = await db.transaction(async (tx): Promise<Settled<DecisionOutcome>> => {
    const r = await tx.query<RequestRow>(`SELECT ${REQUEST_COLUMNS} FROM access_requests WHERE id = $1 FOR UPDATE`, [id]);
    const row = r.rows[0];
    const since = await identityCreatedAt(tx, caller);
    const mayRead = row && (isAdminOrViewer(caller) || involves(row, caller, since));
    if (!row || !mayRead) throw notFound(`no access request ${id}`);
    // A co-signer named before their identity was deleted and created again is not this identity.
    const requiredApprovers = row.created_at.getTime() >= since ? row.required_approvers : row.required_approvers.filter((a) => a !== approver.id);
    const decisions = (await decisionsOf(tx, [id])).get(id) ?? [];
    const grant = row.grant_id
      ? (await tx.query<GrantRow>(`SELECT ${GRANT_COLUMNS} FROM grants WHERE id = $1 FOR UPDATE`, [row.grant_id])).rows[0]
      : undefined;
    const now = Date.now();
    const decision = decideRequest(
      {
        state: row.state,
        requester: row.requester,
        requiredApprovers,
        decisions: decisions.map((d) => ({ approver: d.approver, decision: d.decision, ...(d.reason ? { reason: d.reason } : {}), at: Date.parse(d.at) })),
        grantState: grant ? effectiveGrantState(grant, now) : null,
        grantExpiresAt: grant ? grant.expires_at.getTime() : null,
        type: row.type,
      },
      action,
      approver,
      now,
    );
    if (!decision.ok) return { refused: decision };

    await tx.query(`UPDATE access_requests SET state = $2, decision_count = decision_count + 1, updated_at = now() WHERE id = $1`, [id, decision.nextState]);
    const warnings: string[] = [];
    let grantId = row.grant_id;
    for (const effect of decision.effects) {
      grantId = await applyEffect(tx, caller, row, effect, { grantId, options, warnings, now, action });
    }
    const updated = (await tx.query<RequestRow>(`SELECT ${REQUEST_COLUMNS} FROM access_requests WHERE id = $1`, [id])).rows[0]!;
    const grantRow = grantId ? (await tx.query<GrantRow>(`SELECT ${GRANT_COLUMNS} FROM grants WHERE id = $1`, [grantId])).rows[0] : undefined;
    return {
      value: {
        request: toRequest(updated, (await decisionsOf(tx, [id])).get(id) ?? []),
        grant: grantRow ? toGrant(grantRow) : null,
        warnings,
      },
    };
  });
  if (result.refused) {
    const refusal = result.refused;
    // A refused attempt (self-approval, a vote for someone else, a decision on a final request) is audited.
    await recordAudit(db, {
      type: 'control',
      action: refusal.auditAction,
      actor: caller,
      outcome: 'refused',
      subject: id,
      data: { requestId: id, code: refusal.code, message: refusal.message, ...credentialOf(caller) },
    });
    throw refusalError(refusal);
  }
  return result.value;
}

async function applyEffect(
  tx: Queryable,
  caller: Actor,
  row: RequestRow,
  effect: RequestEffect,
  ctx: { grantId: string | null; options: ApproveOptions; warnings: string[]; now: number; action: RequestAction },
): Promise<string | null> {
  switch (effect.type) {
    case 'record_decision':
      await tx.query('INSERT INTO request_decisions (request_id, approver, decision, reason, at) VALUES ($1, $2, $3, $4, $5)', [
        row.id,
        effect.approver,
        effect.decision,
        effect.reason ?? null,
        new Date(effect.at),
      ]);
      if (effect.decision === 'deny') await tx.query('UPDATE access_requests SET denial_reason = $2 WHERE id = $1', [row.id, effect.reason ?? null]);
      return ctx.grantId;
    case 'set_required_approvers':
      await tx.query('UPDATE access_requests SET required_approvers = $2 WHERE id = $1', [row.id, effect.approvers]);
      return ctx.grantId;
    case 'create_grant': {
      const seconds = await grantSeconds(tx, row, ctx.options, ctx.now);
      const id = newId('gr');
      await tx.query(
        `INSERT INTO grants (id, type, state, developer_id, policy_name, model, amount_usd, project_scope, approvers, request_id, expires_at)
         VALUES ($1, $2, 'active', $3, $4, $5, $6, $7, $8, $9, $10)`,
        [id, row.type, row.requester, row.target_policy, row.requested_model, row.requested_amount_usd, row.project_scope, effect.approvers, row.id, new Date(ctx.now + seconds * 1000)],
      );
      await tx.query('UPDATE access_requests SET grant_id = $2 WHERE id = $1', [row.id, id]);
      await recordAudit(tx, { type: 'control', action: 'grant.create', actor: caller, subject: row.requester, data: { grantId: id, requestId: row.id, seconds } });
      return id;
    }
    case 'raise_budget_rule': {
      const rules = await listBudgetRules(tx);
      const warn = (problem: string) => ctx.warnings.push(`${problem}: the top-up is granted, but no persisted budget rule was raised`);
      let target = null as (typeof rules)[number] | null;
      if (row.budget_rule_id !== null) {
        // The rule the request matched when it was submitted.
        const recorded = rules.find((r) => r.id === row.budget_rule_id);
        if (!recorded) warn(`budget rule "${row.budget_rule_name}" matched this request when it was submitted and has been removed since`);
        else if (recorded.name !== row.budget_rule_name) warn(`budget rule "${row.budget_rule_name}" matched this request when it was submitted and has been renamed to "${recorded.name}" since`);
        else if (rules.some((r) => r.id !== recorded.id && r.scope === recorded.scope && r.pattern === recorded.pattern)) {
          warn(`several budget rules now have scope ${recorded.scope} and pattern ${recorded.pattern}`);
        } else target = recorded;
      } else {
        const match = matchingRule(rules, { identityId: row.requester, model: row.requested_model });
        if ('rule' in match) target = match.rule;
        else if (match.problem === 'missing') warn(`no budget rule covers ${row.requester}${row.requested_model ? ` and ${row.requested_model}` : ''}`);
        else warn(`several budget rules match ${row.requester} with the same scope and pattern (${match.candidates.map((c) => c.name).join(', ')})`);
      }
      if (target) {
        await replaceBudgetRuleIn(tx, caller, target.id, { name: target.name, scope: target.scope, pattern: target.pattern, limitUsd: effect.permanentLimitUsd, period: target.period }, `raised by access request ${row.id}`);
      }
      return ctx.grantId;
    }
    case 'revoke_grant':
      if (ctx.grantId) {
        await tx.query(`UPDATE grants SET state = 'revoked', revoked_at = now(), revoked_by = $2 WHERE id = $1 AND state = 'active'`, [ctx.grantId, deciderOf(caller).id]);
        await notify(tx, Channels.gatewayRules, { kind: 'grant', id: ctx.grantId });
      }
      return ctx.grantId;
    case 'notify_requester': {
      const message = requesterMessage(row, effect.kind, effect.by, effect.reason);
      await addNotification(tx, row.requester, effect.kind, message, { requestId: row.id, ...(ctx.grantId ? { grantId: ctx.grantId } : {}) }, effect.by ? { by: effect.by } : {});
      return ctx.grantId;
    }
    case 'notify_approvers':
      for (const approver of effect.approvers) {
        await addNotification(tx, approver, effect.kind, `${effect.by} asks for your co-signature on ${row.requester}'s request for ${describe(toRequest(row, []))}.`, { requestId: row.id }, { by: effect.by });
      }
      return ctx.grantId;
    case 'notify_admins':
      await notifyAdmins(tx, effect.kind, `${effect.by} revoked a grant of ${row.requester}.`, { requestId: row.id, ...(ctx.grantId ? { grantId: ctx.grantId } : {}) });
      return ctx.grantId;
    case 'relay_retry_instruction':
    case 'relay_denial_reason':
      // Relayed through the requester's notification and get_request_status; nothing else to store.
      return ctx.grantId;
    case 'audit':
      await recordAudit(tx, {
        type: 'control',
        action: effect.action,
        actor: caller,
        subject: row.requester,
        data: {
          requestId: row.id,
          ...(ctx.grantId ? { grantId: ctx.grantId } : {}),
          ...(ctx.action.kind === 'deny' ? { reason: ctx.action.reason } : {}),
          ...credentialOf(caller),
        },
      });
      return ctx.grantId;
  }
}

function requesterMessage(row: RequestRow, kind: string, by?: string, reason?: string): string {
  const what = describe(toRequest(row, []));
  switch (kind) {
    case 'request_approved':
      return `${by} approved your request for ${what}. Retry your call.`;
    case 'request_under_review':
      return `${by} approved your request for ${what}; it is active now while co-signers review it. Retry your call.`;
    case 'request_denied':
      return `${by} denied your request for ${what}: ${reason ?? ''}`;
    default:
      return `Your request for ${what}: ${kind}.`;
  }
}

async function grantSeconds(tx: Queryable, row: RequestRow, options: ApproveOptions, now: number): Promise<number> {
  let seconds =
    options.expiresAt !== undefined
      ? Math.round((options.expiresAt.getTime() - now) / 1000)
      : (options.durationSeconds ?? row.duration_seconds ?? DEFAULT_GRANT_SECONDS);
  if (row.type === 'exception' && row.target_policy) {
    const rule = await tx.query<{ max_duration_seconds: number }>('SELECT max_duration_seconds FROM exception_rules WHERE policy_name = $1 ORDER BY max_duration_seconds LIMIT 1', [row.target_policy]);
    const max = rule.rows[0]?.max_duration_seconds;
    if (max !== undefined) {
      if (options.expiresAt === undefined && options.durationSeconds === undefined && row.duration_seconds === null) seconds = max;
      seconds = Math.min(seconds, max);
    }
  }
  if (seconds <= 0) throw invalid('body.expiresAt: must be in the future');
  return Math.min(seconds, MAX_GRANT_SECONDS);
}
