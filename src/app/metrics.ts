import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** A registry per server instance, so two instances in one process (tests) do not collide. */
export function createMetrics(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'reins_' });
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

export interface GatewayMetrics {
  completed(provider: string, outcome: string, refusal: string | null): void;
}

/** Governed calls by provider, outcome and refusal reason, and the audit writer's backlog. */
export function registerGatewayMetrics(registry: Registry, auditPending: () => number): GatewayMetrics {
  const calls = new Counter({
    name: 'reins_gateway_requests_total',
    help: 'Governed gateway calls by provider, outcome (ok, refused, error) and refusal reason',
    labelNames: ['provider', 'outcome', 'reason'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'reins_audit_queue_events',
    help: 'Gateway audit events waiting to be written (new calls wait when the queue is full)',
    registers: [registry],
    collect() {
      this.set(auditPending());
    },
  });
  // One child per label combination, found by a string key: prom-client's inc(labels) hashes the label object
  // on every call, a few µs on each governed call. The combinations are few (providers x outcomes x reasons).
  const children = new Map<string, { inc(): void }>();
  return {
    completed: (provider, outcome, refusal) => {
      const reason = refusal ?? '';
      const key = `${provider}\u0000${outcome}\u0000${reason}`;
      let child = children.get(key);
      if (!child) {
        child = calls.labels({ provider, outcome, reason });
        children.set(key, child);
      }
      child.inc();
    },
  };
}
