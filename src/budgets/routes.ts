/**
 * Budget rules (docs/api.md, "Budget rules") and model-access rules: admin-managed, read by the gateway on
 * every call from its in-memory copy. Each change re-reads this replica's copy before it answers, and
 * the NOTIFY in the change's transaction makes the others re-read theirs.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ADMIN, READERS } from '../shared/access.js';
import { actorOf } from '../identity/auth.js';
import { invalid } from '../shared/errors.js';
import { AUTH_ERRORS, IdParams, responses } from '../shared/schemas.js';
import { BudgetRuleBody, BudgetRuleSchema, BudgetUsageSchema, ModelAccessBody, ModelAccessSchema } from './contract.js';
import type { Db } from '../store/db.js';
import {
  budgetUsage,
  createBudgetRule,
  deleteBudgetRule,
  getBudgetRule,
  listBudgetRules,
  replaceBudgetRule,
  type BudgetRuleInput,
} from './budget-store.js';
import type { GatewayRules } from './gateway-rules.js';
import {
  createModelAccessRule,
  deleteModelAccessRule,
  getModelAccessRule,
  listModelAccessRules,
  replaceModelAccessRule,
} from './model-access-store.js';
import { validateBudgetRule } from './budget-rules.js';
import { scopeProblem } from './scope.js';


/** The schema checked types; the rule's own validation checks values (scope syntax, glob, limits). */
function checkBudgetRule(body: BudgetRuleInput): void {
  const result = validateBudgetRule(body);
  if (!result.ok) throw invalid(`body.${result.field}: ${result.message}`);
}

function checkScope(scope: string): void {
  const problem = scopeProblem(scope);
  if (problem) throw invalid(`body.scope: ${problem}`);
}

export function registerGatewayRuleRoutes(fastify: FastifyInstance, deps: { db: Db; rules: GatewayRules }): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, rules } = deps;

  app.get('/api/v1/budget-rules', {
    config: { access: READERS },
    schema: { tags: ['budgets'], summary: 'List budget rules', response: responses({ 200: Type.Object({ items: Type.Array(BudgetRuleSchema) }) }, ...AUTH_ERRORS) },
    handler: async () => ({ items: await listBudgetRules(db) }),
  });

  app.post('/api/v1/budget-rules', {
    config: { access: ADMIN },
    schema: {
      tags: ['budgets'],
      summary: 'Create a budget rule',
      description:
        'For each period, the covering rules with the most specific scope (identity, then namespace, then *) bind; calls are ' +
        'refused once spent plus reserved reaches the limit.',
      body: BudgetRuleBody,
      response: responses({ 201: BudgetRuleSchema }, ...AUTH_ERRORS),
    },
    handler: async (request, reply) => {
      const body = request.body;
      checkBudgetRule(body);
      const rule = await createBudgetRule(db, actorOf(request), body);
      await rules.reload();
      return reply.status(201).send(rule);
    },
  });

  app.get('/api/v1/budget-rules/:id', {
    config: { access: READERS },
    schema: { tags: ['budgets'], summary: 'One budget rule', params: IdParams, response: responses({ 200: BudgetRuleSchema }, ...AUTH_ERRORS, 404) },
    handler: async (request) => getBudgetRule(db, request.params.id),
  });

  app.get('/api/v1/budget-rules/:id/usage', {
    config: { access: READERS },
    schema: {
      tags: ['budgets'],
      summary: "Spend counted against a rule, per identity and period (the 500 most recently used counters)",
      params: IdParams,
      response: responses({ 200: Type.Object({ items: Type.Array(BudgetUsageSchema) }) }, ...AUTH_ERRORS, 404),
    },
    handler: async (request) => {
      const { id } = request.params;
      await getBudgetRule(db, id);
      return { items: await budgetUsage(db, { ruleId: id }) };
    },
  });

  app.put('/api/v1/budget-rules/:id', {
    config: { access: ADMIN },
    schema: {
      tags: ['budgets'],
      summary: 'Replace a budget rule (a changed scope, pattern or period restarts its counters)',
      params: IdParams,
      body: BudgetRuleBody,
      response: responses({ 200: BudgetRuleSchema }, ...AUTH_ERRORS, 404),
    },
    handler: async (request) => {
      const body = request.body;
      checkBudgetRule(body);
      const rule = await replaceBudgetRule(db, actorOf(request), request.params.id, body);
      await rules.reload();
      return rule;
    },
  });

  app.delete('/api/v1/budget-rules/:id', {
    config: { access: ADMIN },
    schema: {
      tags: ['budgets'],
      summary: 'Delete a budget rule',
      params: IdParams,
      response: responses({ 200: Type.Object({ status: Type.Literal('ok'), id: Type.String() }) }, ...AUTH_ERRORS, 404),
    },
    handler: async (request) => {
      const { id } = request.params;
      await deleteBudgetRule(db, actorOf(request), id);
      await rules.reload();
      return { status: 'ok' as const, id };
    },
  });

  app.get('/api/v1/model-access', {
    config: { access: READERS },
    schema: {
      tags: ['model access'],
      summary: 'List model-access rules',
      description: 'A caller no rule covers may use any model; a covered caller may use the models of the rules covering it.',
      response: responses({ 200: Type.Object({ items: Type.Array(ModelAccessSchema) }) }, ...AUTH_ERRORS),
    },
    handler: async () => ({ items: await listModelAccessRules(db) }),
  });

  app.post('/api/v1/model-access', {
    config: { access: ADMIN },
    schema: {
      tags: ['model access'],
      summary: 'Say which models an identity, a namespace or everyone (*) may use',
      body: ModelAccessBody,
      response: responses({ 201: ModelAccessSchema }, ...AUTH_ERRORS),
    },
    handler: async (request, reply) => {
      const body = request.body;
      checkScope(body.scope);
      const rule = await createModelAccessRule(db, actorOf(request), { ...body, description: body.description ?? '' });
      await rules.reload();
      return reply.status(201).send(rule);
    },
  });

  app.get('/api/v1/model-access/:id', {
    config: { access: READERS },
    schema: { tags: ['model access'], summary: 'One model-access rule', params: IdParams, response: responses({ 200: ModelAccessSchema }, ...AUTH_ERRORS, 404) },
    handler: async (request) => getModelAccessRule(db, request.params.id),
  });

  app.put('/api/v1/model-access/:id', {
    config: { access: ADMIN },
    schema: {
      tags: ['model access'],
      summary: 'Replace a model-access rule',
      params: IdParams,
      body: ModelAccessBody,
      response: responses({ 200: ModelAccessSchema }, ...AUTH_ERRORS, 404),
    },
    handler: async (request) => {
      const body = request.body;
      checkScope(body.scope);
      const rule = await replaceModelAccessRule(db, actorOf(request), request.params.id, { ...body, description: body.description ?? '' });
      await rules.reload();
      return rule;
    },
  });

  app.delete('/api/v1/model-access/:id', {
    config: { access: ADMIN },
    schema: {
      tags: ['model access'],
      summary: 'Delete a model-access rule',
      params: IdParams,
      response: responses({ 200: Type.Object({ status: Type.Literal('ok'), id: Type.String() }) }, ...AUTH_ERRORS, 404),
    },
    handler: async (request) => {
      const { id } = request.params;
      await deleteModelAccessRule(db, actorOf(request), id);
      await rules.reload();
      return { status: 'ok' as const, id };
    },
  });
}
