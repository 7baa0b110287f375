/**
 * Access requests, their decisions and the grants they create: the I/O edge of `decision-state.ts`.
 *
 * Every decision is one transaction: the request row is locked (`FOR UPDATE`), the pure core decides on what
 * was read, and the new state, the decision row, the grant, notifications and the audit event are written
 * together. Racing deciders on any replica serialise on the row lock, so a request completes exactly once
 * with exactly one notification. A refused decision is audited (in its own transaction) and answered 4xx.
 */
import { randomBytes } from 'node:crypto';
import { recordAudit } from '../audit/audit.js';
import { credentialOf, type Actor } from '../shared/actor.js';
import { parseIdentityId } from '../shared/ids.js';
import { invalid, notFound } from '../shared/errors.js';
import { matchingRule } from '../budgets/budget-rules.js';
import { listBudgetRules, replaceBudgetRuleIn } from '../budgets/budget-store.js';
import { Channels, notify, type Db, type Queryable } from '../store/db.js';
import { deciderOf } from '../shared/decider.js';
import { refusalError, type Refusal } from '../shared/refusal.js';
import {
  decideGrant,
  decideRequest,
  type AccessRequestType,
  type GrantState,
  type RequestAction,
  type RequestEffect,
  type RequestState,
} from './decision-state.js';

export const DEFAULT_GRANT_SECONDS = 24 * 3600;
const MAX_GRANT_SECONDS = 90 * 86_400;

export interface RequestDecisionView {
  approver: string;
  decision: 'approve' | 'deny';
  reason: string | null;
  at: string;
}

export interface AccessRequest {
  id: string;
  type: AccessRequestType;
  state: RequestState;
  requester: string;
  justification: string;
  targetPolicy: string | null;
  requestedModel: string | null;
  requestedAmountUsd: number | null;
  requiredApprovers: string[];
  durationSeconds: number | null;
  projectScope: string;
  decisions: RequestDecisionView[];
  grantId: string | null;
  denialReason: string | null;
  createdAt: string;
}

export interface Grant {
  id: string;
  type: AccessRequestType;
  state: GrantState;
  developerId: string;
  policyName: string | null;
  model: string | null;
  amountUsd: number | null;
  projectScope: string;
  approvers: string[];
  requestId: string;
  createdAt: string;
  expiresAt: string;
  revokedAt: string | null;
  revokedBy: string | null;
}

export interface SubmitInput {
  type: AccessRequestType;
  justification: string;
  targetPolicy?: string;
  requestedModel?: string;
  requestedAmountUsd?: number;
  requiredApprovers?: string[];
  durationSeconds?: number;
  projectScope?: string;
}

interface RequestRow {
  id: string;
  type: AccessRequestType;
  state: RequestState;
  requester: string;
  justification: string;
  target_policy: string | null;
  requested_model: string | null;
  requested_amount_usd: string | null;
  required_approvers: string[];
  duration_seconds: number | null;
  project_scope: string;
  decision_count: number;
  grant_id: string | null;
  denial_reason: string | null;
  created_at: Date;
  budget_rule_id: string | null;
  budget_rule_name: string | null;
}

interface GrantRow {
  id: string;
  type: AccessRequestType;
  state: GrantState;
  developer_id: string;
  policy_name: string | null;
  model: string | null;
  amount_usd: string | null;
  project_scope: string;
  approvers: string[];
  request_id: string;
  created_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
  revoked_by: string | null;
}

const REQUEST_COLUMNS =
  'id, type, state, requester, justification, target_policy, requested_model, requested_amount_usd, required_approvers, duration_seconds, project_scope, decision_count, grant_id, denial_reason, created_at, budget_rule_id, budget_rule_name';
const GRANT_COLUMNS =
  'id, type, state, developer_id, policy_name, model, amount_usd, project_scope, approvers, request_id, created_at, expires_at, revoked_at, revoked_by';

/** A transaction's answer: a refusal to audit after it, or the value. */
type Settled<T> = { refused: Refusal; value?: undefined } | { refused?: undefined; value: T };

const newId = (prefix: string) => `${prefix}_${randomBytes(9).toString('base64url')}`;

/** An active grant past its expiry is expired, whatever the sweeper has done: computed on every read. */
function effectiveGrantState(row: { state: GrantState; expires_at: Date }, now = Date.now()): GrantState {
  return row.state === 'active' && row.expires_at.getTime() <= now ? 'expired' : row.state;
}

function toGrant(r: GrantRow): Grant {
  return {
    id: r.id,
    type: r.type,
    state: effectiveGrantState(r),
    developerId: r.developer_id,
    policyName: r.policy_name,
    model: r.model,
    amountUsd: r.amount_usd === null ? null : Number(r.amount_usd),
    projectScope: r.project_scope,
    approvers: r.approvers,
    requestId: r.request_id,
    createdAt: r.created_at.toISOString(),
    expiresAt: r.expires_at.toISOString(),
    revokedAt: r.revoked_at?.toISOString() ?? null,
    revokedBy: r.revoked_by,
  };
}

async function decisionsOf(q: Queryable, ids: string[]): Promise<Map<string, RequestDecisionView[]>> {
  const out = new Map<string, RequestDecisionView[]>();
  if (ids.length === 0) return out;
  const r = await q.query<{ request_id: string; approver: string; decision: 'approve' | 'deny'; reason: string | null; at: Date }>(
    'SELECT request_id, approver, decision, reason, at FROM request_decisions WHERE request_id = ANY($1) ORDER BY at, approver',
    [ids],
  );
  for (const row of r.rows) {
    const list = out.get(row.request_id) ?? [];
    list.push({ approver: row.approver, decision: row.decision, reason: row.reason, at: row.at.toISOString() });
    out.set(row.request_id, list);
  }
  return out;
}

function toRequest(r: RequestRow, decisions: RequestDecisionView[]): AccessRequest {
  return {
    id: r.id,
    type: r.type,
    state: r.state,
    requester: r.requester,
    justification: r.justification,
    targetPolicy: r.target_policy,
    requestedModel: r.requested_model,
    requestedAmountUsd: r.requested_amount_usd === null ? null : Number(r.requested_amount_usd),
    requiredApprovers: r.required_approvers,
    durationSeconds: r.duration_seconds,
    projectScope: r.project_scope,
    decisions,
    grantId: r.grant_id,
    denialReason: r.denial_reason,
    createdAt: r.created_at.toISOString(),
  };
}

/**
 * An identity id can be deleted and created again; the new identity inherits nothing of the old one's. A request
 * or grant older than the identity now carrying its id belongs to the earlier one, so a developer's own view (and
 * a co-signer's vote) only counts rows created since their identity was.
 */
const SINCE_IDENTITY = (param: string) => `created_at >= (SELECT created_at FROM identities WHERE id = ${param})`;

async function identityCreatedAt(q: Queryable, caller: Actor): Promise<number> {
  if (caller.kind !== 'developer') return Number.POSITIVE_INFINITY;
  const r = await q.query<{ created_at: Date }>('SELECT created_at FROM identities WHERE id = $1', [caller.identityId]);
  return r.rows[0]?.created_at.getTime() ?? Number.POSITIVE_INFINITY;
}

/** Whether a developer may read a request: their own, or one naming them as a co-signer, since their identity was created. */
function involves(row: Pick<RequestRow, 'requester' | 'required_approvers' | 'created_at'>, caller: Actor, since: number): boolean {
  return caller.kind === 'developer' && row.created_at.getTime() >= since && (row.requester === caller.identityId || row.required_approvers.includes(caller.identityId));
}

function isAdminOrViewer(caller: Actor): boolean {
  return caller.kind === 'developer' && (caller.role === 'admin' || caller.role === 'viewer');
}

export async function submitRequest(db: Db, caller: Extract<Actor, { kind: 'developer' }>, input: SubmitInput): Promise<AccessRequest> {
  const justification = input.justification;
  if (justification.trim() === '') throw invalid('body.justification: say why you need it');
  if (input.type === 'exception' && !input.targetPolicy) throw invalid('body.targetPolicy: an exception request names the policy');
  if (input.type === 'model_access' && !input.requestedModel) throw invalid('body.requestedModel: a model-access request names the model');
  if (input.type === 'budget_topup' && !(input.requestedAmountUsd !== undefined && input.requestedAmountUsd > 0)) {
    throw invalid('body.requestedAmountUsd: a budget top-up names a positive amount in USD');
  }
  // Naming yourself is a mistake to point out: your approval would never count. An exception rule that names the
  // requester among everyone's co-signers is not: the request is accepted and only her own approval is refused.
  if ((input.requiredApprovers ?? []).includes(caller.identityId)) throw invalid('body.requiredApprovers: you cannot co-sign your own request');
  return db.transaction(async (tx) => {
    let required = [...new Set(input.requiredApprovers ?? [])];
    if (input.type === 'exception') {
      const p = await tx.query('SELECT 1 FROM policies WHERE name = $1', [input.targetPolicy]);
      if (p.rows.length === 0) throw invalid(`body.targetPolicy: no policy named ${input.targetPolicy}`);
      // The exception rule for the policy adds its required co-signers.
      const rule = await tx.query<{ required_approvers: string[] }>('SELECT required_approvers FROM exception_rules WHERE policy_name = $1', [input.targetPolicy]);
      for (const row of rule.rows) required = [...new Set([...required, ...row.required_approvers])];
    }
    for (const approver of required) {
      if (parseIdentityId(approver) === null) throw invalid(`body.requiredApprovers: "${approver}" is not an identity id`);
      const known = await tx.query(`SELECT 1 FROM identities WHERE id = $1 AND kind = 'developer'`, [approver]);
      if (known.rows.length === 0) throw invalid(`body.requiredApprovers: no developer identity ${approver}`);
    }
    // A top-up remembers the budget rule it matched now, so that approval can tell a renamed or removed rule.
    let matched: { id: string; name: string } | null = null;
    if (input.type === 'budget_topup') {
      const m = matchingRule(await listBudgetRules(tx), { identityId: caller.identityId, model: input.requestedModel ?? null });
      if ('rule' in m) matched = { id: m.rule.id, name: m.rule.name };
    }
    const r = await tx.query<RequestRow>(
      `INSERT INTO access_requests (id, type, state, requester, justification, target_policy, requested_model, requested_amount_usd,
         required_approvers, duration_seconds, project_scope, budget_rule_id, budget_rule_name)
       VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING ${REQUEST_COLUMNS}`,
      [
        newId('ar'),
        input.type,
        caller.identityId,
        justification,
        input.targetPolicy ?? null,
        input.requestedModel ?? null,
        input.requestedAmountUsd ?? null,
        required,
        input.durationSeconds ?? null,
        input.projectScope ?? '',
        matched?.id ?? null,
        matched?.name ?? null,
      ],
    );
    const request = toRequest(r.rows[0]!, []);
    await recordAudit(tx, { type: 'control', action: 'access_request.create', actor: caller, subject: caller.identityId, data: { requestId: request.id, type: request.type } });
    await notifyAdmins(tx, 'request_submitted', `${caller.identityId} asks for ${describe(request)}.`, { requestId: request.id });
    return request;
  });
}

function describe(r: { type: AccessRequestType; targetPolicy: string | null; requestedModel: string | null; requestedAmountUsd: number | null }): string {
  if (r.type === 'exception') return `an exception to policy ${r.targetPolicy}`;
  if (r.type === 'model_access') return `access to model ${r.requestedModel}`;
  return `a budget top-up of $${r.requestedAmountUsd}`;
}

export interface RequestFilter {
  state?: RequestState;
  type?: AccessRequestType;
  requester?: string;
}

export async function listRequests(q: Queryable, caller: Actor, filter: RequestFilter): Promise<AccessRequest[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (isAdminOrViewer(caller)) {
    if (filter.requester) where.push(`requester = $${params.push(filter.requester)}`);
  } else {
    // Developers see their own requests, and those naming them as a required approver (they co-sign whatever their
    // role, spec rule 8), whatever else they ask for; `requester` narrows within that.
    const me = caller.kind === 'developer' ? caller.identityId : '';
    const at = params.push(me);
    where.push(`(requester = $${at} OR $${at} = ANY(required_approvers)) AND ${SINCE_IDENTITY(`$${at}`)}`);
    if (filter.requester) where.push(`requester = $${params.push(filter.requester)}`);
  }
  if (filter.state) where.push(`state = $${params.push(filter.state)}`);
  if (filter.type) where.push(`type = $${params.push(filter.type)}`);
  const r = await q.query<RequestRow>(
    `SELECT ${REQUEST_COLUMNS} FROM access_requests ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id LIMIT 500`,
    params,
  );
  const decisions = await decisionsOf(q, r.rows.map((row) => row.id));
  return r.rows.map((row) => toRequest(row, decisions.get(row.id) ?? []));
}

export async function getRequest(q: Queryable, caller: Actor, id: string): Promise<AccessRequest> {
  const r = await q.query<RequestRow>(`SELECT ${REQUEST_COLUMNS} FROM access_requests WHERE id = $1`, [id]);
  const row = r.rows[0];
  // Someone else's request is reported as absent to a developer, so ids cannot be probed.
  const mayRead = row && (isAdminOrViewer(caller) || involves(row, caller, await identityCreatedAt(q, caller)));
  if (!row || !mayRead) throw notFound(`no access request ${id}`);
  return toRequest(row, (await decisionsOf(q, [id])).get(id) ?? []);
}

export interface ApproveOptions {
  expiresAt?: Date;
  durationSeconds?: number;
  additionalApprovers?: string[];
  raiseBudgetRule?: boolean;
  permanentLimitUsd?: number;
}

export interface DecisionOutcome {
  request: AccessRequest;
  grant: Grant | null;
  warnings: string[];
}

/** Approve, deny or vote: one transaction under the request's row lock. */
export async function decide(db: Db, caller: Actor, id: string, action: RequestAction, options: ApproveOptions = {}): Promise<DecisionOutcome> {
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

async function addNotification(tx: Queryable, recipient: string, kind: string, message: string, refs: { requestId?: string; grantId?: string }, data: Record<string, unknown> = {}): Promise<void> {
  await tx.query('INSERT INTO notifications (recipient, kind, message, request_id, grant_id, data) VALUES ($1, $2, $3, $4, $5, $6)', [
    recipient,
    kind,
    message,
    refs.requestId ?? null,
    refs.grantId ?? null,
    JSON.stringify(data),
  ]);
}

/** One notification per admin identity at this moment: the admin audience. */
async function notifyAdmins(tx: Queryable, kind: string, message: string, refs: { requestId?: string; grantId?: string }): Promise<void> {
  const admins = await tx.query<{ id: string }>(`SELECT id FROM identities WHERE kind = 'developer' AND role = 'admin'`);
  for (const a of admins.rows) await addNotification(tx, a.id, kind, message, refs);
}

// ---------------------------------------------------------------------------------------------------
// Grants

export async function listGrants(q: Queryable, caller: Actor, filter: { developerId?: string; policyName?: string; history: boolean }): Promise<Grant[]> {
  const where = [filter.history ? `(state <> 'active' OR expires_at <= now())` : `state = 'active' AND expires_at > now()`];
  const params: unknown[] = [];
  const developer = isAdminOrViewer(caller) ? filter.developerId : caller.kind === 'developer' ? caller.identityId : '';
  if (developer) where.push(`developer_id = $${params.push(developer)}`);
  if (!isAdminOrViewer(caller)) where.push(SINCE_IDENTITY(`$${params.push(caller.kind === 'developer' ? caller.identityId : '')}`));
  if (filter.policyName) where.push(`policy_name = $${params.push(filter.policyName)}`);
  const r = await q.query<GrantRow>(`SELECT ${GRANT_COLUMNS} FROM grants WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id LIMIT 500`, params);
  return r.rows.map(toGrant);
}

export async function getGrant(q: Queryable, caller: Actor, id: string): Promise<Grant> {
  const r = await q.query<GrantRow>(`SELECT ${GRANT_COLUMNS} FROM grants WHERE id = $1`, [id]);
  const row = r.rows[0];
  const mine = row && caller.kind === 'developer' && row.developer_id === caller.identityId && row.created_at.getTime() >= (await identityCreatedAt(q, caller));
  if (!row || !(isAdminOrViewer(caller) || mine)) throw notFound(`no grant ${id}`);
  return toGrant(row);
}

/** Revokes an active grant at once (admin); not active: 409. */
export async function revokeGrant(db: Db, caller: Actor, id: string): Promise<Grant> {
  const result = await db.transaction(async (tx): Promise<Settled<Grant>> => {
    const r = await tx.query<GrantRow>(`SELECT ${GRANT_COLUMNS} FROM grants WHERE id = $1 FOR UPDATE`, [id]);
    const row = r.rows[0];
    if (!row) throw notFound(`no grant ${id}`);
    const now = Date.now();
    const decision = decideGrant({ state: effectiveGrantState(row, now), expiresAt: row.expires_at.getTime() }, { kind: 'revoke' }, deciderOf(caller), now);
    if (!decision.ok) return { refused: decision };
    await tx.query(`UPDATE grants SET state = 'revoked', revoked_at = now(), revoked_by = $2 WHERE id = $1 AND state = 'active'`, [id, deciderOf(caller).id]);
    for (const effect of decision.effects) {
      if (effect.type === 'notify_requester') await addNotification(tx, row.developer_id, 'grant_revoked', `${deciderOf(caller).id} revoked your grant for ${describeGrant(row)}.`, { requestId: row.request_id, grantId: id });
      if (effect.type === 'notify_admins') await notifyAdmins(tx, 'grant_revoked', `${deciderOf(caller).id} revoked ${row.developer_id}'s grant for ${describeGrant(row)}.`, { requestId: row.request_id, grantId: id });
      if (effect.type === 'audit') {
        await recordAudit(tx, { type: 'control', action: effect.action, actor: caller, subject: row.developer_id, data: { grantId: id, requestId: row.request_id, ...credentialOf(caller) } });
      }
    }
    await notify(tx, Channels.gatewayRules, { kind: 'grant', id });
    const updated = (await tx.query<GrantRow>(`SELECT ${GRANT_COLUMNS} FROM grants WHERE id = $1`, [id])).rows[0]!;
    return { value: toGrant(updated) };
  });
  if (result.refused) {
    await recordAudit(db, { type: 'control', action: 'grant.revoke', actor: caller, outcome: 'refused', subject: id, data: { grantId: id, code: result.refused.code } });
    throw refusalError(result.refused);
  }
  return result.value;
}

function describeGrant(row: GrantRow): string {
  return describe({ type: row.type, targetPolicy: row.policy_name, requestedModel: row.model, requestedAmountUsd: row.amount_usd === null ? null : Number(row.amount_usd) });
}
