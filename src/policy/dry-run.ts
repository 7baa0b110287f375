/**
 * The dry run behind `POST /api/v1/policies/evaluate`: a sample policy object (possibly
 * partial, from a person) is validated, completed with defaults and evaluated, and every
 * policy's part in the decision is reported.
 */
import { ROLES } from '../shared/actor.js';
import type { CompiledPolicy, PolicyKind } from './compile-policy.js';
import { requestTypeBit } from './compile-policy.js';
import type { Decision, PolicyEvaluationError } from './decision.js';
import { evaluate, preparePolicyObject, runPolicy } from './engine.js';
import type { EvaluateOptions } from './engine.js';
import {
  AUTONOMY_TIERS,
  POLICY_OBJECT_SHAPE,
  autonomyLevelOf,
  createPolicyObject,
  isAutonomyTier,
} from './policy-object.js';
import type { JsonValue, PolicyObject, PolicyObjectInput, PolicyObjectShape } from './policy-object.js';
import { GOVERNED_CALL_TYPES, isGovernedCallType, type GovernedCallType } from '../shared/governed-call.js';

export interface SampleFieldError {
  /** The path in the sample, e.g. `object.agent.autonomyLevel`. */
  field: string;
  message: string;
}

export type PolicyParticipation =
  | 'matched'
  | 'not_matched'
  | 'failed'
  | 'disabled'
  | 'not_applicable'
  | 'exempt';

export interface DryRunPolicyResult {
  name: string;
  kind: PolicyKind;
  result: PolicyParticipation;
  error?: PolicyEvaluationError;
}

export interface DryRunResult {
  /** The completed object the policies saw. */
  object: PolicyObject;
  decision: Decision;
  /** Every policy given, in order, with what it did for this sample. */
  policies: DryRunPolicyResult[];
  /** Parts of the sample that had no effect. */
  warnings: string[];
}

export type ParseSampleResult =
  | { ok: true; object: PolicyObject; warnings: string[] }
  | { ok: false; errors: SampleFieldError[] };

export function dryRunEvaluate(
  policies: readonly CompiledPolicy[],
  sample: unknown,
  options?: EvaluateOptions,
): { ok: true; result: DryRunResult } | { ok: false; errors: SampleFieldError[] } {
  const parsed = parsePolicyObjectSample(sample);
  if (!parsed.ok) return parsed;
  const prepared = preparePolicyObject(parsed.object);
  const decision = evaluate(policies, prepared, options);
  const typeBit = requestTypeBit(parsed.object.request.type);
  const results = policies.map((policy): DryRunPolicyResult => {
    const { name, kind } = policy.policy;
    if (!policy.policy.enabled) return { name, kind, result: 'disabled' };
    if ((policy.appliesToMask & typeBit) === 0) return { name, kind, result: 'not_applicable' };
    if (options?.exemptPolicies?.has(name) ?? false) return { name, kind, result: 'exempt' };
    const run = runPolicy(policy, prepared.activation);
    return run.error === undefined ? { name, kind, result: run.verdict } : { name, kind, result: 'failed', error: run.error };
  });
  return { ok: true, result: { object: parsed.object, decision, policies: results, warnings: parsed.warnings } };
}

const INTEGER_RANGES: Readonly<Record<string, readonly [number, number]>> = {
  'agent.autonomyLevel': [1, 4],
  'llm.maxTokens': [0, 2 ** 31 - 1],
  'egress.port': [0, 65_535],
};

const ENUMS: Readonly<Record<string, readonly string[]>> = {
  'agent.autonomyTier': ['', ...AUTONOMY_TIERS],
  'developer.role': ['', ...ROLES],
  'request.type': GOVERNED_CALL_TYPES,
};

/**
 * Validates a sample object against the policy object's shape and completes it. Unknown
 * fields are errors (a misspelt field would otherwise silently take its zero value).
 */
export function parsePolicyObjectSample(sample: unknown): ParseSampleResult {
  const errors: SampleFieldError[] = [];
  const warnings: string[] = [];
  if (!isPlainObject(sample)) {
    return { ok: false, errors: [{ field: 'object', message: 'the sample must be a JSON object shaped like the policy object' }] };
  }
  const values = readShape(sample, POLICY_OBJECT_SHAPE, '', errors);
  if (errors.length > 0) return { ok: false, errors };

  const type = requestTypeOf(values, errors);
  const tier = values['agent.autonomyTier'];
  const level = values['agent.autonomyLevel'];
  if (isAutonomyTier(tier) && typeof level === 'number' && autonomyLevelOf(tier) !== level) {
    errors.push({
      field: 'object.agent.autonomyLevel',
      message: `autonomyLevel ${level} contradicts autonomyTier ${tier} (level ${autonomyLevelOf(tier)}); give one of them`,
    });
  }
  if (type === undefined || errors.length > 0) return { ok: false, errors };

  for (const section of ['llm', 'mcp', 'egress'] as const) {
    if (section !== type && section in sample) {
      warnings.push(`object.${section} is ignored for a request of type ${type}: sections of other request types hold zero values`);
    }
  }
  return { ok: true, object: createPolicyObject(toInput(values, type)), warnings };
}

type FlatValues = Record<string, string | number | boolean | { [key: string]: JsonValue }>;

function readShape(
  value: Record<string, unknown>,
  shape: PolicyObjectShape,
  prefix: string,
  errors: SampleFieldError[],
  out: FlatValues = {},
): FlatValues {
  for (const [key, item] of Object.entries(value)) {
    const path = prefix === '' ? key : `${prefix}.${key}`;
    const type = shape[key];
    if (type === undefined) {
      errors.push({
        field: `object.${path}`,
        message: `${key} is not part of the policy object; expected one of ${Object.keys(shape).join(', ')}`,
      });
      continue;
    }
    if (item === undefined || item === null) continue;
    if (typeof type !== 'string') {
      if (isPlainObject(item)) readShape(item, type, path, errors, out);
      else errors.push({ field: `object.${path}`, message: `${path} must be an object` });
      continue;
    }
    const problem = fieldProblem(path, type, item);
    if (problem === undefined) out[path] = item as FlatValues[string];
    else errors.push({ field: `object.${path}`, message: problem });
  }
  return out;
}

function fieldProblem(path: string, type: string, value: unknown): string | undefined {
  switch (type) {
    case 'string': {
      if (typeof value !== 'string') return `${path} must be a string`;
      const allowed = ENUMS[path];
      if (allowed !== undefined && !allowed.includes(value)) {
        return `${path} must be one of ${allowed.filter((v) => v !== '').join(', ')}${allowed.includes('') ? ' or empty' : ''}`;
      }
      return undefined;
    }
    case 'int': {
      const [min, max] = INTEGER_RANGES[path] ?? [0, Number.MAX_SAFE_INTEGER];
      if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
        return `${path} must be a whole number from ${min} to ${max}`;
      }
      return undefined;
    }
    case 'bool':
      return typeof value === 'boolean' ? undefined : `${path} must be true or false`;
    case 'map':
      return isPlainObject(value) ? undefined : `${path} must be a JSON object`;
    default:
      return `${path} has an unknown type`;
  }
}

function requestTypeOf(values: FlatValues, errors: SampleFieldError[]): GovernedCallType | undefined {
  const given = values['request.type'];
  if (isGovernedCallType(given)) return given;
  const present = GOVERNED_CALL_TYPES.filter((type) => Object.keys(values).some((path) => path.startsWith(`${type}.`)));
  if (present.length === 1) return present[0];
  errors.push({
    field: 'object.request.type',
    message: `request.type is required (one of ${GOVERNED_CALL_TYPES.join(', ')}) unless the sample has exactly one of the llm, mcp and egress sections`,
  });
  return undefined;
}

function toInput(values: FlatValues, type: GovernedCallType): PolicyObjectInput {
  const input: Record<string, Record<string, unknown>> = { request: { type } };
  for (const [path, value] of Object.entries(values)) {
    const parts = path.split('.');
    let target = input;
    for (const part of parts.slice(0, -1)) {
      target = (target[part] ??= {}) as Record<string, Record<string, unknown>>;
    }
    (target as Record<string, unknown>)[parts[parts.length - 1] as string] = value;
  }
  return input as unknown as PolicyObjectInput;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
