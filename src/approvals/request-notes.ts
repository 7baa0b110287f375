/**
 * What a refusal tells a developer about their own latest request for the same thing: that it is waiting, or
 * that it was denied and why (the reason verbatim). Read only on the refusal path, never for allowed calls.
 */
import type { Queryable } from '../store/db.js';

export interface RequestNotes {
  /** A sentence to append to a refusal, or null when the developer has no request for this policy or model. */
  noteFor(developerId: string, subject: { policy?: string; model?: string }): Promise<string | null>;
}

export class StoredRequestNotes implements RequestNotes {
  constructor(private readonly db: Queryable) {}

  async noteFor(developerId: string, subject: { policy?: string; model?: string }): Promise<string | null> {
    // With both, the newer of an exception to the policy and access to the model: either lifts a model policy.
    const r = await this.db.query<{ id: string; state: string; denial_reason: string | null }>(
      `SELECT id, state, denial_reason FROM access_requests
        WHERE requester = $1 AND ((type = 'exception' AND target_policy = $2) OR (type = 'model_access' AND requested_model = $3))
        ORDER BY created_at DESC LIMIT 1`,
      [developerId, subject.policy ?? null, subject.model ?? null],
    );
    const row = r.rows[0];
    if (!row) return null;
    if (row.state === 'denied') return `Your request ${row.id} was denied: ${row.denial_reason ?? ''} You may submit a new request.`;
    if (row.state === 'pending') return `Your request ${row.id} is waiting for an admin.`;
    return null;
  }
}
