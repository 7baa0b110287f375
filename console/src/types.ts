/**
 * The wire shapes the console reads, as API.md and the spec give them (the server's own description is
 * GET /api/v1/openapi.json). Only the fields the console uses are typed.
 */
// The runtime guard's wire shapes are the engine's own types (modules of plain types, no runtime code).
import type { CapabilityState } from '../../src/runtime-guard/cluster.js';
import type { Destination, ObservationFamily, ObservationItem, ReconciliationRow } from '../../src/runtime-guard/types.js';
export type { Destination, ObservationFamily, ObservationItem, ReconciliationRow };

export type Role = 'admin' | 'viewer' | 'developer';
export type Tier = 'T1' | 'T2' | 'T3' | 'T4';

export interface Me {
  id: string;
  kind: 'developer';
  role: Role;
  displayName: string;
  via: 'token' | 'session';
  csrfToken?: string;
}

export interface Identity {
  id: string;
  kind: 'agent' | 'developer';
  role?: Role;
  autonomyTier: Tier | '';
  effectiveTier?: Tier;
  displayName: string;
  createdAt: string;
}

export type RequestType = 'exception' | 'model_access' | 'budget_topup';
export type RequestState = 'pending' | 'under_review' | 'approved' | 'denied';

export interface Decision {
  approver: string;
  decision: 'approve' | 'deny';
  reason: string | null;
  at: string;
}

export interface AccessRequest {
  id: string;
  type: RequestType;
  state: RequestState;
  requester: string;
  justification: string;
  targetPolicy: string | null;
  requestedModel: string | null;
  requestedAmountUsd: number | null;
  requiredApprovers: string[];
  durationSeconds: number | null;
  projectScope: string;
  decisions: Decision[];
  grantId: string | null;
  denialReason: string | null;
  createdAt: string;
}

export type GrantState = 'active' | 'revoked' | 'expired';

export interface Grant {
  id: string;
  type: RequestType;
  state: GrantState;
  developerId: string;
  policyName: string | null;
  model: string | null;
  amountUsd: number | null;
  projectScope: string;
  approvers: string[];
  requestId: string;
  createdAt: string;
  expiresAt: string;
  revokedAt: string | null;
  revokedBy: string | null;
}

export interface DecisionAnswer {
  request: AccessRequest;
  grant: Grant | null;
  warnings: string[];
}

export interface HeldCall {
  id: string;
  kind: 'llm' | 'mcp';
  state: 'pending' | 'released' | 'stopped' | 'timed_out';
  timeoutOutcome: 'deny' | 'allow' | null;
  requester: string | null;
  agentId: string;
  sessionId: string | null;
  tool: string | null;
  model: string | null;
  policyName: string;
  policyMessage: string;
  promptExcerpt: string | null;
  attachedCalls: number;
  createdAt: string;
  expiresAt: string;
  decidedBy: string | null;
  note: string | null;
}

export interface ExceptionRule {
  id: string;
  name: string;
  policyName: string;
  maxDurationSeconds: number;
  requiredApprovers: string[];
  projectScope: string;
}

export interface Notification {
  id: string;
  kind: string;
  message: string;
  requestId: string | null;
  grantId: string | null;
  createdAt: string;
  readAt: string | null;
}

export interface AuditEvent {
  id: string;
  at: string;
  type: string;
  action: string;
  outcome: string;
  actor: { kind: string; id: string | null };
  subject: string | null;
  host: string | null;
  data: Record<string, unknown>;
  /** On the decision event of an allowed or held gateway call: whether its end event exists (false: outcome unknown). */
  callEnded?: boolean;
}

export interface Policy {
  name: string;
  kind: 'allow' | 'deny' | 'approve' | 'audit';
  appliesTo: ('llm' | 'mcp' | 'egress')[];
  match: string;
  message: string;
  approvalWindowSeconds?: number;
  enabled: boolean;
  builtIn: boolean;
}

export interface HumanReview {
  llmApprovalWindowSeconds: number;
  mcpApprovalWindowSeconds: number;
  timeoutOutcome: 'deny' | 'allow';
}

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
