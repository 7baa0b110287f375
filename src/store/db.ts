/**
 * The store adapter every domain uses: queries, transactions and LISTEN/NOTIFY, the same over
 * PostgreSQL (several replicas) and embedded PGlite (one process). Domains write plain SQL that runs
 * on both; nothing outside src/store knows which one is underneath.
 */
export type Row = Record<string, unknown>;

export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
}

export interface Queryable {
  query<T = Row>(sql: string, params?: readonly unknown[]): Promise<QueryResult<T>>;
}

export interface ListenOptions {
  /**
   * Called after the listening connection was lost and re-established: notifications sent in between
   * are gone, so a cache should re-read everything.
   */
  onResync?: () => void;
}

export interface Db extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs `fn` in one transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Subscribes to a NOTIFY channel; resolves once listening. Returns the unsubscribe function. */
  listen(channel: string, onPayload: (payload: string) => void, options?: ListenOptions): Promise<() => Promise<void>>;
  /**
   * A lane of its own for a replica's liveness stamps (the held-call heartbeat): on PostgreSQL one dedicated
   * connection that no other query uses, so a pool saturated by the replica's own burst never delays the stamp and
   * the other replicas never take a busy replica for a dead one. Small statements only, run one at a time. On PGlite
   * (one process, so no other replica to judge it) it is the store itself.
   */
  readonly liveness: Queryable;
  /** Store reachable? Used by /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Announces a change to every replica. Inside a transaction the notification is delivered at commit,
 * and not at all on rollback, which is what makes "announce what happened" safe.
 */
export async function notify(q: Queryable, channel: string, payload: unknown): Promise<void> {
  await q.query('SELECT pg_notify($1, $2)', [channel, JSON.stringify(payload)]);
}

/** The NOTIFY channels, one place so that senders and listeners agree. */
export const Channels = {
  identity: 'reins_identity',
  token: 'reins_token',
  /** The policy set changed: reload and recompile. */
  policy: 'reins_policy',
  /** Budget rules or model-access rules changed. */
  gatewayRules: 'reins_gateway_rules',
  /** A held call was decided (payload: held-calls/decision-notice.ts, {id, state, note?, decidedBy?, timeoutOutcome?}). */
  heldCall: 'reins_held_call',
  /** Settings changed (Human Review windows and timeout outcome). */
  settings: 'reins_settings',
} as const;
