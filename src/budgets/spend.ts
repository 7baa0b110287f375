/**
 * Spend reports: what governed LLM calls cost, per identity, per developer session or per UTC day, read from
 * the `llm` audit events. Developers see their own; admins and viewers all.
 *
 * Each call counts once (audit/call-events.ts): `requests` counts decision events (`llm.request`, one per call,
 * refused ones included), tokens and cost come from the event that holds the outcome: the end event
 * (`llm.request_end`) of an allowed call, or the single event of a refused one (null usage and cost). A call counts
 * on the day, and in the session, its events carry: the end's day for its cost, which is when it was spent.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { ANY_DEVELOPER } from '../shared/access.js';
import { developerOf } from '../identity/auth.js';
import { forbidden, invalid } from '../shared/errors.js';
import { AUTH_ERRORS, responses } from '../shared/schemas.js';
import type { Db, Queryable } from '../store/db.js';

import { SpendQuery, SpendReportSchema, type SpendGrouping } from './contract.js';

export type { SpendGrouping } from './contract.js';

export interface SpendRow {
  key: string;
  identity: string | null;
  requests: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  /** Calls recorded with no price (by releases that did not yet cost unknown models): their cost is not in costUsd. */
  unpricedRequests: number;
  /** Calls to models no price names, costed with the fallback price: their part of costUsd is an estimate. */
  estimatedRequests: number;
}

const KEY: Record<SpendGrouping, string> = {
  identity: 'actor_id',
  session: "data->>'session'",
  day: "to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
};

export async function spendReport(
  q: Queryable,
  query: { groupBy: SpendGrouping; identity?: string; session?: string; since: Date; until: Date },
): Promise<SpendRow[]> {
  const params: unknown[] = [query.since, query.until];
  const where = [`type = 'llm'`, `action IN ('llm.request', 'llm.request_end')`, 'at >= $1', 'at < $2'];
  if (query.identity) where.push(`actor_id = $${params.push(query.identity)}`);
  if (query.session) where.push(`data->>'session' = $${params.push(query.session)}`);
  if (query.groupBy === 'session') where.push(`data->>'session' IS NOT NULL`);
  const key = KEY[query.groupBy];
  // A session is scoped to its developer (two developers may send the same X-Reins-Session value: two sessions),
  // so sessions are grouped per identity and name it; a day spans many identities.
  const identity = query.groupBy === 'day' ? 'NULL' : 'actor_id';
  const group = query.groupBy === 'session' ? `${key}, actor_id` : key;
  const r = await q.query<{ key: string; identity: string | null; requests: string; input: string | null; output: string | null; cost: string | null; unpriced: string; estimated: string }>(
    `SELECT ${key} AS key, ${identity} AS identity, count(*) FILTER (WHERE action = 'llm.request')::text AS requests,
            sum((data->'usage'->>'inputTokens')::bigint)::text AS input,
            sum((data->'usage'->>'outputTokens')::bigint)::text AS output,
            sum((data->>'costUsd')::numeric)::text AS cost,
            count(*) FILTER (WHERE data->>'unpriced' = 'true')::text AS unpriced,
            count(*) FILTER (WHERE data->>'costEstimated' = 'true')::text AS estimated
       FROM audit_events WHERE ${where.join(' AND ')}
      GROUP BY ${group} ORDER BY sum((data->>'costUsd')::numeric) DESC NULLS LAST, ${group} LIMIT 1000`,
    params,
  );
  return r.rows.map((row) => ({
    key: row.key,
    identity: row.identity,
    requests: Number(row.requests),
    inputTokens: Number(row.input ?? 0),
    outputTokens: Number(row.output ?? 0),
    costUsd: Number(row.cost ?? 0),
    unpricedRequests: Number(row.unpriced),
    estimatedRequests: Number(row.estimated),
  }));
}

const DAY_MS = 86_400_000;

function date(raw: string | undefined, field: string, fallback: Date): Date {
  if (raw === undefined) return fallback;
  const d = new Date(raw);
  if (Number.isNaN(d.getTime())) throw invalid(`query.${field}: must be an ISO 8601 date-time`);
  return d;
}

export function registerSpendRoutes(fastify: FastifyInstance, db: Db): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get('/api/v1/spend', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['budgets'],
      summary: 'LLM spend per identity, developer session or UTC day (developers: their own)',
      querystring: SpendQuery,
      response: responses({ 200: SpendReportSchema }, ...AUTH_ERRORS),
    },
    handler: async (request) => {
      const q = request.query;
      const me = developerOf(request);
      let identity = q.identity;
      if (me.role === 'developer') {
        if (identity !== undefined && identity !== me.identityId) throw forbidden(`developers see their own spend only; ${me.identityId} asked for ${identity}`);
        identity = me.identityId;
      }
      const until = date(q.until, 'until', new Date());
      const since = date(q.since, 'since', new Date(until.getTime() - 30 * DAY_MS));
      const groupBy = q.groupBy ?? 'identity';
      const items = await spendReport(db, { groupBy, since, until, ...(identity ? { identity } : {}), ...(q.session ? { session: q.session } : {}) });
      return { groupBy, since: since.toISOString(), until: until.toISOString(), items };
    },
  });
}
