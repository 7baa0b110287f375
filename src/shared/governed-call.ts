/**
 * The types of governed call, one per data plane: what a policy's `appliesTo` and its object's `request.type`
 * name, and what the runtime guard reconciles observed traffic against.
 */
export const GOVERNED_CALL_TYPES = ['llm', 'mcp', 'egress'] as const;
export type GovernedCallType = (typeof GOVERNED_CALL_TYPES)[number];

export function isGovernedCallType(value: unknown): value is GovernedCallType {
  return typeof value === 'string' && (GOVERNED_CALL_TYPES as readonly string[]).includes(value);
}
