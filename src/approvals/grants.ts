/**
 * What a caller's active grants change about the evaluation of one call. The approvals issue fills this
 * from the grants table; evaluation asks for it on every call and never caches it across calls, so a
 * revoked or expired grant stops counting on the very next request.
 */
export interface CallerGrants {
  /** Policies an active exception grant exempts the caller from. */
  exemptPolicies: ReadonlySet<string>;
  /** Model globs an active model-access grant adds to what the model-access rules allow. */
  extraModels: readonly string[];
  /** Active budget top-ups: USD added to the limit of a budget rule (null: the rule binding the call). */
  budgetTopUps: readonly { ruleId: string | null; amountUsd: number }[];
}

export interface GrantLookup {
  /**
   * The grants of a developer identity in force at `at` for the call's project (`X-Reins-Project`, '' when not
   * sent): a grant with a project scope counts only for calls of that project. Agent keys have none.
   */
  forDeveloper(developerId: string, at: Date, project?: string): CallerGrants | Promise<CallerGrants>;
}

export const NO_GRANTS: CallerGrants = Object.freeze({
  exemptPolicies: new Set<string>(),
  extraModels: Object.freeze([]) as readonly string[],
  budgetTopUps: Object.freeze([]) as readonly { ruleId: string | null; amountUsd: number }[],
});

/** Until the approvals workflow exists nobody holds a grant. */
export const NO_GRANT_LOOKUP: GrantLookup = { forDeveloper: () => NO_GRANTS };
