/**
 * A policy as the API carries it, its validation, and its compiled form. Compile once when a
 * policy is saved or loaded; the gateway evaluates the compiled form on every call.
 */
import { compileExpression } from './cel.js';
import type { CompiledExpression } from './cel.js';
import { GOVERNED_CALL_TYPES, isGovernedCallType, type GovernedCallType } from '../shared/governed-call.js';
import { POLICY_KINDS, type Policy, type PolicyKind } from './contract.js';

export { POLICY_KINDS, type Policy, type PolicyKind } from './contract.js';

/** Names are lower-case words joined by hyphens, like the built-ins: `autonomy-tool-approval`. */
export const POLICY_NAME_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
export const MAX_POLICY_MESSAGE_LENGTH = 1000;
/** Shorter than 30 s leaves no time for a person to act. */
export const MIN_APPROVAL_WINDOW_SECONDS = 30;
/** One day: a call parked longer than that has lost its caller. */
export const MAX_APPROVAL_WINDOW_SECONDS = 86_400;

/** A policy as a client sends it, unchecked: `compilePolicy` checks every field (the wire shape is contract.ts's `Policy`). */
export interface PolicyInput {
  name: unknown;
  kind: unknown;
  appliesTo: unknown;
  match: unknown;
  message: unknown;
  approvalWindowSeconds?: unknown;
  enabled?: unknown;
  builtIn?: unknown;
}

export type PolicyField = keyof Policy;

export type PolicyFieldError =
  | { field: 'match'; message: string; line: number; column: number }
  | { field: Exclude<PolicyField, 'match'>; message: string };

export interface DecidingPolicy {
  readonly name: string;
  readonly kind: PolicyKind;
  readonly message: string;
  readonly approvalWindowSeconds?: number;
}

export interface MatchedPolicy {
  readonly name: string;
  readonly kind: PolicyKind;
}

export interface CompiledPolicy {
  readonly policy: Readonly<Policy>;
  readonly expression: CompiledExpression;
  /** Bit per request type (see `requestTypeBit`), so filtering costs no allocation. */
  readonly appliesToMask: number;
  /** Prebuilt parts of a decision, shared by every decision this policy takes part in. */
  readonly asDeciding: DecidingPolicy;
  readonly asMatched: MatchedPolicy;
}

export type CompilePolicyResult = { ok: true; compiled: CompiledPolicy } | { ok: false; errors: PolicyFieldError[] };

export function requestTypeBit(type: GovernedCallType): number {
  return 1 << GOVERNED_CALL_TYPES.indexOf(type);
}

/**
 * Validates every field and compiles `match`. All problems are reported at once, each naming
 * its field; a `match` problem also carries its 1-based line and column.
 */
export function compilePolicy(input: PolicyInput): CompilePolicyResult {
  const errors: PolicyFieldError[] = [];
  const name = checkName(input.name, errors);
  const kind = checkKind(input.kind, errors);
  const appliesTo = checkAppliesTo(input.appliesTo, errors);
  const message = checkMessage(input.message, errors);
  const approvalWindowSeconds = checkApprovalWindow(input.approvalWindowSeconds, kind, errors);
  const enabled = checkFlag('enabled', input.enabled, true, errors);
  const builtIn = checkFlag('builtIn', input.builtIn, false, errors);

  let expression: CompiledExpression | undefined;
  if (typeof input.match !== 'string') {
    errors.push({ field: 'match', message: 'match must be a CEL expression in a string', line: 1, column: 1 });
  } else {
    const compiled = compileExpression(input.match);
    if (compiled.ok) expression = compiled.expression;
    else errors.push({ field: 'match', ...compiled.error });
  }

  if (
    errors.length > 0 ||
    name === undefined ||
    kind === undefined ||
    appliesTo === undefined ||
    message === undefined ||
    expression === undefined
  ) {
    return { ok: false, errors };
  }

  const policy: Policy = {
    name,
    kind,
    appliesTo,
    match: input.match as string,
    message,
    ...(approvalWindowSeconds === undefined ? {} : { approvalWindowSeconds }),
    enabled,
    builtIn,
  };
  const asDeciding: DecidingPolicy = Object.freeze({
    name,
    kind,
    message,
    ...(approvalWindowSeconds === undefined ? {} : { approvalWindowSeconds }),
  });
  return {
    ok: true,
    compiled: Object.freeze({
      policy: Object.freeze(policy),
      expression,
      appliesToMask: appliesTo.reduce((mask, type) => mask | requestTypeBit(type), 0),
      asDeciding,
      asMatched: Object.freeze({ name, kind }),
    }),
  };
}

function checkName(value: unknown, errors: PolicyFieldError[]): string | undefined {
  if (typeof value === 'string' && POLICY_NAME_PATTERN.test(value)) return value;
  errors.push({
    field: 'name',
    message:
      'name must be 1 to 63 lower-case letters, digits and hyphens, starting and ending with a letter or digit (for example "block-prod-egress")',
  });
  return undefined;
}

function checkKind(value: unknown, errors: PolicyFieldError[]): PolicyKind | undefined {
  if (typeof value === 'string' && (POLICY_KINDS as readonly string[]).includes(value)) return value as PolicyKind;
  errors.push({ field: 'kind', message: `kind must be one of ${POLICY_KINDS.join(', ')}` });
  return undefined;
}

function checkAppliesTo(value: unknown, errors: PolicyFieldError[]): GovernedCallType[] | undefined {
  const allowed = GOVERNED_CALL_TYPES.join(', ');
  if (!Array.isArray(value) || value.length === 0) {
    errors.push({ field: 'appliesTo', message: `appliesTo must list at least one request type of ${allowed}` });
    return undefined;
  }
  const unknown = value.filter((item) => !isGovernedCallType(item));
  if (unknown.length > 0) {
    errors.push({
      field: 'appliesTo',
      message: `appliesTo has ${unknown.map((item) => JSON.stringify(item)).join(', ')}; request types are ${allowed}`,
    });
    return undefined;
  }
  if (new Set(value).size !== value.length) {
    errors.push({ field: 'appliesTo', message: 'appliesTo lists a request type twice' });
    return undefined;
  }
  return [...(value as GovernedCallType[])];
}

function checkMessage(value: unknown, errors: PolicyFieldError[]): string | undefined {
  if (typeof value !== 'string' || value.trim() === '') {
    errors.push({ field: 'message', message: 'message must say, for the person affected, why and what they can do' });
    return undefined;
  }
  if (value.length > MAX_POLICY_MESSAGE_LENGTH) {
    errors.push({
      field: 'message',
      message: `message must be at most ${MAX_POLICY_MESSAGE_LENGTH} characters (it has ${value.length})`,
    });
    return undefined;
  }
  return value;
}

function checkApprovalWindow(value: unknown, kind: PolicyKind | undefined, errors: PolicyFieldError[]): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (kind !== undefined && kind !== 'approve') {
    errors.push({ field: 'approvalWindowSeconds', message: 'approvalWindowSeconds applies only to approve policies' });
    return undefined;
  }
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < MIN_APPROVAL_WINDOW_SECONDS ||
    value > MAX_APPROVAL_WINDOW_SECONDS
  ) {
    errors.push({
      field: 'approvalWindowSeconds',
      message: `approvalWindowSeconds must be a whole number of seconds from ${MIN_APPROVAL_WINDOW_SECONDS} to ${MAX_APPROVAL_WINDOW_SECONDS}`,
    });
    return undefined;
  }
  return value;
}

function checkFlag(
  field: 'enabled' | 'builtIn',
  value: unknown,
  fallback: boolean,
  errors: PolicyFieldError[],
): boolean {
  if (value === undefined) return fallback;
  if (typeof value === 'boolean') return value;
  errors.push({ field, message: `${field} must be true or false` });
  return fallback;
}
