/**
 * Rate-limit rules and the per-minute counters they are enforced with.
 *
 * Admission is one conditional upsert per binding rule, in one transaction (all or none): the counter row of
 * (rule, identity, the store's current UTC minute) gains a request only while its requests are under the limit and
 * its tokens so far under the token limit. Racing calls on any replica serialise on that row, so no more requests
 * than the limit are admitted in a minute. Tokens are added to the row of the minute the call was admitted in
 * when its answer reports usage; what calls still in flight will report is the only drift.
 */
import { randomBytes } from 'node:crypto';
import { recordAudit } from '../audit/audit.js';
import type { Actor } from '../shared/actor.js';
import { notFound } from '../shared/errors.js';
import { Channels, notify, type Db, type Queryable } from '../store/db.js';
import type { RateLimit } from './contract.js';
import type { RateLimitRuleInput } from './rate-limits.js';

export type { RateLimit } from './contract.js';

interface Row {
  id: string;
  name: string;
  scope: string;
  pattern: string;
  upstream: string;
  requests_per_minute: number | null;
  tokens_per_minute: string | number | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, name, scope, pattern, upstream, requests_per_minute, tokens_per_minute, created_at, updated_at';

function toRule(r: Row): RateLimit {
  const rule: RateLimit = { id: r.id, name: r.name, scope: r.scope, pattern: r.pattern, upstream: r.upstream, createdAt: r.created_at.toISOString(), updatedAt: r.updated_at.toISOString() };
  if (r.requests_per_minute !== null) rule.requestsPerMinute = r.requests_per_minute;
  if (r.tokens_per_minute !== null) rule.tokensPerMinute = Number(r.tokens_per_minute);
  return rule;
}

function params(input: RateLimitRuleInput): unknown[] {
  return [input.name, input.scope, input.pattern, input.upstream, input.requestsPerMinute ?? null, input.tokensPerMinute ?? null];
}

export async function listRateLimits(q: Queryable): Promise<RateLimit[]> {
  const r = await q.query<Row>(`SELECT ${COLUMNS} FROM rate_limit_rules ORDER BY created_at, id`);
  return r.rows.map(toRule);
}

export async function getRateLimit(q: Queryable, id: string): Promise<RateLimit> {
  const r = await q.query<Row>(`SELECT ${COLUMNS} FROM rate_limit_rules WHERE id = $1`, [id]);
  if (!r.rows[0]) throw notFound(`no rate limit ${id}`);
  return toRule(r.rows[0]);
}

export async function createRateLimit(db: Db, actor: Actor, input: RateLimitRuleInput): Promise<RateLimit> {
  return db.transaction(async (tx) => {
    const id = `rl_${randomBytes(9).toString('base64url')}`;
    const r = await tx.query<Row>(
      `INSERT INTO rate_limit_rules (id, name, scope, pattern, upstream, requests_per_minute, tokens_per_minute)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${COLUMNS}`,
      [id, ...params(input)],
    );
    const rule = toRule(r.rows[0]!);
    await recordAudit(tx, { type: 'control', action: 'rate_limit.create', actor, subject: rule.scope, data: { ...input, id } });
    await notify(tx, Channels.gatewayRules, { kind: 'rate_limit', id });
    return rule;
  });
}

export async function replaceRateLimit(db: Db, actor: Actor, id: string, input: RateLimitRuleInput): Promise<RateLimit> {
  return db.transaction(async (tx) => {
    const before = await tx.query<Row>(`SELECT ${COLUMNS} FROM rate_limit_rules WHERE id = $1 FOR UPDATE`, [id]);
    if (!before.rows[0]) throw notFound(`no rate limit ${id}`);
    const old = toRule(before.rows[0]);
    const r = await tx.query<Row>(
      `UPDATE rate_limit_rules SET name = $2, scope = $3, pattern = $4, upstream = $5, requests_per_minute = $6, tokens_per_minute = $7, updated_at = now()
        WHERE id = $1 RETURNING ${COLUMNS}`,
      [id, ...params(input)],
    );
    // Counters belong to the rule's old coverage; a different scope, pattern or upstream starts them afresh.
    if (old.scope !== input.scope || old.pattern !== input.pattern || old.upstream !== input.upstream) {
      await tx.query('DELETE FROM rate_limit_counters WHERE rule_id = $1', [id]);
    }
    const { createdAt: _c, updatedAt: _u, id: _i, ...was } = old;
    await recordAudit(tx, { type: 'control', action: 'rate_limit.update', actor, subject: input.scope, data: { ...input, id, before: was } });
    await notify(tx, Channels.gatewayRules, { kind: 'rate_limit', id });
    return toRule(r.rows[0]!);
  });
}

export async function deleteRateLimit(db: Db, actor: Actor, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    const r = await tx.query<Row>(`DELETE FROM rate_limit_rules WHERE id = $1 RETURNING ${COLUMNS}`, [id]);
    const old = r.rows[0];
    if (!old) throw notFound(`no rate limit ${id}`);
    await recordAudit(tx, { type: 'control', action: 'rate_limit.delete', actor, subject: old.scope, data: { ...toRule(old) } });
    await notify(tx, Channels.gatewayRules, { kind: 'rate_limit', id });
  });
}

/** A call's place in one rule's counter: where its tokens go when its answer reports them. */
export interface RateAdmission {
  ruleId: string;
  identityId: string;
  windowStart: string;
}

export type AdmitResult =
  | { ok: true; admissions: RateAdmission[] }
  | { ok: false; ruleId: string; over: 'requests' | 'tokens'; retryAfterSeconds: number };

class OverLimit extends Error {
  constructor(readonly result: Extract<AdmitResult, { ok: false }>) {
    super('over the rate limit');
  }
}

/** How often an admission also clears counters of minutes long past (one in this many). */
const SWEEP_EVERY = 200;

/** Admits a call against every binding rule in one transaction: all or none. */
export async function admitRate(db: Db, identityId: string, rules: readonly Pick<RateLimit, 'id' | 'requestsPerMinute' | 'tokensPerMinute'>[]): Promise<AdmitResult> {
  try {
    const admissions = await db.transaction(async (tx) => {
      const out: RateAdmission[] = [];
      for (const rule of rules) {
        const rpm = rule.requestsPerMinute ?? null;
        const tpm = rule.tokensPerMinute ?? null;
        const admitted = await tx.query<{ window_start: Date }>(
          `INSERT INTO rate_limit_counters AS c (rule_id, identity_id, window_start, requests, tokens)
           SELECT $1, $2, date_trunc('minute', now()), 1, 0
            WHERE ($3::integer IS NULL OR $3::integer > 0) AND ($4::bigint IS NULL OR $4::bigint > 0)
           ON CONFLICT (rule_id, identity_id, window_start) DO UPDATE SET requests = c.requests + 1
            WHERE ($3::integer IS NULL OR c.requests < $3::integer) AND ($4::bigint IS NULL OR c.tokens < $4::bigint)
           RETURNING window_start`,
          [rule.id, identityId, rpm, tpm],
        );
        const row = admitted.rows[0];
        if (!row) {
          const c = await tx.query<{ requests: number; tokens: string; wait: string }>(
            `SELECT requests, tokens, ceil(60 - extract(epoch from now() - date_trunc('minute', now())))::text AS wait
               FROM (SELECT 1) one LEFT JOIN rate_limit_counters
                 ON rule_id = $1 AND identity_id = $2 AND window_start = date_trunc('minute', now())`,
            [rule.id, identityId],
          );
          const counted = c.rows[0];
          const overRequests = rpm !== null && Number(counted?.requests ?? 0) >= rpm;
          throw new OverLimit({ ok: false, ruleId: rule.id, over: overRequests || tpm === null ? 'requests' : 'tokens', retryAfterSeconds: Math.max(1, Math.min(60, Number(counted?.wait ?? 60))) });
        }
        out.push({ ruleId: rule.id, identityId, windowStart: row.window_start.toISOString() });
      }
      if (Math.random() * SWEEP_EVERY < 1) await tx.query(`DELETE FROM rate_limit_counters WHERE window_start < now() - interval '10 minutes'`);
      return out;
    });
    return { ok: true, admissions };
  } catch (err) {
    if (err instanceof OverLimit) return err.result;
    throw err;
  }
}

/** Adds a finished call's tokens to the minute it was admitted in. */
export async function countRateTokens(db: Db, admissions: readonly RateAdmission[], tokens: number): Promise<void> {
  if (admissions.length === 0 || tokens <= 0) return;
  await db.transaction(async (tx) => {
    for (const a of admissions) {
      await tx.query('UPDATE rate_limit_counters SET tokens = tokens + $4 WHERE rule_id = $1 AND identity_id = $2 AND window_start = $3', [a.ruleId, a.identityId, a.windowStart, tokens]);
    }
  });
}
