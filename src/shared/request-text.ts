/**
 * What the control plane accepts as text, checked in one place for every route rather than in each: the JSON
 * body parser, the query-string parser and one preValidation hook.
 *
 * - A string (value or field name) of the body, the query or the path that holds U+0000 or a lone surrogate
 *   (`\ud800`, `\udfff`) is refused with 400 `invalid_request` naming the field: PostgreSQL cannot store the
 *   first and the second is not text. (The data plane stores such content escaped instead: store/storable.ts.)
 * - A body nested deeper than `MAX_JSON_DEPTH` is refused with 400 `invalid_request` before schema validation.
 * - Bad percent-encoding in the path or the query is a 400 `invalid_request` naming the parameter, in the
 *   contract's error body (the framework's own answer had another shape).
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody, invalid } from './errors.js';
import { nestedTooDeep, TOO_DEEP_MESSAGE } from './json-depth.js';

const PART = { body: 'body', query: 'query', path: 'path' } as const;

/** Why a string cannot be accepted as text, or null. */
export function textProblem(s: string): string | null {
  if (s.indexOf('\u0000') !== -1) return 'must not contain U+0000';
  if (!s.isWellFormed()) return 'must not contain a lone surrogate';
  return null;
}

/** A field name as a message shows it: JSON escapes for what cannot be printed. */
function shown(key: string): string {
  return JSON.stringify(key).slice(1, -1);
}

/**
 * The first string of a parsed JSON value (or of a query or params object) that cannot be accepted, as the
 * sentence naming it: `body.justification: must not contain U+0000`. Iterative, so any depth is safe.
 */
export function unacceptableText(value: unknown, part: string): string | null {
  const stack: [unknown, string][] = [[value, part]];
  while (stack.length > 0) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'string') {
      const problem = textProblem(v);
      if (problem) return `${path}: ${problem}`;
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${path}.${i}`]);
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!;
        const problem = textProblem(key);
        if (problem) return `${path}.${shown(key)}: a field name ${problem}`;
        stack.push([(v as Record<string, unknown>)[key], `${path}.${key}`]);
      }
    }
  }
  return null;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Query parameters the route reads leniently, whatever they hold: the runtime guard's `window`, where the spec
     * says an unparseable value falls back to the default without an error. Their values are never stored.
     */
    lenientQuery?: readonly string[];
  }
}

/** Set on a parsed query when names or values were not valid percent-encoding: the names, for the 400. */
const BAD_QUERY = Symbol('reins.badQueryEncoding');

function decodeQueryPart(raw: string): string | null {
  const spaced = raw.indexOf('+') === -1 ? raw : raw.replaceAll('+', ' ');
  if (spaced.indexOf('%') === -1) return spaced;
  try {
    return decodeURIComponent(spaced);
  } catch {
    return null;
  }
}

/**
 * The query-string parser (Fastify's `querystringParser`): application/x-www-form-urlencoded as every client
 * writes it, a repeated name giving an array, as Fastify's default parser does. It never throws (it runs in the
 * router): a part that is not valid percent-encoding is noted, and the preValidation hook answers 400.
 */
export function parseQueryString(qs: string): Record<string, string | string[]> {
  const out = Object.create(null) as Record<string | symbol, string | string[]>;
  if (qs === '') return out;
  for (const pair of qs.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const rawKey = eq === -1 ? pair : pair.slice(0, eq);
    const key = decodeQueryPart(rawKey);
    const value = eq === -1 ? '' : decodeQueryPart(pair.slice(eq + 1));
    if (key === null || value === null) ((out[BAD_QUERY] ??= []) as string[]).push(key ?? rawKey);
    // Kept undecoded, for a route that reads the parameter leniently; any other route refuses it.
    const name = key ?? rawKey;
    const text = value ?? pair.slice(eq + 1);
    const prev = out[name];
    out[name] = prev === undefined ? text : Array.isArray(prev) ? [...prev, text] : [prev, text];
  }
  return out;
}

/**
 * Routes whose handlers clean text themselves, by access: the runtime sensor's reports, where a control character
 * is replaced and is never a reason to lose a report (runtime-guard/ingest.ts). Their bodies still have the depth limit.
 */
const CLEANS_OWN_TEXT: ReadonlySet<unknown> = new Set(['sensor']);

/** The bytes each of those routes' bodies was parsed from, by the parsed body (see jsonBytesOf). */
const bodyBytes = new WeakMap<object, Buffer>();

/**
 * The bytes a sensor route's body was parsed from (undefined for other routes): the ingest stores a report's items
 * from them rather than serialising the parsed items again (runtime-guard/ingest.ts). Bytes, not the parsed text: a
 * report's text (150 KB) lived from the body's end to its INSERT, so the young collector found it alive and moved it
 * to the old generation, where only full collections free it (a fleet's ingest filled it in about a second); the
 * bytes are outside V8's heap, and the text dies as soon as it is parsed. Taken, not read: the entry is deleted at
 * once, since V8's young collector keeps a long-lived WeakMap's entries until a full collection.
 */
export function jsonBytesOf(body: unknown): Buffer | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  const bytes = bodyBytes.get(body);
  bodyBytes.delete(body);
  return bytes;
}

/** The JSON body parser and the query and path checks, for every route but the data plane's (own error shapes). */
export function registerRequestTextChecks(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  // As bytes, made text here: the text is then referenced by nothing once parsed (see jsonBytesOf).
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    const text = bytes.toString('utf8');
    parseJson(request, text, (err: Error | null, value?: unknown) => {
      if (err) return done(err as FastifyError, undefined);
      if (nestedTooDeep(value)) return done(invalid(`body: ${TOO_DEEP_MESSAGE}`), undefined);
      // U+0000 and lone surrogates reach a JSON body only as `\u` escapes: no escape, nothing to look for.
      // An unknown route answers 404 whatever its body holds.
      const cleansOwnText = CLEANS_OWN_TEXT.has(request.routeOptions.config.access);
      const skip = request.is404 || text.indexOf('\\u') === -1 || cleansOwnText;
      const problem = skip ? null : unacceptableText(value, PART.body);
      if (problem) return done(invalid(problem), undefined);
      if (cleansOwnText && value !== null && typeof value === 'object') bodyBytes.set(value, bytes);
      done(null, value);
    });
  });

  app.addHook('preValidation', async (request: FastifyRequest) => {
    if (request.is404 || request.routeOptions.config.access === 'gateway') return;
    const lenient = request.routeOptions.config.lenientQuery ?? [];
    let query = request.query as Record<string | symbol, unknown> | undefined;
    const bad = (query?.[BAD_QUERY] as string[] | undefined)?.find((name) => !lenient.includes(name));
    if (bad !== undefined) throw invalid(`${PART.query}.${shown(bad)}: not valid percent-encoding`);
    if (query && lenient.length > 0) query = Object.fromEntries(Object.entries(query).filter(([k]) => !lenient.includes(k)));
    const problem = unacceptableText(query, PART.query) ?? unacceptableText(request.params, PART.path);
    if (problem) throw invalid(problem);
  });
}

/** The path parameter a request URL failed to decode in, found by matching the URL with that segment replaced. */
function badPathParam(app: FastifyInstance, method: string, url: string): string | null {
  const path = url.split('?')[0] ?? url;
  const segments = path.split('/');
  const marker = 'reins-undecodable-segment';
  let replaced = false;
  const probe = segments
    .map((s) => {
      try {
        decodeURIComponent(s);
        return s;
      } catch {
        replaced = true;
        return marker;
      }
    })
    .join('/');
  if (!replaced) return null;
  const route = app.findRoute({ method: method as 'GET', url: probe });
  const params = (route?.params ?? {}) as Record<string, string>;
  // A wildcard ("*": the console's catch-all) is not a parameter a client would know by name.
  return Object.keys(params).find((k) => k !== '*' && params[k]?.includes(marker)) ?? null;
}

/**
 * Fastify's `frameworkErrors`: errors the router meets before any route runs (a path that is not valid
 * percent-encoding, a path parameter over the router's length limit), answered in the contract's error body.
 */
export function frameworkErrorAnswer(app: () => FastifyInstance | null) {
  return (err: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    if (err.code === 'FST_ERR_BAD_URL') {
      const instance = app();
      const param = instance ? badPathParam(instance, request.raw.method ?? 'GET', request.raw.url ?? '') : null;
      const field = param ? `${PART.path}.${param}` : PART.path;
      void reply.status(400).send(errorBody('invalid_request', `${field}: not valid percent-encoding`));
      return;
    }
    if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
      void reply.status(400).send(errorBody('invalid_request', `${PART.path}: a path parameter is longer than this server accepts`));
      return;
    }
    request.log.error({ err }, 'router error');
    void reply.status(500).send(errorBody('internal_error', 'an internal error occurred; it has been logged'));
  };
}
