/**
 * Every replica's copy of the budget rules, model-access rules and rate limits the gateway checks on each call,
 * re-read on NOTIFY (reins_gateway_rules) and periodically, like the policy set.
 */
import { Channels, type Db, type Queryable } from '../store/db.js';
import { Snapshot } from '../store/snapshot.js';
import { listBudgetRules, type BudgetRule } from './budget-store.js';
import { listModelAccessRules, type ModelAccessRule } from './model-access-store.js';
import { listRateLimits, type RateLimit } from './rate-limit-store.js';

export interface GatewayRulesValue {
  budgetRules: readonly BudgetRule[];
  modelAccess: readonly ModelAccessRule[];
  rateLimits: readonly RateLimit[];
}

export class GatewayRules {
  private readonly snapshot: Snapshot<GatewayRulesValue>;

  constructor(db: Db, options: { refreshSeconds: number; listen?: boolean; onError?: (err: Error) => void }) {
    this.snapshot = new Snapshot(db, {
      channel: Channels.gatewayRules,
      refreshSeconds: options.refreshSeconds,
      ...(options.listen === undefined ? {} : { listen: options.listen }),
      ...(options.onError ? { onError: options.onError } : {}),
      load: async (q: Queryable) => ({ budgetRules: await listBudgetRules(q), modelAccess: await listModelAccessRules(q), rateLimits: await listRateLimits(q) }),
    });
  }

  start(): Promise<void> {
    return this.snapshot.start();
  }

  stop(): Promise<void> {
    return this.snapshot.stop();
  }

  get value(): GatewayRulesValue {
    return this.snapshot.value;
  }

  reload(): Promise<void> {
    return this.snapshot.reload();
  }
}
