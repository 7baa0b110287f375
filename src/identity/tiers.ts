/** Autonomy tiers. An agent with no explicit assignment resolves to T2 (spec: Identity). */
export const TIERS = ['T1', 'T2', 'T3', 'T4'] as const;
export type Tier = (typeof TIERS)[number];

export const TIER_LABELS: Record<Tier, string> = {
  T1: 'Human-directed',
  T2: 'Semi-autonomous',
  T3: 'Highly autonomous',
  T4: 'Fully autonomous',
};

export const DEFAULT_TIER: Tier = 'T2';

export function isTier(v: unknown): v is Tier {
  return typeof v === 'string' && (TIERS as readonly string[]).includes(v);
}

/** What policies read: `object.agent.autonomyTier` and `object.agent.autonomyLevel`. */
export interface ResolvedTier {
  autonomyTier: Tier;
  autonomyLevel: 1 | 2 | 3 | 4;
  /** False when the tier is the T2 default rather than an assignment. */
  explicit: boolean;
}

export function resolveTier(assigned: Tier | null | undefined): ResolvedTier {
  const tier = assigned ?? DEFAULT_TIER;
  return { autonomyTier: tier, autonomyLevel: (TIERS.indexOf(tier) + 1) as 1 | 2 | 3 | 4, explicit: assigned != null };
}
