/**
 * The relying party's side of OpenID Connect, through `openid-client` (certified; nothing here checks a token by
 * hand): discovery from `<issuer>/.well-known/openid-configuration`, the authorization URL (code flow, PKCE S256,
 * state, nonce), and the code exchange, where openid-client verifies the state, the `iss` of the response, the ID
 * token's signature against the issuer's JWKS (cached; fetched again when a token names a key id the cache lacks and
 * the cache is a minute old or more, so a provider's rotation to a key it published beforehand works at once), its
 * issuer, audience, expiry and nonce, and the provider checks PKCE.
 *
 * Discovery runs at the first sign-in, not at start, so a provider that is down does not stop a replica (token
 * sign-in keeps working); a failed discovery is tried again at the next sign-in.
 */
import * as client from 'openid-client';
import { AppError } from '../shared/errors.js';
import type { OidcSettings } from './oidc-mapping.js';

export interface StartedFlow {
  url: string;
  state: string;
  nonce: string;
  codeVerifier: string;
}

export interface FinishedFlow {
  /** The verified ID token's claims, merged over the UserInfo's when the token lacks the identity or groups claim. */
  claims: Record<string, unknown>;
  issuer: string;
  subject: string;
  idToken: string | undefined;
}

/** An http:// issuer is allowed on loopback only (config.ts checks it); openid-client refuses http:// unless told. */
function isHttp(url: string): boolean {
  return url.startsWith('http:');
}

export class OidcClient {
  private discovered: Promise<client.Configuration> | null = null;

  constructor(private readonly config: OidcSettings) {}

  get issuer(): string {
    return this.config.issuer;
  }

  private configuration(): Promise<client.Configuration> {
    if (!this.discovered) {
      const auth = this.config.clientSecret !== undefined ? client.ClientSecretBasic(this.config.clientSecret) : client.None();
      this.discovered = client
        .discovery(new URL(this.config.issuer), this.config.clientId, { redirect_uris: [this.config.redirectUrl], response_types: ['code'] }, auth, {
          // enableNonRepudiationChecks: openid-client otherwise trusts an ID token from the token endpoint on the strength
          // of TLS alone (OIDC Core 3.1.3.7 allows it); Reins verifies its signature against the issuer's JWKS as well.
          execute: [client.enableNonRepudiationChecks, ...(isHttp(this.config.issuer) ? [client.allowInsecureRequests] : [])],
          timeout: 10,
        })
        .catch((err: unknown) => {
          this.discovered = null;
          throw new AppError('unavailable', `the identity provider ${this.config.issuer} cannot be reached for discovery: ${(err as Error).message}`);
        });
    }
    return this.discovered;
  }

  async start(): Promise<StartedFlow> {
    const configuration = await this.configuration();
    const codeVerifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(configuration, {
      redirect_uri: this.config.redirectUrl,
      scope: this.config.scopes.join(' '),
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url: url.href, state, nonce, codeVerifier };
  }

  /**
   * Exchanges the code of the provider's redirect. `query` is the callback's query string as received; it is put on
   * the configured redirect URL (what the provider redirected to, whatever proxies changed on the way in).
   */
  async finish(query: string, checks: { state: string; nonce: string; codeVerifier: string }): Promise<FinishedFlow> {
    const configuration = await this.configuration();
    const current = new URL(this.config.redirectUrl);
    current.search = query;
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await client.authorizationCodeGrant(configuration, current, {
        pkceCodeVerifier: checks.codeVerifier,
        expectedState: checks.state,
        expectedNonce: checks.nonce,
        idTokenExpected: true,
      });
    } catch (err) {
      throw new AppError('sign_in_failed', `the identity provider's answer was refused: ${describe(err)}`);
    }
    const idClaims = tokens.claims();
    if (!idClaims) throw new AppError('sign_in_failed', 'the identity provider sent no ID token');
    let claims: Record<string, unknown> = { ...idClaims };
    // Many providers put e-mail and groups in the UserInfo only (or only when asked): read it for what the token lacks.
    const needsUserInfo = [this.identityClaim, this.config.groupsClaim].some((c) => !(c in idClaims));
    if (needsUserInfo && configuration.serverMetadata().userinfo_endpoint && tokens.access_token) {
      try {
        const info = await client.fetchUserInfo(configuration, tokens.access_token, idClaims.sub);
        claims = { ...info, ...idClaims };
      } catch (err) {
        throw new AppError('sign_in_failed', `the identity provider's UserInfo could not be read: ${describe(err)}`);
      }
    }
    return { claims, issuer: idClaims.iss, subject: idClaims.sub, idToken: tokens.id_token };
  }

  private get identityClaim(): string {
    return this.config.identity.claim;
  }

  /** RP-initiated logout at the provider, when it has an end_session_endpoint; null otherwise. */
  async endSessionUrl(postLogoutRedirect: string | null): Promise<string | null> {
    let configuration: client.Configuration;
    try {
      configuration = await this.configuration();
    } catch {
      return null;
    }
    if (!configuration.serverMetadata().end_session_endpoint) return null;
    return client.buildEndSessionUrl(configuration, {
      client_id: this.config.clientId,
      ...(postLogoutRedirect ? { post_logout_redirect_uri: postLogoutRedirect } : {}),
    }).href;
  }
}

/**
 * openid-client's error with what its causes say (it wraps oauth4webapi's, which carries a code such as
 * OAUTH_JWT_CLAIM_COMPARISON_FAILED and the claim, or the provider's `error`): the claim's name, never its values.
 */
function describe(err: unknown): string {
  const parts: string[] = [];
  let e = err as { message?: string; code?: string; error?: string; error_description?: string; claim?: string; cause?: unknown } | undefined;
  for (let depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    if (depth === 0 && e.message) parts.push(e.message);
    else if (e.message && !parts.includes(e.message)) parts.push(`(${e.message})`);
    if (typeof e.code === 'string' && e.code.startsWith('OAUTH_')) parts.push(`[${e.code}]`);
    if (typeof e.claim === 'string') parts.push(`(ID token claim "${e.claim}")`);
    if (typeof e.error === 'string') parts.push(`(${e.error}${e.error_description ? `: ${e.error_description}` : ''})`);
    e = e.cause as typeof e;
  }
  return parts.length > 0 ? parts.join(' ') : String(err);
}
