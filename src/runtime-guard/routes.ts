/**
 * The runtime guard's HTTP surface: the two sensor ingest routes (sensor tokens only) and the three read-only
 * endpoints of the spec (admins and viewers; a developer token is refused). A disabled runtime guard is not an
 * error: the read-only endpoints answer 200 with `enabled: false` and the reason.
 */
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { Counter, Gauge, type Registry } from 'prom-client';
import { Type, type TSchema } from 'typebox';
import { READERS } from '../shared/access.js';
import { describeValidation } from '../shared/error-handler.js';
import { AppError } from '../shared/errors.js';
import { AUTH_ERRORS, responses } from '../shared/schemas.js';
import { checkReportSize, IngestAnswer, MAX_OBSERVATIONS_PER_REPORT, MAX_REPORT_BODY_BYTES, SensorReport, SensorStatus } from './ingest.js';
import type { NodeStatusReport } from './node-status.js';
import { MAX_ITEMS_PER_FAMILY, type RuntimeGuard } from './runtime-guard.js';

const State = Type.Union([Type.Literal('available'), Type.Literal('unavailable'), Type.Literal('unknown')], {
  description: 'available: positively established; unavailable: absence positively established; unknown: no evidence (not clean)',
});
const Enabled = {
  enabled: Type.Boolean({ description: 'false: only reason is meaningful and every data field is empty' }),
  reason: Type.String({ description: 'Why the runtime guard does not answer; "" when enabled' }),
};

const NodeLagT = Type.Object({
  node: Type.String(),
  recorded: Type.Integer({ description: "The sensor's counter of observation items recorded" }),
  stored: Type.Integer({ description: "Items stored for the node (since its sensor's last restart, when one was seen)" }),
  lag: Type.Integer({ description: 'max(0, recorded - stored)' }),
});
const IngestLagT = Type.Object(
  {
    lag: Type.Integer({ description: 'Observations the sensors recorded that are not stored, summed over nodes; above 0 indicates possible loss' }),
    perNode: Type.Array(NodeLagT),
    scrapedAtUnix: Type.Integer({ description: 'When the sensor counters were last read; 0 = never (unknown)' }),
    scrapeError: Type.String({ description: 'Set ("" otherwise) when either side could not be read: the lag is then untrustworthy and completeness unknown' }),
  },
  { description: 'The leader scrapes the sensors every runtimeGuard.sensor.scrapeIntervalSeconds; every replica answers the same figure' },
);

const StatusT = Type.Object({
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
  ingestLag: IngestLagT,
  probedAtUnix: Type.Integer({ description: 'When the capability probe last ran; 0 = never (unknown, not clean)' }),
});

const DestinationT = Type.Object({
  destName: Type.String(),
  destIP: Type.String(),
  source: Type.Union([Type.Literal('network'), Type.Literal('dns')]),
  behaviors: Type.Array(Type.String()),
  count: Type.Integer(),
  governedCalls: Type.Integer({ description: 'Egress calls of the workload to the same host; 0 everywhere when the egress plane is not enabled' }),
  rung: Type.String(),
  confidence: Type.Number(),
  kind: Type.Union([Type.Literal('provider'), Type.Literal('infra'), Type.Literal('imds'), Type.Literal('internal')]),
  suppressed: Type.Boolean(),
  suppressReason: Type.String(),
});
const RowT = Type.Object({
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
  attributionNote: Type.String({
    description: "'pod-level (multi-container)' (a known sidecar shares the pod), 'owner inferred from pod name' (the pod was gone from the facts and never remembered), or ''",
  }),
  destinations: Type.Array(DestinationT),
});
const WindowFields = {
  windowStartUnix: Type.Integer({ description: 'The window actually used, after clamping' }),
  windowEndUnix: Type.Integer(),
};
const ReconciliationT = Type.Object({
  ...Enabled,
  ...WindowFields,
  rows: Type.Array(RowT),
  networkDetectorDisabled: Type.Boolean({ description: 'The window is thinner, not cleaner: show disabledReason, never the count alone' }),
  disabledReason: Type.String(),
  ingestLag: IngestLagT,
});

const ItemT = Type.Object({
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
const GroupT = Type.Object({
  family: Type.Union([Type.Literal('dns'), Type.Literal('network'), Type.Literal('open'), Type.Literal('exec'), Type.Literal('other')]),
  heading: Type.String(),
  needsBpfLsm: Type.Boolean(),
  feedsBypassedDestinations: Type.Boolean(),
  totalItems: Type.Integer({ description: 'Items of the family in the window' }),
  truncated: Type.Boolean({ description: `More than ${MAX_ITEMS_PER_FAMILY} items: only the newest ${MAX_ITEMS_PER_FAMILY} are listed` }),
  items: Type.Array(ItemT, { description: 'Newest first' }),
});
const ObservationsT = Type.Object({
  ...Enabled,
  workloadKey: Type.String({ description: 'The requested key, echoed' }),
  ...WindowFields,
  groups: Type.Array(GroupT, { description: 'All five families in the spec order, empty ones included' }),
});

const WindowQuery = Type.Object(
  {
    window: Type.Optional(
      Type.Union([Type.String(), Type.Array(Type.String())], {
        description: 'A duration such as 15m, 1h, 6h, 24h. Default 1h; clamped to 5m..24h; an unparseable value (given twice included) falls back to 1h',
      }),
    ),
  },
  { additionalProperties: false },
);

/** The `window` parameter as the window rules read it: given twice it is unparseable, not a 400 (spec Errors 2). */
function windowOf(query: unknown): string | undefined {
  const raw = (query as { window?: string | string[] }).window;
  return Array.isArray(raw) ? '' : raw;
}

/** A JSON-pointer path as the sensor author reads it: `/observations/3/family` → `observations[3].family`. */
function sensorFieldPath(pointerPath: string): string {
  return pointerPath
    .split('.')
    .map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('');
}

/**
 * The ingest bodies are validated with TypeBox like every route, but a refusal names the field the way the
 * sensor's own code spells it (`observations[3].family`).
 */
const sensorValidator: FastifySchemaCompiler<TSchema> = (route) => {
  const check = TypeBoxValidatorCompiler(route);
  return (value: unknown) => {
    const result = check(value) as { value?: unknown; error?: FastifySchemaValidationError[] };
    if (!result.error) return result;
    const message = describeValidation(result.error, 'body');
    const colon = message.indexOf(': ');
    const field = sensorFieldPath(message.slice(0, colon).replace(/^body\.?/, '')) || 'body';
    return { error: new AppError('invalid_request', `${field}: ${message.slice(colon + 2)}`, { field }) };
  };
};

/**
 * The reconciliation and observations answers run to megabytes (3 MB for 2,000 workloads): V8's own
 * JSON.stringify writes them several times faster than the schema-compiled serializer (25 ms against 130–300 ms).
 * The schemas still describe them in OpenAPI; the payloads are built field by field by RuntimeGuard.
 */
const nativeJson = () => (data: unknown) => JSON.stringify(data);

export function registerRuntimeGuardRoutes(app: FastifyInstance, deps: { guard: RuntimeGuard; registry: Registry }): void {
  const { guard, registry } = deps;
  const ingested = new Counter({
    name: 'reins_runtime_observations_ingested_total',
    help: 'Sensor observation items stored',
    registers: [registry],
  });
  const refused = new Counter({
    name: 'reins_runtime_reports_refused_total',
    help: 'Sensor reports refused (nothing of them stored), by HTTP status',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'reins_runtime_guard_enabled',
    help: 'Whether the runtime guard answers on this replica (1) or reports itself disabled (0)',
    registers: [registry],
    collect() {
      this.set(guard.enablement.enabled ? 1 : 0);
    },
  });

  app.post('/api/v1/runtime/sensor/reports', {
    config: { access: 'sensor' },
    validatorCompiler: sensorValidator,
    // 500 valid items of maximum field sizes pass the general body limit: this route takes them (ingest.ts).
    bodyLimit: Math.max(app.initialConfig.bodyLimit ?? 0, MAX_REPORT_BODY_BYTES),
    // Before the items are validated one by one: an oversize report is refused whole, by its length.
    preValidation: async (request) => checkReportSize(request.body),
    onResponse: async (_request, reply) => {
      if (reply.statusCode >= 400) refused.inc({ status: String(reply.statusCode) });
    },
    schema: {
      tags: ['runtime'],
      summary: `Store a sensor report: at most ${MAX_OBSERVATIONS_PER_REPORT} observations for one node (sensor tokens only)`,
      description:
        'A report over the limit is refused whole with 413 and nothing of it is stored; the sensor counter then shows the loss as ingest lag. ' +
        'With the runtime guard off for the deployment (not configured, disabled by config, SaaS, not in a cluster) reports are refused with 409. ' +
        'Unknown fields are ignored.',
      body: SensorReport,
      response: responses({ 200: IngestAnswer }, ...AUTH_ERRORS, 409, 413, 415),
    },
    handler: async (request) => {
      const stored = await guard.ingestReport(request.body as SensorReport);
      ingested.inc(stored);
      return { stored };
    },
  });

  app.post('/api/v1/runtime/sensor/status', {
    config: { access: 'sensor' },
    validatorCompiler: sensorValidator,
    schema: {
      tags: ['runtime'],
      summary: "A node's sensor status (about every 30 s; older than 2 minutes reads as unknown) (sensor tokens only)",
      body: SensorStatus,
      response: responses({ 200: Type.Object({ status: Type.Literal('ok') }) }, ...AUTH_ERRORS, 409, 415),
    },
    handler: async (request) => {
      await guard.ingestStatus(request.body as NodeStatusReport);
      return { status: 'ok' as const };
    },
  });

  app.get('/api/v1/runtime/status', {
    config: { access: READERS },
    schema: {
      tags: ['runtime'],
      summary: 'Capability snapshot: CRD, BPF-LSM across the fleet and per node, RBAC gaps, ingest lag',
      response: responses({ 200: StatusT }, ...AUTH_ERRORS),
    },
    handler: async () => guard.status(),
  });

  app.get('/api/v1/runtime/reconciliation', {
    // window: an unparseable value (bad percent-encoding included) falls back to 1h without an error (spec).
    config: { access: READERS, lenientQuery: ['window'] },
    serializerCompiler: nativeJson,
    schema: {
      tags: ['runtime'],
      summary: 'Per workload, the distinct AI provider destinations reached outside governance in the window',
      querystring: WindowQuery,
      response: responses({ 200: ReconciliationT }, ...AUTH_ERRORS),
    },
    handler: async (request, reply) => {
      const timings: Record<string, number> = {};
      const payload = await guard.reconciliation(windowOf(request.query), timings);
      // Where the time went (reading new rows and the audit log, summing the window, the engine): for operators.
      const serverTiming = Object.entries(timings).map(([name, ms]) => `${name};dur=${ms.toFixed(1)}`);
      if (serverTiming.length > 0) reply.header('server-timing', serverTiming.join(', '));
      return payload;
    },
  });

  app.get('/api/v1/runtime/workloads/:key/observations', {
    // window: an unparseable value (bad percent-encoding included) falls back to 1h without an error (spec).
    config: { access: READERS, lenientQuery: ['window'] },
    serializerCompiler: nativeJson,
    schema: {
      tags: ['runtime'],
      summary: "Raw observations of one workload's pods in the window, grouped by signal family",
      params: Type.Object({ key: Type.String({ description: '<namespace>/<kind>/<name>, percent-encoded as one path segment' }) }),
      querystring: WindowQuery,
      response: responses({ 200: ObservationsT }, ...AUTH_ERRORS),
    },
    handler: async (request) => guard.observations((request.params as { key: string }).key, windowOf(request.query)),
  });

  // A key sent with its slashes unencoded spans several segments: say how to send it instead of "no route".
  app.get('/api/v1/runtime/workloads/*', {
    config: { access: READERS },
    schema: { hide: true },
    handler: async () => {
      throw new AppError('invalid_request', 'key: percent-encode the workload key <namespace>/<kind>/<name> as one path segment (eng%2FDeployment%2Fagent)', {
        field: 'key',
      });
    },
  });
}
