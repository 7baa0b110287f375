/**
 * The runtime guard's HTTP surface: the two sensor ingest routes (sensor tokens only) and the three read-only
 * endpoints of the spec (admins and viewers; a developer token is refused). A disabled runtime guard is not an
 * error: the read-only endpoints answer 200 with `enabled: false` and the reason.
 */
import { TypeBoxValidatorCompiler, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { TSchema } from 'typebox';
import { READERS } from '../shared/access.js';
import { describeValidation } from '../shared/error-handler.js';
import { AppError } from '../shared/errors.js';
import { jsonBytesOf } from '../shared/request-text.js';
import { AUTH_ERRORS, responses } from '../shared/schemas.js';
import {
  IngestAnswer,
  MAX_OBSERVATIONS_PER_REPORT,
  ObservationsSchema,
  ReconciliationSchema,
  RuntimeStatusSchema,
  SensorReport,
  SensorStatus,
  SensorStatusAnswer,
  WindowQuery,
  WorkloadKeyParams,
  type Observations,
  type Reconciliation,
  type RuntimeStatus,
} from './contract.js';
import { answerParts, AnswerStream } from './answer-json.js';
import { checkReportSize, MAX_REPORT_BODY_BYTES } from './ingest.js';
import type { ObservationsPayload, ReconciliationPayload, RuntimeGuard, StatusPayload } from './runtime-guard.js';

// The payloads RuntimeGuard builds are the contract's types, both ways: the nativeJson serializer below does not
// check them at run time, so a drift must fail the typecheck.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Agree<T extends true> = T;
export type PayloadsAgreeWithContract = [
  Agree<Same<StatusPayload, RuntimeStatus>>,
  Agree<Same<ReconciliationPayload, Reconciliation>>,
  Agree<Same<ObservationsPayload, Observations>>,
];

/** The `window` parameter as the window rules read it: given twice it is unparseable, not a 400 (spec Errors 2). */
function windowOf(query: WindowQuery): string | undefined {
  const raw = query.window;
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

export function registerRuntimeGuardRoutes(fastify: FastifyInstance, deps: { guard: RuntimeGuard; registry: Registry }): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
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
      const stored = await guard.ingestReport(request.body, jsonBytesOf(request.body));
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
      response: responses({ 200: SensorStatusAnswer }, ...AUTH_ERRORS, 409, 415),
    },
    handler: async (request) => {
      await guard.ingestStatus(request.body);
      return { status: 'ok' as const };
    },
  });

  app.get('/api/v1/runtime/status', {
    config: { access: READERS },
    schema: {
      tags: ['runtime'],
      summary: 'Capability snapshot: CRD, BPF-LSM across the fleet and per node, RBAC gaps, ingest lag',
      response: responses({ 200: RuntimeStatusSchema }, ...AUTH_ERRORS),
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
      response: responses({ 200: ReconciliationSchema }, ...AUTH_ERRORS),
    },
    handler: async (request, reply) => {
      const timings: Record<string, number> = {};
      const payload = await guard.reconciliation(windowOf(request.query), timings);
      // Where the time went (reading new rows and the audit log, summing the window, the engine): for operators.
      const serverTiming = Object.entries(timings).map(([name, ms]) => `${name};dur=${ms.toFixed(1)}`);
      if (serverTiming.length > 0) reply.header('server-timing', serverTiming.join(', '));
      // Streamed in pieces, each reused row's bytes written once (answer-json.ts); the length is known up front.
      const answer = new AnswerStream(answerParts(payload));
      reply.header('content-type', 'application/json; charset=utf-8');
      reply.header('content-length', answer.byteLength);
      return reply.send(answer);
    },
  });

  app.get('/api/v1/runtime/workloads/:key/observations', {
    // window: an unparseable value (bad percent-encoding included) falls back to 1h without an error (spec).
    config: { access: READERS, lenientQuery: ['window'] },
    serializerCompiler: nativeJson,
    schema: {
      tags: ['runtime'],
      summary: "Raw observations of one workload's pods in the window, grouped by signal family",
      params: WorkloadKeyParams,
      querystring: WindowQuery,
      response: responses({ 200: ObservationsSchema }, ...AUTH_ERRORS),
    },
    handler: async (request) => guard.observations(request.params.key, windowOf(request.query)),
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
