/**
 * The optional outgoing webhook for notifications, so teams can route them to chat. The notifications table is
 * the outbox: each replica claims due, undelivered rows with a short lease (one UPDATE over `FOR UPDATE SKIP
 * LOCKED`, so two replicas never send the same one at once, and no transaction stays open while posting), POSTs
 * each as JSON signed with HMAC-SHA256 (`X-Reins-Signature: sha256=<hex>` over `<timestamp>.<body>`, with
 * `X-Reins-Timestamp` and `X-Reins-Notification-Id` for de-duplication: delivery is at least once), marks it
 * delivered on a 2xx, and otherwise retries with exponential backoff up to `maxAttempts`. Only notifications of
 * the last 24 hours are sent.
 */
import { createHmac } from 'node:crypto';
import { request } from 'undici';
import type { Db } from '../store/db.js';

export interface WebhookConfig {
  url: string;
  secret: string;
  intervalSeconds: number;
  maxAttempts: number;
}

interface Row {
  id: string;
  recipient: string;
  kind: string;
  message: string;
  request_id: string | null;
  grant_id: string | null;
  data: Record<string, unknown> | string;
  created_at: Date;
  webhook_attempts: number;
}

export function signature(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

export class WebhookDispatcher {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly db: Db,
    private readonly config: WebhookConfig,
    private readonly onError: (err: Error) => void = () => undefined,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), this.config.intervalSeconds * 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => {});
  }

  tick(): Promise<void> {
    this.running ??= this.deliverDue()
      .catch((err: Error) => this.onError(err))
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  private async deliverDue(): Promise<void> {
    // Claim: the lease (webhook_next_at pushed a minute ahead) keeps other replicas off these rows while posting.
    const due = await this.db.query<Row>(
      `UPDATE notifications SET webhook_next_at = now() + interval '60 seconds'
        WHERE id IN (
          SELECT id FROM notifications
           WHERE webhook_delivered_at IS NULL AND webhook_next_at <= now() AND webhook_attempts < $1
             AND created_at > now() - interval '24 hours'
           ORDER BY id LIMIT 50 FOR UPDATE SKIP LOCKED)
        RETURNING id::text AS id, recipient, kind, message, request_id, grant_id, data, created_at, webhook_attempts`,
      [this.config.maxAttempts],
    );
    for (const n of due.rows.sort((a, b) => Number(a.id) - Number(b.id))) {
      const body = JSON.stringify({
        id: n.id,
        kind: n.kind,
        recipient: n.recipient,
        message: n.message,
        requestId: n.request_id,
        grantId: n.grant_id,
        data: typeof n.data === 'string' ? (JSON.parse(n.data) as unknown) : n.data,
        createdAt: n.created_at.toISOString(),
      });
      const timestamp = String(Math.floor(Date.now() / 1000));
      let delivered = false;
      try {
        const res = await request(this.config.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-reins-timestamp': timestamp,
            'x-reins-signature': signature(this.config.secret, timestamp, body),
            'x-reins-notification-id': n.id,
          },
          body,
          headersTimeout: 10_000,
          bodyTimeout: 10_000,
        });
        await res.body.dump();
        delivered = res.statusCode >= 200 && res.statusCode < 300;
      } catch (err) {
        this.onError(err as Error);
      }
      if (delivered) {
        await this.db.query('UPDATE notifications SET webhook_delivered_at = now(), webhook_attempts = webhook_attempts + 1 WHERE id = $1::bigint', [n.id]);
      } else {
        const backoffSeconds = Math.min(3600, 2 ** n.webhook_attempts * this.config.intervalSeconds);
        await this.db.query(
          `UPDATE notifications SET webhook_attempts = webhook_attempts + 1, webhook_next_at = now() + make_interval(secs => $2) WHERE id = $1::bigint`,
          [n.id, backoffSeconds],
        );
      }
    }
  }
}
