/**
 * Budget rules and the spend counters they are enforced with.
 *
 * Enforcement reserves before the call: for every binding rule, one conditional upsert adds the call's
 * estimated cost to `reserved_usd` only while `spent_usd + reserved_usd` is still below the limit. Racing
 * calls on any replica serialise on the counter row, so each sees the reservations of those admitted
 * before it: the budget can be overrun only by what calls already in flight spend beyond their
 * estimates. When the call ends, its actual cost moves to `spent_usd` and its reservation is released.
 * A replica that dies mid-call leaves its reservation behind; reservations on a counter untouched for
 * 15 minutes are treated as abandoned and cleared by the next reservation.
 */
import { randomBytes } from 'node:crypto';
import { recordAudit } from '../audit/audit.js';
import type { Actor } from '../shared/actor.js';
import { notFound } from '../shared/errors.js';
import { Channels, notify, type Db, type Queryable } from '../store/db.js';
import type { BudgetPeriod, BudgetRuleInput } from './budget-rules.js';
import type { BudgetRule, BudgetUsage } from './contract.js';

export type { BudgetPeriod, BudgetRuleInput };
/** A stored rule (the wire shape): the rule the binding logic reads, with its timestamps. */
export type { BudgetRule, BudgetUsage } from './contract.js';

interface Row {
  id: string;
  name: string;
  scope: string;
  pattern: string;
  limit_usd: string | number;
  period: BudgetPeriod;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, name, scope, pattern, limit_usd, period, created_at, updated_at';

function toRule(r: Row): BudgetRule {
  return {
    id: r.id,
    name: r.name,
    scope: r.scope,
    pattern: r.pattern,
    limitUsd: Number(r.limit_usd),
    period: r.period,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

export async function listBudgetRules(q: Queryable): Promise<BudgetRule[]> {
  const r = await q.query<Row>(`SELECT ${COLUMNS} FROM budget_rules ORDER BY created_at, id`);
  return r.rows.map(toRule);
}

export async function getBudgetRule(q: Queryable, id: string): Promise<BudgetRule> {
  const r = await q.query<Row>(`SELECT ${COLUMNS} FROM budget_rules WHERE id = $1`, [id]);
  if (!r.rows[0]) throw notFound(`no budget rule ${id}`);
  return toRule(r.rows[0]);
}

export async function createBudgetRule(db: Db, actor: Actor, input: BudgetRuleInput): Promise<BudgetRule> {
  return db.transaction(async (tx) => {
    const id = `br_${randomBytes(9).toString('base64url')}`;
    const r = await tx.query<Row>(
      `INSERT INTO budget_rules (id, name, scope, pattern, limit_usd, period) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
      [id, input.name, input.scope, input.pattern, input.limitUsd, input.period],
    );
    const rule = toRule(r.rows[0]!);
    await recordAudit(tx, { type: 'control', action: 'budget_rule.create', actor, subject: rule.scope, data: { ...input, id } });
    await notify(tx, Channels.gatewayRules, { kind: 'budget', id });
    return rule;
  });
}

/**
 * Replaces a rule. Exported for the approvals' "also raise the persisted budget rule" too, which runs it
 * inside the approval's own transaction (`tx`).
 */
export async function replaceBudgetRuleIn(tx: Queryable, actor: Actor, id: string, input: BudgetRuleInput, reason?: string): Promise<BudgetRule> {
  const before = await tx.query<Row>(`SELECT ${COLUMNS} FROM budget_rules WHERE id = $1 FOR UPDATE`, [id]);
  if (!before.rows[0]) throw notFound(`no budget rule ${id}`);
  const old = toRule(before.rows[0]);
  const r = await tx.query<Row>(
    `UPDATE budget_rules SET name = $2, scope = $3, pattern = $4, limit_usd = $5, period = $6, updated_at = now()
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, input.name, input.scope, input.pattern, input.limitUsd, input.period],
  );
  // Counters belong to the rule's old coverage; a different scope, pattern or period starts them afresh.
  if (old.scope !== input.scope || old.pattern !== input.pattern || old.period !== input.period) {
    await tx.query('DELETE FROM budget_counters WHERE rule_id = $1', [id]);
  }
  await recordAudit(tx, {
    type: 'control',
    action: 'budget_rule.update',
    actor,
    subject: input.scope,
    data: { ...input, id, before: { name: old.name, scope: old.scope, pattern: old.pattern, limitUsd: old.limitUsd, period: old.period }, ...(reason ? { reason } : {}) },
  });
  await notify(tx, Channels.gatewayRules, { kind: 'budget', id });
  return toRule(r.rows[0]!);
}

export function replaceBudgetRule(db: Db, actor: Actor, id: string, input: BudgetRuleInput): Promise<BudgetRule> {
  return db.transaction((tx) => replaceBudgetRuleIn(tx, actor, id, input));
}

export async function deleteBudgetRule(db: Db, actor: Actor, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    const r = await tx.query<Row>(`DELETE FROM budget_rules WHERE id = $1 RETURNING ${COLUMNS}`, [id]);
    const old = r.rows[0];
    if (!old) throw notFound(`no budget rule ${id}`);
    await recordAudit(tx, { type: 'control', action: 'budget_rule.delete', actor, subject: old.scope, data: { ...toRule(old) } });
    await notify(tx, Channels.gatewayRules, { kind: 'budget', id });
  });
}

/** One rule's share of a call: what to set aside against which counter. */
export interface Reservation {
  ruleId: string;
  identityId: string;
  periodKey: string;
  /** The limit in force for this caller (the rule's, plus active top-ups). */
  limitUsd: number;
  amountUsd: number;
}

export type ReserveResult = { ok: true } | { ok: false; ruleId: string; spentUsd: number; reservedUsd: number; limitUsd: number };

class OverBudget extends Error {
  constructor(readonly result: Extract<ReserveResult, { ok: false }>) {
    super('over budget');
  }
}

/** Reserves against every binding rule in one transaction: all or none. */
export async function reserveBudget(db: Db, reservations: readonly Reservation[]): Promise<ReserveResult> {
  try {
    await db.transaction(async (tx) => {
      for (const r of reservations) {
        const admitted = await tx.query(
          `INSERT INTO budget_counters AS c (rule_id, identity_id, period_key, spent_usd, reserved_usd, updated_at)
           SELECT $1, $2, $3, 0, $4, now() WHERE $5::numeric > 0
           ON CONFLICT (rule_id, identity_id, period_key) DO UPDATE
              SET reserved_usd = (CASE WHEN c.updated_at < now() - interval '15 minutes' THEN 0 ELSE c.reserved_usd END) + EXCLUDED.reserved_usd,
                  updated_at = now()
            WHERE c.spent_usd + (CASE WHEN c.updated_at < now() - interval '15 minutes' THEN 0 ELSE c.reserved_usd END) < $5::numeric
           RETURNING 1`,
          [r.ruleId, r.identityId, r.periodKey, r.amountUsd, r.limitUsd],
        );
        if (admitted.rowCount === 0) {
          const c = await tx.query<{ spent_usd: string; reserved_usd: string }>(
            'SELECT spent_usd, reserved_usd FROM budget_counters WHERE rule_id = $1 AND identity_id = $2 AND period_key = $3',
            [r.ruleId, r.identityId, r.periodKey],
          );
          const row = c.rows[0];
          throw new OverBudget({
            ok: false,
            ruleId: r.ruleId,
            spentUsd: row ? Number(row.spent_usd) : 0,
            reservedUsd: row ? Number(row.reserved_usd) : 0,
            limitUsd: r.limitUsd,
          });
        }
      }
    });
    return { ok: true };
  } catch (err) {
    if (err instanceof OverBudget) return err.result;
    throw err;
  }
}

/** Moves a finished call's cost from reserved to spent. */
export async function settleBudget(db: Db, reservations: readonly Reservation[], costUsd: number): Promise<void> {
  if (reservations.length === 0) return;
  await db.transaction(async (tx) => {
    for (const r of reservations) {
      await tx.query(
        `UPDATE budget_counters SET spent_usd = spent_usd + $4, reserved_usd = GREATEST(reserved_usd - $5, 0), updated_at = now()
          WHERE rule_id = $1 AND identity_id = $2 AND period_key = $3`,
        [r.ruleId, r.identityId, r.periodKey, costUsd, r.amountUsd],
      );
    }
  });
}

export async function budgetUsage(q: Queryable, filter: { ruleId?: string; identityId?: string }): Promise<BudgetUsage[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (filter.ruleId) where.push(`rule_id = $${params.push(filter.ruleId)}`);
  if (filter.identityId) where.push(`identity_id = $${params.push(filter.identityId)}`);
  const r = await q.query<{ rule_id: string; identity_id: string; period_key: string; spent_usd: string; reserved_usd: string }>(
    `SELECT rule_id, identity_id, period_key, spent_usd, reserved_usd FROM budget_counters
      ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY updated_at DESC LIMIT 500`,
    params,
  );
  return r.rows.map((row) => ({
    ruleId: row.rule_id,
    identityId: row.identity_id,
    periodKey: row.period_key,
    spentUsd: Number(row.spent_usd),
    reservedUsd: Number(row.reserved_usd),
  }));
}
