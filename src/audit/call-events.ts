/**
 * The audit events of one governed call (LLM request, MCP tool call, egress request or tunnel). The log is
 * append-only, and a replica can stop at any moment, so a call is recorded in two steps, never by updating a row:
 *
 *   decision event  `llm.request`, `mcp.tool_call`, `egress.request`, `egress.connect`: written when the call is
 *                   allowed (or parked for a person), before anything is forwarded: who, what, which policy decided.
 *   end event       the same action with `_end` (`llm.request_end`, …): written when the call is over: status, how
 *                   it ended, duration, tokens and cost, bytes.
 *
 * Both carry the same `data.callId`. A call refused at once (policy, model access, budget, bad request) is one
 * event, the decision action with its outcome in it (`data.end` = `refused`): there is nothing left to wait for.
 * A decision event without `data.end` and without an end event is a call in flight, or one whose replica stopped
 * before it ended: its outcome is unknown (the list route says so with `callEnded: false`).
 *
 * Counting: every call has exactly one decision event, so counts of calls (the runtime guard's `n` and
 * `governedCalls`, spend's `requests`) count decision events only; tokens and cost live on end events only (or on
 * the single event of a refused call, where they are null).
 */
import { randomBytes } from 'node:crypto';

export const CALL_DECISION_ACTIONS: readonly string[] = ['llm.request', 'mcp.tool_call', 'egress.request', 'egress.connect'];
export const CALL_END_ACTIONS: readonly string[] = CALL_DECISION_ACTIONS.map((a) => `${a}_end`);

const END_ACTIONS: ReadonlySet<string> = new Set(CALL_END_ACTIONS);
const DECISION_ACTIONS: ReadonlySet<string> = new Set(CALL_DECISION_ACTIONS);

/** The end event's action for a decision action. */
export function endActionOf(decisionAction: string): string {
  return `${decisionAction}_end`;
}

export function isCallEnd(action: string): boolean {
  return END_ACTIONS.has(action);
}

export function isCallDecision(action: string): boolean {
  return DECISION_ACTIONS.has(action);
}

/** 96 random bits per process: replicas (and restarts) never share a prefix, so they never need to agree on a counter. */
const PREFIX = `${randomBytes(12).toString('base64url')}.`;
let counter = 0;

/** Joins a call's decision and end events: this process's random prefix and a counter (cheaper than a UUID per call). */
export function newCallId(): string {
  counter += 1;
  return PREFIX + counter.toString(36);
}
