/** Held-call and Human Review settings routes (docs/api.md "Held calls", "Settings"). */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ADMIN, ANY_DEVELOPER, READERS } from '../shared/access.js';
import { actorOf } from '../identity/auth.js';
import { AUTH_ERRORS, IdParams, responses } from '../shared/schemas.js';
import type { Db } from '../store/db.js';
import { getHeldCall, listHeldCalls, type HeldCallRegistry } from './registry.js';
import { writeHumanReview, type HumanReviewCache } from './settings.js';
import { HeldCallQuery, HeldCallSchema, HumanReviewSchema, ReleaseBody, StopBody } from './contract.js';

export function registerHeldCallRoutes(fastify: FastifyInstance, deps: { db: Db; registry: HeldCallRegistry; review: HumanReviewCache }): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, registry, review } = deps;
  app.get('/api/v1/held-calls', {
    config: { access: READERS },
    schema: {
      tags: ['held calls'],
      summary: 'Held calls, newest first',
      querystring: HeldCallQuery,
      response: responses({ 200: Type.Object({ items: Type.Array(HeldCallSchema) }) }, ...AUTH_ERRORS),
    },
    handler: async (request) => ({ items: await listHeldCalls(db, request.query.state) }),
  });
  app.get('/api/v1/held-calls/:id', {
    config: { access: READERS },
    schema: { tags: ['held calls'], summary: 'One held call', params: IdParams, response: responses({ 200: HeldCallSchema }, ...AUTH_ERRORS, 404) },
    handler: async (request) => getHeldCall(db, request.params.id),
  });
  app.post('/api/v1/held-calls/:id/approve', {
    // The decision core enforces the admin role, so that refused attempts are audited.
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['held calls'],
      summary: 'Release a held call (admin, not the requester): it completes as if allowed, silently',
      params: IdParams,
      body: Type.Optional(ReleaseBody),
      response: responses({ 200: HeldCallSchema }, ...AUTH_ERRORS, 404, 409),
    },
    handler: async (request) => registry.decideOnEntry(actorOf(request), request.params.id, { kind: 'approve' }),
  });
  app.post('/api/v1/held-calls/:id/deny', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['held calls'],
      summary: "Stop a held call (admin); the developer's tool shows the policy, its message and the note verbatim",
      params: IdParams,
      body: StopBody,
      response: responses({ 200: HeldCallSchema }, ...AUTH_ERRORS, 404, 409),
    },
    handler: async (request) => registry.decideOnEntry(actorOf(request), request.params.id, { kind: 'deny', note: request.body.note }),
  });
  app.get('/api/v1/settings/human-review', {
    config: { access: READERS },
    schema: { tags: ['held calls'], summary: 'Approval windows and the timeout outcome', response: responses({ 200: HumanReviewSchema }, ...AUTH_ERRORS) },
    handler: async () => review.value,
  });
  app.put('/api/v1/settings/human-review', {
    config: { access: ADMIN },
    schema: { tags: ['held calls'], summary: 'Set the approval windows and the timeout outcome', body: HumanReviewSchema, response: responses({ 200: HumanReviewSchema }, ...AUTH_ERRORS) },
    handler: async (request) => {
      const saved = await writeHumanReview(db, actorOf(request), request.body);
      await review.reload();
      return saved;
    },
  });
}
