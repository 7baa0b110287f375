/**
 * Rate limits (docs/api.md, "Rate limits"): admin-managed, read by the gateway on every call from its in-memory copy
 * (gateway-rules.ts). Each change re-reads this replica's copy before it answers; the NOTIFY in the change's
 * transaction makes the others re-read theirs.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { DEFAULT_KIND_NAMES } from '../config/config.js';
import { actorOf } from '../identity/auth.js';
import { ADMIN, READERS } from '../shared/access.js';
import { invalid } from '../shared/errors.js';
import { AUTH_ERRORS, IdParams, responses } from '../shared/schemas.js';
import type { Db } from '../store/db.js';
import { RateLimitBody, RateLimitSchema } from './contract.js';
import type { GatewayRules } from './gateway-rules.js';
import { createRateLimit, deleteRateLimit, getRateLimit, listRateLimits, replaceRateLimit } from './rate-limit-store.js';
import { validateRateLimit, type RateLimitRuleInput } from './rate-limits.js';

/**
 * The schema checked types; the rule's own validation checks values (scope syntax, glob, upstream name), and the
 * upstream must be one this replica serves: a misspelt name would be a rule that never binds.
 */
function checked(body: unknown, served: ReadonlySet<string>): RateLimitRuleInput {
  const result = validateRateLimit(body);
  if (!result.ok) throw invalid(`body.${result.field}: ${result.message}`);
  const { upstream } = result.value;
  if (upstream !== '*' && !served.has(upstream)) {
    throw invalid(`body.upstream: no upstream is named ${upstream}; use "*" or one of ${[...served].join(', ')}`);
  }
  return result.value;
}

const DESCRIPTION =
  'Requests and tokens per minute for each identity the scope covers (its own counter), for the models the pattern ' +
  'matches on one upstream or every one (*). The covering rules with the most specific scope (identity, then namespace, ' +
  'then *) bind, and at that scope a rule naming the upstream over one for every upstream. A call over a limit is ' +
  "answered 429 with retry-after in the provider's error shape; tokens count when the answer reports them.";

/** `upstreams`: the configured names (`providers`); openai, anthropic and bedrock are always served. */
export function registerRateLimitRoutes(fastify: FastifyInstance, deps: { db: Db; rules: GatewayRules; upstreams: readonly string[] }): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, rules } = deps;
  const served: ReadonlySet<string> = new Set([...DEFAULT_KIND_NAMES, ...deps.upstreams]);

  app.get('/api/v1/rate-limits', {
    config: { access: READERS },
    schema: { tags: ['rate limits'], summary: 'List rate limits', response: responses({ 200: Type.Object({ items: Type.Array(RateLimitSchema) }) }, ...AUTH_ERRORS) },
    handler: async () => ({ items: await listRateLimits(db) }),
  });

  app.post('/api/v1/rate-limits', {
    config: { access: ADMIN },
    schema: { tags: ['rate limits'], summary: 'Create a rate limit', description: DESCRIPTION, body: RateLimitBody, response: responses({ 201: RateLimitSchema }, ...AUTH_ERRORS) },
    handler: async (request, reply) => {
      const rule = await createRateLimit(db, actorOf(request), checked(request.body, served));
      await rules.reload();
      return reply.status(201).send(rule);
    },
  });

  app.get('/api/v1/rate-limits/:id', {
    config: { access: READERS },
    schema: { tags: ['rate limits'], summary: 'One rate limit', params: IdParams, response: responses({ 200: RateLimitSchema }, ...AUTH_ERRORS, 404) },
    handler: async (request) => getRateLimit(db, request.params.id),
  });

  app.put('/api/v1/rate-limits/:id', {
    config: { access: ADMIN },
    schema: {
      tags: ['rate limits'],
      summary: 'Replace a rate limit (a changed scope, pattern or upstream restarts its counters)',
      params: IdParams,
      body: RateLimitBody,
      response: responses({ 200: RateLimitSchema }, ...AUTH_ERRORS, 404),
    },
    handler: async (request) => {
      const rule = await replaceRateLimit(db, actorOf(request), request.params.id, checked(request.body, served));
      await rules.reload();
      return rule;
    },
  });

  app.delete('/api/v1/rate-limits/:id', {
    config: { access: ADMIN },
    schema: {
      tags: ['rate limits'],
      summary: 'Delete a rate limit',
      params: IdParams,
      response: responses({ 200: Type.Object({ status: Type.Literal('ok'), id: Type.String() }) }, ...AUTH_ERRORS, 404),
    },
    handler: async (request) => {
      const { id } = request.params;
      await deleteRateLimit(db, actorOf(request), id);
      await rules.reload();
      return { status: 'ok' as const, id };
    },
  });
}
