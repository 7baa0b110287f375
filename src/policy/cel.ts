/**
 * CEL for policies, on @bufbuild/cel (chosen in bench/cel-engines/RESULTS.md: linear-time RE2
 * regular expressions, CEL-spec semantics). Compile once with `compileExpression`, build the
 * activation once per request with `toActivation`, then `runExpression` per policy.
 */
import { celEnv, celList, celMap, isCelError, parse, plan } from '@bufbuild/cel';
import type { CelInput, CelResult } from '@bufbuild/cel';
import { RE2JS } from '@bufbuild/re2';
import { strings } from '@bufbuild/cel/ext';
import { checkExpression } from './cel-check.js';
import { POLICY_OBJECT_SHAPE } from './policy-object.js';
import type { JsonValue, PolicyObject, PolicyObjectShape } from './policy-object.js';

/** The longest `match` expression accepted, in characters. */
export const MAX_EXPRESSION_LENGTH = 4096;

export interface SourcePosition {
  /** 1-based. */
  line: number;
  /** 1-based, in characters of the line. */
  column: number;
}

export interface CelCompileError extends SourcePosition {
  message: string;
}

export interface CelRuntimeError extends Partial<SourcePosition> {
  message: string;
}

declare const compiledBrand: unique symbol;
declare const activationBrand: unique symbol;

/** A compiled `match` expression; opaque outside this module. */
export interface CompiledExpression {
  readonly [compiledBrand]: true;
  readonly source: string;
}

/** The policy object converted once into CEL values, shared by every policy of one request. */
export interface PolicyActivation {
  readonly [activationBrand]: true;
}

type Program = ReturnType<typeof plan>;

interface CompiledExpressionImpl {
  readonly source: string;
  readonly program: Program;
  readonly positions: { readonly [id: string]: number };
}

type Bindings = Record<string, CelInput>;

/**
 * `matches()` with the same RE2 engine @bufbuild/cel uses by default, but each pattern compiled once: a
 * policy's pattern is a literal, so compiling it on every call (the default) cost several µs per
 * evaluation. Bounded, because a pattern can also come from request data.
 */
type RE2 = NonNullable<NonNullable<Parameters<typeof celEnv>[0]>['re2']>;
type Matcher = ReturnType<RE2['compile']>;
const MAX_CACHED_PATTERNS = 1000;
const patterns = new Map<string, Matcher>();
const cachingRe2: RE2 = {
  compile(pattern: string): Matcher {
    let matcher = patterns.get(pattern);
    if (matcher === undefined) {
      matcher = RE2JS.compile(pattern);
      if (patterns.size >= MAX_CACHED_PATTERNS) patterns.clear();
      patterns.set(pattern, matcher);
    }
    return matcher;
  },
};

// One environment for every policy: the standard library plus the strings extension
// (lowerAscii, split, replace, ...). Creating it is costly; it holds no per-call state.
const environment = celEnv({ funcs: strings, re2: cachingRe2 });

export type CompileExpressionResult =
  | { ok: true; expression: CompiledExpression }
  | { ok: false; error: CelCompileError };

export function compileExpression(
  source: string,
  shape: PolicyObjectShape = POLICY_OBJECT_SHAPE,
): CompileExpressionResult {
  if (source.trim() === '') return failAt(source, 0, 'the expression is empty');
  if (source.length > MAX_EXPRESSION_LENGTH) {
    return failAt(source, MAX_EXPRESSION_LENGTH, `the expression is longer than ${MAX_EXPRESSION_LENGTH} characters`);
  }
  const lexical = scanLexicalProblem(source);
  if (lexical !== undefined) return failAt(source, lexical.offset, lexical.message);

  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(source);
  } catch (error) {
    const { offset, message } = describeSyntaxError(source, error);
    return failAt(source, offset, message);
  }

  const problem = checkExpression(parsed, shape, regexProblem);
  if (problem !== undefined) return failAt(source, fieldOffset(source, problem.offset), problem.message);

  const impl: CompiledExpressionImpl = {
    source,
    program: plan(environment, parsed),
    positions: parsed.sourceInfo?.positions ?? {},
  };
  return { ok: true, expression: impl as unknown as CompiledExpression };
}

/** The outcome of one expression: its boolean value, or why it has none. */
export type ExpressionOutcome = boolean | CelRuntimeError;

export function runExpression(expression: CompiledExpression, activation: PolicyActivation): ExpressionOutcome {
  const impl = expression as unknown as CompiledExpressionImpl;
  const result: CelResult = impl.program(activation as unknown as Bindings);
  if (result === true || result === false) return result;
  if (isCelError(result)) {
    const offset = result.exprId === undefined ? undefined : impl.positions[String(result.exprId)];
    return offset === undefined
      ? { message: result.message }
      : { message: result.message, ...positionAt(impl.source, fieldOffset(impl.source, offset)) };
  }
  return { message: `the expression produced ${describeValue(result)} instead of true or false` };
}

type ObjectRecord = { readonly [key: string]: unknown };
type Converter = (value: unknown) => CelInput;

/** Builds, once, a converter that walks exactly the fields of `shape`. */
function converterFor(shape: PolicyObjectShape): Converter {
  const fields = Object.entries(shape).map(([field, type]): readonly [string, Converter] => {
    if (typeof type !== 'string') return [field, converterFor(type)];
    // Integers are CEL ints (bigint): `object.agent.autonomyLevel >= 3` compares int with int.
    if (type === 'int') return [field, (raw) => BigInt(Math.trunc(typeof raw === 'number' ? raw : 0))];
    if (type === 'map') return [field, (raw) => jsonToCel((raw ?? {}) as JsonValue)];
    return [field, (raw) => raw as CelInput];
  });
  return (value) => {
    const record = (value ?? {}) as ObjectRecord;
    const entries = new Map<string, CelInput>();
    for (const [field, convert] of fields) entries.set(field, convert(record[field]));
    return celMap(entries);
  };
}

const convertPolicyObject = converterFor(POLICY_OBJECT_SHAPE);

/** Converts the policy object once per request; every policy of that request reads the result. */
export function toActivation(object: PolicyObject): PolicyActivation {
  const bindings: Bindings = { object: convertPolicyObject(object) };
  return bindings as unknown as PolicyActivation;
}

/** JSON as CEL sees it through google.protobuf.Struct: numbers are doubles. */
function jsonToCel(value: JsonValue): CelInput {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return celList(value.map(jsonToCel));
  const entries = new Map<string, CelInput>();
  for (const [key, item] of Object.entries(value)) entries.set(key, jsonToCel(item));
  return celMap(entries);
}

const tryRegex = plan(environment, parse('"".matches(pattern)'));

/** RE2 syntax check of a literal pattern, by the same engine that will run it. */
function regexProblem(pattern: string): string | undefined {
  const result = tryRegex({ pattern });
  return isCelError(result) ? result.message : undefined;
}

function failAt(source: string, offset: number, message: string): { ok: false; error: CelCompileError } {
  return { ok: false, error: { message, ...positionAt(source, offset) } };
}

/** The parser places a field selection at its dot; people look for the field name after it. */
function fieldOffset(source: string, offset: number): number {
  return source[offset] === '.' ? offset + 1 : offset;
}

export function positionAt(source: string, offset: number): SourcePosition {
  const clamped = Math.max(0, Math.min(offset, source.length));
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < clamped; i++) {
    if (source.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: clamped - lineStart + 1 };
}

interface LexicalProblem {
  offset: number;
  message: string;
}

const CLOSING: Readonly<Record<string, string>> = { '(': ')', '[': ']', '{': '}' };

/**
 * Finds unterminated strings and unbalanced brackets before the parser runs: the parser
 * reports those far from their cause (at the last operator it could not attach).
 */
function scanLexicalProblem(source: string): LexicalProblem | undefined {
  const open: { char: string; offset: number }[] = [];
  let i = 0;
  while (i < source.length) {
    const char = source[i] as string;
    if (char === '/' && source[i + 1] === '/') {
      while (i < source.length && source[i] !== '\n') i++;
      continue;
    }
    if (char === '"' || char === "'") {
      const end = endOfString(source, i);
      if (end === undefined) return { offset: stringStart(source, i), message: 'this string is never closed' };
      i = end;
      continue;
    }
    if (char === '(' || char === '[' || char === '{') open.push({ char, offset: i });
    if (char === ')' || char === ']' || char === '}') {
      const last = open.pop();
      if (last === undefined) return { offset: i, message: `"${char}" has no matching opening bracket` };
      if (CLOSING[last.char] !== char) {
        return { offset: i, message: `"${char}" does not close "${last.char}" (opened at column ${positionAt(source, last.offset).column})` };
      }
    }
    i++;
  }
  const unclosed = open.pop();
  return unclosed === undefined ? undefined : { offset: unclosed.offset, message: `"${unclosed.char}" is never closed` };
}

/** The offset after the string literal whose quote is at `quote`, or undefined if it never ends. */
function endOfString(source: string, quote: number): number | undefined {
  const char = source[quote] as string;
  const raw = /[rR]/.test(source.slice(stringStart(source, quote), quote));
  const triple = source.startsWith(char.repeat(3), quote);
  const delimiter = triple ? char.repeat(3) : char;
  let i = quote + delimiter.length;
  while (i < source.length) {
    if (!raw && source[i] === '\\') {
      i += 2;
      continue;
    }
    if (!triple && source[i] === '\n') return undefined;
    if (source.startsWith(delimiter, i)) return i + delimiter.length;
    i++;
  }
  return undefined;
}

/** The offset of a string literal including its r/b prefix (`r"..."`, `br'...'`). */
function stringStart(source: string, quote: number): number {
  const prefix = /(?:^|[^A-Za-z0-9_])([rRbB]{1,2})$/.exec(source.slice(Math.max(0, quote - 3), quote));
  return prefix?.[1] === undefined ? quote : quote - prefix[1].length;
}

interface PeggyLikeError {
  location?: { start?: { offset?: number } };
  rawMessage?: string;
}

function describeSyntaxError(source: string, error: unknown): LexicalProblem {
  const details = (typeof error === 'object' && error !== null ? error : {}) as PeggyLikeError;
  const offset = details.location?.start?.offset ?? 0;
  const rest = source.slice(offset).trimEnd();
  if (rest === '') return { offset, message: 'syntax error: the expression ends too early' };
  const snippet = rest.length > 24 ? `${rest.slice(0, 24)}...` : rest;
  const reason = details.rawMessage === 'reserved keyword' ? ': reserved word' : '';
  // The parser stops at the start of the construct it could not complete, which is where a
  // person should look; its "expecting end of input" wording would mislead, so it is dropped.
  return { offset, message: `syntax error: cannot read the expression from "${snippet}"${reason}` };
}

function describeValue(value: unknown): string {
  if (typeof value === 'bigint') return `the int ${value}`;
  if (typeof value === 'number') return `the double ${value}`;
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`;
  if (value === null) return 'null';
  return 'a value';
}
