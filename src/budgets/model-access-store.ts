/**
 * Model-access rules: which models (globs) an identity, a namespace or everyone (`*`) may use. A caller
 * that no rule covers may use any model; once a rule covers a caller, only the models of the rules
 * covering it are allowed (the union), plus models an active model-access grant adds.
 */
import { randomBytes } from 'node:crypto';
import { recordAudit } from '../audit/audit.js';
import type { Actor } from '../shared/actor.js';
import { notFound } from '../shared/errors.js';
import { Channels, notify, type Db, type Queryable } from '../store/db.js';

import type { ModelAccessRule } from './contract.js';

export type { ModelAccessRule } from './contract.js';

export type ModelAccessInput = Pick<ModelAccessRule, 'scope' | 'models' | 'description'>;

interface Row {
  id: string;
  scope: string;
  models: string[];
  description: string;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, scope, models, description, created_at, updated_at';

function toRule(r: Row): ModelAccessRule {
  return {
    id: r.id,
    scope: r.scope,
    models: r.models,
    description: r.description,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

export async function listModelAccessRules(q: Queryable): Promise<ModelAccessRule[]> {
  const r = await q.query<Row>(`SELECT ${COLUMNS} FROM model_access_rules ORDER BY created_at, id`);
  return r.rows.map(toRule);
}

export async function getModelAccessRule(q: Queryable, id: string): Promise<ModelAccessRule> {
  const r = await q.query<Row>(`SELECT ${COLUMNS} FROM model_access_rules WHERE id = $1`, [id]);
  if (!r.rows[0]) throw notFound(`no model-access rule ${id}`);
  return toRule(r.rows[0]);
}

export async function createModelAccessRule(db: Db, actor: Actor, input: ModelAccessInput): Promise<ModelAccessRule> {
  return db.transaction(async (tx) => {
    const id = `ma_${randomBytes(9).toString('base64url')}`;
    const r = await tx.query<Row>(
      `INSERT INTO model_access_rules (id, scope, models, description) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
      [id, input.scope, input.models, input.description],
    );
    const rule = toRule(r.rows[0]!);
    await recordAudit(tx, { type: 'control', action: 'model_access.create', actor, subject: rule.scope, data: { ...input, id } });
    await notify(tx, Channels.gatewayRules, { kind: 'model_access', id });
    return rule;
  });
}

export async function replaceModelAccessRule(db: Db, actor: Actor, id: string, input: ModelAccessInput): Promise<ModelAccessRule> {
  return db.transaction(async (tx) => {
    const before = await tx.query<Row>(`SELECT ${COLUMNS} FROM model_access_rules WHERE id = $1 FOR UPDATE`, [id]);
    if (!before.rows[0]) throw notFound(`no model-access rule ${id}`);
    const r = await tx.query<Row>(
      `UPDATE model_access_rules SET scope = $2, models = $3, description = $4, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`,
      [id, input.scope, input.models, input.description],
    );
    const old = toRule(before.rows[0]);
    await recordAudit(tx, {
      type: 'control',
      action: 'model_access.update',
      actor,
      subject: input.scope,
      data: { ...input, id, before: { scope: old.scope, models: old.models } },
    });
    await notify(tx, Channels.gatewayRules, { kind: 'model_access', id });
    return toRule(r.rows[0]!);
  });
}

export async function deleteModelAccessRule(db: Db, actor: Actor, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    const r = await tx.query<Row>(`DELETE FROM model_access_rules WHERE id = $1 RETURNING ${COLUMNS}`, [id]);
    const old = r.rows[0];
    if (!old) throw notFound(`no model-access rule ${id}`);
    await recordAudit(tx, { type: 'control', action: 'model_access.delete', actor, subject: old.scope, data: { id, models: old.models } });
    await notify(tx, Channels.gatewayRules, { kind: 'model_access', id });
  });
}
