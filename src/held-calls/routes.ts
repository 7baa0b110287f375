/** Held-call and Human Review settings routes (API.md "Held calls", "Settings"). */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ADMIN, ANY_DEVELOPER, READERS } from '../shared/access.js';
import { actorOf } from '../identity/auth.js';
import { AUTH_ERRORS, Nullable, responses } from '../shared/schemas.js';
import type { Db } from '../store/db.js';
import { getHeldCall, listHeldCalls, type HeldCallRegistry } from './registry.js';
import { writeHumanReview, type HumanReviewCache, type HumanReviewSettings } from './settings.js';

const StateT = Type.Union([Type.Literal('pending'), Type.Literal('released'), Type.Literal('stopped'), Type.Literal('timed_out')]);
const HeldCallT = Type.Object({
  id: Type.String(),
  kind: Type.Union([Type.Literal('llm'), Type.Literal('mcp')]),
  state: StateT,
  timeoutOutcome: Nullable(Type.Union([Type.Literal('deny'), Type.Literal('allow')])),
  requester: Nullable(Type.String({ description: 'The developer of a personal access token; null for an agent key' })),
  agentId: Type.String(),
  sessionId: Nullable(Type.String()),
  tool: Nullable(Type.String()),
  model: Nullable(Type.String()),
  policyName: Type.String(),
  policyMessage: Type.String(),
  promptExcerpt: Nullable(Type.String({ description: 'LLM requests: the start of the prompt, credentials redacted' })),
  attachedCalls: Type.Integer({ description: 'Identical calls waiting on this entry; one decision applies to all' }),
  createdAt: Type.String({ format: 'date-time' }),
  expiresAt: Type.String({ format: 'date-time' }),
  decidedBy: Nullable(Type.String()),
  note: Nullable(Type.String()),
});
const ReviewT = Type.Object(
  {
    llmApprovalWindowSeconds: Type.Integer({ minimum: 30, maximum: 86_400 }),
    mcpApprovalWindowSeconds: Type.Integer({ minimum: 30, maximum: 86_400 }),
    timeoutOutcome: Type.Union([Type.Literal('deny'), Type.Literal('allow')]),
  },
  { additionalProperties: false },
);
const IdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

export function registerHeldCallRoutes(app: FastifyInstance, deps: { db: Db; registry: HeldCallRegistry; review: HumanReviewCache }): void {
  const { db, registry, review } = deps;
  app.get('/api/v1/held-calls', {
    config: { access: READERS },
    schema: {
      tags: ['held calls'],
      summary: 'Held calls, newest first',
      querystring: Type.Object({ state: Type.Optional(StateT) }, { additionalProperties: false }),
      response: responses({ 200: Type.Object({ items: Type.Array(HeldCallT) }) }, ...AUTH_ERRORS),
    },
    handler: async (request) => ({ items: await listHeldCalls(db, (request.query as { state?: 'pending' }).state) }),
  });
  app.get('/api/v1/held-calls/:id', {
    config: { access: READERS },
    schema: { tags: ['held calls'], summary: 'One held call', params: IdParams, response: responses({ 200: HeldCallT }, ...AUTH_ERRORS, 404) },
    handler: async (request) => getHeldCall(db, (request.params as { id: string }).id),
  });
  app.post('/api/v1/held-calls/:id/approve', {
    // The decision core enforces the admin role, so that refused attempts are audited.
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['held calls'],
      summary: 'Release a held call (admin, not the requester): it completes as if allowed, silently',
      params: IdParams,
      body: Type.Optional(Type.Object({}, { additionalProperties: false })),
      response: responses({ 200: HeldCallT }, ...AUTH_ERRORS, 404, 409),
    },
    handler: async (request) => registry.decide(actorOf(request), (request.params as { id: string }).id, { kind: 'approve' }),
  });
  app.post('/api/v1/held-calls/:id/deny', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['held calls'],
      summary: "Stop a held call (admin); the developer's tool shows the policy, its message and the note verbatim",
      params: IdParams,
      body: Type.Object({ note: Type.String({ maxLength: 4000 }) }, { additionalProperties: false }),
      response: responses({ 200: HeldCallT }, ...AUTH_ERRORS, 404, 409),
    },
    handler: async (request) => registry.decide(actorOf(request), (request.params as { id: string }).id, { kind: 'deny', note: (request.body as { note: string }).note }),
  });
  app.get('/api/v1/settings/human-review', {
    config: { access: READERS },
    schema: { tags: ['held calls'], summary: 'Approval windows and the timeout outcome', response: responses({ 200: ReviewT }, ...AUTH_ERRORS) },
    handler: async () => review.value,
  });
  app.put('/api/v1/settings/human-review', {
    config: { access: ADMIN },
    schema: { tags: ['held calls'], summary: 'Set the approval windows and the timeout outcome', body: ReviewT, response: responses({ 200: ReviewT }, ...AUTH_ERRORS) },
    handler: async (request) => {
      const saved = await writeHumanReview(db, actorOf(request), request.body as HumanReviewSettings);
      await review.reload();
      return saved;
    },
  });
}
