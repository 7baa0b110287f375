/**
 * The wire shapes the console reads. Each is the server's own contract (`src/<domain>/contract.ts`: the TypeBox
 * schema the route validates with, and its Static type), imported type-only, so nothing of the server reaches the
 * bundle and a change on the server that breaks the console fails its typecheck. The server's own description is
 * GET /api/v1/openapi.json.
 */
// The runtime guard's rows and items are the engine's own types (a module of plain types, no runtime code); its
// payloads are the contract's, which the typecheck holds equal to them.
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
export type { RateLimit } from '../../src/budgets/contract.js';

// ---- Runtime guard (spec: "Runtime status", "Reconciliation payload", "Observation item") ----

export type { CapabilityState };
export type { IngestLag, ObservationGroup, Observations, Reconciliation, RuntimeStatus } from '../../src/runtime-guard/contract.js';
