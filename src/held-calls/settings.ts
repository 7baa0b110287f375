/** Settings > General > Human Review: the approval windows and what a timeout does (docs/api.md, "Settings"). */
import { recordAudit } from '../audit/audit.js';
import type { Actor } from '../shared/actor.js';
import { Channels, notify, type Db, type Queryable } from '../store/db.js';
import { Snapshot } from '../store/snapshot.js';
import type { HumanReviewSettings } from './contract.js';

/** The spec's defaults: 5 minutes for LLM requests, 30 minutes for MCP tool calls; a timeout stops the call. */
export const DEFAULT_HUMAN_REVIEW: HumanReviewSettings = Object.freeze({
  llmApprovalWindowSeconds: 300,
  mcpApprovalWindowSeconds: 1800,
  timeoutOutcome: 'deny',
});

export async function readHumanReview(q: Queryable): Promise<HumanReviewSettings> {
  const r = await q.query<{ value: HumanReviewSettings | string }>(`SELECT value FROM settings WHERE key = 'human_review'`);
  const v = r.rows[0]?.value;
  if (!v) return DEFAULT_HUMAN_REVIEW;
  return { ...DEFAULT_HUMAN_REVIEW, ...(typeof v === 'string' ? (JSON.parse(v) as HumanReviewSettings) : v) };
}

export async function writeHumanReview(db: Db, actor: Actor, value: HumanReviewSettings): Promise<HumanReviewSettings> {
  return db.transaction(async (tx) => {
    const before = await readHumanReview(tx);
    await tx.query(
      `INSERT INTO settings (key, value) VALUES ('human_review', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
      [JSON.stringify(value)],
    );
    await recordAudit(tx, { type: 'control', action: 'settings.human_review', actor, data: { before, after: value } });
    await notify(tx, Channels.settings, { key: 'human_review' });
    return value;
  });
}

/** Every replica's copy, re-read on NOTIFY and periodically. */
export class HumanReviewCache {
  private readonly snapshot: Snapshot<HumanReviewSettings>;
  constructor(db: Db, options: { refreshSeconds: number; listen?: boolean; onError?: (err: Error) => void }) {
    this.snapshot = new Snapshot(db, {
      channel: Channels.settings,
      refreshSeconds: options.refreshSeconds,
      load: readHumanReview,
      ...(options.listen === undefined ? {} : { listen: options.listen }),
      ...(options.onError ? { onError: options.onError } : {}),
    });
  }
  start(): Promise<void> {
    return this.snapshot.start();
  }
  stop(): Promise<void> {
    return this.snapshot.stop();
  }
  get value(): HumanReviewSettings {
    return this.snapshot.value;
  }
  reload(): Promise<void> {
    return this.snapshot.reload();
  }
}
