/**
 * The budget and model-access rules' wire shapes, written once: the TypeBox schemas the routes validate and document
 * with, and their `Static<>` types, which the stores return. Keep this module to schemas and types.
 */
import { Type, type Static } from 'typebox';

const Scope = Type.String({ minLength: 1, maxLength: 317, description: '"*", a namespace (eng) or an identity id (eng/alice)' });
const ModelGlob = Type.String({ minLength: 1, maxLength: 200, pattern: '^\\S+$', description: 'A model glob: * matches any run of characters' });
export const PeriodSchema = Type.Union([Type.Literal('session'), Type.Literal('day'), Type.Literal('month')]);

export const BudgetRuleBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    scope: Scope,
    pattern: ModelGlob,
    limitUsd: Type.Number({ minimum: 0, maximum: 1e9, description: 'USD per period for each identity the scope covers (per session for period "session")' }),
    period: PeriodSchema,
  },
  { additionalProperties: false },
);
export type BudgetRuleBodyInput = Static<typeof BudgetRuleBody>;

export const BudgetRuleSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scope: Type.String(),
  pattern: Type.String(),
  limitUsd: Type.Number(),
  period: PeriodSchema,
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type BudgetRule = Static<typeof BudgetRuleSchema>;

export const BudgetUsageSchema = Type.Object({
  ruleId: Type.String(),
  identityId: Type.String(),
  periodKey: Type.String({ description: 'session:<id>, day:YYYY-MM-DD or month:YYYY-MM (UTC)' }),
  spentUsd: Type.Number(),
  reservedUsd: Type.Number({ description: 'Set aside by calls in flight' }),
});
export type BudgetUsage = Static<typeof BudgetUsageSchema>;

export const ModelAccessBody = Type.Object(
  {
    scope: Scope,
    models: Type.Array(ModelGlob, { minItems: 1, maxItems: 200 }),
    description: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { additionalProperties: false },
);
export type ModelAccessBodyInput = Static<typeof ModelAccessBody>;

export const ModelAccessSchema = Type.Object({
  id: Type.String(),
  scope: Type.String(),
  models: Type.Array(Type.String()),
  description: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type ModelAccessRule = Static<typeof ModelAccessSchema>;

export const SpendGroupingSchema = Type.Union([Type.Literal('identity'), Type.Literal('session'), Type.Literal('day')], { description: 'Default identity' });
export type SpendGrouping = Static<typeof SpendGroupingSchema>;

export const SpendQuery = Type.Object(
  {
    groupBy: Type.Optional(SpendGroupingSchema),
    identity: Type.Optional(Type.String({ maxLength: 317 })),
    session: Type.Optional(Type.String({ maxLength: 200 })),
    since: Type.Optional(Type.String({ description: 'ISO 8601; default 30 days ago' })),
    until: Type.Optional(Type.String({ description: 'ISO 8601; default now' })),
  },
  { additionalProperties: false },
);

export const SpendReportSchema = Type.Object({
  groupBy: Type.String(),
  since: Type.String({ format: 'date-time' }),
  until: Type.String({ format: 'date-time' }),
  items: Type.Array(
    Type.Object({
      key: Type.String(),
      identity: Type.Union([Type.String(), Type.Null()]),
      requests: Type.Integer(),
      inputTokens: Type.Integer(),
      outputTokens: Type.Integer(),
      costUsd: Type.Number(),
      unpricedRequests: Type.Integer({ description: 'Calls recorded without a cost (before unknown models were costed with the fallback price)' }),
      estimatedRequests: Type.Integer({ description: 'Calls to models no price names, costed with the fallback price (costEstimated in their audit event)' }),
    }),
  ),
});
