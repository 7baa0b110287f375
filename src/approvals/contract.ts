/**
 * The approvals' wire shapes, written once: the TypeBox schemas the routes validate and document with, and their
 * `Static<>` types, which the services return and the console imports (type-only, so nothing of the server
 * reaches its bundle). Keep this module to schemas and types: the console's compiler reads it.
 */
import { Type, type Static } from 'typebox';
import { Nullable } from '../shared/schemas.js';

export const AccessRequestTypeSchema = Type.Union([Type.Literal('exception'), Type.Literal('model_access'), Type.Literal('budget_topup')]);
export type AccessRequestType = Static<typeof AccessRequestTypeSchema>;

export const RequestStateSchema = Type.Union([Type.Literal('pending'), Type.Literal('under_review'), Type.Literal('approved'), Type.Literal('denied')]);
export type RequestState = Static<typeof RequestStateSchema>;

export const GrantStateSchema = Type.Union([Type.Literal('active'), Type.Literal('revoked'), Type.Literal('expired')]);
export type GrantState = Static<typeof GrantStateSchema>;

export const VoteSchema = Type.Union([Type.Literal('approve'), Type.Literal('deny')]);

const IdentityList = Type.Array(Type.String({ maxLength: 317 }), { maxItems: 20 });
const GrantSeconds = Type.Integer({ minimum: 60, maximum: 90 * 86_400 });

/** One recorded decision on a request (an admin's, or a co-signer's vote). */
export const RequestDecisionViewSchema = Type.Object({ approver: Type.String(), decision: VoteSchema, reason: Nullable(Type.String()), at: Type.String() });
export type RequestDecisionView = Static<typeof RequestDecisionViewSchema>;

export const AccessRequestSchema = Type.Object({
  id: Type.String(),
  type: AccessRequestTypeSchema,
  state: RequestStateSchema,
  requester: Type.String(),
  justification: Type.String({ description: 'Verbatim, as the developer wrote it; display as text, never as markup' }),
  targetPolicy: Nullable(Type.String()),
  requestedModel: Nullable(Type.String()),
  requestedAmountUsd: Nullable(Type.Number()),
  requiredApprovers: Type.Array(Type.String()),
  durationSeconds: Nullable(Type.Integer()),
  projectScope: Type.String(),
  decisions: Type.Array(RequestDecisionViewSchema),
  grantId: Nullable(Type.String()),
  denialReason: Nullable(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
});
export type AccessRequest = Static<typeof AccessRequestSchema>;

export const GrantSchema = Type.Object({
  id: Type.String(),
  type: AccessRequestTypeSchema,
  state: GrantStateSchema,
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
export type Grant = Static<typeof GrantSchema>;

/** The answer to an approval, a denial or a vote. */
export const DecisionOutcomeSchema = Type.Object({ request: AccessRequestSchema, grant: Nullable(GrantSchema), warnings: Type.Array(Type.String()) });
export type DecisionOutcome = Static<typeof DecisionOutcomeSchema>;

export const SubmitRequestBody = Type.Object(
  {
    type: AccessRequestTypeSchema,
    justification: Type.String({ minLength: 1, maxLength: 4000 }),
    targetPolicy: Type.Optional(Type.String({ maxLength: 63 })),
    requestedModel: Type.Optional(Type.String({ maxLength: 200 })),
    requestedAmountUsd: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000 })),
    requiredApprovers: Type.Optional(IdentityList),
    durationSeconds: Type.Optional(GrantSeconds),
    projectScope: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
);
export type SubmitInput = Static<typeof SubmitRequestBody>;

export const RequestQuery = Type.Object(
  { state: Type.Optional(RequestStateSchema), type: Type.Optional(AccessRequestTypeSchema), requester: Type.Optional(Type.String({ maxLength: 317 })) },
  { additionalProperties: false },
);
export type RequestFilter = Static<typeof RequestQuery>;

export const ApproveBody = Type.Object(
  {
    expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
    durationSeconds: Type.Optional(GrantSeconds),
    additionalApprovers: Type.Optional(IdentityList),
    raiseBudgetRule: Type.Optional(Type.Boolean()),
    permanentLimitUsd: Type.Optional(Type.Number({ minimum: 0, maximum: 1e9, description: 'Absolute USD, not an increment; required with raiseBudgetRule' })),
  },
  { additionalProperties: false },
);
export type ApproveInput = Static<typeof ApproveBody>;

export const DenyBody = Type.Object({ reason: Type.String({ maxLength: 4000 }) }, { additionalProperties: false });
export type DenyInput = Static<typeof DenyBody>;

export const VoteBody = Type.Object(
  {
    decision: VoteSchema,
    reason: Type.Optional(Type.String({ maxLength: 4000 })),
    approver: Type.Optional(Type.String({ maxLength: 317, description: 'If sent, must be the caller: a vote is recorded for oneself only' })),
  },
  { additionalProperties: false },
);
export type VoteInput = Static<typeof VoteBody>;

export const GrantQuery = Type.Object(
  { developerId: Type.Optional(Type.String({ maxLength: 317 })), policyName: Type.Optional(Type.String({ maxLength: 63 })) },
  { additionalProperties: false },
);
export type GrantFilter = Static<typeof GrantQuery>;

export const RevokedGrantSchema = Type.Object({ id: Type.String(), state: Type.Literal('revoked') });

export const ExceptionRuleBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    policyName: Type.String({ minLength: 1, maxLength: 63 }),
    maxDurationSeconds: Type.Integer({ minimum: 60, maximum: 90 * 86_400 }),
    requiredApprovers: Type.Optional(IdentityList),
    projectScope: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
);
export type ExceptionRuleBodyInput = Static<typeof ExceptionRuleBody>;

export const ExceptionRuleSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  policyName: Type.String(),
  maxDurationSeconds: Type.Integer(),
  requiredApprovers: Type.Array(Type.String()),
  projectScope: Type.String(),
});
export type ExceptionRule = Static<typeof ExceptionRuleSchema>;
/** A rule as the service stores it: the body with its defaults filled in. */
export type ExceptionRuleInput = Omit<ExceptionRule, 'id'>;

export const NotificationSchema = Type.Object({
  id: Type.String(),
  kind: Type.String(),
  message: Type.String(),
  requestId: Nullable(Type.String()),
  grantId: Nullable(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
  readAt: Nullable(Type.String({ format: 'date-time' })),
});
export type Notification = Static<typeof NotificationSchema>;

export const NotificationQuery = Type.Object({ unread: Type.Optional(Type.Boolean()) }, { additionalProperties: false });
export type NotificationFilter = Static<typeof NotificationQuery>;
