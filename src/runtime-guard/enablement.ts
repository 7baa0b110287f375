/**
 * Whether the runtime guard answers on this replica, and if not, why (spec "Disabled shape"). A pure function of
 * the configuration, the environment it was loaded with, and whether this replica started its cluster side.
 */
import type { ClusterEnvironment } from './cluster.js';

/** The spec's `reason` strings, word for word (a neutral word in place of vendor and orchestrator names). */
export const DISABLED_REASONS = {
  notInCluster: 'not running in a cluster',
  saas: 'unavailable on vendor-hosted (SaaS) tenants',
  disabledByConfig: 'disabled by config',
  inactive: 'the service is enabled but inactive on this replica (no cluster API access or no shared store)',
  notConfigured: 'the service is not configured',
} as const;

export type DisabledReason = (typeof DISABLED_REASONS)[keyof typeof DISABLED_REASONS];

export type Enablement = { enabled: true } | { enabled: false; reason: DisabledReason };

export interface EnablementInput {
  deployment: 'self-hosted' | 'saas';
  /** From the environment the configuration was loaded with; null when not in (or against) a cluster. */
  environment: ClusterEnvironment | null;
  /** Whether the configuration has a `runtimeGuard` section at all. */
  configured: boolean;
  /** `runtimeGuard.enabled`. */
  enabled: boolean;
  /**
   * Whether this replica started its cluster side; null when it was not attempted (decided before). The store
   * is never the missing part here: PostgreSQL is shared, and the embedded PGlite store serves the one replica
   * it belongs to, which counts as that replica's store.
   */
  clusterStarted: boolean | null;
}

/**
 * In this order: a SaaS tenant fails closed even when the flag is true; outside a cluster the flag is irrelevant;
 * then no configuration, then the flag; last, a replica whose cluster side could not start.
 */
export function decideEnablement(input: EnablementInput): Enablement {
  if (input.deployment === 'saas') return { enabled: false, reason: DISABLED_REASONS.saas };
  if (input.environment === null) return { enabled: false, reason: DISABLED_REASONS.notInCluster };
  if (!input.configured) return { enabled: false, reason: DISABLED_REASONS.notConfigured };
  if (!input.enabled) return { enabled: false, reason: DISABLED_REASONS.disabledByConfig };
  if (input.clusterStarted === false) return { enabled: false, reason: DISABLED_REASONS.inactive };
  return { enabled: true };
}

/** Whether the cluster side should be started at all: every check but the last passed. */
export function shouldStartCluster(input: Omit<EnablementInput, 'clusterStarted'>): boolean {
  return decideEnablement({ ...input, clusterStarted: null }).enabled;
}
