/**
 * A held call's decision as its NOTIFY carries it, and the sender of the admins' decisions' notifications.
 *
 * The notice holds the outcome itself, so that the replica whose callers wait answers them from the payload without
 * reading the entry back (with 50,000 parked, that read per release was one more query queued on a busy pool). A
 * notice that would pass PostgreSQL's 8,000-byte payload limit (a long deny note) goes without the note, and its
 * listeners read the entry instead.
 */
import type { Db } from '../store/db.js';
import { Channels, notify, type Queryable } from '../store/db.js';
import type { HeldCallState } from './contract.js';

export interface DecisionNotice {
  id: string;
  state: HeldCallState;
  note?: string;
  decidedBy?: string;
  timeoutOutcome?: 'deny' | 'allow';
}

/** The outcome a waiting call gets, from a notice or from the entry. */
export type DecidedOutcome =
  | { outcome: 'released'; entryId: string }
  | { outcome: 'stopped'; entryId: string; note: string; decidedBy: string }
  | { outcome: 'timed_out'; entryId: string; allow: boolean };

/** The decided entry's fields a notice is made of (a row of held_calls). */
export interface DecidedFields {
  id: string;
  state: HeldCallState;
  timeout_outcome: 'deny' | 'allow' | null;
  note: string | null;
  decided_by: string | null;
}

const NOTICE_MAX_BYTES = 7_000;

export function noticeOf(r: DecidedFields): DecisionNotice {
  const full: DecisionNotice = { id: r.id, state: r.state };
  if (r.state === 'stopped') Object.assign(full, { note: r.note ?? '', decidedBy: r.decided_by ?? '' });
  if (r.state === 'timed_out' && r.timeout_outcome) full.timeoutOutcome = r.timeout_outcome;
  return Buffer.byteLength(JSON.stringify(full)) <= NOTICE_MAX_BYTES ? full : { id: r.id, state: r.state };
}

/** The outcome a notice carries; null when it lacks a field the outcome needs (then the entry is read). */
export function outcomeOfNotice(n: DecisionNotice): DecidedOutcome | null {
  switch (n.state) {
    case 'released':
      return { outcome: 'released', entryId: n.id };
    case 'stopped':
      return typeof n.note === 'string' && typeof n.decidedBy === 'string' ? { outcome: 'stopped', entryId: n.id, note: n.note, decidedBy: n.decidedBy } : null;
    case 'timed_out':
      return n.timeoutOutcome === 'allow' || n.timeoutOutcome === 'deny' ? { outcome: 'timed_out', entryId: n.id, allow: n.timeoutOutcome === 'allow' } : null;
    default:
      return null;
  }
}

/** Announces a decision inside the deciding transaction (the rare decisions: time-outs, orphans, deleted identities). */
export async function announceInTransaction(tx: Queryable, r: DecidedFields): Promise<void> {
  await notify(tx, Channels.heldCall, noticeOf(r));
}

/**
 * Sends the admins' decisions' notifications once the decisions have committed, all that wait in one transaction.
 *
 * PostgreSQL serializes the commits of transactions that notify: each takes a cluster-wide lock at commit and holds
 * it until its commit record is on disk, so a decision that notified in its own transaction let no other decision
 * commit during its disk flush (bench/held-calls: approvals waited on that lock, `Lock: object`, whatever else was
 * done). A decision now commits on its own, its writes flushed with the others' (group commit), and this sender
 * notifies for every decision committed meanwhile in one transaction that does not wait for the disk: a
 * notification is never stored (PostgreSQL keeps none across a restart), so there is nothing for the flush to keep.
 * If a replica dies between a decision's commit and its notification, or the notification fails, the waiting
 * replicas' periodic re-check finds the decision within a beat (registry.ts `recheckRecent`).
 */
export class NoticeSender {
  private queue: { notice: DecisionNotice; sent: () => void }[] = [];
  private sending = false;

  constructor(
    private readonly db: Db,
    private readonly onError: (err: Error) => void = () => {},
  ) {}

  /** Resolves once the notice was sent (or could not be: then the error went to `onError`); never rejects. */
  send(notice: DecisionNotice): Promise<void> {
    return new Promise((sent) => {
      this.queue.push({ notice, sent });
      if (!this.sending) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.sending = true;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, 500);
      await this.db
        .transaction(async (tx) => {
          await tx.query('SET LOCAL synchronous_commit = off');
          await tx.query('SELECT pg_notify($1, n) FROM unnest($2::text[]) AS n', [Channels.heldCall, batch.map((b) => JSON.stringify(b.notice))]);
        })
        .catch((err: Error) => this.onError(err));
      for (const b of batch) b.sent();
    }
    this.sending = false;
  }
}
