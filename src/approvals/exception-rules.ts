/** Exception rules: reusable rules a request for an exception to a policy is granted against (docs/api.md, "Exception rules"). */
import { randomBytes } from 'node:crypto';
import { recordAudit } from '../audit/audit.js';
import type { Actor } from '../shared/actor.js';
import { parseIdentityId } from '../shared/ids.js';
import { invalid, notFound } from '../shared/errors.js';
import type { Db, Queryable } from '../store/db.js';

import type { ExceptionRule, ExceptionRuleInput } from './contract.js';

interface Row {
  id: string;
  name: string;
  policy_name: string;
  max_duration_seconds: number;
  required_approvers: string[];
  project_scope: string;
}

const COLUMNS = 'id, name, policy_name, max_duration_seconds, required_approvers, project_scope';

const toRule = (r: Row): ExceptionRule => ({
  id: r.id,
  name: r.name,
  policyName: r.policy_name,
  maxDurationSeconds: r.max_duration_seconds,
  requiredApprovers: r.required_approvers,
  projectScope: r.project_scope,
});

async function check(q: Queryable, input: ExceptionRuleInput): Promise<void> {
  const p = await q.query('SELECT 1 FROM policies WHERE name = $1', [input.policyName]);
  if (p.rows.length === 0) throw invalid(`body.policyName: no policy named ${input.policyName}`);
  for (const a of input.requiredApprovers) {
    if (parseIdentityId(a) === null) throw invalid(`body.requiredApprovers: "${a}" is not an identity id`);
    const known = await q.query(`SELECT 1 FROM identities WHERE id = $1 AND kind = 'developer'`, [a]);
    if (known.rows.length === 0) throw invalid(`body.requiredApprovers: no developer identity ${a}`);
  }
}

export async function listExceptionRules(q: Queryable): Promise<ExceptionRule[]> {
  return (await q.query<Row>(`SELECT ${COLUMNS} FROM exception_rules ORDER BY created_at, id`)).rows.map(toRule);
}

export async function getExceptionRule(q: Queryable, id: string): Promise<ExceptionRule> {
  const row = (await q.query<Row>(`SELECT ${COLUMNS} FROM exception_rules WHERE id = $1`, [id])).rows[0];
  if (!row) throw notFound(`no exception rule ${id}`);
  return toRule(row);
}

export async function createExceptionRule(db: Db, actor: Actor, input: ExceptionRuleInput): Promise<ExceptionRule> {
  return db.transaction(async (tx) => {
    await check(tx, input);
    const id = `er_${randomBytes(9).toString('base64url')}`;
    const r = await tx.query<Row>(
      `INSERT INTO exception_rules (id, name, policy_name, max_duration_seconds, required_approvers, project_scope) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
      [id, input.name, input.policyName, input.maxDurationSeconds, input.requiredApprovers, input.projectScope],
    );
    await recordAudit(tx, { type: 'control', action: 'exception_rule.create', actor, subject: input.policyName, data: { ...input, id } });
    return toRule(r.rows[0]!);
  });
}

export async function replaceExceptionRule(db: Db, actor: Actor, id: string, input: ExceptionRuleInput): Promise<ExceptionRule> {
  return db.transaction(async (tx) => {
    await check(tx, input);
    const r = await tx.query<Row>(
      `UPDATE exception_rules SET name = $2, policy_name = $3, max_duration_seconds = $4, required_approvers = $5, project_scope = $6, updated_at = now()
        WHERE id = $1 RETURNING ${COLUMNS}`,
      [id, input.name, input.policyName, input.maxDurationSeconds, input.requiredApprovers, input.projectScope],
    );
    if (!r.rows[0]) throw notFound(`no exception rule ${id}`);
    await recordAudit(tx, { type: 'control', action: 'exception_rule.update', actor, subject: input.policyName, data: { ...input, id } });
    return toRule(r.rows[0]);
  });
}

export async function deleteExceptionRule(db: Db, actor: Actor, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    const r = await tx.query<Row>(`DELETE FROM exception_rules WHERE id = $1 RETURNING ${COLUMNS}`, [id]);
    if (!r.rows[0]) throw notFound(`no exception rule ${id}`);
    await recordAudit(tx, { type: 'control', action: 'exception_rule.delete', actor, subject: r.rows[0].policy_name, data: { id } });
  });
}
