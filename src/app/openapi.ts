/**
 * The last pass over the OpenAPI document @fastify/swagger builds from the route schemas, so that it passes
 * `redocly lint` (its recommended rules) whatever a domain's routes declare:
 *
 * - every operation has an `operationId`: the route's own when it declares one, else one made from the method and
 *   the path (`POST /api/v1/access-requests/{id}/approve` -> `postAccessRequestsByIdApprove`), unique per document;
 * - an operation without a 4XX answer (the data plane's, which answer in their protocol's shape) gets one;
 * - `anyOf` with a single member (TypeBox unions of one) is the member itself;
 * - component schemas nothing refers to are left out.
 *
 * The servers entry (`/`, the replica serving the document) is in app.ts's swagger options.
 */

type Json = Record<string, unknown>;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function words(segment: string): string {
  return segment
    .split(/[^A-Za-z0-9]+/)
    .filter((w) => w !== '')
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');
}

/** `post` + `/api/v1/access-requests/{id}/approve` -> `postAccessRequestsByIdApprove`. */
export function operationIdFor(method: string, path: string): string {
  const segments = path.replace(/^\/api\/v1(?=\/|$)/, '').split('/').filter((s) => s !== '');
  const name = segments.map((s) => (s.startsWith('{') && s.endsWith('}') ? `By${words(s.slice(1, -1))}` : words(s))).join('');
  return `${method.toLowerCase()}${name || 'Root'}`;
}

/** A single-member `anyOf` (TypeBox's union of one) replaced by its member, keeping the outer keywords (description). */
function collapseSingleAnyOf(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(collapseSingleAnyOf);
  if (!isObject(value)) return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) out[k] = collapseSingleAnyOf(v);
  const anyOf = out.anyOf;
  if (Array.isArray(anyOf) && anyOf.length === 1 && isObject(anyOf[0])) {
    delete out.anyOf;
    return { ...anyOf[0], ...out };
  }
  return out;
}

const DEFAULT_4XX = {
  description: "Refused or not understood: the error in the route's own protocol (the provider's error shape on /llm, a JSON-RPC error on /mcp)",
};

export function finishOpenApiDocument(doc: Json): Json {
  const used = new Set<string>();
  const paths = isObject(doc.paths) ? doc.paths : {};
  const finishedPaths: Json = {};
  for (const [path, rawItem] of Object.entries(paths)) {
    if (!isObject(rawItem)) continue;
    const item: Json = { ...rawItem };
    for (const method of METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      // @fastify/swagger shares one operation object between the methods of a multi-method route: copy it.
      const copy: Json = { ...op };
      let id = typeof copy.operationId === 'string' && copy.operationId !== '' ? copy.operationId : operationIdFor(method, path);
      if (used.has(id)) id = `${id}${words(method)}`;
      for (let n = 2; used.has(id); n++) id = `${id}${n}`;
      used.add(id);
      copy.operationId = id;
      const responses = isObject(copy.responses) ? copy.responses : {};
      if (!Object.keys(responses).some((status) => /^4(\d\d|XX)$/i.test(status))) copy.responses = { ...responses, '4XX': DEFAULT_4XX };
      item[method] = copy;
    }
    finishedPaths[path] = item;
  }
  const finished = collapseSingleAnyOf({ ...doc, paths: finishedPaths }) as Json;
  const components = isObject(finished.components) ? finished.components : null;
  if (components && isObject(components.schemas)) {
    const text = JSON.stringify({ ...finished, components: { ...components, schemas: {} } });
    const schemas: Json = {};
    for (const [name, schema] of Object.entries(components.schemas)) {
      // Kept when referred to from outside the component schemas (a component referring to another keeps it too, rarely).
      if (text.includes(`"#/components/schemas/${name}"`) || JSON.stringify(components.schemas).split(`"#/components/schemas/${name}"`).length > 1) schemas[name] = schema;
    }
    finished.components = { ...components, schemas };
  }
  return finished;
}
