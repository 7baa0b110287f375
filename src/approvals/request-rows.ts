/**
 * The rows of access requests and grants as the store holds them, their mapping to the wire shapes
 * (contract.ts), and who may read which: shared by submission and reading (access-requests.ts), decisions
 * (request-decisions.ts) and grants (grant-store.ts).
 */
import { randomBytes } from 'node:crypto';
import type { Actor } from '../shared/actor.js';
import type { Refusal } from '../shared/refusal.js';
import type { Queryable } from '../store/db.js';
import type { AccessRequest, AccessRequestType, Grant, GrantState, RequestDecisionView, RequestState } from './contract.js';

export interface RequestRow {
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

export interface GrantRow {
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

export const REQUEST_COLUMNS =
  'id, type, state, requester, justification, target_policy, requested_model, requested_amount_usd, required_approvers, duration_seconds, project_scope, decision_count, grant_id, denial_reason, created_at, budget_rule_id, budget_rule_name';
export const GRANT_COLUMNS =
  'id, type, state, developer_id, policy_name, model, amount_usd, project_scope, approvers, request_id, created_at, expires_at, revoked_at, revoked_by';

/** A transaction's answer: a refusal to audit after it, or the value. */
export type Settled<T> = { refused: Refusal; value?: undefined } | { refused?: undefined; value: T };

export const newId = (prefix: string) => `${prefix}_${randomBytes(9).toString('base64url')}`;

/** An active grant past its expiry is expired, whatever the sweeper has done: computed on every read. */
export function effectiveGrantState(row: { state: GrantState; expires_at: Date }, now = Date.now()): GrantState {
  return row.state === 'active' && row.expires_at.getTime() <= now ? 'expired' : row.state;
}

export function toGrant(r: GrantRow): Grant {
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

export async function decisionsOf(q: Queryable, ids: string[]): Promise<Map<string, RequestDecisionView[]>> {
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

export function toRequest(r: RequestRow, decisions: RequestDecisionView[]): AccessRequest {
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
export const SINCE_IDENTITY = (param: string) => `created_at >= (SELECT created_at FROM identities WHERE id = ${param})`;

export async function identityCreatedAt(q: Queryable, caller: Actor): Promise<number> {
  if (caller.kind !== 'developer') return Number.POSITIVE_INFINITY;
  const r = await q.query<{ created_at: Date }>('SELECT created_at FROM identities WHERE id = $1', [caller.identityId]);
  return r.rows[0]?.created_at.getTime() ?? Number.POSITIVE_INFINITY;
}

/** Whether a developer may read a request: their own, or one naming them as a co-signer, since their identity was created. */
export function involves(row: Pick<RequestRow, 'requester' | 'required_approvers' | 'created_at'>, caller: Actor, since: number): boolean {
  return caller.kind === 'developer' && row.created_at.getTime() >= since && (row.requester === caller.identityId || row.required_approvers.includes(caller.identityId));
}

export function isAdminOrViewer(caller: Actor): boolean {
  return caller.kind === 'developer' && (caller.role === 'admin' || caller.role === 'viewer');
}

export function describe(r: { type: AccessRequestType; targetPolicy: string | null; requestedModel: string | null; requestedAmountUsd: number | null }): string {
  if (r.type === 'exception') return `an exception to policy ${r.targetPolicy}`;
  if (r.type === 'model_access') return `access to model ${r.requestedModel}`;
  return `a budget top-up of $${r.requestedAmountUsd}`;
}

export function describeGrant(row: GrantRow): string {
  return describe({ type: row.type, targetPolicy: row.policy_name, requestedModel: row.model, requestedAmountUsd: row.amount_usd === null ? null : Number(row.amount_usd) });
}
