/**
 * What differs between the provider kinds on the data path, asked of their description objects (providers/: one
 * file per kind): which routes exist, how the client presents its key, how Reins presents the provider's,
 * and where a request names its model, stream flag and token cap.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderKind, ProviderSettings } from '../../config/config.js';
import { bearerSecret } from '../../shared/bearer.js';
import { PROVIDERS, type CallFacts, type Endpoint } from './providers/index.js';
import { isObject } from './providers/provider.js';

export type { CallFacts, Endpoint } from './providers/index.js';

/** The endpoint a method and path (query excluded) name, or null when the gateway does not serve it. */
export function matchEndpoint(kind: ProviderKind, method: string, path: string): Endpoint | null {
  return PROVIDERS[kind].matchEndpoint(method, path);
}

export function describeRoutes(kind: ProviderKind): string {
  return PROVIDERS[kind].routes;
}

/** The Reins secret the client sent where its SDK puts the provider key (a header, or Gemini's `?key=`), or null. */
export function clientSecret(kind: ProviderKind, headers: IncomingHttpHeaders, query: string): string | null {
  const auth = headers.authorization;
  if (auth !== undefined) return bearerSecret(auth);
  const { apiKeyHeader: header, apiKeyQuery } = PROVIDERS[kind];
  const apiKey = header === null ? undefined : headers[header];
  if (typeof apiKey === 'string' && apiKey.trim() !== '') return apiKey.trim();
  if (apiKeyQuery !== undefined && query !== '') {
    const fromQuery = new URLSearchParams(query).get(apiKeyQuery);
    if (fromQuery !== null && fromQuery.trim() !== '') return fromQuery.trim();
  }
  return null;
}

/** The route as it goes upstream: the client's, without a key it put in the query (Gemini's `?key=`). */
export function upstreamRoute(kind: ProviderKind, route: string): string {
  const param = PROVIDERS[kind].apiKeyQuery;
  const q = route.indexOf('?');
  if (param === undefined || q < 0) return route;
  const query = new URLSearchParams(route.slice(q + 1));
  if (!query.has(param)) return route;
  query.delete(param);
  const rest = query.toString();
  return rest === '' ? route.slice(0, q) : `${route.slice(0, q)}?${rest}`;
}

const credentials = new WeakMap<ProviderSettings, Readonly<Record<string, string>>>();

/**
 * The provider credential Reins adds in place of the client's (which is never forwarded). Made once per upstream's
 * settings (they do not change while the process runs) and frozen: every call only copies it.
 */
export function providerCredential(settings: ProviderSettings): Readonly<Record<string, string>> {
  let credential = credentials.get(settings);
  if (credential === undefined) {
    credential = Object.freeze(settings.apiKey ? PROVIDERS[settings.kind].credential(settings.apiKey) : {});
    credentials.set(settings, credential);
  }
  return credential;
}

/** Model, stream flag and token cap as the policy object needs them. */
export function callFacts(kind: ProviderKind, endpoint: Endpoint, body: unknown): CallFacts {
  return PROVIDERS[kind].callFacts(endpoint, isObject(body) ? body : {});
}
