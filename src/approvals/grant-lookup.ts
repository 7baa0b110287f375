/**
 * The gateway's view of a developer's grants, read on every call of a developer (one indexed query; agent keys
 * skip it): never cached, so a revoked or expired grant stops counting on the very next request, on every
 * replica. Expiry is `expires_at` at read time, not the sweeper's doing.
 */
import type { CallerGrants, GrantLookup } from './grants.js';
import { NO_GRANTS } from './grants.js';
import type { Queryable } from '../store/db.js';

export class StoredGrantLookup implements GrantLookup {
  constructor(private readonly db: Queryable) {}

  async forDeveloper(developerId: string, at: Date, project = ''): Promise<CallerGrants> {
    // A grant scoped to a project counts only for calls that name that project; an unscoped one counts everywhere.
    const r = await this.db.query<{ type: string; policy_name: string | null; model: string | null; amount_usd: string | null }>(
      `SELECT type, policy_name, model, amount_usd FROM grants
        WHERE developer_id = $1 AND state = 'active' AND expires_at > $2 AND (project_scope = '' OR project_scope = $3)`,
      [developerId, at, project],
    );
    if (r.rows.length === 0) return NO_GRANTS;
    const exempt = new Set<string>();
    const models: string[] = [];
    const topUps: { ruleId: string | null; amountUsd: number }[] = [];
    for (const g of r.rows) {
      if (g.type === 'exception' && g.policy_name) exempt.add(g.policy_name);
      if (g.type === 'model_access' && g.model) models.push(g.model);
      if (g.type === 'budget_topup' && g.amount_usd !== null) topUps.push({ ruleId: null, amountUsd: Number(g.amount_usd) });
    }
    return { exemptPolicies: exempt, extraModels: models, budgetTopUps: topUps };
  }
}
