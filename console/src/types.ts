/**
 * The wire shapes the console reads. Each is the server's own contract (`src/<domain>/contract.ts`: the TypeBox
 * schema the route validates with, and its Static type), imported type-only, so nothing of the server reaches the
 * bundle and a change on the server that breaks the console fails its typecheck. The server's own description is
 * GET /api/v1/openapi.json.
 */
// The runtime guard's wire shapes are the engine's own types (modules of plain types, no runtime code).
import type { CapabilityState } from '../../src/runtime-guard/cluster.js';
import type { Destination, ObservationFamily, ObservationItem, ReconciliationRow } from '../../src/runtime-guard/types.js';
export type { Destination, ObservationFamily, ObservationItem, ReconciliationRow };

export type { Identity, Me, TokenInfo } from '../../src/identity/contract.js';
export type { Role } from '../../src/shared/actor.js';
export type { Tier } from '../../src/identity/tiers.js';
export type { AccessRequest, DecisionOutcome, ExceptionRule, Grant, Notification } from '../../src/approvals/contract.js';
export type { HeldCall, HumanReviewSettings } from '../../src/held-calls/contract.js';
export type { AuditEvent } from '../../src/audit/contract.js';
export type { Policy } from '../../src/policy/contract.js';

// ---- Runtime guard (spec: "Runtime status", "Reconciliation payload", "Observation item") ----

export type { CapabilityState };

export interface IngestLag {
  lag: number;
  perNode: { node: string; recorded?: number; stored?: number; lag: number }[];
  /** 0 = never scraped: unknown. */
  scrapedAtUnix: number;
  /** Set when either side could not be read: the lag is then untrustworthy and completeness unknown. */
  scrapeError?: string;
}

export interface RuntimeStatus {
  enabled: boolean;
  reason?: string;
  crd?: CapabilityState;
  crdReason?: string;
  bpfLsm?: CapabilityState;
  bpfLsmReason?: string;
  nodes: { node: string; sensorAlive: boolean; bpfLsm: CapabilityState; reason: string }[];
  rbacGaps: { group: string; resource: string; verb: string; namespace: string }[];
  ingestLag?: IngestLag;
  probedAtUnix?: number;
}

export interface Reconciliation {
  enabled: boolean;
  reason?: string;
  windowStartUnix?: number;
  windowEndUnix?: number;
  rows: ReconciliationRow[];
  networkDetectorDisabled?: boolean;
  disabledReason?: string;
  ingestLag?: IngestLag;
}

export interface ObservationGroup {
  family: ObservationFamily;
  heading?: string;
  needsBpfLsm?: boolean;
  feedsBypassedDestinations?: boolean;
  totalItems?: number;
  /** More items than listed: only the newest are. */
  truncated?: boolean;
  items: ObservationItem[];
}

export interface Observations {
  enabled: boolean;
  reason?: string;
  workloadKey: string;
  groups: ObservationGroup[];
}
