/**
 * The held-call registry: parks a live call until a person decides, on whichever replica they decide.
 *
 * The caller waits on the replica that received it; the entry lives in the shared store. An identical call
 * (same de-duplication key) while the entry is pending attaches to it (one conditional upsert), so a retried
 * call finds its entry and one decision applies to all. Entries never mix callers: the key holds the agent, the
 * developer and the session, and the upsert joins only an entry of the same requester, agent and session, so the
 * entry's requester is the one developer whose calls it holds (and can never release them herself). A decision is one conditional update under the row
 * lock through the pure `decideHeldCall`, announced over NOTIFY; every replica wakes its own waiters. The window's
 * end is a timer on every replica with waiters, and the conditional update makes exactly one of them time the
 * entry out. Replicas with calls parked keep a heartbeat; an entry belongs to the replica that last parked a call
 * for it (a retry takes it over, and a replica re-claims the entries its callers wait on whose owner stopped
 * beating); entries of a replica whose heartbeat lapsed are stopped by the others with a reason, so nothing stays
 * stuck. A replica shutting down hands its entries over instead of stopping them (`stop`).
 */
import { randomBytes } from 'node:crypto';
import { AUDIT_INSERT_COLUMNS, auditValues, recordAudit, type AuditInput } from '../audit/audit.js';
import { deciderOf, SYSTEM_DECIDER } from '../shared/decider.js';
import { refusalError, type RefusalCode } from '../shared/refusal.js';
import { decideHeldCall } from './held-call-state.js';
import type { HeldCall, HeldCallState } from './contract.js';
import { credentialOf, type Actor } from '../shared/actor.js';
import { notFound } from '../shared/errors.js';
import { Channels, type Db, type Queryable } from '../store/db.js';
import { announceInTransaction, noticeOf, NoticeSender, outcomeOfNotice, type DecisionNotice } from './decision-notice.js';
import type { HumanReviewCache } from './settings.js';

export interface HoldRequest {
  kind: 'llm' | 'mcp';
  requester: string | null;
  agentId: string;
  sessionId: string | null;
  tool: string | null;
  model: string | null;
  policyName: string;
  policyMessage: string;
  /** The policy's own window; else the Human Review setting of the kind. */
  approvalWindowSeconds?: number;
  /** Already redacted and shortened. */
  promptExcerpt: string | null;
  dedupeKey: string;
}

export type HoldOutcome =
  /** `claimed`: an MCP call that found its entry already released, with none of its calls left waiting (see `hold`). */
  | { outcome: 'released'; entryId: string; claimed?: boolean }
  | { outcome: 'stopped'; entryId: string; note: string; decidedBy: string }
  | { outcome: 'timed_out'; entryId: string; allow: boolean };

/** A pending entry as the parked call's own connection sees it. */
export interface ParkedEntry {
  id: string;
  expiresAt: Date;
  /**
   * The call stops waiting on the entry without being run: its client was answered "held, call again after
   * approval", or cancelled it. A release that then finds no call waiting is kept for the identical call's retry.
   */
  leave(): Promise<void>;
}

interface Row {
  id: string;
  kind: 'llm' | 'mcp';
  state: HeldCallState;
  timeout_outcome: 'deny' | 'allow' | null;
  requester: string | null;
  agent_id: string;
  session_id: string | null;
  tool: string | null;
  model: string | null;
  policy_name: string;
  policy_message: string;
  prompt_excerpt: string | null;
  attached_calls: number;
  replica_id: string;
  created_at: Date;
  expires_at: Date;
  decided_by: string | null;
  note: string | null;
}

const COLUMNS =
  'id, kind, state, timeout_outcome, requester, agent_id, session_id, tool, model, policy_name, policy_message, prompt_excerpt, attached_calls, replica_id, created_at, expires_at, decided_by, note';

function toHeldCall(r: Row): HeldCall {
  return {
    id: r.id,
    kind: r.kind,
    state: r.state,
    timeoutOutcome: r.timeout_outcome,
    requester: r.requester,
    agentId: r.agent_id,
    sessionId: r.session_id,
    tool: r.tool,
    model: r.model,
    policyName: r.policy_name,
    policyMessage: r.policy_message,
    promptExcerpt: r.prompt_excerpt,
    attachedCalls: r.attached_calls,
    createdAt: r.created_at.toISOString(),
    expiresAt: r.expires_at.toISOString(),
    decidedBy: r.decided_by,
    note: r.note,
  };
}

function outcomeOf(r: Pick<Row, 'id' | 'state' | 'timeout_outcome' | 'note' | 'decided_by'>): HoldOutcome | null {
  switch (r.state) {
    case 'pending':
      return null;
    case 'released':
      return { outcome: 'released', entryId: r.id };
    case 'stopped':
      return { outcome: 'stopped', entryId: r.id, note: r.note ?? '', decidedBy: r.decided_by ?? '' };
    case 'timed_out':
      return { outcome: 'timed_out', entryId: r.id, allow: r.timeout_outcome === 'allow' };
  }
}

/** Every this many sweeps, the re-check reads every waited entry rather than only those decided lately. */
const FULL_RECHECK_SWEEPS = 12;
/** How far before the last re-check the next one still looks (a decision's time is when its transaction began). */
const RECHECK_SLACK_SECONDS = 30;

export interface RegistryOptions {
  heartbeatSeconds?: number;
  /**
   * A replica silent this long (on the database clock) has its pending entries stopped by the others. Six beats by
   * default: a beat is a one-row upsert on the store's `liveness` lane, late only when the event loop or the
   * database is, never because the replica's own pool is saturated.
   */
  lapseSeconds?: number;
  listen?: boolean;
  onError?: (err: Error) => void;
}

export class HeldCallRegistry {
  readonly replicaId = `r_${randomBytes(6).toString('base64url')}`;
  private readonly waiters = new Map<string, Set<(o: HoldOutcome) => void>>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private unlisten: (() => Promise<void>) | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private readonly heartbeatSeconds: number;
  private readonly lapseSeconds: number;
  private readonly notices: NoticeSender;

  constructor(
    private readonly db: Db,
    private readonly settings: HumanReviewCache,
    private readonly options: RegistryOptions = {},
  ) {
    this.heartbeatSeconds = options.heartbeatSeconds ?? 5;
    this.lapseSeconds = options.lapseSeconds ?? 30;
    this.notices = new NoticeSender(db, (err) => this.options.onError?.(err));
  }

  async start(): Promise<void> {
    if (this.options.listen !== false) {
      this.unlisten = await this.db.listen(Channels.heldCall, (payload) => this.onNotification(payload), { onResync: () => void this.recheckAll() });
    }
    await this.beat();
    this.heartbeat = setInterval(() => {
      // The beat goes first and on its own: it never waits for the sweep, which can take long with thousands parked.
      void this.beat();
      this.sweep();
    }, this.heartbeatSeconds * 1000);
    this.heartbeat.unref();
  }

  private sweeping: Promise<void> | null = null;
  private sweeps = 0;

  /**
   * The periodic work, one pass at a time: a pass still running when the next beat comes (a busy replica with
   * 50,000 waiters) is not joined by another, which would only queue more queries behind it. Its cost does not grow
   * with the calls parked: which owners went silent and which entries were decided lately are index look-ups
   * (migration 020); only the full re-check, every `FULL_RECHECK_SWEEPS`th pass, reads every waited entry.
   */
  private sweep(): void {
    if (this.sweeping) return;
    const full = this.sweeps++ % FULL_RECHECK_SWEEPS === 0;
    this.sweeping = (async () => {
      await this.claimWaitedEntries().catch((err: Error) => this.options.onError?.(err));
      await this.resolveOrphans().catch((err: Error) => this.options.onError?.(err));
      // A notification lost without a resync still reaches the waiter within a beat (decided lately), and the full
      // pass catches even a decision whose transaction outlasted the look-back.
      await (full ? this.recheckAll() : this.recheckRecent());
    })().finally(() => {
      this.sweeping = null;
    });
  }

  /**
   * Graceful stop (a rolling update): the entries stay pending in the shared store, handed over rather than stopped.
   * The server has already closed the parked calls' connections; their clients' retries reach another replica and
   * attach to the same entry (which that replica takes over), and the decision answers them there. The heartbeat is
   * stamped once more and then left to lapse: an entry nobody retried for is stopped by the other replicas after
   * `lapseSeconds`, as for a replica that died.
   */
  async stop(): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    await this.unlisten?.();
    this.unlisten = null;
    await this.beat();
  }

  get waiting(): number {
    let n = 0;
    for (const set of this.waiters.values()) n += set.size;
    return n;
  }

  /**
   * Parks a call: creates or joins the pending entry and resolves when it is decided or times out.
   * `onParked` learns the entry once it exists (the MCP gateway names it in its progress notifications).
   */
  async hold(req: HoldRequest, onParked?: (entry: ParkedEntry) => void): Promise<HoldOutcome> {
    const review = this.settings.value;
    const window = req.approvalWindowSeconds ?? (req.kind === 'llm' ? review.llmApprovalWindowSeconds : review.mcpApprovalWindowSeconds);
    if (req.kind === 'mcp') {
      const claimed = await this.claimRelease(req, window);
      if (claimed) return { outcome: 'released', entryId: claimed, claimed: true };
    }
    const r = await this.db.query<Row>(
      `INSERT INTO held_calls (id, kind, state, requester, agent_id, session_id, tool, model, policy_name, policy_message, prompt_excerpt, dedupe_key, replica_id, expires_at)
       VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, now() + make_interval(secs => $13))
       ON CONFLICT (dedupe_key) WHERE state = 'pending' DO UPDATE SET attached_calls = held_calls.attached_calls + 1, replica_id = EXCLUDED.replica_id
         WHERE held_calls.requester IS NOT DISTINCT FROM EXCLUDED.requester
           AND held_calls.agent_id = EXCLUDED.agent_id
           AND held_calls.session_id IS NOT DISTINCT FROM EXCLUDED.session_id
       RETURNING ${COLUMNS}`,
      [
        `hc_${randomBytes(9).toString('base64url')}`,
        req.kind,
        req.requester,
        req.agentId,
        req.sessionId,
        req.tool,
        req.model,
        req.policyName,
        req.policyMessage,
        req.promptExcerpt,
        req.dedupeKey,
        this.replicaId,
        window,
      ],
    );
    const row = r.rows[0];
    // Only a key shared by two callers gets here (the caller is in the key): refuse rather than attach.
    if (!row) throw new Error(`held call: the pending entry with this de-duplication key holds another caller's calls; not attaching`);
    const outcome = new Promise<HoldOutcome>((resolve) => {
      let set = this.waiters.get(row.id);
      if (!set) this.waiters.set(row.id, (set = new Set()));
      set.add(resolve);
    });
    this.armTimer(row.id, row.expires_at);
    onParked?.({ id: row.id, expiresAt: row.expires_at, leave: () => this.leave(row.id) });
    // Decided between the upsert and the waiter (its notification came first)? The sweep's re-check of recent
    // decisions wakes it within a beat. No read here per parked call: in a burst of 50,000 those reads queued behind
    // the burst's own inserts on the pool and were still queued when the releases came, which then waited behind
    // them for minutes (bench/held-calls, 2026-11-27).
    return outcome;
  }

  /**
   * An MCP client gives up on a held call long before a person decides (the MCP TypeScript SDK after 60 s), and
   * Reins answers it "held, call again after approval" before then (planes/mcp). Its calls leave the entry
   * (`leave`); a release that finds none of them waiting is kept for the identical call's retry: the first
   * identical call (same key, requester, agent and session) within the window after the release claims it, once
   * (attached_calls 0 -> 1, under the row lock: one claimer across replicas), and runs without a new hold.
   */
  private async claimRelease(req: HoldRequest, windowSeconds: number): Promise<string | null> {
    const r = await this.db.query<{ id: string }>(
      `UPDATE held_calls SET attached_calls = 1
        WHERE id = (SELECT id FROM held_calls
                     WHERE state = 'released' AND created_at > now() - make_interval(secs => $5 * 2)
                       AND dedupe_key = $1 AND attached_calls = 0
                       AND requester IS NOT DISTINCT FROM $2 AND agent_id = $3 AND session_id IS NOT DISTINCT FROM $4
                       AND decided_at > now() - make_interval(secs => $5)
                     ORDER BY decided_at DESC LIMIT 1)
          AND state = 'released' AND attached_calls = 0
        RETURNING id`,
      [req.dedupeKey, req.requester, req.agentId, req.sessionId, windowSeconds],
    );
    return r.rows[0]?.id ?? null;
  }

  /** A call stopped waiting on the entry without being run (see `claimRelease`). */
  private async leave(id: string): Promise<void> {
    await this.db
      .query('UPDATE held_calls SET attached_calls = attached_calls - 1 WHERE id = $1 AND attached_calls > 0', [id])
      .catch((err: Error) => this.options.onError?.(err));
  }

  private armTimer(id: string, expiresAt: Date): void {
    if (this.timers.has(id)) return;
    const delay = Math.max(0, expiresAt.getTime() - Date.now()) + 20;
    const t = setTimeout(() => {
      this.timers.delete(id);
      void this.timeOut(id).catch((err: Error) => this.options.onError?.(err));
    }, Math.min(delay, 2 ** 31 - 1));
    t.unref();
    this.timers.set(id, t);
  }

  private wake(id: string, outcome: HoldOutcome): void {
    const set = this.waiters.get(id);
    if (!set) return;
    this.waiters.delete(id);
    const t = this.timers.get(id);
    if (t) clearTimeout(t);
    this.timers.delete(id);
    for (const resolve of set) resolve(outcome);
  }

  private onNotification(payload: string): void {
    let notice: DecisionNotice;
    try {
      notice = JSON.parse(payload) as DecisionNotice;
    } catch {
      return; // not ours
    }
    if (typeof notice.id !== 'string' || !this.waiters.has(notice.id)) return;
    const outcome = outcomeOfNotice(notice);
    if (outcome) this.wake(notice.id, outcome);
    else void this.recheck(notice.id);
  }

  private async recheck(id: string): Promise<void> {
    const r = await this.db.query<Row>(`SELECT ${COLUMNS} FROM held_calls WHERE id = $1`, [id]);
    const row = r.rows[0];
    const outcome = row ? outcomeOf(row) : null;
    if (outcome) this.wake(id, outcome);
  }

  private rechecking: Promise<void> | null = null;
  /** When (this process's clock) the last re-check began: the next one looks back from there. */
  private recheckedAt = Date.now();

  /**
   * Wakes the waiters whose entry was decided since the last re-check (and `RECHECK_SLACK_SECONDS` before it, for a
   * decision whose transaction began earlier than it committed): the decided-at index, whatever the number parked.
   */
  private recheckRecent(): Promise<void> {
    if (this.waiters.size === 0) return Promise.resolve();
    return this.onePass(async () => {
      const since = this.recheckedAt;
      this.recheckedAt = Date.now();
      const lookBack = (this.recheckedAt - since) / 1000 + RECHECK_SLACK_SECONDS;
      const r = await this.db.query<Pick<Row, 'id' | 'state' | 'timeout_outcome' | 'note' | 'decided_by'>>(
        `SELECT id, state, timeout_outcome, note, decided_by FROM held_calls WHERE decided_at > now() - make_interval(secs => $1)`,
        [lookBack],
      );
      for (const row of r.rows) {
        if (!this.waiters.has(row.id)) continue;
        const outcome = outcomeOf(row);
        if (outcome) this.wake(row.id, outcome);
      }
    });
  }

  /** Wakes every waiter whose entry was decided, in a few set-based queries (thousands may be parked), one pass at a time. */
  private recheckAll(): Promise<void> {
    return this.onePass(async () => {
      this.recheckedAt = Date.now();
      const ids = [...this.waiters.keys()];
      for (let i = 0; i < ids.length; i += 1000) {
        const r = await this.db.query<Row>(`SELECT ${COLUMNS} FROM held_calls WHERE id = ANY($1) AND state <> 'pending'`, [ids.slice(i, i + 1000)]);
        for (const row of r.rows) {
          const outcome = outcomeOf(row);
          if (outcome) this.wake(row.id, outcome);
        }
      }
    });
  }

  /** Runs a re-check unless one is running (then answers that one): one pass at a time, its error reported. */
  private onePass(work: () => Promise<void>): Promise<void> {
    this.rechecking ??= work()
      .catch((err: Error) => this.options.onError?.(err))
      .finally(() => {
        this.rechecking = null;
      });
    return this.rechecking;
  }

  private beating: Promise<void> | null = null;

  /**
   * Stamps this replica's heartbeat on the store's liveness lane (on PostgreSQL a connection no other query uses):
   * a burst of parked calls saturating the pool must not make this live replica look dead to the others. One stamp
   * in flight at a time; a beat that finds one still running adds nothing.
   */
  private beat(): Promise<void> {
    this.beating ??= this.db.liveness
      .query(`INSERT INTO replica_heartbeats (replica_id, seen_at) VALUES ($1, now()) ON CONFLICT (replica_id) DO UPDATE SET seen_at = now()`, [this.replicaId])
      .then(() => undefined, (err: Error) => this.options.onError?.(err))
      .finally(() => {
        this.beating = null;
      });
    return this.beating;
  }

  /**
   * Takes over the pending entries this replica's callers wait on whose owner stopped beating (it shut down or
   * died): an entry belongs to a live replica with a caller waiting on it, so orphan resolution stops only the
   * entries nobody waits on any more.
   */
  private async claimWaitedEntries(): Promise<void> {
    if (this.waiters.size === 0) return;
    // Almost always none: then there is nothing to claim, and the waited entries are not read at all.
    const silent = await this.silentOwners(this.heartbeatSeconds * 2);
    if (silent.length === 0) return;
    const ids = [...this.waiters.keys()];
    for (let i = 0; i < ids.length; i += 1000) {
      await this.db.query(
        `UPDATE held_calls h SET replica_id = $1
          WHERE h.id = ANY($2) AND h.state = 'pending' AND h.replica_id = ANY($4)
            AND NOT EXISTS (SELECT 1 FROM replica_heartbeats b WHERE b.replica_id = h.replica_id AND b.seen_at >= now() - make_interval(secs => $3))`,
        [this.replicaId, ids.slice(i, i + 1000), this.heartbeatSeconds * 2, silent],
      );
    }
  }

  /**
   * The other replicas owning pending entries whose heartbeat is older than `seconds` (or that never had one). The
   * owners are a handful however many entries they own: the recursive query skips from one owner to the next through
   * the pending entries' replica index instead of reading the entries.
   */
  private async silentOwners(seconds: number): Promise<string[]> {
    const r = await this.db.query<{ replica_id: string }>(
      `WITH RECURSIVE owners (replica_id) AS (
         (SELECT replica_id FROM held_calls WHERE state = 'pending' ORDER BY replica_id LIMIT 1)
         UNION ALL
         SELECT (SELECT h.replica_id FROM held_calls h WHERE h.state = 'pending' AND h.replica_id > o.replica_id ORDER BY h.replica_id LIMIT 1)
           FROM owners o WHERE o.replica_id IS NOT NULL
       )
       SELECT o.replica_id FROM owners o LEFT JOIN replica_heartbeats b ON b.replica_id = o.replica_id
        WHERE o.replica_id IS NOT NULL AND o.replica_id <> $1 AND (b.seen_at IS NULL OR b.seen_at < now() - make_interval(secs => $2))`,
      [this.replicaId, seconds],
    );
    return r.rows.map((row) => row.replica_id);
  }

  /** Stops the pending entries of replicas whose heartbeat lapsed (or that never had one), with a reason. */
  async resolveOrphans(): Promise<void> {
    for (const replica_id of await this.silentOwners(this.lapseSeconds)) {
      await this.stopEntriesOf(replica_id, 'the Reins replica holding this call stopped before anyone decided', this.lapseSeconds).catch((err: Error) => this.options.onError?.(err));
    }
    // A replica that shut down leaves its last heartbeat behind (its entries' hand-over window); forget it once lapsed twice over and owning nothing.
    await this.db.query(
      `DELETE FROM replica_heartbeats b WHERE b.seen_at < now() - make_interval(secs => $1)
         AND NOT EXISTS (SELECT 1 FROM held_calls h WHERE h.replica_id = b.replica_id AND h.state = 'pending')`,
      [this.lapseSeconds * 2],
    );
  }

  /** The lapse is checked again in the update itself: a beat that landed since the SELECT saves the entries. */
  private async stopEntriesOf(replicaId: string, note: string, lapseSeconds: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      const r = await tx.query<Row>(
        `UPDATE held_calls SET state = 'stopped', decided_by = 'system:reins', decided_at = now(), note = $2
          WHERE replica_id = $1 AND state = 'pending'
            AND NOT EXISTS (SELECT 1 FROM replica_heartbeats b WHERE b.replica_id = $1 AND b.seen_at >= now() - make_interval(secs => $3))
          RETURNING ${COLUMNS}`,
        [replicaId, note, lapseSeconds],
      );
      for (const row of r.rows) {
        await recordAudit(tx, {
          type: 'control',
          action: 'held_call.orphaned',
          actor: { kind: 'system', name: 'held-calls' },
          subject: row.requester ?? row.agent_id,
          data: { heldCallId: row.id, replicaId, note },
        });
        await announceInTransaction(tx, row);
      }
    });
  }

  /** Times an entry out if its window has elapsed and nobody decided; exactly one replica's update takes effect. */
  async timeOut(id: string): Promise<void> {
    const outcome = this.settings.value.timeoutOutcome;
    await this.db.transaction(async (tx) => {
      const r = await tx.query<Row>(`SELECT ${COLUMNS} FROM held_calls WHERE id = $1 FOR UPDATE`, [id]);
      const row = r.rows[0];
      if (!row) return;
      const d = decideHeldCall({ state: row.state, requester: row.requester, expiresAt: row.expires_at.getTime() }, { kind: 'time_out', timeoutOutcome: outcome }, SYSTEM_DECIDER, Date.now());
      if (!d.ok || d.effects.length === 0) return;
      await tx.query(`UPDATE held_calls SET state = 'timed_out', timeout_outcome = $2, decided_by = 'system:timeout', decided_at = now() WHERE id = $1 AND state = 'pending'`, [id, outcome]);
      await recordAudit(tx, {
        type: 'control',
        action: 'held_call.time_out',
        actor: { kind: 'system', name: 'held-calls' },
        subject: row.requester ?? row.agent_id,
        data: { heldCallId: id, timeoutOutcome: outcome, attachedCalls: row.attached_calls },
      });
      await announceInTransaction(tx, { id, state: 'timed_out', timeout_outcome: outcome, note: null, decided_by: 'system:timeout' });
    });
    await this.recheck(id);
  }

  /**
   * An admin's decision (approve / deny with a note), from any replica: the entry read, `decideHeldCall`, then one
   * conditional statement that changes the entry and writes its audit event together (a statement is a
   * transaction), only while the entry is still pending. Of two deciders racing, the second statement finds it
   * decided and changes nothing; its re-read gives the refusal. Only the statement that changed the entry announces
   * it, once committed (`NoticeSender`: one outcome, one notification). Two round trips instead of a transaction's
   * seven, and no cluster-wide lock held through the commit's disk flush: with thousands released at once, each
   * one a person waits on.
   */
  async decideOnEntry(caller: Actor, id: string, action: { kind: 'approve' } | { kind: 'deny'; note: string }): Promise<HeldCall> {
    const approver = deciderOf(caller);
    // Twice at most: an entry leaves pending once, so the second read refuses or decides.
    for (;;) {
      const row = (await this.db.query<Row>(`SELECT ${COLUMNS} FROM held_calls WHERE id = $1`, [id])).rows[0];
      if (!row) throw notFound(`no held call ${id}`);
      const d = decideHeldCall({ state: row.state, requester: row.requester, expiresAt: row.expires_at.getTime() }, action, approver, Date.now());
      if (!d.ok) {
        await recordAudit(this.db, {
          type: 'control',
          action: d.auditAction,
          actor: caller,
          outcome: 'refused',
          subject: id,
          data: { heldCallId: id, code: d.code, ...credentialOf(caller) },
        });
        throw refusalError(d);
      }
      const note = action.kind === 'deny' ? action.note : null;
      // Approval of a held call: audit log entry only; nothing is announced in the conversation.
      const event: AuditInput = {
        type: 'control',
        action: action.kind === 'approve' ? 'held_call.approve' : 'held_call.deny',
        actor: caller,
        subject: row.requester ?? row.agent_id,
        data: { heldCallId: id, policy: row.policy_name, ...(note !== null ? { note } : {}), ...credentialOf(caller) },
      };
      // attachedCalls as the update found it (an identical call may have attached since the read).
      const r = await this.db.query<Row>(
        `WITH decided AS (
           UPDATE held_calls SET state = $2, decided_by = $3, decided_at = now(), note = $4 WHERE id = $1 AND state = 'pending' RETURNING ${COLUMNS}
         ), audited AS (
           INSERT INTO audit_events (${AUDIT_INSERT_COLUMNS})
           SELECT $5, $6, $7, $8, $9, $10, $11, $12::jsonb || jsonb_build_object('attachedCalls', attached_calls) FROM decided
         )
         SELECT * FROM decided`,
        [id, d.nextState, approver.id, note, ...auditValues(event)],
      );
      const updated = r.rows[0];
      if (!updated) continue;
      // This replica's own waiters resume without waiting for the notification to come back; the others on it.
      const outcome = outcomeOf(updated);
      if (outcome) this.wake(id, outcome);
      await this.notices.send(noticeOf(updated));
      return toHeldCall(updated);
    }
  }
}

/**
 * Stops, in the caller's transaction, every pending held call made by or as an identity that is being deleted
 * (its developer's calls and calls made as the agent), audited, and announced so the waiting replicas answer
 * their callers at once. Returns how many entries were stopped.
 */
export async function stopHeldCallsOf(tx: Queryable, actor: Actor, identityId: string): Promise<number> {
  const note = `the identity ${identityId} was deleted`;
  const r = await tx.query<Row>(
    `UPDATE held_calls SET state = 'stopped', decided_by = 'system:identity-deleted', decided_at = now(), note = $2
      WHERE state = 'pending' AND (requester = $1 OR agent_id = $1) RETURNING ${COLUMNS}`,
    [identityId, note],
  );
  for (const row of r.rows) {
    await recordAudit(tx, {
      type: 'control',
      action: 'held_call.stop',
      actor,
      subject: row.requester ?? row.agent_id,
      data: { heldCallId: row.id, cause: 'identity_deleted', identityId, attachedCalls: row.attached_calls },
    });
    await announceInTransaction(tx, row);
  }
  return r.rows.length;
}

export async function listHeldCalls(q: Queryable, state?: HeldCallState): Promise<HeldCall[]> {
  const r = await q.query<Row>(`SELECT ${COLUMNS} FROM held_calls ${state ? 'WHERE state = $1' : ''} ORDER BY created_at DESC, id LIMIT 500`, state ? [state] : []);
  return r.rows.map(toHeldCall);
}

export async function getHeldCall(q: Queryable, id: string): Promise<HeldCall> {
  const r = await q.query<Row>(`SELECT ${COLUMNS} FROM held_calls WHERE id = $1`, [id]);
  if (!r.rows[0]) throw notFound(`no held call ${id}`);
  return toHeldCall(r.rows[0]);
}
