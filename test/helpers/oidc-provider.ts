/**
 * A real OpenID provider for the sign-in tests: `oidc-provider` (a certified OpenID Connect implementation) on a
 * local port, with one confidential client for Reins, users whose groups the test changes, and its development
 * login and consent pages, driven over HTTP like a browser does (`signInThrough`). Not a fake: discovery, JWKS, the
 * code flow, PKCE, ID tokens and UserInfo are the provider's own.
 */
import { createServer, type Server } from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { closable } from '../fakes/closable.js';

export interface TestUser {
  email: string;
  name?: string;
  groups?: string[];
  emailVerified?: boolean;
}

export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The users by login; change their groups between sign-ins. */
  users: Map<string, TestUser>;
  /** Registers Reins' callback (known once Reins listens) as the client's only redirect URI. */
  setRedirectUri(uri: string): void;
  /** The provider itself, for tests that change its keys. */
  provider: any;
  /**
   * Replaces the provider's keys (private JWKs; the first signs, all are published in its JWKS). The provider is
   * rebuilt; its stored codes, sessions and grants stay (oidc-provider's memory adapter is per process).
   */
  setKeys(keys: Record<string, unknown>[]): void;
  close(): Promise<void>;
}

export function rsaJwk(kid: string): Record<string, unknown> {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'RS256' };
}

export async function startTestProvider(options: { users?: Record<string, TestUser>; keys?: Record<string, unknown>[] } = {}): Promise<TestProvider> {
  const users = new Map(Object.entries(options.users ?? {}));
  let keys = options.keys ?? [rsaJwk('key-1')];
  let handler: ((req: any, res: any) => void) | null = null;
  const server: Server = createServer((req, res) => {
    if (handler) handler(req, res);
    else res.writeHead(503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = 'reins';
  const clientSecret = 'reins-test-client-secret-0123456789';
  const redirectUris: string[] = [];

  const build = () => {
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: clientId,
          client_secret: clientSecret,
          redirect_uris: [...redirectUris],
          response_types: ['code'],
          grant_types: ['authorization_code'],
          token_endpoint_auth_method: 'client_secret_basic',
        },
      ],
      jwks: { keys },
      cookies: { keys: ['test-provider-cookie-key'] },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
      scopes: ['openid', 'email', 'profile', 'groups'],
      features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
      pkce: { required: () => true },
      ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 600, Grant: 600 },
      findAccount: async (_ctx: unknown, id: string) => {
        const user = users.get(id);
        if (!user) return undefined;
        return {
          accountId: id,
          claims: async () => ({
            sub: id,
            email: user.email,
            email_verified: user.emailVerified ?? true,
            name: user.name ?? id,
            // Read at each claims call: a test changes a user's groups between two sign-ins.
            groups: [...(users.get(id)?.groups ?? [])],
          }),
        };
      },
    });
    // oidc-provider logs its development warnings once; the tests do not need them on stderr.
    provider.on('server_error', (_ctx: unknown, err: Error) => console.error('test provider error', err));
    return provider;
  };
  let provider = build();
  handler = provider.callback();
  const close = closable(server);
  const result: TestProvider = {
    issuer,
    clientId,
    clientSecret,
    users,
    get provider() {
      return provider;
    },
    setKeys(next: Record<string, unknown>[]) {
      keys = next;
      provider = build();
      handler = provider.callback();
    },
    setRedirectUri(uri: string) {
      redirectUris.splice(0, redirectUris.length, uri);
      provider = build();
      handler = provider.callback();
    },
    close,
  };
  return result;
}

/** A cookie jar per origin (a browser's, reduced to what these flows need: names and values). */
export class Jar {
  private readonly cookies = new Map<string, Map<string, string>>();
  take(url: string, res: Response): void {
    const origin = new URL(url).origin;
    const jar = this.cookies.get(origin) ?? new Map<string, string>();
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a) || /^\s*max-age=0\s*$/i.test(a));
      if (expired || value === '') jar.delete(name);
      else jar.set(name, value);
    }
    this.cookies.set(origin, jar);
  }
  header(url: string): string {
    const jar = this.cookies.get(new URL(url).origin);
    return jar ? [...jar].map(([k, v]) => `${k}=${v}`).join('; ') : '';
  }
  get(url: string, name: string): string | undefined {
    return this.cookies.get(new URL(url).origin)?.get(name);
  }
  set(url: string, name: string, value: string): void {
    const origin = new URL(url).origin;
    const jar = this.cookies.get(origin) ?? new Map<string, string>();
    jar.set(name, value);
    this.cookies.set(origin, jar);
  }
}

/** One request as a browser makes it: the jar's cookies, no automatic redirect. */
export async function browse(jar: Jar, url: string, init: { method?: string; form?: Record<string, string>; accept?: string } = {}): Promise<Response> {
  const headers: Record<string, string> = { accept: init.accept ?? 'text/html' };
  const cookie = jar.header(url);
  if (cookie) headers.cookie = cookie;
  let body: string | undefined;
  if (init.form) {
    body = new URLSearchParams(init.form).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  const res = await fetch(url, { method: init.method ?? (init.form ? 'POST' : 'GET'), headers, redirect: 'manual', ...(body !== undefined ? { body } : {}) });
  jar.take(url, res);
  return res;
}

/**
 * Follows the provider's pages from its authorization URL as a person would: signs in as `login` on the login form,
 * accepts the consent form, until the provider redirects to `redirectUri`. Returns that redirect (code, state, iss).
 */
export async function throughProvider(jar: Jar, authorizationUrl: string, login: string, redirectUri: string): Promise<URL> {
  let url = authorizationUrl;
  for (let step = 0; step < 20; step++) {
    const res = await browse(jar, url);
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      const next = new URL(location, url);
      if (next.href.startsWith(redirectUri)) return next;
      url = next.href;
      continue;
    }
    const html = await res.text();
    if (res.status !== 200) throw new Error(`provider answered ${res.status} at ${url}: ${html.slice(0, 500)}`);
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
    if (!action || !prompt) throw new Error(`no form on the provider's page ${url}: ${html.slice(0, 500)}`);
    const form: Record<string, string> = prompt === 'login' ? { prompt, login, password: 'any' } : { prompt };
    const posted = await browse(jar, new URL(action, url).href, { form });
    const after = posted.headers.get('location');
    if (!after) throw new Error(`the provider's ${prompt} form answered ${posted.status}: ${(await posted.text()).slice(0, 500)}`);
    url = new URL(after, url).href;
    if (url.startsWith(redirectUri)) return new URL(url);
  }
  throw new Error('the provider never redirected back');
}
