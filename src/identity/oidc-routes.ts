/**
 * The browser's side of OpenID Connect sign-in (docs/sign-in.md): `GET /auth/oidc/login` starts the flow,
 * `GET /auth/oidc/callback` ends it with the console session cookie token sign-in sets, `POST /auth/logout` ends the
 * session (and names the provider's logout page when it has one), `GET /api/v1/auth/sign-in-options` tells the
 * console's sign-in page what to offer. The routes exist whether OIDC is configured or not (404 when it is not), so
 * the API description and its tests see them.
 *
 * A browser (Accept: text/html) that cannot be signed in gets a page saying why; any other client the JSON error.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AppError, statusOf } from '../shared/errors.js';
import { responses } from '../shared/schemas.js';
import type { Db } from '../store/db.js';
import type { IdentityChange } from './identity-change.js';
import { OidcClient } from './oidc-client.js';
import type { OidcSettings } from './oidc-mapping.js';
import { saveTransaction, sessionVia, signInWithProvider, takeTransaction, TRANSACTION_TTL_SECONDS } from './oidc-sign-in.js';
import { CSRF_HEADER, SESSION_COOKIE, signOut } from './sessions.js';

/** The browser's handle on a sign-in under way (oidc-sign-in.ts): HttpOnly, SameSite=Lax, only sent to /auth/oidc. */
export const TRANSACTION_COOKIE = 'reins_oidc';
const TRANSACTION_PATH = '/auth/oidc';

/** Server paths a sign-in never returns to (the console's own paths are everything else). */
const NOT_CONSOLE = ['/api', '/auth', '/llm', '/mcp', '/healthz', '/readyz', '/metrics', '/.well-known', '/assets'];

/**
 * `returnTo` must be a path of this console: one leading "/" (not "//", which a browser reads as another host), no
 * backslash, no control character, not a server path. Absent: `/`.
 */
export function consoleReturnPath(raw: string | undefined): string {
  if (raw === undefined || raw === '') return '/';
  const bad = () => new AppError('invalid_request', 'returnTo: must be a path of the console, such as /approvals (one leading "/", no scheme or host)', { field: 'returnTo' });
  if (raw.length > 2000 || !raw.startsWith('/') || raw.startsWith('//') || /[\\\u0000-\u001f\u007f]/.test(raw)) throw bad();
  let url: URL;
  try {
    url = new URL(raw, 'http://reins.invalid');
  } catch {
    throw bad();
  }
  // Dot segments collapse when the URL is parsed: "/.//evil.example" becomes "//evil.example", which a browser reads as
  // another host. The path is checked as it will be sent.
  if (url.host !== 'reins.invalid' || url.pathname.startsWith('//') || NOT_CONSOLE.some((p) => url.pathname === p || url.pathname.startsWith(`${p}/`))) throw bad();
  return `${url.pathname}${url.search}`;
}

export interface OidcRouteDeps {
  db: Db;
  /** `auth.oidc`; null: OIDC sign-in is not configured (the routes answer 404). */
  oidc: OidcSettings | null;
  sessionTtlSeconds: number;
  /** `auth.tokenSignIn`, shown to the console's sign-in page. */
  tokenSignIn?: 'all' | 'admins' | 'off';
  onIdentityChange: (change: IdentityChange) => void;
  /** Tokens this replica revoked (a person the provider no longer lets in): its caches drop them at once. */
  onTokenRevoked?: (tokenId: string) => void;
  /**
   * Hears a callback that failed (bad or replayed state or code, an ID token that does not verify) with its reason:
   * the failed-credential throttle counts it per address and audits it as `auth.failed` (plane `sign-in`), as it
   * does a refused token sign-in. A person refused for their groups is audited apart (`session.refused`).
   */
  onFailedSignIn?: (ip: string, reason: string) => void;
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** The page a browser sees when its sign-in is refused or fails: what happened, and the way back. */
function refusalPage(err: AppError): string {
  const title = err.code === 'sign_in_refused' ? 'You cannot sign in to Reins' : 'Sign-in did not complete';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head><body>
<main style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto">
<h1>${title}</h1>
<p id="reason">${escapeHtml(err.message)}</p>
<p>No Reins account or session was created. <a href="/">Back to the sign-in page</a></p>
</main></body></html>`;
}

function wantsHtml(request: FastifyRequest): boolean {
  return (request.headers.accept ?? '').includes('text/html');
}

function transactionCookie(protocol: string, maxAge?: number) {
  return { httpOnly: true, sameSite: 'lax' as const, secure: protocol === 'https', path: TRANSACTION_PATH, ...(maxAge !== undefined ? { maxAge } : {}) };
}

function sessionCookie(protocol: string, expires?: Date) {
  return { httpOnly: true, sameSite: 'strict' as const, secure: protocol === 'https', path: '/', ...(expires ? { expires } : {}) };
}

const REDIRECT = (description: string) => Type.Null({ description });
const notConfigured = () => new AppError('not_found', 'OpenID Connect sign-in is not configured on this deployment (auth.oidc)');

export function registerOidcRoutes(fastify: FastifyInstance, deps: OidcRouteDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const client = deps.oidc ? new OidcClient(deps.oidc) : null;

  /** Answers a browser's failed sign-in with the page, anyone else's with the JSON error. */
  const answerFailure = (err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    if (!(err instanceof AppError) || !wantsHtml(request)) throw err;
    return reply
      .status(statusOf(err.code))
      .header('cache-control', 'no-store')
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
      .type('text/html; charset=utf-8')
      .send(refusalPage(err));
  };

  app.get('/api/v1/auth/sign-in-options', {
    config: { access: 'public' },
    schema: {
      tags: ['console'],
      summary: "What the console's sign-in page offers: token sign-in, and the identity provider when auth.oidc is configured",
      response: responses(
        {
          200: Type.Object({
            token: Type.Boolean({ description: 'Personal access token sign-in (POST /api/v1/auth/session) is open (auth.tokenSignIn is not off)' }),
            tokenSignIn: Type.Union([Type.Literal('all'), Type.Literal('admins'), Type.Literal('off')], { description: 'auth.tokenSignIn: who may sign in with a token' }),
            oidc: Type.Union([Type.Object({ displayName: Type.String(), issuer: Type.String(), loginUrl: Type.String() }), Type.Null()]),
          }),
        },
        400,
      ),
    },
    handler: async () => ({
      token: (deps.tokenSignIn ?? 'all') !== 'off',
      tokenSignIn: deps.tokenSignIn ?? 'all',
      oidc: deps.oidc ? { displayName: deps.oidc.displayName, issuer: deps.oidc.issuer, loginUrl: '/auth/oidc/login' } : null,
    }),
  });

  app.get('/auth/oidc/login', {
    config: { access: 'public' },
    schema: {
      tags: ['console'],
      summary: 'Start OpenID Connect sign-in: redirects to the identity provider (code flow, PKCE, state, nonce)',
      querystring: Type.Object({ returnTo: Type.Optional(Type.String({ description: 'A console path to land on after sign-in; default /' })) }),
      response: responses({ 302: REDIRECT("To the provider's authorization endpoint; sets the short-lived reins_oidc cookie") }, 400, 404, 503),
    },
    handler: async (request, reply) => {
      try {
        if (!client) throw notConfigured();
        const returnTo = consoleReturnPath(request.query.returnTo);
        const flow = await client.start();
        const cookieValue = await saveTransaction(deps.db, { state: flow.state, nonce: flow.nonce, codeVerifier: flow.codeVerifier, returnTo });
        reply.setCookie(TRANSACTION_COOKIE, cookieValue, transactionCookie(request.protocol, TRANSACTION_TTL_SECONDS));
        return reply.header('cache-control', 'no-store').redirect(flow.url, 302);
      } catch (err) {
        return answerFailure(err, request, reply);
      }
    },
  });

  app.get('/auth/oidc/callback', {
    config: { access: 'public' },
    schema: {
      tags: ['console'],
      summary: "End OpenID Connect sign-in: the provider's redirect; sets the console session cookie and redirects to returnTo",
      description:
        'Refused (400 sign_in_failed) without the reins_oidc cookie of the browser that started the flow, with a state that is not that flow\'s, a used or ' +
        "invalid code, or an ID token whose signature, issuer, audience, expiry or nonce does not verify; 403 sign_in_refused when the person's groups give no role or the identity cannot be theirs. A browser gets a page saying why.",
      querystring: Type.Object(
        {
          code: Type.Optional(Type.String()),
          state: Type.Optional(Type.String()),
          iss: Type.Optional(Type.String()),
          error: Type.Optional(Type.String()),
          error_description: Type.Optional(Type.String()),
        },
        { additionalProperties: true },
      ),
      response: responses({ 303: REDIRECT('To returnTo; sets the reins_session cookie (HttpOnly, SameSite=Strict)') }, 400, 403, 404, 503),
    },
    handler: async (request, reply) => {
      try {
        if (!client || !deps.oidc) throw notConfigured();
        const cookieValue = request.cookies?.[TRANSACTION_COOKIE];
        // Cleared whatever happens next: a transaction is used once.
        reply.clearCookie(TRANSACTION_COOKIE, transactionCookie(request.protocol));
        const tx = cookieValue ? await takeTransaction(deps.db, cookieValue) : null;
        if (!tx) throw new AppError('sign_in_failed', 'this sign-in expired, was already used, or was started in another browser; start again');
        const query = request.query;
        if (query.error !== undefined) {
          throw new AppError('sign_in_refused', `the identity provider refused the sign-in: ${query.error}${query.error_description ? ` (${query.error_description})` : ''}`);
        }
        if (query.state !== tx.state) throw new AppError('sign_in_failed', "state: does not match this browser's sign-in");
        const raw = request.raw.url ?? '';
        const flow = await client.finish(raw.includes('?') ? raw.slice(raw.indexOf('?')) : '', tx);
        const signedIn = await signInWithProvider(deps.db, deps.oidc, flow, {
          ttlSeconds: deps.sessionTtlSeconds,
          ip: request.ip,
          onTokensRevoked: (ids) => ids.forEach((id) => deps.onTokenRevoked?.(id)),
        });
        if (signedIn.change) deps.onIdentityChange(signedIn.change);
        reply.setCookie(SESSION_COOKIE, signedIn.cookieValue, sessionCookie(request.protocol, signedIn.expiresAt));
        return reply.header('cache-control', 'no-store').redirect(tx.returnTo, 303);
      } catch (err) {
        if (err instanceof AppError && err.code === 'sign_in_failed') deps.onFailedSignIn?.(request.ip, `OpenID Connect callback: ${err.message}`);
        return answerFailure(err, request, reply);
      }
    },
  });

  app.post('/auth/logout', {
    config: { access: 'public' },
    schema: {
      tags: ['console'],
      summary: "Sign out: ends the console session, clears its cookie, and names the identity provider's logout page when the session came from it",
      description: `With a live session cookie this needs the session's CSRF token in ${CSRF_HEADER} (403 csrf_required without it). Without a session it only clears the cookie.`,
      response: responses(
        {
          200: Type.Object({
            status: Type.Literal('signed_out'),
            providerLogoutUrl: Type.Optional(Type.String({ description: "RP-initiated logout at the provider (its end_session_endpoint): open it to end the provider's session too" })),
          }),
        },
        400,
        403,
      ),
    },
    handler: async (request, reply) => {
      const actor = request.actor;
      let providerLogoutUrl: string | null = null;
      if (actor?.kind === 'developer' && actor.via === 'session') {
        if (request.headers[CSRF_HEADER] !== actor.csrfToken) throw new AppError('csrf_required', `send the session's CSRF token in the ${CSRF_HEADER} header`);
        const via = await sessionVia(deps.db, actor.sessionId);
        await signOut(deps.db, actor);
        if (via === 'oidc' && client) providerLogoutUrl = await client.endSessionUrl(null);
      }
      reply.clearCookie(SESSION_COOKIE, sessionCookie(request.protocol));
      return { status: 'signed_out' as const, ...(providerLogoutUrl ? { providerLogoutUrl } : {}) };
    },
  });
}
