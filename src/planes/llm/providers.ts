/**
 * What differs between the providers on the data path, asked of their description objects (providers/: one
 * file per provider): which routes exist, how the client presents its key, how Reins presents the provider's,
 * and where a request names its model, stream flag and token cap.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderName, ProviderSettings } from '../../config/config.js';
import { PROVIDERS, type CallFacts, type Endpoint } from './providers/index.js';
import { isObject } from './providers/provider.js';

export type { CallFacts, Endpoint } from './providers/index.js';

/** The endpoint a method and path (query excluded) name, or null when the gateway does not serve it. */
export function matchEndpoint(provider: ProviderName, method: string, path: string): Endpoint | null {
  return PROVIDERS[provider].matchEndpoint(method, path);
}

export function describeRoutes(provider: ProviderName): string {
  return PROVIDERS[provider].routes;
}

/** The Reins secret the client sent where its SDK puts the provider key, or null. */
export function clientSecret(provider: ProviderName, headers: IncomingHttpHeaders): string | null {
  const auth = headers.authorization;
  if (auth !== undefined) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    return m ? m[1]! : null;
  }
  const header = PROVIDERS[provider].apiKeyHeader;
  const apiKey = header === null ? undefined : headers[header];
  if (typeof apiKey === 'string' && apiKey.trim() !== '') return apiKey.trim();
  return null;
}

/** The provider credential Reins adds in place of the client's (which is never forwarded). */
export function providerCredential(provider: ProviderName, settings: ProviderSettings): Record<string, string> {
  return settings.apiKey ? PROVIDERS[provider].credential(settings.apiKey) : {};
}

/** Model, stream flag and token cap as the policy object needs them. */
export function callFacts(provider: ProviderName, endpoint: Endpoint, body: unknown): CallFacts {
  return PROVIDERS[provider].callFacts(endpoint, isObject(body) ? body : {});
}
