/**
 * The gateway's credential lookup: the first call with a secret reads the store, later calls are a map
 * hit. Revocation still takes effect at once: revoking announces the token on NOTIFY (reins_token) and
 * every replica drops it before its next call; deleting an identity or changing it (reins_identity) drops
 * its tokens; a lost listening connection clears everything. Expiry is checked on every hit, and entries
 * are re-read after `ttlMs` as a last safety net.
 *
 * That re-read happens beside the calls, not in their way: the call that finds its entry past `ttlMs` goes on with
 * it and starts the one re-read of that secret, which replaces or drops the entry when it answers. Before, every
 * call between the TTL and the re-read's answer read the store itself and waited for it: every 30 s a burst of
 * reads, each behind the audit log's batch inserts, and the longest waits of the gateway's busiest seconds.
 * A read that was under way when anything was dropped (a revocation announced while it ran) is not cached: it may
 * have read the token before the revocation was committed.
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
    const clear = { onResync: () => this.dropWhere('tokenId', null) };
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
    const hash = hashSecret(secret);
    const hit = this.byHash.get(hash);
    if (hit === undefined) return undefined;
    const now = Date.now();
    if (now >= hit.expiresAt) return undefined;
    if (now - hit.cachedAt >= this.ttlMs) this.refresh(hash);
    return hit.credential;
  }

  /** The credential a secret belongs to, or null when it is unknown, revoked, expired or a sensor token. */
  async authenticate(secret: string): Promise<GatewayCredential | null> {
    if (secret.length < 16 || secret.length > 512) return null;
    const hash = hashSecret(secret);
    const now = Date.now();
    const hit = this.byHash.get(hash);
    if (hit !== undefined) {
      if (now >= hit.expiresAt) {
        this.byHash.delete(hash);
        return null;
      }
      if (now - hit.cachedAt >= this.ttlMs) this.refresh(hash);
      return hit.credential;
    }
    return this.read(hash);
  }

  /** Bumped by every drop: a read that was under way across one is not cached. */
  private drops = 0;
  /** The secrets (by hash) whose entry is being re-read: one re-read each at a time. */
  private readonly refreshing = new Set<string>();

  /** Re-reads an entry past `ttlMs` while calls go on with it. A failed read leaves it; a later call tries again. */
  private refresh(hash: string): void {
    if (this.refreshing.has(hash)) return;
    this.refreshing.add(hash);
    this.read(hash)
      .catch(() => undefined)
      .finally(() => this.refreshing.delete(hash));
  }

  /** Reads a secret's credential from the store and caches it (or drops its entry when there is none). */
  private async read(hash: string): Promise<GatewayCredential | null> {
    const dropsBefore = this.drops;
    const now = Date.now();
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
    // Something was dropped while the read ran, perhaps this token's revocation, read before it was committed: the
    // call that asked goes on with what was read (it was in flight then), but nothing is kept for the next one.
    if (this.drops !== dropsBefore) return credential;
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
    this.drops++;
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
