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
 * Governance time is microseconds when everything is in memory and milliseconds when the store is read (a developer's
 * grants, a budget reservation): buckets from 25 µs to 2.5 s.
 */
export const GOVERNANCE_BUCKETS = [0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** An upstream answer is a few milliseconds (an MCP tool, a model listing) to minutes (a long generation, a tunnel). */
export const UPSTREAM_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** A held call waits for a person: seconds to the longest approval window (the MCP default is 30 minutes). */
export const HELD_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200];

type Labels = Record<string, string>;

/** The i-th of a series' label values, as `find` takes them. */
function labelAt(i: number, a: string, b: string, c: string | undefined): string {
  return (i === 0 ? a : i === 1 ? b : c) ?? '';
}

/**
 * A counter or histogram for the governed-call path. prom-client's own `inc` and `observe` check and hash the label
 * object on every call, children included (1.5 to 2.5 µs each, several per governed call); these find a series by
 * its label values and then add to plain numbers. Registered on the registry as custom metrics: `get()` answers what
 * prom-client's own metrics answer, so the exposition format is prom-client's.
 */
class FastMetric<S extends { labels: Labels }> {
  readonly aggregator = 'sum';
  /** Every series, in the order made (what `get()` lists). */
  protected readonly series: S[] = [];
  /**
   * The series by label value, one level a label: no key string and no array made per call, where joining two or
   * three labels into a key made a chain of strings on every call (bench/gateway-overhead/allocations.ts).
   */
  private tree = new Map<string, unknown>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'histogram',
    private readonly labelNames: readonly string[],
    private readonly make: (labels: Labels) => S,
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** The series of these label values (in labelNames order; as many as there are label names), made on first use. */
  protected find(a: string, b: string, c?: string): S {
    const last = this.labelNames.length - 1;
    let level = this.tree;
    for (let i = 0; i < last; i++) {
      const value = labelAt(i, a, b, c);
      let next = level.get(value) as Map<string, unknown> | undefined;
      if (next === undefined) level.set(value, (next = new Map()));
      level = next;
    }
    const value = labelAt(last, a, b, c);
    let s = level.get(value) as S | undefined;
    if (s === undefined) level.set(value, (s = this.made([a, b, c])));
    return s;
  }

  private made(values: readonly (string | undefined)[]): S {
    const labels: Labels = {};
    this.labelNames.forEach((n, i) => (labels[n] = values[i] ?? ''));
    const s = this.make(labels);
    this.series.push(s);
    return s;
  }

  reset(): void {
    this.series.length = 0;
    this.tree = new Map();
  }
}

class FastCounter extends FastMetric<{ labels: Labels; value: number }> {
  constructor(name: string, help: string, labelNames: readonly string[], registry: Registry) {
    super(name, help, 'counter', labelNames, (labels) => ({ labels, value: 0 }), registry);
  }

  inc(n: number, a: string, b: string, c?: string): void {
    this.find(a, b, c).value += n;
  }

  get() {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.series.map((s) => ({ labels: s.labels, value: s.value })) };
  }
}

interface HistogramSeries {
  labels: Labels;
  /** Observations per bucket, not cumulative; the last is +Inf's. */
  counts: number[];
  sum: number;
  count: number;
}

class FastHistogram extends FastMetric<HistogramSeries> {
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    super(name, help, 'histogram', labelNames, (labels) => ({ labels, counts: new Array<number>(bounds.length + 1).fill(0), sum: 0, count: 0 }), registry);
  }

  observe(v: number, a: string, b: string): void {
    const s = this.find(a, b);
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && v > bounds[i]!) i++;
    s.counts[i]! += 1;
    s.sum += v;
    s.count += 1;
  }

  get() {
    const values: { labels: Labels; value: number; metricName: string }[] = [];
    for (const s of this.series) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += s.counts[i]!;
        values.push({ labels: { le: String(le), ...s.labels }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { le: '+Inf', ...s.labels }, value: s.count, metricName: `${this.name}_bucket` });
      values.push({ labels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
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
  const calls = new FastCounter('reins_gateway_requests_total', 'Governed gateway calls by provider, outcome (ok, refused, error) and refusal reason', ['provider', 'outcome', 'reason'], registry);
  new Gauge({
    name: 'reins_audit_queue_events',
    help: 'Gateway audit events waiting to be written (new calls wait when the queue is full)',
    registers: [registry],
    collect() {
      this.set(auditPending());
    },
  });
  const governance = new FastHistogram(
    'reins_gateway_governance_duration_seconds',
    "Reins' own time deciding a governed call (caller, grants, policies, model access, hold, budget), a hold's wait excluded, by plane and provider",
    ['plane', 'provider'],
    GOVERNANCE_BUCKETS,
    registry,
  );
  const upstream = new FastHistogram(
    'reins_gateway_upstream_duration_seconds',
    'Time from the decision to the end of an allowed call (the upstream answer, streamed to the client), by plane and provider',
    ['plane', 'provider'],
    UPSTREAM_BUCKETS,
    registry,
  );
  const held = new FastHistogram(
    'reins_gateway_held_duration_seconds',
    'Time a call was parked for a person, by plane and how the hold ended (released, stopped, timed_out)',
    ['plane', 'outcome'],
    HELD_BUCKETS,
    registry,
  );
  const parked = new Gauge({
    name: 'reins_gateway_held_calls',
    help: 'Calls parked for a person on this replica now, by plane',
    labelNames: ['plane'] as const,
    registers: [registry],
  });
  // Both planes that park calls show 0 rather than nothing before their first hold.
  for (const plane of ['llm', 'mcp']) parked.set({ plane }, 0);
  const tokens = new FastCounter(
    'reins_gateway_tokens_total',
    'LLM tokens the providers reported, by provider, model (a bounded set; "other" past it) and type (input, output, cache_read, cache_write)',
    ['provider', 'model', 'type'],
    registry,
  );
  const cost = new FastCounter('reins_gateway_cost_usd_total', 'Cost of LLM calls in US dollars at Reins prices, by provider and model (a bounded set; "other" past it)', ['provider', 'model'], registry);

  return {
    completed: (provider, outcome, refusal) => {
      const reason = refusal ?? '';
      calls.inc(1, provider, outcome, reason);
    },
    governance: (plane, provider, seconds) => governance.observe(seconds, plane, provider),
    upstream: (plane, provider, seconds) => upstream.observe(seconds, plane, provider),
    held: (plane, outcome, seconds) => held.observe(seconds, plane, outcome),
    // Holds are rare next to calls: prom-client's gauge is cheap enough here.
    parked: (plane, delta) => parked.inc({ plane }, delta),
    tokens: (provider, model, type, count) => {
      if (count > 0) tokens.inc(count, provider, model, type);
    },
    cost: (provider, model, usd) => {
      if (usd > 0) cost.inc(usd, provider, model);
    },
  };
}
