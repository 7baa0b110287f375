/**
 * Access requests: submission, listing and reading. Their decisions are request-decisions.ts, the grants they
 * create grant-store.ts; the rows and who may read which are request-rows.ts, the wire shapes contract.ts.
 */
import { recordAudit } from '../audit/audit.js';
import type { Actor } from '../shared/actor.js';
import { parseIdentityId } from '../shared/ids.js';
import { invalid, notFound } from '../shared/errors.js';
import { matchingRule } from '../budgets/budget-rules.js';
import { listBudgetRules } from '../budgets/budget-store.js';
import type { Db, Queryable } from '../store/db.js';
import type { AccessRequest, RequestFilter, SubmitInput } from './contract.js';
import { notifyAdmins } from './notifications.js';
import { REQUEST_COLUMNS, SINCE_IDENTITY, decisionsOf, describe, identityCreatedAt, involves, isAdminOrViewer, newId, toRequest, type RequestRow } from './request-rows.js';

export type { AccessRequest } from './contract.js';

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
