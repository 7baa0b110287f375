/**
 * A real OpenID provider for the sign-in tests: `oidc-provider` (a certified OpenID Connect implementation) on a
 * local port, with one confidential client for Reins, users whose groups the test changes, and its development
 * login and consent pages, driven over HTTP like a browser does (`signInThrough`). Not a fake: discovery, JWKS, the
 * code flow, PKCE, ID tokens and UserInfo are the provider's own.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import { createPrivateKey, generateKeyPairSync, sign as cryptoSign } from 'node:crypto';
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
  /**
   * Tampers with the ID token of every token endpoint answer while set (null: off): the provider's own answer is
   * taken on its way back to Reins and its `id_token` replaced by what `rewrite` returns, as a proxy between Reins
   * and the token endpoint would. Everything else (discovery, JWKS, code, PKCE, access token) stays the provider's.
   */
  tamperIdToken(rewrite: ((idToken: string) => string) | null): void;
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
  let rewriteIdToken: ((idToken: string) => string) | null = null;
  const server: Server = createServer((req, res) => {
    if (!handler) return void res.writeHead(503).end();
    if (rewriteIdToken && req.method === 'POST' && new URL(req.url ?? '/', 'http://x').pathname === '/token') interceptIdToken(res, rewriteIdToken);
    handler(req, res);
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
    tamperIdToken(rewrite) {
      rewriteIdToken = rewrite;
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

/**
 * Holds back the token endpoint's answer (oidc-provider answers through koa: headers and the JSON body in one
 * `end`) and sends it with its `id_token` rewritten and its length corrected.
 */
function interceptIdToken(res: ServerResponse, rewrite: (idToken: string) => string): void {
  const chunks: Buffer[] = [];
  const end = res.end.bind(res);
  res.write = ((chunk: any, ...rest: any[]) => {
    if (chunk) chunks.push(Buffer.from(chunk));
    const cb = rest.find((a) => typeof a === 'function');
    if (cb) cb();
    return true;
  }) as typeof res.write;
  res.end = ((chunk?: any, ...rest: any[]) => {
    if (chunk && typeof chunk !== 'function') chunks.push(Buffer.from(chunk));
    let body = Buffer.concat(chunks).toString('utf8');
    try {
      const json = JSON.parse(body) as Record<string, unknown>;
      if (typeof json.id_token === 'string') body = JSON.stringify({ ...json, id_token: rewrite(json.id_token) });
    } catch {
      // not JSON (an error page): passed on unchanged
    }
    if (!res.headersSent) res.setHeader('content-length', Buffer.byteLength(body));
    return end(body);
  }) as typeof res.end;
}

/**
 * Signs `payload` as an RS256 JWS with a private JWK (one of the provider's keys: the token then verifies against
 * its published JWKS, so only the claims a test changed are wrong).
 */
export function signJwt(payload: Record<string, unknown>, jwk: Record<string, unknown>, header: Record<string, unknown> = {}): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const input = `${b64({ ...header, alg: 'RS256', kid: jwk.kid })}.${b64(payload)}`;
  const key = createPrivateKey({ key: jwk as any, format: 'jwk' });
  return `${input}.${cryptoSign('sha256', Buffer.from(input), key).toString('base64url')}`;
}

/** The parts of a compact JWS: its header and payload decoded, its signature as sent. */
export function decodeJwt(jwt: string): { header: Record<string, unknown>; payload: Record<string, unknown>; signature: string } {
  const [h, p, signature] = jwt.split('.');
  const parse = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
  return { header: parse(h!), payload: parse(p!), signature: signature! };
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

/**
 * A person's console session through the provider, as a browser gets it: Reins' `/auth/oidc/login`, the provider's
 * login and consent pages as `login`, Reins' callback. Returns the session cookie's value and the session's CSRF token.
 */
export async function signInThroughProvider(reinsUrl: string, login: string): Promise<{ cookie: string; csrfToken: string }> {
  const jar = new Jar();
  const start = await browse(jar, `${reinsUrl}/auth/oidc/login`);
  const authorization = start.headers.get('location');
  if (start.status !== 302 || !authorization) throw new Error(`Reins did not start the sign-in: ${start.status} ${await start.text()}`);
  const back = await throughProvider(jar, authorization, login, `${reinsUrl}/auth/oidc/callback`);
  const done = await browse(jar, back.href, { accept: 'application/json' });
  const cookie = jar.get(reinsUrl, 'reins_session');
  if (done.status !== 303 || !cookie) throw new Error(`Reins did not sign ${login} in: ${done.status} ${await done.text()}`);
  const me = await fetch(`${reinsUrl}/api/v1/auth/me`, { headers: { cookie: `reins_session=${cookie}` } });
  const body = (await me.json()) as { csrfToken?: string };
  if (me.status !== 200 || !body.csrfToken) throw new Error(`the session of ${login} does not work: ${me.status} ${JSON.stringify(body)}`);
  return { cookie, csrfToken: body.csrfToken };
}
