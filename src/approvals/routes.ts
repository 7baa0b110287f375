/** Approval routes (API.md "Approvals"): requests, decisions, votes, grants, exception rules, notifications. */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ADMIN, ANY_DEVELOPER, READERS } from '../shared/access.js';
import { actorOf, developerOf } from '../identity/auth.js';
import { invalid, notFound } from '../shared/errors.js';
import { AUTH_ERRORS, Nullable, responses } from '../shared/schemas.js';
import type { Db } from '../store/db.js';
import { decide, getGrant, getRequest, listGrants, listRequests, revokeGrant, submitRequest, type ApproveOptions, type SubmitInput } from './access-requests.js';
import { createExceptionRule, deleteExceptionRule, getExceptionRule, listExceptionRules, replaceExceptionRule, type ExceptionRuleInput } from './exception-rules.js';

const AccessRequestTypeT = Type.Union([Type.Literal('exception'), Type.Literal('model_access'), Type.Literal('budget_topup')]);
const RequestStateT = Type.Union([Type.Literal('pending'), Type.Literal('under_review'), Type.Literal('approved'), Type.Literal('denied')]);
const GrantStateT = Type.Union([Type.Literal('active'), Type.Literal('revoked'), Type.Literal('expired')]);
const IdentityList = Type.Array(Type.String({ maxLength: 317 }), { maxItems: 20 });

const AccessRequestT = Type.Object({
  id: Type.String(),
  type: AccessRequestTypeT,
  state: RequestStateT,
  requester: Type.String(),
  justification: Type.String({ description: 'Verbatim, as the developer wrote it; display as text, never as markup' }),
  targetPolicy: Nullable(Type.String()),
  requestedModel: Nullable(Type.String()),
  requestedAmountUsd: Nullable(Type.Number()),
  requiredApprovers: Type.Array(Type.String()),
  durationSeconds: Nullable(Type.Integer()),
  projectScope: Type.String(),
  decisions: Type.Array(Type.Object({ approver: Type.String(), decision: Type.Union([Type.Literal('approve'), Type.Literal('deny')]), reason: Nullable(Type.String()), at: Type.String() })),
  grantId: Nullable(Type.String()),
  denialReason: Nullable(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
});
const GrantT = Type.Object({
  id: Type.String(),
  type: AccessRequestTypeT,
  state: GrantStateT,
  developerId: Type.String(),
  policyName: Nullable(Type.String()),
  model: Nullable(Type.String()),
  amountUsd: Nullable(Type.Number()),
  projectScope: Type.String(),
  approvers: Type.Array(Type.String()),
  requestId: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  expiresAt: Type.String({ format: 'date-time' }),
  revokedAt: Nullable(Type.String({ format: 'date-time' })),
  revokedBy: Nullable(Type.String()),
});
const DecisionT = Type.Object({ request: AccessRequestT, grant: Nullable(GrantT), warnings: Type.Array(Type.String()) });
const ExceptionRuleBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    policyName: Type.String({ minLength: 1, maxLength: 63 }),
    maxDurationSeconds: Type.Integer({ minimum: 60, maximum: 90 * 86_400 }),
    requiredApprovers: Type.Optional(IdentityList),
    projectScope: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
);
const ExceptionRuleT = Type.Object({
  id: Type.String(),
  name: Type.String(),
  policyName: Type.String(),
  maxDurationSeconds: Type.Integer(),
  requiredApprovers: Type.Array(Type.String()),
  projectScope: Type.String(),
});
const NotificationT = Type.Object({
  id: Type.String(),
  kind: Type.String(),
  message: Type.String(),
  requestId: Nullable(Type.String()),
  grantId: Nullable(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
  readAt: Nullable(Type.String({ format: 'date-time' })),
});
const IdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

export function registerApprovalRoutes(app: FastifyInstance, db: Db): void {
  app.post('/api/v1/access-requests', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: 'Ask for a policy exception, model access or a budget top-up (the requester is the caller)',
      body: Type.Object(
        {
          type: AccessRequestTypeT,
          justification: Type.String({ minLength: 1, maxLength: 4000 }),
          targetPolicy: Type.Optional(Type.String({ maxLength: 63 })),
          requestedModel: Type.Optional(Type.String({ maxLength: 200 })),
          requestedAmountUsd: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000 })),
          requiredApprovers: Type.Optional(IdentityList),
          durationSeconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 90 * 86_400 })),
          projectScope: Type.Optional(Type.String({ maxLength: 200 })),
        },
        { additionalProperties: false },
      ),
      response: responses({ 201: AccessRequestT }, ...AUTH_ERRORS),
    },
    handler: async (request, reply) => reply.status(201).send(await submitRequest(db, developerOf(request), request.body as SubmitInput)),
  });

  app.get('/api/v1/access-requests', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: 'Requests, newest first (admins and viewers: all; developers: their own and those naming them as a required approver)',
      querystring: Type.Object({ state: Type.Optional(RequestStateT), type: Type.Optional(AccessRequestTypeT), requester: Type.Optional(Type.String({ maxLength: 317 })) }, { additionalProperties: false }),
      response: responses({ 200: Type.Object({ items: Type.Array(AccessRequestT) }) }, ...AUTH_ERRORS),
    },
    handler: async (request) => ({ items: await listRequests(db, actorOf(request), request.query as object) }),
  });

  app.get('/api/v1/access-requests/:id', {
    config: { access: ANY_DEVELOPER },
    schema: { tags: ['approvals'], summary: 'One request with its decisions', params: IdParams, response: responses({ 200: AccessRequestT }, ...AUTH_ERRORS, 404) },
    handler: async (request) => getRequest(db, actorOf(request), (request.params as { id: string }).id),
  });

  app.post('/api/v1/access-requests/:id/approve', {
    // Who may decide is the decision core's rule, so that every refused attempt (a viewer, a self-approval) is audited.
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: 'Approve (admin, not the requester); with required approvers the request goes under review and the grant is active at once',
      params: IdParams,
      body: Type.Optional(
        Type.Object(
          {
            expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
            durationSeconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 90 * 86_400 })),
            additionalApprovers: Type.Optional(IdentityList),
            raiseBudgetRule: Type.Optional(Type.Boolean()),
            permanentLimitUsd: Type.Optional(Type.Number({ minimum: 0, maximum: 1e9, description: 'Absolute USD, not an increment; required with raiseBudgetRule' })),
          },
          { additionalProperties: false },
        ),
      ),
      response: responses({ 200: DecisionT }, ...AUTH_ERRORS, 404, 409),
    },
    handler: async (request) => {
      const body = (request.body ?? {}) as { expiresAt?: string; durationSeconds?: number; additionalApprovers?: string[]; raiseBudgetRule?: boolean; permanentLimitUsd?: number };
      if (body.expiresAt !== undefined && body.durationSeconds !== undefined) throw invalid('body: give expiresAt or durationSeconds, not both');
      const expiresAt = body.expiresAt === undefined ? undefined : new Date(body.expiresAt);
      if (expiresAt && Number.isNaN(expiresAt.getTime())) throw invalid('body.expiresAt: must be an ISO 8601 date-time');
      const options: ApproveOptions = {
        ...(expiresAt ? { expiresAt } : {}),
        ...(body.durationSeconds !== undefined ? { durationSeconds: body.durationSeconds } : {}),
        ...(body.additionalApprovers ? { additionalApprovers: body.additionalApprovers } : {}),
        ...(body.raiseBudgetRule !== undefined ? { raiseBudgetRule: body.raiseBudgetRule } : {}),
        ...(body.permanentLimitUsd !== undefined ? { permanentLimitUsd: body.permanentLimitUsd } : {}),
      };
      return decide(db, actorOf(request), (request.params as { id: string }).id, { kind: 'approve', ...options }, options);
    },
  });

  app.post('/api/v1/access-requests/:id/deny', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: 'Deny (admin, the requester included); the reason is relayed to the developer',
      params: IdParams,
      body: Type.Object({ reason: Type.String({ maxLength: 4000 }) }, { additionalProperties: false }),
      response: responses({ 200: DecisionT }, ...AUTH_ERRORS, 404, 409),
    },
    handler: async (request) => decide(db, actorOf(request), (request.params as { id: string }).id, { kind: 'deny', reason: (request.body as { reason: string }).reason }),
  });

  app.post('/api/v1/access-requests/:id/votes', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: 'A named required approver records their own vote (any role)',
      params: IdParams,
      body: Type.Object(
        {
          decision: Type.Union([Type.Literal('approve'), Type.Literal('deny')]),
          reason: Type.Optional(Type.String({ maxLength: 4000 })),
          approver: Type.Optional(Type.String({ maxLength: 317, description: 'If sent, must be the caller: a vote is recorded for oneself only' })),
        },
        { additionalProperties: false },
      ),
      response: responses({ 200: DecisionT }, ...AUTH_ERRORS, 404, 409),
    },
    handler: async (request) => {
      const body = request.body as { decision: 'approve' | 'deny'; reason?: string; approver?: string };
      return decide(db, actorOf(request), (request.params as { id: string }).id, {
        kind: 'vote',
        decision: body.decision,
        ...(body.reason !== undefined ? { reason: body.reason } : {}),
        ...(body.approver !== undefined ? { approver: body.approver } : {}),
      });
    },
  });

  app.get('/api/v1/policy-exceptions', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: 'Active grants (admins and viewers: all; developers: their own)',
      querystring: Type.Object({ developerId: Type.Optional(Type.String({ maxLength: 317 })), policyName: Type.Optional(Type.String({ maxLength: 63 })) }, { additionalProperties: false }),
      response: responses({ 200: Type.Object({ items: Type.Array(GrantT) }) }, ...AUTH_ERRORS),
    },
    handler: async (request) => ({ items: await listGrants(db, actorOf(request), { ...(request.query as object), history: false }) }),
  });

  app.get('/api/v1/policy-exceptions/history', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: 'Revoked and expired grants',
      querystring: Type.Object({ developerId: Type.Optional(Type.String({ maxLength: 317 })), policyName: Type.Optional(Type.String({ maxLength: 63 })) }, { additionalProperties: false }),
      response: responses({ 200: Type.Object({ items: Type.Array(GrantT) }) }, ...AUTH_ERRORS),
    },
    handler: async (request) => ({ items: await listGrants(db, actorOf(request), { ...(request.query as object), history: true }) }),
  });

  app.get('/api/v1/policy-exceptions/:id', {
    config: { access: ANY_DEVELOPER },
    schema: { tags: ['approvals'], summary: 'One grant', params: IdParams, response: responses({ 200: GrantT }, ...AUTH_ERRORS, 404) },
    handler: async (request) => getGrant(db, actorOf(request), (request.params as { id: string }).id),
  });

  app.delete('/api/v1/policy-exceptions/:id', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: 'Revoke an active grant at once (admin); not active: 409',
      params: IdParams,
      response: responses({ 200: Type.Object({ id: Type.String(), state: Type.Literal('revoked') }) }, ...AUTH_ERRORS, 404, 409),
    },
    handler: async (request) => {
      const grant = await revokeGrant(db, actorOf(request), (request.params as { id: string }).id);
      return { id: grant.id, state: 'revoked' as const };
    },
  });

  app.get('/api/v1/exception-rules', {
    config: { access: READERS },
    schema: { tags: ['approvals'], summary: 'Exception rules', response: responses({ 200: Type.Object({ items: Type.Array(ExceptionRuleT) }) }, ...AUTH_ERRORS) },
    handler: async () => ({ items: await listExceptionRules(db) }),
  });
  app.post('/api/v1/exception-rules', {
    config: { access: ADMIN },
    schema: { tags: ['approvals'], summary: 'Create an exception rule', body: ExceptionRuleBody, response: responses({ 201: ExceptionRuleT }, ...AUTH_ERRORS) },
    handler: async (request, reply) => reply.status(201).send(await createExceptionRule(db, actorOf(request), ruleInput(request.body))),
  });
  app.get('/api/v1/exception-rules/:id', {
    config: { access: READERS },
    schema: { tags: ['approvals'], summary: 'One exception rule', params: IdParams, response: responses({ 200: ExceptionRuleT }, ...AUTH_ERRORS, 404) },
    handler: async (request) => getExceptionRule(db, (request.params as { id: string }).id),
  });
  app.put('/api/v1/exception-rules/:id', {
    config: { access: ADMIN },
    schema: { tags: ['approvals'], summary: 'Replace an exception rule', params: IdParams, body: ExceptionRuleBody, response: responses({ 200: ExceptionRuleT }, ...AUTH_ERRORS, 404) },
    handler: async (request) => replaceExceptionRule(db, actorOf(request), (request.params as { id: string }).id, ruleInput(request.body)),
  });
  app.delete('/api/v1/exception-rules/:id', {
    config: { access: ADMIN },
    schema: { tags: ['approvals'], summary: 'Delete an exception rule', params: IdParams, response: responses({ 200: Type.Object({ status: Type.Literal('ok'), id: Type.String() }) }, ...AUTH_ERRORS, 404) },
    handler: async (request) => {
      const { id } = request.params as { id: string };
      await deleteExceptionRule(db, actorOf(request), id);
      return { status: 'ok' as const, id };
    },
  });

  app.get('/api/v1/notifications', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: "The caller's own notifications, newest first",
      querystring: Type.Object({ unread: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
      response: responses({ 200: Type.Object({ items: Type.Array(NotificationT) }) }, ...AUTH_ERRORS),
    },
    handler: async (request) => {
      const me = developerOf(request);
      const { unread } = request.query as { unread?: boolean };
      const r = await db.query<{ id: string; kind: string; message: string; request_id: string | null; grant_id: string | null; created_at: Date; read_at: Date | null }>(
        `SELECT id::text AS id, kind, message, request_id, grant_id, created_at, read_at FROM notifications
          WHERE recipient = $1 ${unread ? 'AND read_at IS NULL' : ''} ORDER BY notifications.id DESC LIMIT 200`,
        [me.identityId],
      );
      return {
        items: r.rows.map((n) => ({ id: n.id, kind: n.kind, message: n.message, requestId: n.request_id, grantId: n.grant_id, createdAt: n.created_at.toISOString(), readAt: n.read_at?.toISOString() ?? null })),
      };
    },
  });

  app.post('/api/v1/notifications/:id/read', {
    config: { access: ANY_DEVELOPER },
    schema: { tags: ['approvals'], summary: 'Mark one of your notifications read', params: IdParams, response: responses({ 200: Type.Object({ id: Type.String(), read: Type.Literal(true) }) }, ...AUTH_ERRORS, 404) },
    handler: async (request) => {
      const { id } = request.params as { id: string };
      if (!/^\d{1,18}$/.test(id)) throw notFound(`no notification ${id}`);
      const r = await db.query(`UPDATE notifications SET read_at = COALESCE(read_at, now()) WHERE id = $1::bigint AND recipient = $2`, [id, developerOf(request).identityId]);
      if (r.rowCount === 0) throw notFound(`no notification ${id}`);
      return { id, read: true as const };
    },
  });
}

function ruleInput(body: unknown): ExceptionRuleInput {
  const b = body as { name: string; policyName: string; maxDurationSeconds: number; requiredApprovers?: string[]; projectScope?: string };
  return { name: b.name, policyName: b.policyName, maxDurationSeconds: b.maxDurationSeconds, requiredApprovers: b.requiredApprovers ?? [], projectScope: b.projectScope ?? '' };
}
