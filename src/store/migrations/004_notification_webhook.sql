-- Outgoing webhook delivery state of each notification (an outbox): delivered once, retried with backoff.
ALTER TABLE notifications ADD COLUMN webhook_attempts integer NOT NULL DEFAULT 0;
ALTER TABLE notifications ADD COLUMN webhook_next_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE notifications ADD COLUMN webhook_delivered_at timestamptz;
CREATE INDEX notifications_webhook_pending ON notifications (webhook_next_at) WHERE webhook_delivered_at IS NULL;
