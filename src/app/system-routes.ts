/** Health, readiness, Prometheus metrics and the OpenAPI description. */
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { Type } from 'typebox';
import { pendingMigrations } from '../store/migrate.js';
import type { Db } from '../store/db.js';

export function registerSystemRoutes(app: FastifyInstance, deps: { db: Db; registry: Registry; lifecycle: { readonly draining: boolean } }): void {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    // Shutting down (SIGTERM): not ready, so the load balancer sends no new calls while those in flight finish.
    if (deps.lifecycle.draining) return reply.status(503).send({ status: 'not ready', reason: 'shutting down' });
    try {
      await deps.db.ping();
      const pending = await pendingMigrations(deps.db);
      if (pending > 0) return reply.status(503).send({ status: 'not ready', reason: `${pending} migrations not applied` });
      return { status: 'ready', store: deps.db.kind };
    } catch (err) {
      return reply.status(503).send({ status: 'not ready', reason: `store unreachable: ${(err as Error).message}` });
    }
  });

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.header('content-type', deps.registry.contentType);
    return deps.registry.metrics();
  });

  app.get('/api/v1/openapi.json', {
    config: { access: 'public' },
    schema: { hide: true, response: { 200: Type.Unknown() } },
    handler: async () => app.swagger(),
  });
}
