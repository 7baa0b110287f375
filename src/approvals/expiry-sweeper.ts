/**
 * Announces grant expiries. Expiry is in force from `expires_at` on every read whatever this does; the sweeper
 * only tells the developer (a `grant_expired` notification) and writes the `grant.expire` audit event, exactly
 * once per grant: the conditional UPDATE claims each expired grant for one sweep on one replica.
 */
import { recordAudit } from '../audit/audit.js';
import type { Db } from '../store/db.js';

export class ExpirySweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly db: Db,
    private readonly options: { intervalMs: number; onError?: (err: Error) => void },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.sweep(), this.options.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => {});
  }

  /** One sweep; resolves with the number of expiries announced. */
  sweep(): Promise<void> {
    this.running ??= this.announce()
      .catch((err: Error) => this.options.onError?.(err))
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  private async announce(): Promise<void> {
    await this.db.transaction(async (tx) => {
      const r = await tx.query<{ id: string; developer_id: string; request_id: string; type: string; policy_name: string | null; model: string | null }>(
        `UPDATE grants SET state = 'expired', expiry_announced_at = now()
          WHERE state = 'active' AND expires_at <= now() AND expiry_announced_at IS NULL
          RETURNING id, developer_id, request_id, type, policy_name, model`,
      );
      for (const g of r.rows) {
        const what = g.type === 'exception' ? `the exception to ${g.policy_name}` : g.type === 'model_access' ? `access to ${g.model}` : 'your budget top-up';
        await tx.query(
          `INSERT INTO notifications (recipient, kind, message, request_id, grant_id) VALUES ($1, 'grant_expired', $2, $3, $4)`,
          [g.developer_id, `Your grant for ${what} has expired; ask again if you still need it.`, g.request_id, g.id],
        );
        await recordAudit(tx, { type: 'control', action: 'grant.expire', actor: { kind: 'system', name: 'expiry' }, subject: g.developer_id, data: { grantId: g.id, requestId: g.request_id } });
      }
    });
  }
}
