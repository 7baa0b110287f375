/**
 * The gateway's credential lookup: the first call with a secret reads the store, later calls are a map
 * hit. Revocation still takes effect at once: revoking announces the token on NOTIFY (reins_token) and
 * every replica drops it before its next call; deleting an identity or changing it (reins_identity) drops
 * its tokens; a lost listening connection clears everything. Expiry is checked on every hit, and entries
 * are re-read after `ttlMs` as a last safety net.
 */
import { Channels, type Db } from '../store/db.js';
import type { Role } from '../shared/actor.js';
import type { IdentityKind } from '../identity/identity-change.js';
import { hashSecret, type TokenKind } from '../identity/tokens.js';

export interface GatewayCredential {
  tokenId: string;
  kind: TokenKind;
  identityId: string;
  identityKind: IdentityKind;
  role: Role | null;
}

interface Entry {
  credential: GatewayCredential;
  /** Unix ms; Infinity when the token does not expire. */
  expiresAt: number;
  cachedAt: number;
}

export interface CredentialCacheOptions {
  ttlMs?: number;
  maxEntries?: number;
  listen?: boolean;
}

export class CredentialCache {
  private readonly byHash = new Map<string, Entry>();
  private readonly unlisteners: (() => Promise<void>)[] = [];
  private readonly ttlMs: number;
  private readonly maxEntries: number;

  constructor(
    private readonly db: Db,
    private readonly options: CredentialCacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 30_000;
    this.maxEntries = options.maxEntries ?? 50_000;
  }

  async start(): Promise<void> {
    if (this.options.listen === false) return;
    const clear = { onResync: () => this.byHash.clear() };
    this.unlisteners.push(
      await this.db.listen(Channels.token, (payload) => this.dropWhere('tokenId', field(payload, 'id')), clear),
      await this.db.listen(Channels.identity, (payload) => this.dropWhere('identityId', field(payload, 'id')), clear),
    );
  }

  async stop(): Promise<void> {
    for (const unlisten of this.unlisteners.splice(0)) await unlisten();
    this.byHash.clear();
  }

  /** This replica's own revocation applies before its answer, without waiting for the notification. */
  forgetToken(tokenId: string): void {
    this.dropWhere('tokenId', tokenId);
  }

  forgetIdentity(identityId: string): void {
    this.dropWhere('identityId', identityId);
  }

  /** A cached, unexpired credential for this secret, without a promise; undefined means ask `authenticate`. */
  cached(secret: string): GatewayCredential | undefined {
    if (secret.length < 16 || secret.length > 512) return undefined;
    const hit = this.byHash.get(hashSecret(secret));
    if (hit === undefined) return undefined;
    const now = Date.now();
    return now - hit.cachedAt < this.ttlMs && now < hit.expiresAt ? hit.credential : undefined;
  }

  /** The credential a secret belongs to, or null when it is unknown, revoked, expired or a sensor token. */
  async authenticate(secret: string): Promise<GatewayCredential | null> {
    if (secret.length < 16 || secret.length > 512) return null;
    const hash = hashSecret(secret);
    const now = Date.now();
    const hit = this.byHash.get(hash);
    if (hit && now - hit.cachedAt < this.ttlMs) {
      if (now < hit.expiresAt) return hit.credential;
      this.byHash.delete(hash);
      return null;
    }
    const r = await this.db.query<{
      id: string;
      kind: TokenKind;
      identity_id: string;
      identity_kind: IdentityKind;
      role: Role | null;
      expires_at: Date | null;
    }>(
      `SELECT t.id, t.kind, t.identity_id, i.kind AS identity_kind, i.role, t.expires_at
         FROM tokens t JOIN identities i ON i.id = t.identity_id
        WHERE t.secret_hash = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())
          AND t.kind IN ('personal', 'agent')`,
      [hash],
    );
    const row = r.rows[0];
    if (!row) {
      this.byHash.delete(hash);
      return null;
    }
    const credential: GatewayCredential = {
      tokenId: row.id,
      kind: row.kind,
      identityId: row.identity_id,
      identityKind: row.identity_kind,
      role: row.role,
    };
    if (this.byHash.size >= this.maxEntries) this.byHash.clear();
    this.byHash.set(hash, { credential, expiresAt: row.expires_at ? row.expires_at.getTime() : Number.POSITIVE_INFINITY, cachedAt: now });
    return credential;
  }

  /** Checks asked for and not yet sent, by token and agent: the callers that ask before it leaves share it. */
  private readonly unsentChecks = new Map<string, Promise<string | null>>();

  /**
   * Why a caller that was accepted earlier may no longer act, read from the store (not the cache): its token was
   * revoked or expired, or its identity or its agent was deleted since. Null when it still may. Asked once more
   * before a held call is sent upstream, since minutes or hours may have passed while it waited.
   *
   * A person who releases many of one agent's calls at once wakes them together; each asks this. The asks of one
   * turn of the event loop share one read, sent after the last of them: the answer is read after every one of
   * them asked, so none is answered from before its own ask (a read already sent is never shared).
   */
  revokedSince(tokenId: string, agentId: string): Promise<string | null> {
    const key = `${tokenId}\u0000${agentId}`;
    let check = this.unsentChecks.get(key);
    if (check === undefined) {
      check = new Promise<void>((sent) => setImmediate(sent)).then(() => {
        this.unsentChecks.delete(key);
        return this.readRevoked(tokenId, agentId);
      });
      this.unsentChecks.set(key, check);
    }
    return check;
  }

  private async readRevoked(tokenId: string, agentId: string): Promise<string | null> {
    const r = await this.db.query<{ token_ok: boolean; agent_ok: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM tokens t JOIN identities i ON i.id = t.identity_id
                       WHERE t.id = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())) AS token_ok,
              ($2 = '' OR EXISTS (SELECT 1 FROM identities WHERE id = $2 AND kind = 'agent')) AS agent_ok`,
      [tokenId, agentId],
    );
    const row = r.rows[0];
    if (!row?.token_ok) return 'its credential was revoked, expired or deleted (with its identity) while it waited for approval';
    if (!row.agent_ok) return `its agent identity ${agentId} was deleted while it waited for approval`;
    return null;
  }

  private dropWhere(key: 'tokenId' | 'identityId', value: string | null): void {
    if (value === null) {
      this.byHash.clear();
      return;
    }
    for (const [hash, entry] of this.byHash) if (entry.credential[key] === value) this.byHash.delete(hash);
  }
}

function field(payload: string, name: string): string | null {
  try {
    const value = (JSON.parse(payload) as Record<string, unknown>)[name];
    return typeof value === 'string' ? value : null;
  } catch {
    return null;
  }
}
