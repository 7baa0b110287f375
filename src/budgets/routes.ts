/**
 * Budget rules (API.md "Budget rules") and model-access rules: admin-managed, read by the gateway on
 * every call from its in-memory copy. Each change re-reads this replica's copy before it answers, and
 * the NOTIFY in the change's transaction makes the others re-read theirs.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ADMIN, READERS } from '../shared/access.js';
import { actorOf } from '../identity/auth.js';
import { invalid } from '../shared/errors.js';
import { AUTH_ERRORS, responses } from '../shared/schemas.js';
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
  type ModelAccessInput,
} from './model-access-store.js';
import { validateBudgetRule } from './budget-rules.js';
import { scopeProblem } from './scope.js';

const Scope = Type.String({ minLength: 1, maxLength: 317, description: '"*", a namespace (eng) or an identity id (eng/alice)' });
const ModelGlob = Type.String({ minLength: 1, maxLength: 200, pattern: '^\\S+$', description: 'A model glob: * matches any run of characters' });
const Period = Type.Union([Type.Literal('session'), Type.Literal('day'), Type.Literal('month')]);

const BudgetRuleBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    scope: Scope,
    pattern: ModelGlob,
    limitUsd: Type.Number({ minimum: 0, maximum: 1e9, description: 'USD per period for each identity the scope covers (per session for period "session")' }),
    period: Period,
  },
  { additionalProperties: false },
);
const BudgetRuleSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scope: Type.String(),
  pattern: Type.String(),
  limitUsd: Type.Number(),
  period: Period,
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
const BudgetUsageSchema = Type.Object({
  ruleId: Type.String(),
  identityId: Type.String(),
  periodKey: Type.String({ description: 'session:<id>, day:YYYY-MM-DD or month:YYYY-MM (UTC)' }),
  spentUsd: Type.Number(),
  reservedUsd: Type.Number({ description: 'Set aside by calls in flight' }),
});

const ModelAccessBody = Type.Object(
  {
    scope: Scope,
    models: Type.Array(ModelGlob, { minItems: 1, maxItems: 200 }),
    description: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { additionalProperties: false },
);
const ModelAccessSchema = Type.Object({
  id: Type.String(),
  scope: Type.String(),
  models: Type.Array(Type.String()),
  description: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});

const IdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

/** The schema checked types; the rule's own validation checks values (scope syntax, glob, limits). */
function checkBudgetRule(body: BudgetRuleInput): void {
  const result = validateBudgetRule(body);
  if (!result.ok) throw invalid(`body.${result.field}: ${result.message}`);
}

function checkScope(scope: string): void {
  const problem = scopeProblem(scope);
  if (problem) throw invalid(`body.scope: ${problem}`);
}

export function registerGatewayRuleRoutes(app: FastifyInstance, deps: { db: Db; rules: GatewayRules }): void {
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
      const body = request.body as BudgetRuleInput;
      checkBudgetRule(body);
      const rule = await createBudgetRule(db, actorOf(request), body);
      await rules.reload();
      return reply.status(201).send(rule);
    },
  });

  app.get('/api/v1/budget-rules/:id', {
    config: { access: READERS },
    schema: { tags: ['budgets'], summary: 'One budget rule', params: IdParams, response: responses({ 200: BudgetRuleSchema }, ...AUTH_ERRORS, 404) },
    handler: async (request) => getBudgetRule(db, (request.params as { id: string }).id),
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
      const { id } = request.params as { id: string };
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
      const body = request.body as BudgetRuleInput;
      checkBudgetRule(body);
      const rule = await replaceBudgetRule(db, actorOf(request), (request.params as { id: string }).id, body);
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
      const { id } = request.params as { id: string };
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
      const body = request.body as ModelAccessInput;
      checkScope(body.scope);
      const rule = await createModelAccessRule(db, actorOf(request), { ...body, description: body.description ?? '' });
      await rules.reload();
      return reply.status(201).send(rule);
    },
  });

  app.get('/api/v1/model-access/:id', {
    config: { access: READERS },
    schema: { tags: ['model access'], summary: 'One model-access rule', params: IdParams, response: responses({ 200: ModelAccessSchema }, ...AUTH_ERRORS, 404) },
    handler: async (request) => getModelAccessRule(db, (request.params as { id: string }).id),
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
      const body = request.body as ModelAccessInput;
      checkScope(body.scope);
      const rule = await replaceModelAccessRule(db, actorOf(request), (request.params as { id: string }).id, { ...body, description: body.description ?? '' });
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
      const { id } = request.params as { id: string };
      await deleteModelAccessRule(db, actorOf(request), id);
      await rules.reload();
      return { status: 'ok' as const, id };
    },
  });
}
