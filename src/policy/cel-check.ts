/**
 * A static check of a parsed `match` expression against the shape of the policy object.
 *
 * @bufbuild/cel has no public type checker, and at run time it answers `false` for a comparison
 * of unlike types (`object.agent.autonomyLevel == "3"`) and an error for an unknown field. Under
 * the fail-closed rule an unknown field in a deny policy would deny every call, and a mistyped
 * comparison would silently never match. This check refuses both when the policy is saved, with
 * the position of the offending part. It is deliberately conservative: anything it cannot type
 * is `dyn` and left to run time.
 */
import type { parse } from '@bufbuild/cel';
import type { PolicyFieldType, PolicyObjectShape } from './policy-object.js';

type ParsedExpr = ReturnType<typeof parse>;
type Expr = ParsedExpr['expr'];
type ExprKind = Expr['exprKind'];
type KindValue<C extends NonNullable<ExprKind['case']>> = Extract<ExprKind, { case: C }>['value'];
type CallExpr = KindValue<'callExpr'>;
type SelectExpr = KindValue<'selectExpr'>;
type ComprehensionExpr = KindValue<'comprehensionExpr'>;
type StructExpr = KindValue<'structExpr'>;
type Constant = KindValue<'constExpr'>;

type Primitive =
  | 'bool'
  | 'int'
  | 'uint'
  | 'double'
  | 'string'
  | 'bytes'
  | 'null'
  | 'list'
  | 'map'
  | 'timestamp'
  | 'duration'
  | 'type';

type StaticType =
  | { readonly kind: 'prim'; readonly name: Primitive; readonly label?: string }
  | { readonly kind: 'shape'; readonly shape: PolicyObjectShape; readonly label: string }
  | { readonly kind: 'dyn' };

export interface StaticCheckError {
  message: string;
  /** Offset into the source, in UTF-16 code units. */
  offset: number;
}

const DYN: StaticType = { kind: 'dyn' };
const BOOL: StaticType = { kind: 'prim', name: 'bool' };
const INT: StaticType = { kind: 'prim', name: 'int' };
const STRING: StaticType = { kind: 'prim', name: 'string' };
const LIST: StaticType = { kind: 'prim', name: 'list' };
const MAP: StaticType = { kind: 'prim', name: 'map' };
const TYPE: StaticType = { kind: 'prim', name: 'type' };

const TYPE_NAMES = new Set(['bool', 'int', 'uint', 'double', 'string', 'bytes', 'list', 'map', 'null_type', 'type', 'dyn']);
const NUMERIC = new Set<Primitive>(['int', 'uint', 'double']);
const ORDERED = new Set<Primitive>(['string', 'bytes', 'bool', 'timestamp', 'duration']);

/** Global functions: name -> [min args, max args, result]. */
const GLOBAL_FUNCTIONS: ReadonlyMap<string, readonly [number, number, StaticType]> = new Map([
  ['size', [1, 1, INT]],
  ['int', [1, 1, INT]],
  ['uint', [1, 1, { kind: 'prim', name: 'uint' }]],
  ['double', [1, 1, { kind: 'prim', name: 'double' }]],
  ['string', [1, 1, STRING]],
  ['bool', [1, 1, BOOL]],
  ['bytes', [1, 1, { kind: 'prim', name: 'bytes' }]],
  ['timestamp', [1, 1, { kind: 'prim', name: 'timestamp' }]],
  ['duration', [1, 1, { kind: 'prim', name: 'duration' }]],
  ['dyn', [1, 1, DYN]],
  ['type', [1, 1, TYPE]],
]);

interface MethodSignature {
  readonly receivers: readonly Primitive[];
  /** Parameter types; the trailing ones past `required` are optional. */
  readonly params: readonly Primitive[];
  readonly required: number;
  readonly result: StaticType;
}

function method(receivers: readonly Primitive[], params: readonly Primitive[], required: number, result: StaticType): MethodSignature {
  return { receivers, params, required, result };
}

const TIME_GETTERS = [
  'getFullYear',
  'getMonth',
  'getDate',
  'getDayOfMonth',
  'getDayOfWeek',
  'getDayOfYear',
  'getHours',
  'getMinutes',
  'getSeconds',
  'getMilliseconds',
] as const;

/** Methods of the standard library and the strings extension. */
const METHODS: ReadonlyMap<string, MethodSignature> = new Map<string, MethodSignature>([
  ['size', method(['string', 'bytes', 'list', 'map'], [], 0, INT)],
  ['startsWith', method(['string'], ['string'], 1, BOOL)],
  ['endsWith', method(['string'], ['string'], 1, BOOL)],
  ['contains', method(['string'], ['string'], 1, BOOL)],
  ['matches', method(['string'], ['string'], 1, BOOL)],
  ['charAt', method(['string'], ['int'], 1, STRING)],
  ['indexOf', method(['string'], ['string', 'int'], 1, INT)],
  ['lastIndexOf', method(['string'], ['string', 'int'], 1, INT)],
  ['lowerAscii', method(['string'], [], 0, STRING)],
  ['upperAscii', method(['string'], [], 0, STRING)],
  ['trim', method(['string'], [], 0, STRING)],
  ['replace', method(['string'], ['string', 'string', 'int'], 2, STRING)],
  ['split', method(['string'], ['string', 'int'], 1, LIST)],
  ['substring', method(['string'], ['int', 'int'], 1, STRING)],
  ['format', method(['string'], ['list'], 1, STRING)],
  ['join', method(['list'], ['string'], 0, STRING)],
  ...TIME_GETTERS.map((name) => [name, method(['timestamp', 'duration'], ['string'], 0, INT)] as const),
]);

const OPERATOR_TEXT: Readonly<Record<string, string>> = {
  '_==_': '==',
  '_!=_': '!=',
  '_<_': '<',
  '_<=_': '<=',
  '_>_': '>',
  '_>=_': '>=',
  '_+_': '+',
  '_-_': '-',
  '_*_': '*',
  '_/_': '/',
  '_%_': '%',
  '_&&_': '&&',
  '_||_': '||',
  '!_': '!',
  '-_': '-',
};

class StaticCheckFailure extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/**
 * Checks `parsed` against the policy object shape. Returns the first problem found, in
 * source order, or undefined when the expression is acceptable.
 */
export function checkExpression(
  parsed: ParsedExpr,
  shape: PolicyObjectShape,
  validateRegex: (pattern: string) => string | undefined,
): StaticCheckError | undefined {
  const positions = parsed.sourceInfo?.positions ?? {};
  const checker = new Checker(shape, positions, validateRegex);
  try {
    const result = checker.typeOf(parsed.expr, new Map());
    if (result.kind === 'prim' && result.name !== 'bool') {
      throw new StaticCheckFailure(
        `a match expression must be true or false, but this one is ${describe(result)}`,
        checker.offsetOf(parsed.expr),
      );
    }
    if (result.kind === 'shape') {
      throw new StaticCheckFailure(
        `a match expression must be true or false, but this one is ${result.label}, a map`,
        checker.offsetOf(parsed.expr),
      );
    }
    return undefined;
  } catch (error) {
    if (error instanceof StaticCheckFailure) return { message: error.message, offset: error.offset };
    throw error;
  }
}

type Scope = ReadonlyMap<string, StaticType>;

class Checker {
  constructor(
    private readonly shape: PolicyObjectShape,
    private readonly positions: { readonly [id: string]: number },
    private readonly validateRegex: (pattern: string) => string | undefined,
  ) {}

  offsetOf(expr: Expr): number {
    return this.positions[String(expr.id)] ?? 0;
  }

  private fail(expr: Expr, message: string): never {
    throw new StaticCheckFailure(message, this.offsetOf(expr));
  }

  typeOf(expr: Expr, scope: Scope): StaticType {
    const kind = expr.exprKind;
    switch (kind.case) {
      case 'constExpr':
        return constantType(kind.value);
      case 'identExpr':
        return this.identType(expr, kind.value.name, scope);
      case 'selectExpr':
        return this.selectType(expr, kind.value, scope);
      case 'callExpr':
        return this.callType(expr, kind.value, scope);
      case 'listExpr':
        for (const element of kind.value.elements) this.typeOf(element, scope);
        return LIST;
      case 'structExpr':
        return this.structType(expr, kind.value, scope);
      case 'comprehensionExpr':
        return this.comprehensionType(expr, kind.value, scope);
      default:
        return DYN;
    }
  }

  private identType(expr: Expr, name: string, scope: Scope): StaticType {
    const bound = scope.get(name);
    if (bound !== undefined) return bound;
    if (name === 'object') return { kind: 'shape', shape: this.shape, label: 'object' };
    if (TYPE_NAMES.has(name)) return TYPE;
    return this.fail(
      expr,
      `unknown name "${name}": a policy reads the request as "object", for example object.agent.autonomyTier`,
    );
  }

  private selectType(expr: Expr, select: SelectExpr, scope: Scope): StaticType {
    if (select.operand === undefined) return DYN;
    const operand = this.typeOf(select.operand, scope);
    const field = select.field;
    if (operand.kind === 'shape') {
      const child = operand.shape[field];
      if (child === undefined) {
        const fields = Object.keys(operand.shape);
        const hint = closest(field, fields);
        return this.fail(
          expr,
          `${operand.label} has no field "${field}"${hint === undefined ? '' : ` (did you mean "${hint}"?)`}; ` +
            `its fields are ${fields.join(', ')}`,
        );
      }
      if (select.testOnly) return BOOL;
      const label = `${operand.label}.${field}`;
      return typeof child === 'string' ? leafType(child, label) : { kind: 'shape', shape: child, label };
    }
    if (operand.kind === 'dyn' || operand.name === 'map') return select.testOnly ? BOOL : DYN;
    return this.fail(
      expr,
      select.testOnly
        ? `has() needs a map or a section of object, but ${describe(operand)} has no fields`
        : `cannot read field "${field}" of ${describe(operand)}`,
    );
  }

  private structType(expr: Expr, struct: StructExpr, scope: Scope): StaticType {
    if (struct.messageName !== '') {
      return this.fail(expr, `message types such as "${struct.messageName}" are not available in policies`);
    }
    for (const entry of struct.entries) {
      if (entry.keyKind.case === 'mapKey') this.typeOf(entry.keyKind.value, scope);
      if (entry.value !== undefined) this.typeOf(entry.value, scope);
    }
    return MAP;
  }

  private comprehensionType(expr: Expr, loop: ComprehensionExpr, scope: Scope): StaticType {
    if (loop.iterRange !== undefined) {
      const range = this.typeOf(loop.iterRange, scope);
      if (range.kind === 'prim' && range.name !== 'list' && range.name !== 'map') {
        this.fail(loop.iterRange, `a macro such as exists() or all() needs a list or a map, but ${describe(range)} is neither`);
      }
    }
    const inner = new Map(scope);
    inner.set(loop.accuVar, loop.accuInit === undefined ? DYN : this.typeOf(loop.accuInit, scope));
    inner.set(loop.iterVar, DYN);
    if (loop.iterVar2 !== '') inner.set(loop.iterVar2, DYN);
    if (loop.loopCondition !== undefined) this.typeOf(loop.loopCondition, inner);
    if (loop.loopStep !== undefined) this.typeOf(loop.loopStep, inner);
    return loop.result === undefined ? DYN : this.typeOf(loop.result, inner);
  }

  private callType(expr: Expr, call: CallExpr, scope: Scope): StaticType {
    const name = call.function;
    if (call.target !== undefined) return this.methodType(expr, call, scope);
    const args = call.args.map((arg) => this.typeOf(arg, scope));
    const [left, right] = args;
    switch (name) {
      case '_&&_':
      case '_||_':
        call.args.forEach((arg, i) => this.requireBool(arg, args[i] ?? DYN, OPERATOR_TEXT[name] ?? name));
        return BOOL;
      case '!_':
        this.requireBool(call.args[0] ?? expr, left ?? DYN, '!');
        return BOOL;
      case '@not_strictly_false':
      case '__not_strictly_false__':
        return BOOL;
      case '_?_:_': {
        this.requireBool(call.args[0] ?? expr, left ?? DYN, '? :');
        const [, whenTrue = DYN, whenFalse = DYN] = args;
        return whenTrue.kind === 'prim' && whenFalse.kind === 'prim' && whenTrue.name === whenFalse.name
          ? { kind: 'prim', name: whenTrue.name }
          : DYN;
      }
      case '_==_':
      case '_!=_':
        this.requireEqualityComparable(expr, name, left ?? DYN, right ?? DYN);
        return BOOL;
      case '_<_':
      case '_<=_':
      case '_>_':
      case '_>=_':
        this.requireOrderable(expr, name, left ?? DYN, right ?? DYN);
        return BOOL;
      case '_+_':
      case '_-_':
      case '_*_':
      case '_/_':
      case '_%_':
        return this.arithmeticType(expr, name, left ?? DYN, right ?? DYN);
      case '-_':
        if (left !== undefined && left.kind === 'prim' && !['int', 'double', 'duration'].includes(left.name)) {
          this.fail(expr, `cannot negate ${describe(left)}`);
        }
        return left ?? DYN;
      case '@in':
      case '_in_':
        this.requireMembership(expr, call, left ?? DYN, right ?? DYN);
        return BOOL;
      case '_[_]':
        return this.indexType(expr, call, left ?? DYN);
      default:
        return this.globalFunctionType(expr, call, args);
    }
  }

  private globalFunctionType(expr: Expr, call: CallExpr, args: readonly StaticType[]): StaticType {
    const signature = GLOBAL_FUNCTIONS.get(call.function);
    if (call.function === 'matches') {
      return this.fail(expr, 'write matches() as a method: text.matches(pattern), for example object.llm.model.matches("^gpt-5")');
    }
    if (signature === undefined) return this.fail(expr, `unknown function "${call.function}"`);
    const [min, max, result] = signature;
    if (args.length < min || args.length > max) {
      this.fail(expr, `${call.function}() takes ${arity(min, max)}, not ${args.length}`);
    }
    if (call.function === 'size') this.requireSized(expr, args[0] ?? DYN, 'size()');
    return result;
  }

  private methodType(expr: Expr, call: CallExpr, scope: Scope): StaticType {
    const target = call.target as Expr;
    // strings.quote() parses as a method on the identifier "strings".
    if (call.function === 'quote' && target.exprKind.case === 'identExpr' && target.exprKind.value.name === 'strings') {
      for (const arg of call.args) this.typeOf(arg, scope);
      return STRING;
    }
    const receiver = this.typeOf(target, scope);
    const args = call.args.map((arg) => this.typeOf(arg, scope));
    const signature = METHODS.get(call.function);
    if (signature === undefined) return this.fail(expr, `unknown function "${call.function}"`);
    const { receivers, params, required, result } = signature;
    if (args.length < required || args.length > params.length) {
      this.fail(expr, `${call.function}() takes ${arity(required, params.length)}, not ${args.length}`);
    }
    const receiverName = primitiveOf(receiver);
    if (receiverName !== undefined && !receivers.includes(receiverName)) {
      this.fail(expr, `${call.function}() applies to ${receivers.join(' or ')} values, but ${describe(receiver)} is not one`);
    }
    call.args.forEach((arg, i) => {
      const actual = primitiveOf(args[i] ?? DYN);
      const expected = params[i];
      if (actual !== undefined && expected !== undefined && actual !== expected) {
        this.fail(arg, `${call.function}() expects ${article(expected)} here, but ${describe(args[i] ?? DYN)} is not one`);
      }
    });
    if (call.function === 'matches') this.checkRegexArgument(call.args[0]);
    return result;
  }

  private checkRegexArgument(arg: Expr | undefined): void {
    if (arg === undefined || arg.exprKind.case !== 'constExpr') return;
    const constant = arg.exprKind.value.constantKind;
    if (constant.case !== 'stringValue') return;
    const problem = this.validateRegex(constant.value);
    if (problem !== undefined) this.fail(arg, `invalid regular expression (RE2 syntax): ${problem}`);
  }

  private requireBool(arg: Expr, type: StaticType, operator: string): void {
    if (type.kind === 'dyn' || (type.kind === 'prim' && type.name === 'bool')) return;
    this.fail(arg, `"${operator}" needs true or false, but ${describe(type)} is not a bool`);
  }

  private requireSized(expr: Expr, type: StaticType, what: string): void {
    if (type.kind === 'prim' && !['string', 'bytes', 'list', 'map'].includes(type.name)) {
      this.fail(expr, `${what} needs a string, bytes, list or map, but ${describe(type)} is none of them`);
    }
  }

  private requireEqualityComparable(expr: Expr, operator: string, left: StaticType, right: StaticType): void {
    const a = primitiveOf(left);
    const b = primitiveOf(right);
    if (a === undefined || b === undefined || comparableForEquality(a, b)) return;
    const outcome = operator === '_==_' ? 'never true' : 'always true';
    this.fail(expr, `${describe(left)} is compared with ${describe(right)}: values of different types are never equal, so this is ${outcome}`);
  }

  private requireOrderable(expr: Expr, operator: string, left: StaticType, right: StaticType): void {
    const a = primitiveOf(left);
    const b = primitiveOf(right);
    if (a === undefined || b === undefined) return;
    if (NUMERIC.has(a) && NUMERIC.has(b)) return;
    if (a === b && ORDERED.has(a)) return;
    this.fail(expr, `"${OPERATOR_TEXT[operator] ?? operator}" cannot order ${describe(left)} against ${describe(right)}`);
  }

  private arithmeticType(expr: Expr, operator: string, left: StaticType, right: StaticType): StaticType {
    const a = primitiveOf(left);
    const b = primitiveOf(right);
    if (a === undefined || b === undefined) return DYN;
    const symbol = OPERATOR_TEXT[operator] ?? operator;
    if (a === b && NUMERIC.has(a) && !(operator === '_%_' && a === 'double')) return { kind: 'prim', name: a };
    if (operator === '_+_' && a === b && ['string', 'bytes', 'list', 'duration'].includes(a)) return { kind: 'prim', name: a };
    if (operator === '_+_' && ((a === 'timestamp' && b === 'duration') || (a === 'duration' && b === 'timestamp'))) {
      return { kind: 'prim', name: 'timestamp' };
    }
    if (operator === '_-_' && a === 'timestamp' && b === 'timestamp') return { kind: 'prim', name: 'duration' };
    if (operator === '_-_' && b === 'duration' && (a === 'timestamp' || a === 'duration')) return { kind: 'prim', name: a };
    const hint = NUMERIC.has(a) && NUMERIC.has(b) ? `; convert one side, for example with double(...)` : '';
    return this.fail(expr, `"${symbol}" is not defined for ${describe(left)} and ${describe(right)}${hint}`);
  }

  private requireMembership(expr: Expr, call: CallExpr, element: StaticType, container: StaticType): void {
    const containerName = primitiveOf(container);
    if (containerName !== undefined && containerName !== 'list' && containerName !== 'map') {
      this.fail(expr, `"in" needs a list or a map on its right, but ${describe(container)} is neither`);
    }
    const elementName = primitiveOf(element);
    const list = call.args[1];
    if (elementName === undefined || list === undefined || list.exprKind.case !== 'listExpr') return;
    const elements = list.exprKind.value.elements;
    if (elements.length === 0) return;
    const elementTypes = elements.map((item) => primitiveOf(constantOrDyn(item)));
    if (elementTypes.some((t) => t === undefined || comparableForEquality(elementName, t))) return;
    this.fail(expr, `${describe(element)} can never be in this list: its items are of type ${String(elementTypes[0])}`);
  }

  private indexType(expr: Expr, call: CallExpr, container: StaticType): StaticType {
    const key = call.args[1];
    if (container.kind === 'shape' && key !== undefined && key.exprKind.case === 'constExpr') {
      const constant = key.exprKind.value.constantKind;
      if (constant.case === 'stringValue') {
        const child = container.shape[constant.value];
        if (child === undefined) return this.fail(expr, `${container.label} has no field "${constant.value}"`);
        const label = `${container.label}.${constant.value}`;
        return typeof child === 'string' ? leafType(child, label) : { kind: 'shape', shape: child, label };
      }
    }
    const name = primitiveOf(container);
    if (name !== undefined && name !== 'list' && name !== 'map') {
      this.fail(expr, `cannot index ${describe(container)} with [ ]; only lists and maps can be indexed`);
    }
    return DYN;
  }
}

function constantType(constant: Constant): StaticType {
  const kind = constant.constantKind;
  switch (kind.case) {
    case 'nullValue':
      return { kind: 'prim', name: 'null', label: 'null' };
    case 'boolValue':
      return { kind: 'prim', name: 'bool', label: String(kind.value) };
    case 'int64Value':
      return { kind: 'prim', name: 'int', label: String(kind.value) };
    case 'uint64Value':
      return { kind: 'prim', name: 'uint', label: `${String(kind.value)}u` };
    case 'doubleValue':
      return { kind: 'prim', name: 'double', label: Number.isInteger(kind.value) ? kind.value.toFixed(1) : String(kind.value) };
    case 'stringValue':
      return { kind: 'prim', name: 'string', label: JSON.stringify(kind.value) };
    case 'bytesValue':
      return { kind: 'prim', name: 'bytes', label: 'the bytes literal' };
    case 'durationValue':
      return { kind: 'prim', name: 'duration' };
    case 'timestampValue':
      return { kind: 'prim', name: 'timestamp' };
    default:
      return DYN;
  }
}

function constantOrDyn(expr: Expr): StaticType {
  return expr.exprKind.case === 'constExpr' ? constantType(expr.exprKind.value) : DYN;
}

function leafType(field: PolicyFieldType, label: string): StaticType {
  return { kind: 'prim', name: field, label };
}

function primitiveOf(type: StaticType): Primitive | undefined {
  if (type.kind === 'prim') return type.name;
  if (type.kind === 'shape') return 'map';
  return undefined;
}

function comparableForEquality(a: Primitive, b: Primitive): boolean {
  return a === b || (NUMERIC.has(a) && NUMERIC.has(b));
}

function article(name: Primitive): string {
  return /^[aeiou]/.test(name) ? `an ${name}` : `a ${name}`;
}

function describe(type: StaticType): string {
  if (type.kind === 'dyn') return 'this value';
  if (type.kind === 'shape') return `${type.label} (a map)`;
  return type.label === undefined ? article(type.name) : `${type.label} (${article(type.name)})`;
}

function arity(min: number, max: number): string {
  if (min === max) return `${min} argument${min === 1 ? '' : 's'}`;
  return `${min} to ${max} arguments`;
}

/** The closest field name within an edit distance of 3, to suggest a correction. */
function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 4;
  for (const candidate of candidates) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
