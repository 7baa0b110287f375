/**
 * Every route of the OpenAPI document a running replica serves, fuzzed: path parameters, query values and bodies
 * carrying U+0000, lone surrogates (\ud800, \udfff), bad percent-encoding, 1 MB strings, malformed JSON, values
 * of the wrong type and JSON nested 200,000 levels deep. No answer may be a 5xx, and every 4xx carries an error
 * body: `{"error": {"code", "message"}}` on the control plane, the provider's error shape on the LLM plane, a
 * JSON-RPC error on the MCP planes. The routes come from `GET /api/v1/openapi.json`, so a route added later is
 * fuzzed without touching this file.
 *
 * Bodies start from a value the route's own body schema accepts, with one field replaced by a fuzzed value, so
 * that the fuzz reaches past the schema into the handlers and the store. A bounded number of runs per route
 * keeps the whole file within about a minute per store on a quiet machine.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type { Replica } from '../../../src/app/server.js';
import { startMcpUpstream, type McpUpstream } from '../../fakes/mcp-upstream.js';
import { ADMIN_TOKEN, Client, describeEachStore, developerWithToken, startTestReplica } from '../../helpers/harness.js';

/** Runs per route as the admin, and as a developer on the routes a developer may call. */
const ADMIN_RUNS = 12;
const DEVELOPER_RUNS = 4;
/** A fuzzed request that gets no answer in this long is a failure of its own (a hang is not an answer). */
const REQUEST_TIMEOUT_MS = 30_000;
const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head'] as const;

type Plane = 'control' | 'llm' | 'mcp';

interface Operation {
  method: string;
  /** OpenAPI path, with `{name}` parameters. */
  path: string;
  pathParams: string[];
  queryParams: string[];
  /** The JSON body schema, or null when the route takes none (data-plane routes take any body). */
  bodySchema: Schema | null;
  takesBody: boolean;
  plane: Plane;
}

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  minItems?: number;
  format?: string;
  $ref?: string;
}

function planeOf(path: string): Plane {
  if (path.startsWith('/llm/')) return 'llm';
  if (path.startsWith('/mcp/')) return 'mcp';
  return 'control';
}

function operationsOf(doc: { paths: Record<string, Record<string, any>> }): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const params: { in: string; name: string }[] = op.parameters ?? [];
      const plane = planeOf(path);
      const bodySchema = (op.requestBody?.content?.['application/json']?.schema as Schema | undefined) ?? null;
      out.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: params.filter((p) => p.in === 'query').map((p) => p.name),
        bodySchema,
        takesBody: bodySchema !== null || (plane !== 'control' && method === 'post'),
        plane,
      });
    }
  }
  return out;
}

/** A value the schema accepts, as small as possible: the starting point a fuzzed field is put into. */
function sample(schema: Schema | undefined, depth = 0): unknown {
  if (!schema || depth > 8) return null;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  const options = schema.anyOf ?? schema.oneOf;
  if (options) return sample(options.find((o) => o.type !== 'null') ?? options[0], depth + 1);
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map((s) => sample(s, depth + 1)));
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const key of schema.required ?? []) out[key] = sample(schema.properties?.[key], depth + 1);
      return out;
    }
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => sample(schema.items, depth + 1));
    case 'string':
      if (schema.format === 'date-time') return '2030-01-01T00:00:00Z';
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
    case 'integer':
    case 'number':
      return Math.max(1, (schema.minimum ?? 0) + 1, (schema.exclusiveMinimum ?? 0) + 1);
    case 'boolean':
      return true;
    default:
      return 'x';
  }
}

/** Every field path of a schema's properties (nested objects included), where a fuzzed value can go. */
function fieldPaths(schema: Schema | null, prefix: string[] = [], depth = 0): string[][] {
  if (!schema || depth > 4) return [];
  const out: string[][] = [];
  for (const [key, sub] of Object.entries(schema.properties ?? {})) {
    out.push([...prefix, key]);
    if (sub.properties) out.push(...fieldPaths(sub, [...prefix, key], depth + 1));
  }
  return out;
}

function withField(base: unknown, path: string[], value: unknown): unknown {
  if (path.length === 0) return value;
  const obj = base !== null && typeof base === 'object' && !Array.isArray(base) ? { ...(base as Record<string, unknown>) } : {};
  obj[path[0]!] = withField(obj[path[0]!], path.slice(1), value);
  return obj;
}

const NESTED = 200_000;
const DEEP_JSON = `{"deep":${'['.repeat(NESTED)}${']'.repeat(NESTED)}}`;
const HUGE = 'x'.repeat(1024 * 1024);

/** Text no store can keep or no walker should see, and values of every wrong type. */
const fuzzText = fc.oneof(
  fc.constantFrom('\u0000', 'a\u0000b', '\ud800', '\udfff', 'x\ud800y', '\udfff\ud800', '\u0000\ud800', '%00', '%zz', '\\u0000', ''),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.string({ maxLength: 30 }).map((s) => `${s}\u0000${s}`),
  fc.string({ maxLength: 30 }),
);
const fuzzValue = fc.oneof(
  { weight: 4, arbitrary: fuzzText },
  { weight: 1, arbitrary: fc.constant(HUGE) },
  { weight: 3, arbitrary: fc.constantFrom<unknown>(0, -1, 1.5, 1e308, -0, null, true, false, [], {}, ['x'], { a: 'x' }, [null], { '\u0000': 1 }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

/** percent-encoding that does not throw on lone surrogates: they become the (invalid) UTF-8 of their code unit. */
function encodeLoose(s: string, keepSlash = false): string {
  let out = '';
  for (const ch of s) {
    const c = ch.charCodeAt(0);
    if (ch.length === 1 && c >= 0xd800 && c <= 0xdfff) out += `%${(0xe0 | (c >> 12)).toString(16)}%${(0x80 | ((c >> 6) & 0x3f)).toString(16)}%${(0x80 | (c & 0x3f)).toString(16)}`;
    else if (keepSlash && ch === '/') out += '/';
    else out += encodeURIComponent(ch);
  }
  return out;
}

/** A URL component: fuzzed text encoded (loosely), or raw bad percent-encoding left as is. */
const component = (known: readonly string[], keepSlash = false) =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(...known).map((s) => encodeLoose(s, keepSlash)) },
    { weight: 3, arbitrary: fuzzText.map((s) => encodeLoose(s, keepSlash)) },
    { weight: 1, arbitrary: fc.constantFrom('%zz', '%E0%A4%A', '%', '%ED%A0%80', '%FF', '%00', 'a%2', '..', '.') },
    { weight: 1, arbitrary: fc.constant('y'.repeat(300)) },
  );

/** Values a path or query parameter of that name might take, so that some runs get past the first check. */
const KNOWN: Record<string, readonly string[]> = {
  id: ['eng/nobody', 'ar_nothing', 'hc_nothing', 'tok_nothing', '1', '0', '-1'],
  name: ['no-such-policy', 'autonomy-tool-approval'],
  key: ['default/deployment/app', 'x'],
  server: ['no-such-server', 'reins', 'github'],
  // The LLM gateway's catch-all under each provider's prefix (not in the document: OpenAPI has no wildcard paths).
  '*': ['v1/chat/completions', 'v1/messages', 'v1/responses', 'v1/embeddings', 'v1/models', 'model/anthropic.claude-sonnet-4-5-20250929-v1:0/invoke', 'x/../v1/chat/completions'],
  modelId: ['anthropic.claude-sonnet-4-5-20250929-v1:0', 'us.amazon.nova-pro-v1:0', 'arn:aws:bedrock:us-east-1::foundation-model/x'],
  model: ['gpt-4o', 'claude-sonnet-4-5'],
  responseId: ['resp_123'],
  kind: ['agent', 'developer', 'personal'],
  state: ['pending', 'released'],
  window: ['1h', '24h', 'garbage'],
  limit: ['1', '0', '-5', '99999999999999999999', '1.5'],
  since: ['2020-01-01T00:00:00Z', 'yesterday'],
  until: ['2030-01-01T00:00:00Z'],
  cursor: ['abc', 'MTA=', '=='],
};

interface Input {
  pathValues: Record<string, string>;
  query: string;
  body: { raw: string; contentType: string } | null;
}

function inputFor(op: Operation): fc.Arbitrary<Input> {
  const pathValues = fc.record(Object.fromEntries(op.pathParams.map((p) => [p, component(KNOWN[p] ?? ['x'], p === '*')])));
  const queryKeys = op.queryParams.length > 0 ? [...op.queryParams, 'unknown'] : ['unknown'];
  const pair = fc.constantFrom(...queryKeys).chain((k) => component(KNOWN[k] ?? ['x', '']).map((v) => `${k}=${v}`));
  const query = fc.array(pair, { maxLength: 3 }).map((pairs) => pairs.join('&'));
  const base = sample(op.bodySchema ?? undefined);
  const fields = fieldPaths(op.bodySchema);
  const bodies: fc.Arbitrary<string>[] = [
    fc.constantFrom('{', '{"a":', '[1,]', "{'a':1}", '{"a":1}}', '\u0000', 'nul\u0000', '', 'null', '[]', '1', '"s"', '{"__proto__":{"x":1}}'),
    fc.constant(DEEP_JSON),
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
  ];
  if (fields.length > 0) {
    // The schema's own shape with one field fuzzed: the most runs go here.
    const mutated = fc.tuple(fc.constantFrom(...fields), fuzzValue).map(([path, value]) => JSON.stringify(withField(base, path, value)));
    bodies.push(mutated, mutated, mutated);
  }
  const body = op.takesBody
    ? fc.record({ raw: fc.oneof(...bodies), contentType: fc.constantFrom('application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain') })
    : fc.constant(null);
  return fc.record({ pathValues, query, body });
}

function urlOf(op: Operation, input: Input): string {
  const path = op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => input.pathValues[name] ?? 'x');
  return input.query === '' ? path : `${path}?${input.query}`;
}

interface Answer {
  status: number;
  contentType: string;
  body: unknown;
  text: string;
}

async function send(base: string, token: string, op: Operation, input: Input): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream' };
  if (op.plane === 'llm') headers['anthropic-version'] = '2023-06-01';
  if (input.body) headers['content-type'] = input.body.contentType;
  const res = await fetch(`${base}${urlOf(op, input)}`, {
    method: op.method,
    headers,
    ...(input.body ? { body: input.body.raw } : {}),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const contentType = res.headers.get('content-type') ?? '';
  // A 2xx stream (an MCP GET, the console) is not read: its end is not this test's business.
  if (res.status < 400 && !contentType.includes('json')) {
    await res.body?.cancel();
    return { status: res.status, contentType, body: null, text: '' };
  }
  const text = await res.text();
  let body: unknown = undefined;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, contentType, body, text };
}

function checkAnswer(op: Operation, input: Input, r: Answer): void {
  const label = () => `${op.method} ${urlOf(op, input).slice(0, 300)} body=${JSON.stringify(input.body?.raw.slice(0, 200) ?? null)} -> ${r.status} ${r.text.slice(0, 300)}`;
  assert.ok(r.status < 500, label());
  if (r.status < 400 || op.method === 'HEAD') return;
  assert.ok(r.contentType.includes('json') && r.body !== undefined && r.body !== null, `a 4xx without a JSON body: ${label()}`);
  const body = r.body as any;
  // The URL as sent: fetch resolves dot segments, so `/mcp/..` is a control-plane path by the time it is served.
  switch (planeOf(new URL(urlOf(op, input), 'http://x').pathname)) {
    case 'control':
      assert.equal(typeof body.error?.code, 'string', label());
      assert.equal(typeof body.error?.message, 'string', label());
      return;
    case 'llm':
      // OpenAI {error: {type, code, message}}, Anthropic {type: "error", error: {type, message}}, Bedrock {message}.
      assert.ok(typeof body.error?.message === 'string' || typeof body.message === 'string', label());
      return;
    case 'mcp':
      for (const m of Array.isArray(body) ? body : [body]) assert.equal(typeof m.error?.code, 'number', label());
      return;
  }
}

/** The routes a developer may call, or is refused from: fuzzed as a developer too. */
const DEVELOPER_ROUTES = /^\/(api\/v1\/(access-requests|tokens|auth|held-calls|identities\/detail|notifications)|mcp\/reins|llm\/openai)/;

describeEachStore('fuzzing every route of the OpenAPI document', ({ store }) => {
  let replica: Replica;
  let sink: Server;
  let mcp: McpUpstream;
  let admin: Client;
  let developer: string;
  let operations: Operation[];

  before(async () => {
    // The LLM providers: an upstream that answers every forwarded call with a small JSON body, so that what is
    // checked is Reins' own answers and not a fake provider's handling of junk.
    sink = createServer((req, res) => {
      req.resume();
      req.once('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"id":"sink","choices":[],"content":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"input_tokens":1,"output_tokens":1}}');
      });
    });
    await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
    mcp = await startMcpUpstream();
    replica = await startTestReplica(store(), {
      providers: {
        openai: { kind: 'openai', baseUrl: origin, apiKey: 'sk-sink' },
        anthropic: { kind: 'anthropic', baseUrl: origin, apiKey: 'sk-sink' },
        bedrock: { kind: 'bedrock', baseUrl: origin, apiKey: 'sk-sink', region: 'us-east-1' },
        vllm: { kind: 'openai-compatible', baseUrl: origin },
        'azure-eu': { kind: 'azure-openai', baseUrl: origin, apiKey: 'sk-sink' },
        gemini: { kind: 'gemini', baseUrl: origin, apiKey: 'sk-sink' },
      },
      mcpServers: [{ name: 'github', url: mcp.url, headers: {} }],
    });
    admin = new Client(replica.url, ADMIN_TOKEN);
    developer = await developerWithToken(admin, 'eng/fuzz-dev', 'developer');
    const doc = (await admin.get('/api/v1/openapi.json')).body;
    operations = operationsOf(doc);
  });
  after(async () => {
    await replica.close();
    await mcp.close();
    sink.closeAllConnections();
    await new Promise<void>((resolve) => sink.close(() => resolve()));
  });

  test('the OpenAPI document lists the routes of every plane', () => {
    assert.ok(operations.length > 60, `only ${operations.length} operations`);
    for (const plane of ['control', 'llm', 'mcp'] as const) assert.ok(operations.some((o) => o.plane === plane), plane);
    assert.ok(operations.some((o) => o.pathParams.length > 0 && o.plane === 'control'));
  });

  test('no route answers 5xx, and every 4xx carries its plane\'s error body', async (t) => {
    for (const op of operations) {
      await t.test(`${op.method} ${op.path}`, async () => {
        await fc.assert(
          fc.asyncProperty(inputFor(op), async (input) => checkAnswer(op, input, await send(replica.url, ADMIN_TOKEN, op, input))),
          { numRuns: ADMIN_RUNS },
        );
        if (DEVELOPER_ROUTES.test(op.path)) {
          await fc.assert(
            fc.asyncProperty(inputFor(op), async (input) => checkAnswer(op, input, await send(replica.url, developer, op, input))),
            { numRuns: DEVELOPER_RUNS },
          );
        }
      });
    }
  });

  test('every path under an LLM provider\'s prefix, listed or not, answers without a 5xx', async (t) => {
    // The document lists the providers' endpoints one by one; the gateway serves everything under /llm/<provider>/
    // (an unknown route answers in the provider's shape). The prefixes come from the document.
    const prefixes = [...new Set(operations.filter((o) => o.plane === 'llm').map((o) => /^\/llm\/[^/]+\//.exec(o.path)?.[0]).filter((p): p is string => p !== undefined))];
    assert.ok(prefixes.length >= 3, prefixes.join(', '));
    for (const prefix of prefixes) {
      for (const method of ['GET', 'POST', 'DELETE']) {
        const op: Operation = { method, path: `${prefix}{*}`, pathParams: ['*'], queryParams: [], bodySchema: null, takesBody: method === 'POST', plane: 'llm' };
        await t.test(`${method} ${prefix}*`, async () => {
          await fc.assert(
            fc.asyncProperty(inputFor(op), async (input) => checkAnswer(op, input, await send(replica.url, ADMIN_TOKEN, op, input))),
            { numRuns: ADMIN_RUNS },
          );
        });
      }
    }
  });

  test('the replica still answers normally after the fuzz', async () => {
    assert.equal((await admin.get('/readyz')).status, 200);
    assert.equal((await admin.get('/api/v1/auth/me')).body.id, 'default/admin');
    assert.equal((await admin.with(developer).get('/api/v1/auth/me')).body.id, 'eng/fuzz-dev');
  });
});
