/** Policy routes (docs/api.md, "Policies"): CRUD over the policy set and the dry run. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ADMIN, READERS } from '../shared/access.js';
import { actorOf } from '../identity/auth.js';
import { AppError, invalid } from '../shared/errors.js';
import { AUTH_ERRORS, responses } from '../shared/schemas.js';
import type { Db } from '../store/db.js';
import { compilePolicy, type CompiledPolicy, type PolicyInput } from './compile-policy.js';
import { EvaluateBody, EvaluationSchema, NameParams, PolicyBody, PolicySchema, type Policy } from './contract.js';
import { dryRunEvaluate } from './dry-run.js';
import type { PolicySet } from './policy-set.js';
import { createPolicy, deletePolicy, getPolicy, listPolicies, replacePolicy } from './store.js';

/** Turns compile errors into the 400 docs/api.md describes: the first error, its field, and for CEL its position. */
function compileOrThrow(input: PolicyInput): CompiledPolicy {
  const result = compilePolicy(input);
  if (result.ok) return result.compiled;
  const first = result.errors[0]!;
  if (first.field === 'match') {
    throw new AppError('invalid_policy', `match: line ${first.line}, column ${first.column}: ${first.message}`, {
      field: 'match',
      line: first.line,
      column: first.column,
    });
  }
  throw new AppError('invalid_policy', `${first.field}: ${first.message}`, { field: first.field });
}

export interface PolicyRouteDeps {
  db: Db;
  policies: PolicySet;
}

export function registerPolicyRoutes(fastify: FastifyInstance, deps: PolicyRouteDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, policies } = deps;

  app.get('/api/v1/policies', {
    config: { access: READERS },
    schema: {
      tags: ['policies'],
      summary: 'List policies in evaluation order, built-ins included',
      response: responses({ 200: Type.Object({ items: Type.Array(PolicySchema) }) }, ...AUTH_ERRORS),
    },
    handler: async () => ({ items: await listPolicies(db) }),
  });

  app.post('/api/v1/policies', {
    config: { access: ADMIN },
    schema: {
      tags: ['policies'],
      summary: 'Create a policy',
      description: 'The CEL `match` is compiled now: an expression that does not compile is refused with 400 naming its line and column.',
      body: PolicyBody,
      response: responses({ 201: PolicySchema }, ...AUTH_ERRORS, 409),
    },
    handler: async (request, reply) => {
      const body = request.body;
      if (body.builtIn === true) throw invalid('builtIn: only the policies that ship with Reins are built in');
      if (body.name === undefined) throw invalid('body.name: is required');
      const compiled = compileOrThrow({ ...body, name: body.name, builtIn: false });
      const created = await createPolicy(db, actorOf(request), compiled.policy);
      await policies.reload();
      return reply.status(201).send(created);
    },
  });

  app.post('/api/v1/policies/evaluate', {
    config: { access: READERS },
    schema: {
      tags: ['policies'],
      summary: 'Dry run: which policies match a sample request object, and the decision',
      description:
        'Evaluates the current policy set (with `policy`, a draft, added or replacing the policy of the same name) against ' +
        '`object`, a partial policy object; missing fields take their zero values and a missing tier takes T2. Nothing is stored.',
      body: EvaluateBody,
      response: responses({ 200: EvaluationSchema }, ...AUTH_ERRORS),
    },
    handler: async (request) => {
      const body = request.body;
      let set = policies.policies;
      if (body.policy) {
        if (body.policy.name === undefined) throw invalid('body.policy.name: is required');
        const draft = compileOrThrow({ ...body.policy, name: body.policy.name, builtIn: set.find((p) => p.policy.name === body.policy!.name)?.policy.builtIn ?? false });
        const at = set.findIndex((p) => p.policy.name === draft.policy.name);
        set = at < 0 ? [...set, draft] : set.map((p, i) => (i === at ? draft : p));
      }
      const run = dryRunEvaluate(set, body.object, body.exemptPolicies ? { exemptPolicies: new Set(body.exemptPolicies) } : undefined);
      if (!run.ok) {
        const first = run.errors[0]!;
        throw new AppError('invalid_request', `${first.field}: ${first.message}`, { field: first.field });
      }
      return run.result;
    },
  });

  app.get('/api/v1/policies/:name', {
    config: { access: READERS },
    schema: {
      tags: ['policies'],
      summary: 'One policy',
      params: NameParams,
      response: responses({ 200: PolicySchema }, ...AUTH_ERRORS, 404),
    },
    handler: async (request) => getPolicy(db, request.params.name),
  });

  app.put('/api/v1/policies/:name', {
    config: { access: ADMIN },
    schema: {
      tags: ['policies'],
      summary: 'Replace a policy (built-ins included: edit or disable them)',
      params: NameParams,
      body: PolicyBody,
      response: responses({ 200: PolicySchema }, ...AUTH_ERRORS, 404),
    },
    handler: async (request) => {
      const { name } = request.params;
      const body = request.body;
      if (body.name !== undefined && body.name !== name) throw invalid(`body.name: "${body.name}" differs from the path's ${name}; a policy cannot be renamed`);
      const current = await getPolicy(db, name);
      if (body.builtIn !== undefined && body.builtIn !== current.builtIn) throw invalid('builtIn: only the policies that ship with Reins are built in, and they stay so');
      const compiled = compileOrThrow({ ...body, name, builtIn: current.builtIn });
      const updated: Policy = await replacePolicy(db, actorOf(request), compiled.policy);
      await policies.reload();
      return updated;
    },
  });

  app.delete('/api/v1/policies/:name', {
    config: { access: ADMIN },
    schema: {
      tags: ['policies'],
      summary: 'Delete a policy (built-ins cannot be deleted: 409; disable them instead)',
      params: NameParams,
      response: responses({ 200: Type.Object({ status: Type.Literal('ok'), name: Type.String() }) }, ...AUTH_ERRORS, 404, 409),
    },
    handler: async (request) => {
      const { name } = request.params;
      await deletePolicy(db, actorOf(request), name);
      await policies.reload();
      return { status: 'ok' as const, name };
    },
  });
}
