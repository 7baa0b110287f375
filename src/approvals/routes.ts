/** Approval routes (docs/api.md, "Approvals"): requests, decisions, votes, grants, exception rules, notifications. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ADMIN, ANY_DEVELOPER, READERS } from '../shared/access.js';
import { actorOf, developerOf } from '../identity/auth.js';
import { invalid, notFound } from '../shared/errors.js';
import { AUTH_ERRORS, IdParams, responses } from '../shared/schemas.js';
import type { Db } from '../store/db.js';
import { getRequest, listRequests, submitRequest } from './access-requests.js';
import {
  AccessRequestSchema,
  ApproveBody,
  DecisionOutcomeSchema,
  DenyBody,
  ExceptionRuleBody,
  ExceptionRuleSchema,
  GrantQuery,
  GrantSchema,
  NotificationQuery,
  NotificationSchema,
  RequestQuery,
  RevokedGrantSchema,
  SubmitRequestBody,
  VoteBody,
  type ExceptionRuleBodyInput,
  type ExceptionRuleInput,
} from './contract.js';
import { createExceptionRule, deleteExceptionRule, getExceptionRule, listExceptionRules, replaceExceptionRule } from './exception-rules.js';
import { getGrant, listGrants, revokeGrant } from './grant-store.js';
import { listNotifications, markNotificationRead } from './notifications.js';
import { decideOnRequest, type ApproveOptions } from './request-decisions.js';

export function registerApprovalRoutes(fastify: FastifyInstance, db: Db): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.post('/api/v1/access-requests', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: 'Ask for a policy exception, model access or a budget top-up (the requester is the caller)',
      body: SubmitRequestBody,
      response: responses({ 201: AccessRequestSchema }, ...AUTH_ERRORS),
    },
    handler: async (request, reply) => reply.status(201).send(await submitRequest(db, developerOf(request), request.body)),
  });

  app.get('/api/v1/access-requests', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: 'Requests, newest first (admins and viewers: all; developers: their own and those naming them as a required approver)',
      querystring: RequestQuery,
      response: responses({ 200: Type.Object({ items: Type.Array(AccessRequestSchema) }) }, ...AUTH_ERRORS),
    },
    handler: async (request) => ({ items: await listRequests(db, actorOf(request), request.query) }),
  });

  app.get('/api/v1/access-requests/:id', {
    config: { access: ANY_DEVELOPER },
    schema: { tags: ['approvals'], summary: 'One request with its decisions', params: IdParams, response: responses({ 200: AccessRequestSchema }, ...AUTH_ERRORS, 404) },
    handler: async (request) => getRequest(db, actorOf(request), request.params.id),
  });

  app.post('/api/v1/access-requests/:id/approve', {
    // Who may decide is the decision core's rule, so that every refused attempt (a viewer, a self-approval) is audited.
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: 'Approve (admin, not the requester); with required approvers the request goes under review and the grant is active at once',
      params: IdParams,
      body: Type.Optional(ApproveBody),
      response: responses({ 200: DecisionOutcomeSchema }, ...AUTH_ERRORS, 404, 409),
    },
    handler: async (request) => {
      const body = request.body ?? {};
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
      return decideOnRequest(db, actorOf(request), request.params.id, { kind: 'approve', ...options }, options);
    },
  });

  app.post('/api/v1/access-requests/:id/deny', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: 'Deny (admin, the requester included); the reason is relayed to the developer',
      params: IdParams,
      body: DenyBody,
      response: responses({ 200: DecisionOutcomeSchema }, ...AUTH_ERRORS, 404, 409),
    },
    handler: async (request) => decideOnRequest(db, actorOf(request), request.params.id, { kind: 'deny', reason: request.body.reason }),
  });

  app.post('/api/v1/access-requests/:id/votes', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: 'A named required approver records their own vote (any role)',
      params: IdParams,
      body: VoteBody,
      response: responses({ 200: DecisionOutcomeSchema }, ...AUTH_ERRORS, 404, 409),
    },
    handler: async (request) => {
      const body = request.body;
      return decideOnRequest(db, actorOf(request), request.params.id, {
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
      querystring: GrantQuery,
      response: responses({ 200: Type.Object({ items: Type.Array(GrantSchema) }) }, ...AUTH_ERRORS),
    },
    handler: async (request) => ({ items: await listGrants(db, actorOf(request), { ...request.query, history: false }) }),
  });

  app.get('/api/v1/policy-exceptions/history', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: 'Revoked and expired grants',
      querystring: GrantQuery,
      response: responses({ 200: Type.Object({ items: Type.Array(GrantSchema) }) }, ...AUTH_ERRORS),
    },
    handler: async (request) => ({ items: await listGrants(db, actorOf(request), { ...request.query, history: true }) }),
  });

  app.get('/api/v1/policy-exceptions/:id', {
    config: { access: ANY_DEVELOPER },
    schema: { tags: ['approvals'], summary: 'One grant', params: IdParams, response: responses({ 200: GrantSchema }, ...AUTH_ERRORS, 404) },
    handler: async (request) => getGrant(db, actorOf(request), request.params.id),
  });

  app.delete('/api/v1/policy-exceptions/:id', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: 'Revoke an active grant at once (admin); not active: 409',
      params: IdParams,
      response: responses({ 200: RevokedGrantSchema }, ...AUTH_ERRORS, 404, 409),
    },
    handler: async (request) => {
      const grant = await revokeGrant(db, actorOf(request), request.params.id);
      return { id: grant.id, state: 'revoked' as const };
    },
  });

  app.get('/api/v1/exception-rules', {
    config: { access: READERS },
    schema: { tags: ['approvals'], summary: 'Exception rules', response: responses({ 200: Type.Object({ items: Type.Array(ExceptionRuleSchema) }) }, ...AUTH_ERRORS) },
    handler: async () => ({ items: await listExceptionRules(db) }),
  });
  app.post('/api/v1/exception-rules', {
    config: { access: ADMIN },
    schema: { tags: ['approvals'], summary: 'Create an exception rule', body: ExceptionRuleBody, response: responses({ 201: ExceptionRuleSchema }, ...AUTH_ERRORS) },
    handler: async (request, reply) => reply.status(201).send(await createExceptionRule(db, actorOf(request), ruleInput(request.body))),
  });
  app.get('/api/v1/exception-rules/:id', {
    config: { access: READERS },
    schema: { tags: ['approvals'], summary: 'One exception rule', params: IdParams, response: responses({ 200: ExceptionRuleSchema }, ...AUTH_ERRORS, 404) },
    handler: async (request) => getExceptionRule(db, request.params.id),
  });
  app.put('/api/v1/exception-rules/:id', {
    config: { access: ADMIN },
    schema: { tags: ['approvals'], summary: 'Replace an exception rule', params: IdParams, body: ExceptionRuleBody, response: responses({ 200: ExceptionRuleSchema }, ...AUTH_ERRORS, 404) },
    handler: async (request) => replaceExceptionRule(db, actorOf(request), request.params.id, ruleInput(request.body)),
  });
  app.delete('/api/v1/exception-rules/:id', {
    config: { access: ADMIN },
    schema: { tags: ['approvals'], summary: 'Delete an exception rule', params: IdParams, response: responses({ 200: Type.Object({ status: Type.Literal('ok'), id: Type.String() }) }, ...AUTH_ERRORS, 404) },
    handler: async (request) => {
      const { id } = request.params;
      await deleteExceptionRule(db, actorOf(request), id);
      return { status: 'ok' as const, id };
    },
  });

  app.get('/api/v1/notifications', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['approvals'],
      summary: "The caller's own notifications, newest first",
      querystring: NotificationQuery,
      response: responses({ 200: Type.Object({ items: Type.Array(NotificationSchema) }) }, ...AUTH_ERRORS),
    },
    handler: async (request) => {
      return { items: await listNotifications(db, developerOf(request).identityId, request.query) };
    },
  });

  app.post('/api/v1/notifications/:id/read', {
    config: { access: ANY_DEVELOPER },
    schema: { tags: ['approvals'], summary: 'Mark one of your notifications read', params: IdParams, response: responses({ 200: Type.Object({ id: Type.String(), read: Type.Literal(true) }) }, ...AUTH_ERRORS, 404) },
    handler: async (request) => {
      const { id } = request.params;
      if (!(await markNotificationRead(db, developerOf(request).identityId, id))) throw notFound(`no notification ${id}`);
      return { id, read: true as const };
    },
  });
}

function ruleInput(b: ExceptionRuleBodyInput): ExceptionRuleInput {
  return { name: b.name, policyName: b.policyName, maxDurationSeconds: b.maxDurationSeconds, requiredApprovers: b.requiredApprovers ?? [], projectScope: b.projectScope ?? '' };
}
