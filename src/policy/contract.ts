/**
 * The policies' wire shapes, written once: the TypeBox schemas the routes validate and document with, and their
 * `Static<>` types, which the store returns and the console imports (type-only). Keep this module to schemas and
 * types (and the plain lists they are built from): the console's compiler reads it.
 */
import { Type, type Static } from 'typebox';
import { GOVERNED_CALL_TYPES, type GovernedCallType } from '../shared/governed-call.js';

export const POLICY_KINDS = ['allow', 'deny', 'approve', 'audit'] as const;
export type PolicyKind = (typeof POLICY_KINDS)[number];

// Unions built from the lists the server checks against have no precise static type of their own: they are given one.
const Kind = Type.Unsafe<PolicyKind>(Type.Union(POLICY_KINDS.map((k) => Type.Literal(k))));
const GovernedCallTypeT = Type.Unsafe<GovernedCallType>(Type.Union(GOVERNED_CALL_TYPES.map((t) => Type.Literal(t))));

export const PolicySchema = Type.Object({
  name: Type.String(),
  kind: Kind,
  appliesTo: Type.Array(GovernedCallTypeT),
  match: Type.String({ description: 'CEL expression over `object`; the policy matches when it is true' }),
  message: Type.String({ description: 'Shown to the person whose call is denied, held or flagged' }),
  approvalWindowSeconds: Type.Optional(Type.Integer({ description: 'Approve policies: overrides the Human Review window' })),
  enabled: Type.Boolean(),
  builtIn: Type.Boolean({ description: 'Shipped with Reins: can be edited and disabled, not deleted' }),
});

export type Policy = Static<typeof PolicySchema>;

// Types are checked here for the OpenAPI description; compilePolicy checks values (name pattern, CEL, lengths).
export const PolicyBody = Type.Object(
  {
    name: Type.Optional(Type.String({ description: 'Required on POST; on PUT, if given, must equal the path name' })),
    kind: Kind,
    appliesTo: Type.Array(GovernedCallTypeT, { minItems: 1 }),
    match: Type.String(),
    message: Type.String(),
    approvalWindowSeconds: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
    enabled: Type.Optional(Type.Boolean({ default: undefined, description: 'Default true' })),
    builtIn: Type.Optional(Type.Boolean({ description: 'Read-only: accepted only with its current value' })),
  },
  { additionalProperties: false },
);
export type PolicyBodyInput = Static<typeof PolicyBody>;

export const NameParams = Type.Object({ name: Type.String({ maxLength: 63 }) });

const MatchedPolicy = Type.Object({ name: Type.String(), kind: Kind });
export const DecisionSchema = Type.Object({
  outcome: Type.Union([Type.Literal('allow'), Type.Literal('deny'), Type.Literal('approve')]),
  decidingPolicy: Type.Optional(
    Type.Object({ name: Type.String(), kind: Kind, message: Type.String(), approvalWindowSeconds: Type.Optional(Type.Integer()) }),
  ),
  matched: Type.Array(MatchedPolicy, { description: 'Every policy that matched, audit policies included' }),
  audit: Type.Boolean({ description: 'An audit policy matched: the event is flagged for review' }),
  errors: Type.Array(
    Type.Object({ policy: Type.String(), message: Type.String(), line: Type.Optional(Type.Integer()), column: Type.Optional(Type.Integer()) }),
  ),
});

export const EvaluateBody = Type.Object(
  {
    object: Type.Record(Type.String(), Type.Unknown(), { description: 'A sample policy object, e.g. {"request":{"type":"llm"},"agent":{"autonomyTier":"T1"},"llm":{"model":"claude-opus-4-1"}}' }),
    policy: Type.Optional(PolicyBody),
    exemptPolicies: Type.Optional(Type.Array(Type.String(), { description: 'Policies to skip, as an exception grant would' })),
  },
  { additionalProperties: false },
);

/** The dry run's answer. */
export const EvaluationSchema = Type.Object({
  decision: DecisionSchema,
  policies: Type.Array(
    Type.Object({
      name: Type.String(),
      kind: Kind,
      result: Type.Union(['matched', 'not_matched', 'failed', 'disabled', 'not_applicable', 'exempt'].map((r) => Type.Literal(r))),
      error: Type.Optional(Type.Object({ policy: Type.String(), message: Type.String(), line: Type.Optional(Type.Integer()), column: Type.Optional(Type.Integer()) })),
    }),
  ),
  object: Type.Record(Type.String(), Type.Unknown(), { description: 'The completed object the policies saw' }),
  warnings: Type.Array(Type.String()),
});
