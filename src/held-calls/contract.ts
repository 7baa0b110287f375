/**
 * The held calls' wire shapes, written once: the TypeBox schemas the routes validate and document with, and their
 * `Static<>` types, which the registry and settings return and the console imports (type-only). Keep this module
 * to schemas and types: the console's compiler reads it.
 */
import { Type, type Static } from 'typebox';
import { Nullable } from '../shared/schemas.js';

export const HeldCallStateSchema = Type.Union([Type.Literal('pending'), Type.Literal('released'), Type.Literal('stopped'), Type.Literal('timed_out')]);
export type HeldCallState = Static<typeof HeldCallStateSchema>;

/** What happens to a held call nobody decided in its approval window. */
export const TimeoutOutcomeSchema = Type.Union([Type.Literal('deny'), Type.Literal('allow')]);
export type TimeoutOutcome = Static<typeof TimeoutOutcomeSchema>;

export const HeldCallSchema = Type.Object({
  id: Type.String(),
  kind: Type.Union([Type.Literal('llm'), Type.Literal('mcp')]),
  state: HeldCallStateSchema,
  timeoutOutcome: Nullable(TimeoutOutcomeSchema),
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
export type HeldCall = Static<typeof HeldCallSchema>;

export const HeldCallQuery = Type.Object({ state: Type.Optional(HeldCallStateSchema) }, { additionalProperties: false });
export type HeldCallFilter = Static<typeof HeldCallQuery>;

export const ReleaseBody = Type.Object({}, { additionalProperties: false });
export const StopBody = Type.Object({ note: Type.String({ maxLength: 4000 }) }, { additionalProperties: false });
export type StopInput = Static<typeof StopBody>;

/** Settings > General > Human Review. */
export const HumanReviewSchema = Type.Object(
  {
    llmApprovalWindowSeconds: Type.Integer({ minimum: 30, maximum: 86_400 }),
    mcpApprovalWindowSeconds: Type.Integer({ minimum: 30, maximum: 86_400 }),
    timeoutOutcome: TimeoutOutcomeSchema,
  },
  { additionalProperties: false },
);
export type HumanReviewSettings = Static<typeof HumanReviewSchema>;
