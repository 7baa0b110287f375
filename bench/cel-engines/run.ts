/**
 * Compares @marcbachmann/cel-js and @bufbuild/cel on Reins' own policy expressions.
 * Run: node --import tsx bench/cel-engines/run.ts   (prints Markdown; RESULTS.md records a run)
 *
 * Bench-only imports of packages that @bufbuild/cel depends on: @bufbuild/cel-spec (the
 * official conformance tests as data) and @bufbuild/re2 (to measure a cached-regex variant).
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { Environment } from '@marcbachmann/cel-js';
import type { ObjectSchema } from '@marcbachmann/cel-js';
import {
  celEnv,
  celMap,
  celUint,
  isCelError,
  isCelList,
  isCelMap,
  isCelType,
  isCelUint,
  parse as bufParse,
  plan,
} from '@bufbuild/cel';
import type { CelInput } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';
import { tests as officialSuite } from '@bufbuild/cel-spec/testdata/conformance.js';
import type { SerializedIncrementalTestSuite } from '@bufbuild/cel-spec/testdata/tests.js';
import { RE2JS } from '@bufbuild/re2';
import { compileExpression, toActivation } from '../../src/policy/cel.js';
import { compilePolicy } from '../../src/policy/compile-policy.js';
import type { CompiledPolicy } from '../../src/policy/compile-policy.js';
import { evaluate } from '../../src/policy/engine.js';
import { POLICY_OBJECT_SHAPE } from '../../src/policy/policy-object.js';
import type { PolicyObject, PolicyObjectShape } from '../../src/policy/policy-object.js';
import {
  ALL_EXPRESSIONS,
  CONFORMANCE,
  CONFORMANCE_BINDING,
  ERROR_CASES,
  REGEX_CASES,
  SAMPLE_OBJECTS,
} from './cases.js';
import type { BenchExpression } from './cases.js';

// ---------------------------------------------------------------- timing

/**
 * Nanoseconds per call: after warm-up, the best of five rounds of at least `minMs / 5` each,
 * so a garbage collection or a noisy neighbour on a shared machine does not decide the figure.
 */
function nsPerOp(fn: () => unknown, minMs = 200): number {
  for (let i = 0; i < 2000; i++) fn();
  const budget = (BigInt(minMs) * 1_000_000n) / 5n;
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 5; round++) {
    let runs = 0;
    const start = process.hrtime.bigint();
    let elapsed = 0n;
    while (elapsed < budget) {
      for (let i = 0; i < 100; i++) fn();
      runs += 100;
      elapsed = process.hrtime.bigint() - start;
    }
    best = Math.min(best, Number(elapsed) / runs);
  }
  return best;
}

/** Microseconds per compile: the best of five rounds of `repetitions`, after warm-up. */
function microsPerCompile(fn: () => unknown, repetitions = 100): number {
  for (let i = 0; i < 20; i++) fn();
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 5; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < repetitions; i++) fn();
    best = Math.min(best, Number(process.hrtime.bigint() - start) / repetitions / 1000);
  }
  return best;
}

const fmtNs = (ns: number): string => (ns >= 10_000 ? `${(ns / 1000).toFixed(1)} µs` : `${Math.round(ns)} ns`);
const fmtUs = (us: number): string => `${us.toFixed(us < 10 ? 1 : 0)} µs`;
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
};
const table = (header: string[], rows: string[][]): string =>
  [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');

// ---------------------------------------------------------------- engines

function celJsSchema(shape: PolicyObjectShape): ObjectSchema {
  const out: ObjectSchema = {};
  for (const [field, type] of Object.entries(shape)) {
    out[field] = typeof type !== 'string' ? celJsSchema(type) : type === 'map' ? 'map<string, dyn>' : type;
  }
  return out;
}

/** cel-js: type-check against the typed object, evaluate in a `map<string, dyn>` environment (faster). */
const celJsTyped = new Environment().registerVariable({ name: 'object', schema: celJsSchema(POLICY_OBJECT_SHAPE) });
const celJsDyn = new Environment().registerVariable('object', 'map<string, dyn>');

type Runner = (bindings: Record<string, unknown>) => unknown;

function celJsCompile(expr: string): { run: Runner } | { error: string } {
  const typed = celJsTyped.parse(expr);
  const checked = typed.check();
  if (!checked.valid) return { error: checked.error?.message ?? 'invalid' };
  const program = celJsDyn.parse(expr);
  program.check();
  return { run: program };
}

function celJsActivation(object: PolicyObject): Record<string, unknown> {
  const convert = (value: Record<string, unknown>, shape: PolicyObjectShape): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [field, type] of Object.entries(shape)) {
      const raw = value[field];
      out[field] = typeof type !== 'string' ? convert(raw as Record<string, unknown>, type) : type === 'int' ? BigInt(raw as number) : raw;
    }
    return out;
  };
  return { object: convert(object as unknown as Record<string, unknown>, POLICY_OBJECT_SHAPE) };
}

const bufEnv = celEnv({ funcs: strings });
const regexCache = new Map<string, RE2JS>();
const bufEnvCachedRegex = celEnv({
  funcs: strings,
  re2: {
    compile(pattern: string) {
      let compiled = regexCache.get(pattern);
      if (compiled === undefined) regexCache.set(pattern, (compiled = RE2JS.compile(pattern)));
      return compiled;
    },
  },
});

function bufCompile(expr: string, env = bufEnv): Runner {
  return plan(env, bufParse(expr)) as Runner;
}

// ---------------------------------------------------------------- report

const out: string[] = [];
const say = (line = ''): void => {
  out.push(line);
};

function version(pkg: string): string {
  const url = new URL(`../../node_modules/${pkg}/package.json`, import.meta.url);
  return (JSON.parse(readFileSync(url, 'utf8')) as { version: string }).version;
}

say('## Environment');
say();
say(`Node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.platform()} ${os.arch()}; `);
say(`@marcbachmann/cel-js ${version('@marcbachmann/cel-js')}, @bufbuild/cel ${version('@bufbuild/cel')}.`);
say();

// Compile time.
const compileRows: string[][] = [];
const compileTimes = { celjs: [] as number[], buf: [] as number[], reins: [] as number[] };
for (const e of ALL_EXPRESSIONS) {
  const celjs = microsPerCompile(() => celJsCompile(e.expr));
  const buf = microsPerCompile(() => bufCompile(e.expr));
  const reins = microsPerCompile(() => compileExpression(e.expr));
  compileTimes.celjs.push(celjs);
  compileTimes.buf.push(buf);
  compileTimes.reins.push(reins);
  compileRows.push([e.name, fmtUs(celjs), fmtUs(buf), fmtUs(reins)]);
}

// Evaluation speed per expression, each on the sample object of its request type.
const evalRows: string[][] = [];
const evalTimes = { celjs: [] as number[], buf: [] as number[], bufCached: [] as number[] };
const celJsBindings = {
  llm: celJsActivation(SAMPLE_OBJECTS.llm),
  mcp: celJsActivation(SAMPLE_OBJECTS.mcp),
  egress: celJsActivation(SAMPLE_OBJECTS.egress),
};
const bufBindings = {
  llm: toActivation(SAMPLE_OBJECTS.llm) as unknown as Record<string, unknown>,
  mcp: toActivation(SAMPLE_OBJECTS.mcp) as unknown as Record<string, unknown>,
  egress: toActivation(SAMPLE_OBJECTS.egress) as unknown as Record<string, unknown>,
};
const disagreements: string[] = [];
for (const e of ALL_EXPRESSIONS) {
  const celjs = celJsCompile(e.expr);
  if (!('run' in celjs)) throw new Error(`cel-js refuses ${e.name}: ${celjs.error}`);
  const buf = bufCompile(e.expr);
  const bufCached = bufCompile(e.expr, bufEnvCachedRegex);
  const a = celJsBindings[e.type];
  const b = bufBindings[e.type];
  const resultA = celjs.run(a);
  const resultB = buf(b);
  if (resultA !== resultB) disagreements.push(`${e.name}: cel-js ${String(resultA)}, bufbuild ${String(resultB)}`);
  const tA = nsPerOp(() => celjs.run(a));
  const tB = nsPerOp(() => buf(b));
  const tC = nsPerOp(() => bufCached(b));
  evalTimes.celjs.push(tA);
  evalTimes.buf.push(tB);
  evalTimes.bufCached.push(tC);
  evalRows.push([e.name, String(resultA), fmtNs(tA), fmtNs(tB), fmtNs(tC)]);
}

// Twenty policies against one object.
const twenty: readonly BenchExpression[] = ALL_EXPRESSIONS.slice(0, 20);
const llm = SAMPLE_OBJECTS.llm;
const celJsTwenty = twenty.map((e) => {
  const c = celJsCompile(e.expr);
  if (!('run' in c)) throw new Error(e.name);
  return c.run;
});
const bufTwenty = twenty.map((e) => bufCompile(e.expr));
const bufCachedTwenty = twenty.map((e) => bufCompile(e.expr, bufEnvCachedRegex));
const reinsTwenty: CompiledPolicy[] = twenty.map((e) => {
  const c = compilePolicy({ name: e.name, kind: 'audit', appliesTo: ['llm', 'mcp', 'egress'], match: e.expr, message: 'bench' });
  if (!c.ok) throw new Error(`${e.name}: ${JSON.stringify(c.errors)}`);
  return c.compiled;
});
const reinsTwentyNoRegex = reinsTwenty.filter((p) => !p.policy.match.includes('matches('));
const celJsLlm = celJsActivation(llm);
const bufLlm = bufBindings.llm;
const twentyRows: string[][] = [
  ['cel-js, 20 programs, prebuilt activation', fmtNs(nsPerOp(() => { for (const f of celJsTwenty) f(celJsLlm); }))],
  ['@bufbuild/cel, 20 programs, prebuilt activation', fmtNs(nsPerOp(() => { for (const f of bufTwenty) f(bufLlm); }))],
  ['@bufbuild/cel with cached RE2, 20 programs', fmtNs(nsPerOp(() => { for (const f of bufCachedTwenty) f(bufLlm); }))],
  ['Reins `evaluate()`, 20 policies, activation built per request', fmtNs(nsPerOp(() => evaluate(reinsTwenty, llm)))],
  [`Reins \`evaluate()\`, the ${reinsTwentyNoRegex.length} of them without matches()`, fmtNs(nsPerOp(() => evaluate(reinsTwentyNoRegex, llm)))],
  ['Reins `toActivation()` alone (once per request)', fmtNs(nsPerOp(() => toActivation(llm)))],
];

// Targeted conformance table.
const celJsConformance = new Environment({ unlistedVariablesAreDyn: true, homogeneousAggregateLiterals: false });
const outcome = (run: () => unknown, isError: (v: unknown) => boolean): string => {
  try {
    const value = run();
    return isError(value) ? 'error' : String(value);
  } catch {
    return 'error';
  }
};
const bufConformanceBinding = { x: celMap(new Map<string, CelInput>(Object.entries({ ...CONFORMANCE_BINDING, m: celMap(new Map([['k', 'v']])) }))) };
let celJsPass = 0;
let bufPass = 0;
const conformanceRows = CONFORMANCE.map((c) => {
  const a = outcome(() => celJsConformance.evaluate(c.expr, { x: CONFORMANCE_BINDING }), () => false);
  const b = outcome(() => plan(bufEnv, bufParse(c.expr))(bufConformanceBinding), isCelError);
  const expected = String(c.expect);
  if (a === expected) celJsPass++;
  if (b === expected) bufPass++;
  const mark = (v: string): string => (v === expected ? `${v} ✓` : `**${v}** ✗`);
  return [`\`${c.expr.replaceAll('|', '\\|')}\``, c.note, expected, mark(a), mark(b)];
});

// Official CEL conformance suite, core sections.
const OFFICIAL_SECTIONS = ['basic', 'comparisons', 'conversions', 'fields', 'fp_math', 'integer_math', 'lists', 'logic', 'macros', 'parse', 'plumbing', 'string'];
type Value = {
  int64Value?: string;
  uint64Value?: string;
  doubleValue?: number | string;
  stringValue?: string;
  boolValue?: boolean;
  nullValue?: unknown;
  bytesValue?: string;
  listValue?: { values?: Value[] };
  mapValue?: { entries?: { key: Value; value: Value }[] };
  typeValue?: string;
};
interface OfficialTest {
  section: string;
  name: string;
  expr: string;
  expected?: Value;
  expectError: boolean;
  bindings: Record<string, Value>;
}
const UNSUPPORTED = /objectValue|enumValue|"typeValue":"google|TestAllTypes|google\.protobuf|cel\.expr/;
function collect(suite: SerializedIncrementalTestSuite, section: string, into: OfficialTest[]): OfficialTest[] {
  for (const t of suite.tests ?? []) {
    const o = t.original as Record<string, unknown> & { expr: string; name?: string };
    if (o['container'] !== undefined || o['checkOnly'] === true || UNSUPPORTED.test(JSON.stringify(o))) continue;
    const expected = (o['value'] ?? (o['typedResult'] as { result?: Value } | undefined)?.result) as Value | undefined;
    const expectError = o['evalError'] !== undefined;
    if (expected === undefined && !expectError) continue;
    const raw = (o['bindings'] ?? {}) as Record<string, { value?: Value }>;
    if (Object.values(raw).some((b) => b.value === undefined)) continue;
    const bindings = Object.fromEntries(Object.entries(raw).map(([k, b]) => [k, b.value as Value]));
    into.push({ section, name: o.name ?? o.expr, expr: o.expr, ...(expected === undefined ? {} : { expected }), expectError, bindings });
  }
  for (const child of suite.suites ?? []) collect(child, section, into);
  return into;
}
const officialTests = (officialSuite.suites ?? [])
  .filter((s) => OFFICIAL_SECTIONS.includes(s.name))
  .flatMap((s) => collect(s, s.name, []));

const bytesFromBase64 = (b64: string): Uint8Array => new Uint8Array(Buffer.from(b64, 'base64'));
const celJsUintCtor = (celJsConformance.evaluate('0u') as object).constructor as new (v: bigint) => unknown;
function toInput(v: Value, engine: 'celjs' | 'buf'): unknown {
  if (v.int64Value !== undefined) return BigInt(v.int64Value);
  if (v.uint64Value !== undefined) return engine === 'buf' ? celUint(BigInt(v.uint64Value)) : new celJsUintCtor(BigInt(v.uint64Value));
  if (v.doubleValue !== undefined) return Number(v.doubleValue);
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if ('nullValue' in v) return null;
  if (v.bytesValue !== undefined) return bytesFromBase64(v.bytesValue);
  if (v.listValue !== undefined) return (v.listValue.values ?? []).map((x) => toInput(x, engine));
  if (v.mapValue !== undefined) return new Map((v.mapValue.entries ?? []).map((e) => [toInput(e.key, engine), toInput(e.value, engine)]));
  return undefined;
}
function canonExpected(v: Value): string {
  if (v.int64Value !== undefined) return `int:${BigInt(v.int64Value)}`;
  if (v.uint64Value !== undefined) return `uint:${BigInt(v.uint64Value)}`;
  if (v.doubleValue !== undefined) return canonDouble(Number(v.doubleValue));
  if (v.stringValue !== undefined) return `string:${JSON.stringify(v.stringValue)}`;
  if (v.boolValue !== undefined) return `bool:${v.boolValue}`;
  if (v.bytesValue !== undefined) return `bytes:${Buffer.from(v.bytesValue, 'base64').toString('hex')}`;
  if (v.listValue !== undefined) return `[${(v.listValue.values ?? []).map(canonExpected).join(',')}]`;
  if (v.mapValue !== undefined) return canonMap((v.mapValue.entries ?? []).map((e) => [keyText(canonExpected(e.key)), canonExpected(e.value)]));
  if (v.typeValue !== undefined) return `type:${v.typeValue}`;
  if ('nullValue' in v) return 'null';
  return 'unsupported';
}
const canonDouble = (n: number): string => `double:${Object.is(n, -0) ? 0 : n}`;
/** Map keys compare by their text: cel-js returns map literals as plain objects with string keys. */
const keyText = (canon: string): string => canon.replace(/^(int|uint|string|bool):/, '').replace(/^"(.*)"$/, '$1');
const canonMap = (entries: [string, string][]): string =>
  `{${entries.sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}=${v}`).join(',')}}`;
function canonActual(v: unknown): string {
  if (typeof v === 'bigint') return `int:${v}`;
  if (typeof v === 'number') return canonDouble(v);
  if (typeof v === 'string') return `string:${JSON.stringify(v)}`;
  if (typeof v === 'boolean') return `bool:${v}`;
  if (v === null) return 'null';
  if (v instanceof Uint8Array) return `bytes:${Buffer.from(v).toString('hex')}`;
  if (isCelUint(v)) return `uint:${v.value}`;
  if (v instanceof celJsUintCtor) return `uint:${(v as { valueOf(): bigint }).valueOf()}`;
  if (isCelType(v)) return `type:${v.name}`;
  if (typeof v === 'object' && v.constructor?.name === 'Type') return `type:${(v as { name: string }).name}`;
  if (Array.isArray(v) || isCelList(v) || v instanceof Set) return `[${[...(v as Iterable<unknown>)].map(canonActual).join(',')}]`;
  if (isCelMap(v) || v instanceof Map) {
    return canonMap([...(v as Map<unknown, unknown>).entries()].map(([k, x]) => [keyText(canonActual(k)), canonActual(x)]));
  }
  if (typeof v === 'object') return canonMap(Object.entries(v as object).map(([k, x]) => [k, canonActual(x)]));
  return 'unsupported';
}
const officialEnv = celEnv();
const officialResults = new Map<string, { total: number; celjs: number; buf: number }>();
const officialFailures: { celjs: string[]; buf: string[] } = { celjs: [], buf: [] };
for (const t of officialTests) {
  const want = t.expectError ? 'error' : canonExpected(t.expected as Value);
  const run = (engine: 'celjs' | 'buf'): string => {
    const bindings = Object.fromEntries(Object.entries(t.bindings).map(([k, v]) => [k, toInput(v, engine)]));
    try {
      if (engine === 'celjs') return canonActual(celJsConformance.evaluate(t.expr, bindings));
      const r = plan(officialEnv, bufParse(t.expr))(bindings as Record<string, CelInput>);
      return isCelError(r) ? 'error' : canonActual(r);
    } catch {
      return 'error';
    }
  };
  const row = officialResults.get(t.section) ?? { total: 0, celjs: 0, buf: 0 };
  row.total++;
  for (const engine of ['celjs', 'buf'] as const) {
    if (run(engine) === want) row[engine]++;
    else officialFailures[engine].push(`${t.section}/${t.name}: \`\` ${t.expr} \`\``);
  }
  officialResults.set(t.section, row);
}

// Error messages.
const errorRows = ERROR_CASES.map((c) => {
  const a = celJsTyped.check(c.expr);
  const celjsMessage = a.valid ? '(accepted)' : `${a.error?.summary ?? a.error?.message ?? ''} @ offset ${a.error?.range?.start ?? '?'}`;
  let bufMessage: string;
  try {
    const program = bufCompile(c.expr);
    const r = program(bufBindings.llm);
    bufMessage = isCelError(r) ? `(accepted; at run time: ${r.message})` : `(accepted; evaluates to ${String(r)})`;
  } catch (error) {
    bufMessage = (error as Error).message.replace(/^syntax error /, '');
  }
  const reins = compileExpression(c.expr);
  const reinsMessage = reins.ok ? '(accepted)' : `${reins.error.line}:${reins.error.column} ${reins.error.message}`;
  const cell = (s: string): string => s.replaceAll('|', '\\|').replaceAll('\n', ' ');
  return [c.what, `\`${cell(c.expr)}\``, cell(celjsMessage), cell(bufMessage), cell(reinsMessage)];
});

// Regular expressions on hostile input, each in a worker that is killed after a deadline.
const REGEX_DEADLINE_MS = 5000;
const workerSource = `
  const { parentPort, workerData } = require('node:worker_threads');
  (async () => {
    const mod = await import(workerData.url);
    const start = process.hrtime.bigint();
    const result = workerData.engine === 'celjs'
      ? mod.evaluate('s.matches(p)', { s: workerData.input, p: workerData.pattern })
      : mod.run('s.matches(p)', { s: workerData.input, p: workerData.pattern });
    parentPort.postMessage({ ms: Number(process.hrtime.bigint() - start) / 1e6, result: String(result) });
  })();
`;
function timeRegex(engine: 'celjs' | 'buf', pattern: string, input: string): Promise<string> {
  const url = import.meta.resolve(engine === 'celjs' ? '@marcbachmann/cel-js' : '@bufbuild/cel');
  return new Promise((resolve) => {
    const worker = new Worker(workerSource, { eval: true, workerData: { engine, url, pattern, input } });
    const timer = setTimeout(() => {
      void worker.terminate();
      resolve(`> ${REGEX_DEADLINE_MS / 1000} s (killed)`);
    }, REGEX_DEADLINE_MS);
    worker.once('message', (m: { ms: number }) => {
      clearTimeout(timer);
      void worker.terminate();
      resolve(m.ms >= 1000 ? `**${(m.ms / 1000).toFixed(1)} s**` : `${m.ms.toFixed(1)} ms`);
    });
    worker.once('error', (e) => {
      clearTimeout(timer);
      resolve(`error: ${e.message}`);
    });
  });
}
const regexRows: string[][] = [];
for (const c of REGEX_CASES) {
  regexRows.push([c.what, `\`${c.pattern.replaceAll('|', '\\|')}\``, await timeRegex('celjs', c.pattern, c.input), await timeRegex('buf', c.pattern, c.input)]);
}

// ---------------------------------------------------------------- print

say('## Compile time (per expression, parse + check + plan)');
say();
say('cel-js: type check against the typed object plus a second parse in the fast `dyn` environment. ');
say('@bufbuild/cel: `parse` + `plan`. Reins: `compileExpression` on @bufbuild/cel (lexical pre-scan + parse + static check + plan).');
say();
say(table(['expression', 'cel-js', '@bufbuild/cel', 'Reins on @bufbuild/cel'], compileRows));
say();
say(`Median: cel-js ${fmtUs(median(compileTimes.celjs))}, @bufbuild/cel ${fmtUs(median(compileTimes.buf))}, Reins ${fmtUs(median(compileTimes.reins))}.`);
say();
say('## Evaluation (per expression, prebuilt activation, sample object of its request type)');
say();
say(table(['expression', 'result', 'cel-js', '@bufbuild/cel', '@bufbuild/cel + cached RE2'], evalRows));
say();
say(`Median: cel-js ${fmtNs(median(evalTimes.celjs))}, @bufbuild/cel ${fmtNs(median(evalTimes.buf))}, with cached RE2 ${fmtNs(median(evalTimes.bufCached))}. `);
say(disagreements.length === 0 ? 'Both engines gave the same result on every expression.' : `Disagreements: ${disagreements.join('; ')}`);
say();
say('## Twenty policies against one object (the 4 built-ins + the first 16 custom expressions, one LLM request)');
say();
say(table(['what', 'time per request'], twentyRows));
say();
say(`## Conformance, targeted table (cel-js ${celJsPass}/${CONFORMANCE.length}, @bufbuild/cel ${bufPass}/${CONFORMANCE.length})`);
say();
say('`x` = {a: 1 (int), n: 3.0 (double), s: "abc", l: [1, 2], m: {"k": "v"}}. Expected values follow the CEL specification.');
say();
say(table(['expression', 'rule', 'expected', 'cel-js', '@bufbuild/cel'], conformanceRows));
say();
say('## Conformance, official CEL suite (core sections; tests needing protobuf messages skipped)');
say();
const officialRows = [...officialResults.entries()].map(([section, r]) => [section, String(r.total), String(r.celjs), String(r.buf)]);
const totals = [...officialResults.values()].reduce((s, r) => ({ total: s.total + r.total, celjs: s.celjs + r.celjs, buf: s.buf + r.buf }), { total: 0, celjs: 0, buf: 0 });
officialRows.push(['**all**', String(totals.total), `${totals.celjs} (${((100 * totals.celjs) / totals.total).toFixed(1)}%)`, `${totals.buf} (${((100 * totals.buf) / totals.total).toFixed(1)}%)`]);
say(table(['section', 'tests', 'cel-js passes', '@bufbuild/cel passes'], officialRows));
say();
say(`First @bufbuild/cel failures: ${officialFailures.buf.slice(0, 6).join('; ') || 'none'}.`);
say();
say(`First cel-js failures: ${officialFailures.celjs.slice(0, 10).join('; ') || 'none'}.`);
say();
say('## Error messages and positions');
say();
say('cel-js: `Environment.check` against the typed object. @bufbuild/cel: `parse` then `plan` (it has no public type checker). Reins: `compileExpression`.');
say();
say(table(['mistake', 'expression', 'cel-js', '@bufbuild/cel', 'Reins on @bufbuild/cel'], errorRows));
say();
say(`## Regular expressions on hostile input (\`s.matches(p)\`, deadline ${REGEX_DEADLINE_MS / 1000} s)`);
say();
say(table(['case', 'pattern', 'cel-js (JavaScript RegExp)', '@bufbuild/cel (RE2)'], regexRows));
say();
console.log(out.join('\n'));
