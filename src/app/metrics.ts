import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The totals prom-client's default metrics publish as gauges named `…_total`: Prometheus reserves that suffix for
 * counters (`promtool check metrics` refuses them), and each is the sum of its per-type gauge
 * (`sum(reins_nodejs_active_handles)`), so they are left out.
 */
const GAUGES_NAMED_AS_COUNTERS = ['reins_nodejs_active_handles_total', 'reins_nodejs_active_requests_total', 'reins_nodejs_active_resources_total'];

/** A registry per server instance, so two instances in one process (tests) do not collide. */
export function createMetrics(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'reins_' });
  for (const name of GAUGES_NAMED_AS_COUNTERS) registry.removeSingleMetric(name);
  return registry;
}

export function registerHttpMetrics(app: FastifyInstance, registry: Registry): void {
  const requests = new Counter({
    name: 'reins_http_requests_total',
    help: 'HTTP requests answered, by route pattern, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'reins_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by route pattern',
    labelNames: ['route', 'method'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  app.addHook('onResponse', async (request, reply) => {
    // The route pattern, not the URL, keeps label cardinality bounded.
    const route = request.routeOptions.url ?? 'unmatched';
    requests.inc({ route, method: request.method, status: String(reply.statusCode) });
    duration.observe({ route, method: request.method }, reply.elapsedTime / 1000);
  });
}

/** The counters and histograms a governed call ends in (governance/call-telemetry.ts observes them). */
export interface GatewayMetrics {
  completed(provider: string, outcome: string, refusal: string | null): void;
  /** Reins' own time deciding a call (the hold's wait left out), by plane and provider. */
  governance(plane: string, provider: string, seconds: number): void;
  /** From the decision to the call's end: the upstream's answer, streamed to the client. */
  upstream(plane: string, provider: string, seconds: number): void;
  /** How long a call was parked for a person, and how the hold ended. */
  held(plane: string, outcome: string, seconds: number): void;
  /** A call parked (+1) or back (-1) on this replica. */
  parked(plane: string, delta: number): void;
  tokens(provider: string, model: string, type: TokenType, count: number): void;
  cost(provider: string, model: string, usd: number): void;
}

export type TokenType = 'input' | 'output' | 'cache_read' | 'cache_write';

/**
 * Governance time is microseconds when everything is cached and milliseconds when the store is read (a credential's
 * first use, a budget reservation): buckets from 25 µs to 2.5 s.
 */
export const GOVERNANCE_BUCKETS = [0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** An upstream answer is a few milliseconds (an MCP tool, a model listing) to minutes (a long generation, a tunnel). */
export const UPSTREAM_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** A held call waits for a person: seconds to the longest approval window (the MCP default is 30 minutes). */
export const HELD_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200];

interface Child {
  inc(n?: number): void;
}
interface ObserveChild {
  observe(v: number): void;
}

/**
 * One child per label combination, found by a string key: prom-client's inc(labels) and observe(labels) hash the
 * label object on every call, a few µs on each governed call. The combinations are bounded: providers x outcomes x
 * reasons, planes x providers, and models from a bounded set (call-telemetry.ts).
 */
function childCache<T>(make: (labels: string[]) => T): (...labels: string[]) => T {
  const children = new Map<string, T>();
  return (...labels) => {
    const key = labels.join('\u0000');
    let child = children.get(key);
    if (child === undefined) {
      child = make(labels);
      children.set(key, child);
    }
    return child;
  };
}

/** The OTLP audit exporter's backlog: events written and not yet accepted by the Collector (docs/audit.md). */
export function registerAuditExportMetrics(registry: Registry, lag: () => number): void {
  new Gauge({
    name: 'reins_audit_export_lag_events',
    help: 'Audit events written but not yet exported over OTLP (ids after the outbox cursor)',
    registers: [registry],
    collect() {
      this.set(lag());
    },
  });
}

/** Governed calls by provider, outcome and refusal reason, latency, tokens, cost, held calls, and the audit writer's backlog. */
export function registerGatewayMetrics(registry: Registry, auditPending: () => number): GatewayMetrics {
  const registers = [registry];
  const calls = new Counter({
    name: 'reins_gateway_requests_total',
    help: 'Governed gateway calls by provider, outcome (ok, refused, error) and refusal reason',
    labelNames: ['provider', 'outcome', 'reason'] as const,
    registers,
  });
  new Gauge({
    name: 'reins_audit_queue_events',
    help: 'Gateway audit events waiting to be written (new calls wait when the queue is full)',
    registers,
    collect() {
      this.set(auditPending());
    },
  });
  const governance = new Histogram({
    name: 'reins_gateway_governance_duration_seconds',
    help: "Reins' own time deciding a governed call (caller, grants, policies, model access, hold, budget), a hold's wait excluded, by plane and provider",
    labelNames: ['plane', 'provider'] as const,
    buckets: GOVERNANCE_BUCKETS,
    registers,
  });
  const upstream = new Histogram({
    name: 'reins_gateway_upstream_duration_seconds',
    help: 'Time from the decision to the end of an allowed call (the upstream answer, streamed to the client), by plane and provider',
    labelNames: ['plane', 'provider'] as const,
    buckets: UPSTREAM_BUCKETS,
    registers,
  });
  const held = new Histogram({
    name: 'reins_gateway_held_duration_seconds',
    help: 'Time a call was parked for a person, by plane and how the hold ended (released, stopped, timed_out)',
    labelNames: ['plane', 'outcome'] as const,
    buckets: HELD_BUCKETS,
    registers,
  });
  const parked = new Gauge({
    name: 'reins_gateway_held_calls',
    help: 'Calls parked for a person on this replica now, by plane',
    labelNames: ['plane'] as const,
    registers,
  });
  // Both planes that park calls show 0 rather than nothing before their first hold.
  for (const plane of ['llm', 'mcp']) parked.set({ plane }, 0);
  const tokens = new Counter({
    name: 'reins_gateway_tokens_total',
    help: 'LLM tokens the providers reported, by provider, model (a bounded set; "other" past it) and type (input, output, cache_read, cache_write)',
    labelNames: ['provider', 'model', 'type'] as const,
    registers,
  });
  const cost = new Counter({
    name: 'reins_gateway_cost_usd_total',
    help: 'Cost of LLM calls in US dollars at Reins prices, by provider and model (a bounded set; "other" past it)',
    labelNames: ['provider', 'model'] as const,
    registers,
  });

  const callChild = childCache<Child>(([provider, outcome, reason]) => calls.labels({ provider: provider!, outcome: outcome!, reason: reason! }));
  const governanceChild = childCache<ObserveChild>(([plane, provider]) => governance.labels({ plane: plane!, provider: provider! }));
  const upstreamChild = childCache<ObserveChild>(([plane, provider]) => upstream.labels({ plane: plane!, provider: provider! }));
  const heldChild = childCache<ObserveChild>(([plane, outcome]) => held.labels({ plane: plane!, outcome: outcome! }));
  const parkedChild = childCache<Child & { dec(n?: number): void }>(([plane]) => parked.labels({ plane: plane! }));
  const tokenChild = childCache<Child>(([provider, model, type]) => tokens.labels({ provider: provider!, model: model!, type: type! }));
  const costChild = childCache<Child>(([provider, model]) => cost.labels({ provider: provider!, model: model! }));
  return {
    completed: (provider, outcome, refusal) => callChild(provider, outcome, refusal ?? '').inc(),
    governance: (plane, provider, seconds) => governanceChild(plane, provider).observe(seconds),
    upstream: (plane, provider, seconds) => upstreamChild(plane, provider).observe(seconds),
    held: (plane, outcome, seconds) => heldChild(plane, outcome).observe(seconds),
    parked: (plane, delta) => (delta >= 0 ? parkedChild(plane).inc(delta) : parkedChild(plane).dec(-delta)),
    tokens: (provider, model, type, count) => {
      if (count > 0) tokenChild(provider, model, type).inc(count);
    },
    cost: (provider, model, usd) => {
      if (usd > 0) costChild(provider, model).inc(usd);
    },
  };
}
