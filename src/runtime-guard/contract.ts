/**
 * The runtime guard's wire shapes, written once: the TypeBox schemas the routes validate and document with (sensor
 * ingest bodies, the status, reconciliation and observations payloads, the window and key parameters) and their
 * `Static<>` types, which the console imports (type-only). The engine's own plain types (`types.ts`, which the
 * engine and the sensor import) stay the source of the reconciliation rows and observation items; the checks at
 * the end of this module fail the typecheck when a schema and the engine's type drift apart. Keep this module to
 * schemas and types: the console's compiler reads it.
 */
import { Type, type Static } from 'typebox';
import type { Destination, ObservationItem, ReconciliationRow } from './types.js';

/** Spec Limits: a sensor sends at most 500 results per report per node; later findings are discarded by it. */
export const MAX_OBSERVATIONS_PER_REPORT = 500;

/** Items per family in one observations answer; the newest are kept. */
export const MAX_ITEMS_PER_FAMILY = 1000;

// ---- Sensor ingest (docs/api.md, "Runtime sensor ingest") ----

const NodeName = Type.String({ minLength: 1, maxLength: 253, description: 'The Kubernetes node name' });
const Address = (description: string) => Type.String({ maxLength: 45, description });
const IngestState = Type.Union([Type.Literal('available'), Type.Literal('unavailable'), Type.Literal('unknown')]);
const Family = Type.Union([Type.Literal('dns'), Type.Literal('network'), Type.Literal('open'), Type.Literal('exec'), Type.Literal('other')]);

// Unknown fields are ignored, not refused: a newer sensor adding a field must not lose every report it sends.
export const ObservationInput = Type.Object({
  rule: Type.String({ maxLength: 256 }),
  behavior: Type.String({ maxLength: 128 }),
  subject: Type.String({ maxLength: 4096, description: 'The process (binary path) that acted' }),
  destIP: Address('dns: the first address of the pod\'s own answer, "" when none; network: the address connected to'),
  destName: Type.String({ maxLength: 1024, description: 'dns: the name as the pod asked it; network: "" unless the sensor knew a name' }),
  count: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'Identical events aggregated within the report' }),
  node: Type.Optional(Type.String({ maxLength: 253, description: "The report's node; when sent it must equal it" })),
  podName: Type.String({ maxLength: 253 }),
  podIP: Address('The pod\'s address; "" when unknown (then podName is required)'),
  namespace: Type.String({ minLength: 1, maxLength: 253 }),
  result: Type.String({ maxLength: 64 }),
  mode: Type.String({ maxLength: 32 }),
  observedAt: Type.Integer({ minimum: 0, maximum: 4_294_967_295, description: 'Unix seconds: the last of the aggregated events' }),
  family: Family,
});
export type ObservationInput = Static<typeof ObservationInput>;

export const SensorReport = Type.Object({
  node: NodeName,
  sentAtUnix: Type.Integer({ minimum: 0, maximum: 4_294_967_295 }),
  observations: Type.Array(ObservationInput, {
    maxItems: MAX_OBSERVATIONS_PER_REPORT,
    description: `At most ${MAX_OBSERVATIONS_PER_REPORT}; a longer report is refused whole (413) and nothing of it is stored`,
  }),
});
export type SensorReport = Static<typeof SensorReport>;

export const SensorStatus = Type.Object({
  node: NodeName,
  sensorAlive: Type.Boolean(),
  bpfLsm: IngestState,
  reason: Type.String({ maxLength: 1024 }),
});
export type SensorStatus = Static<typeof SensorStatus>;

export const IngestAnswer = Type.Object({ stored: Type.Integer({ description: 'Observation items stored' }) });
export type IngestAnswer = Static<typeof IngestAnswer>;

export const SensorStatusAnswer = Type.Object({ status: Type.Literal('ok') });
export type SensorStatusAnswer = Static<typeof SensorStatusAnswer>;

// ---- The read-only answers (spec "Runtime status", "Reconciliation payload", "Observation item") ----

const State = Type.Union([Type.Literal('available'), Type.Literal('unavailable'), Type.Literal('unknown')], {
  description: 'available: positively established; unavailable: absence positively established; unknown: no evidence (not clean)',
});
const Enabled = {
  enabled: Type.Boolean({ description: 'false: only reason is meaningful and every data field is empty' }),
  reason: Type.String({ description: 'Why the runtime guard does not answer; "" when enabled' }),
};

const NodeLagSchema = Type.Object({
  node: Type.String(),
  recorded: Type.Integer({ description: "The sensor's counter of observation items recorded" }),
  stored: Type.Integer({ description: "Items stored for the node (since its sensor's last restart, when one was seen)" }),
  lag: Type.Integer({ description: 'max(0, recorded - stored)' }),
});
export const IngestLagSchema = Type.Object(
  {
    lag: Type.Integer({ description: 'Observations the sensors recorded that are not stored, summed over nodes; above 0 indicates possible loss' }),
    perNode: Type.Array(NodeLagSchema),
    scrapedAtUnix: Type.Integer({ description: 'When the sensor counters were last read; 0 = never (unknown)' }),
    scrapeError: Type.String({ description: 'Set ("" otherwise) when either side could not be read: the lag is then untrustworthy and completeness unknown' }),
  },
  { description: 'The leader scrapes the sensors every runtimeGuard.sensor.scrapeIntervalSeconds; every replica answers the same figure' },
);
export type IngestLag = Static<typeof IngestLagSchema>;

export const RuntimeStatusSchema = Type.Object({
  ...Enabled,
  crd: State,
  crdReason: Type.String(),
  bpfLsm: State,
  bpfLsmReason: Type.String(),
  nodes: Type.Array(
    Type.Object({
      node: Type.String(),
      sensorAlive: Type.Boolean(),
      bpfLsm: State,
      reason: Type.String({ description: 'A status older than 2 minutes, an idle node and a node without a sensor read as unknown' }),
    }),
  ),
  rbacGaps: Type.Array(Type.Object({ group: Type.String(), resource: Type.String(), verb: Type.String(), namespace: Type.String() })),
  ingestLag: IngestLagSchema,
  probedAtUnix: Type.Integer({ description: 'When the capability probe last ran; 0 = never (unknown, not clean)' }),
});
export type RuntimeStatus = Static<typeof RuntimeStatusSchema>;

export const DestinationSchema = Type.Object({
  destName: Type.String(),
  destIP: Type.String(),
  source: Type.Union([Type.Literal('network'), Type.Literal('dns')]),
  behaviors: Type.Array(Type.String()),
  count: Type.Integer(),
  governedCalls: Type.Integer({ description: 'Egress calls of the workload to the same host; 0 everywhere when the egress plane is not enabled' }),
  rung: Type.Union([Type.Literal('R0'), Type.Literal('R2'), Type.Literal('R6')], {
    description: 'Identity ladder rung; R1, R3, R4 and R5 are reserved',
  }),
  confidence: Type.Number(),
  kind: Type.Union([Type.Literal('provider'), Type.Literal('infra'), Type.Literal('imds'), Type.Literal('internal')]),
  suppressed: Type.Boolean(),
  suppressReason: Type.Union(
    [
      Type.Literal(''),
      Type.Literal('coredns'),
      Type.Literal('cluster-apiserver'),
      Type.Literal('in-cluster'),
      Type.Literal('node-or-link-local'),
      Type.Literal('service-gateway'),
      Type.Literal('reverse-dns'),
      Type.Literal('search-domain-expansion'),
      Type.Literal('sidecar-control-plane'),
      Type.Literal('package-registry'),
      Type.Literal('egress-nat-detector-disabled'),
      Type.Literal('cluster-facts-unavailable'),
    ],
    { description: '"" when not suppressed' },
  ),
});

export const ReconciliationRowSchema = Type.Object({
  workloadKey: Type.String(),
  namespace: Type.String(),
  kind: Type.String(),
  name: Type.String(),
  bypassedDestinations: Type.Integer(),
  m: Type.Integer({ description: 'Kernel events to unsuppressed provider destinations; not comparable with n' }),
  n: Type.Integer({ description: 'Gateway-recorded calls joined to the workload by name; not comparable with m' }),
  dnsOnly: Type.Boolean(),
  joinMethod: Type.Literal('name-based'),
  attributionConfirmed: Type.Boolean(),
  attributionNote: Type.Union([Type.Literal('pod-level (multi-container)'), Type.Literal('owner inferred from pod name'), Type.Literal('')], {
    description: "'pod-level (multi-container)' (a known sidecar shares the pod), 'owner inferred from pod name' (the pod was gone from the facts and never remembered), or ''",
  }),
  destinations: Type.Array(DestinationSchema),
});

const WindowFields = {
  windowStartUnix: Type.Integer({ description: 'The window actually used, after clamping' }),
  windowEndUnix: Type.Integer(),
};
export const ReconciliationSchema = Type.Object({
  ...Enabled,
  ...WindowFields,
  rows: Type.Array(ReconciliationRowSchema),
  networkDetectorDisabled: Type.Boolean({ description: 'The window is thinner, not cleaner: show disabledReason, never the count alone' }),
  disabledReason: Type.String(),
  ingestLag: IngestLagSchema,
});
export type Reconciliation = Static<typeof ReconciliationSchema>;

export const ObservationItemSchema = Type.Object({
  rule: Type.String(),
  behavior: Type.String(),
  subject: Type.String(),
  destIP: Type.String(),
  destName: Type.String(),
  count: Type.Integer(),
  node: Type.String(),
  podName: Type.String(),
  namespace: Type.String(),
  result: Type.String(),
  mode: Type.String(),
  observedAt: Type.Integer({ description: 'Unix seconds' }),
});
export const ObservationGroupSchema = Type.Object({
  family: Family,
  heading: Type.String(),
  needsBpfLsm: Type.Boolean(),
  feedsBypassedDestinations: Type.Boolean(),
  totalItems: Type.Integer({ description: 'Items of the family in the window' }),
  truncated: Type.Boolean({ description: `More than ${MAX_ITEMS_PER_FAMILY} items: only the newest ${MAX_ITEMS_PER_FAMILY} are listed` }),
  items: Type.Array(ObservationItemSchema, { description: 'Newest first' }),
});
export type ObservationGroup = Static<typeof ObservationGroupSchema>;
export const ObservationsSchema = Type.Object({
  ...Enabled,
  workloadKey: Type.String({ description: 'The requested key, echoed' }),
  ...WindowFields,
  groups: Type.Array(ObservationGroupSchema, { description: 'All five families in the spec order, empty ones included' }),
});
export type Observations = Static<typeof ObservationsSchema>;

// ---- Parameters ----

export const WindowQuery = Type.Object(
  {
    window: Type.Optional(
      Type.Union([Type.String(), Type.Array(Type.String())], {
        description: 'A duration such as 15m, 1h, 6h, 24h. Default 1h; clamped to 5m..24h; an unparseable value (given twice included) falls back to 1h',
      }),
    ),
  },
  { additionalProperties: false },
);
export type WindowQuery = Static<typeof WindowQuery>;

export const WorkloadKeyParams = Type.Object({ key: Type.String({ description: '<namespace>/<kind>/<name>, percent-encoded as one path segment' }) });
export type WorkloadKeyParams = Static<typeof WorkloadKeyParams>;

// ---- The schemas agree with the engine's types, both ways (a drift fails the typecheck) ----

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Agree<T extends true> = T;
export type ContractAgreesWithEngine = [
  Agree<Same<Static<typeof DestinationSchema>, Destination>>,
  Agree<Same<Static<typeof ReconciliationRowSchema>, ReconciliationRow>>,
  Agree<Same<Static<typeof ObservationItemSchema>, ObservationItem>>,
];
