/**
 * The identity filter's subject walk and the indexes that serve it (migration 024). An identity's events are those it
 * did (the actor's indexes) and those about it that someone else did: the subject indexes hold only the latter
 * (`subject IS DISTINCT FROM actor_id`), so an event about its own actor, most of the log, costs them nothing to
 * write. On both stores the subject walk reads those indexes, and finds the same events as a plain scan; on
 * PostgreSQL it still does once the three full subject indexes are dropped, as docs/audit.md tells an operator who
 * runs no older version how to do (the list's answers do not change).
 * (What each filter matches, in every combination: audit-paging.test.ts.)
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { auditListSql, listAuditEvents, type AuditQuery } from '../../../src/audit/audit.js';
import type { Db, Queryable } from '../../../src/store/db.js';
import { migrate } from '../../../src/store/migrate.js';
import { openStore } from '../../../src/store/open.js';
import { describeEachStore } from '../../helpers/harness.js';

const ALICE = 'eng/alice';
const BOT = 'eng/bot-1';

/** The partitions' own indexes under a parent index: a plan names those, not the parent. */
async function partitionIndexes(q: Queryable, parent: string): Promise<string[]> {
  const r = await q.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass($1)`,
    [parent],
  );
  return r.rows.map((x) => x.name);
}

/** The names of the indexes a query's plan reads. */
async function indexesRead(q: Queryable, query: AuditQuery): Promise<Set<string>> {
  const { sql, params } = auditListSql(query);
  const plan = await q.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
  return new Set([...JSON.stringify(plan.rows[0]!['QUERY PLAN']).matchAll(/"Index Name":"([^"]+)"/g)].map((m) => m[1]!));
}

/** Which of the parent indexes' partition indexes a plan reads. */
async function parentsRead(q: Queryable, query: AuditQuery, parents: string[]): Promise<string[]> {
  const read = await indexesRead(q, query);
  const out: string[] = [];
  for (const parent of parents) if ((await partitionIndexes(q, parent)).some((name) => read.has(name))) out.push(parent);
  return out;
}

const NOT_ACTOR = ['audit_events_subject_not_actor', 'audit_events_subject_action_not_actor', 'audit_events_subject_type_not_actor'];
const FULL = ['audit_events_subject', 'audit_events_subject_action', 'audit_events_subject_type'];

/**
 * The subject walk reads a subject index, one of `allowed` (which one is the planner's choice: on a small log it may
 * walk (subject, type, id) for an identity alone), and no other.
 */
async function readsSubjectIndex(q: Queryable, query: AuditQuery, allowed: string[]): Promise<void> {
  const read = await parentsRead(q, query, [...NOT_ACTOR, ...FULL]);
  assert.ok(read.length > 0 && read.every((name) => allowed.includes(name)), `${JSON.stringify(query)} read ${read.join(', ') || 'no subject index'}`);
}

/** What the list must answer for an identity: a plain scan of the table, newest first. */
async function scanned(q: Queryable, identity: string, action?: string): Promise<string[]> {
  const r = await q.query<{ id: string }>(
    `SELECT id::text AS id FROM audit_events WHERE (actor_id = $1 OR subject = $1) AND ($2::text IS NULL OR action = $2) ORDER BY audit_events.id DESC`,
    [identity, action ?? null],
  );
  return r.rows.map((x) => x.id);
}

async function listed(q: Queryable, identity: string, action?: string): Promise<string[]> {
  const page = await listAuditEvents(q, { limit: 500, identity, ...(action ? { action } : {}) });
  return page.items.map((e) => e.id);
}

describeEachStore('audit identity search by the subject indexes', ({ store, kind }) => {
  let db: Db;
  before(async () => {
    const s = store();
    db = s.db ?? (await openStore({ kind: 'postgres', url: s.url! }));
    await migrate(db);
    // 6,000 events of 20 agents about themselves (agent keys), 40 of Alice's calls on the bot's behalf, 30 of the
    // bot's own, 10 with no actor id about the bot, and 20 of Alice about herself.
    await db.query(
      `INSERT INTO audit_events (type, action, actor_kind, actor_id, subject, data)
         SELECT 'llm', 'llm.request', 'agent', 'team/agent-' || (g % 20), 'team/agent-' || (g % 20), '{}' FROM generate_series(1, 6000) g`,
    );
    await db.query(`INSERT INTO audit_events (type, action, actor_kind, actor_id, subject, data) SELECT 'llm', 'llm.request', 'developer', $1, $2, '{}' FROM generate_series(1, 40)`, [ALICE, BOT]);
    await db.query(`INSERT INTO audit_events (type, action, actor_kind, actor_id, subject, data) SELECT 'mcp', 'mcp.tool_call', 'agent', $1, $1, '{}' FROM generate_series(1, 30)`, [BOT]);
    await db.query(`INSERT INTO audit_events (type, action, actor_kind, actor_id, subject, data) SELECT 'control', 'grant.expire', 'system', NULL, $1, '{}' FROM generate_series(1, 10)`, [BOT]);
    await db.query(`INSERT INTO audit_events (type, action, actor_kind, actor_id, subject, data) SELECT 'control', 'session.create', 'developer', $1, $1, '{}' FROM generate_series(1, 20)`, [ALICE]);
    await db.query('ANALYZE audit_events');
  });
  after(async () => {
    if (kind === 'postgres') await db.close();
  });

  test('the subject walk reads the index of events about someone else, and finds what a scan finds', async () => {
    // PostgreSQL keeps the full ones too until they are retired, and the planner may walk either.
    await readsSubjectIndex(db, { limit: 50, identity: BOT }, kind === 'pglite' ? NOT_ACTOR : [...NOT_ACTOR, ...FULL]);
    for (const [identity, action] of [[BOT], [BOT, 'llm.request'], [BOT, 'grant.expire'], [ALICE], [ALICE, 'session.create'], ['team/agent-3'], ['nobody']] as [string, string?][]) {
      const want = await scanned(db, identity, action);
      assert.deepEqual(await listed(db, identity, action), want, `identity ${identity}${action ? ` action ${action}` : ''}`);
    }
    assert.equal((await scanned(db, BOT)).length, 80);
  });

  if (kind === 'postgres') {
    test('with the full subject indexes dropped (docs/audit.md), the same answers from the indexes without the actor', async () => {
      const before = await Promise.all([listed(db, BOT), listed(db, BOT, 'llm.request'), listed(db, BOT, 'grant.expire'), listed(db, ALICE)]);
      const done = new Error('rolled back');
      await assert.rejects(
        db.transaction(async (tx) => {
          await tx.query(`DROP INDEX ${FULL.join(', ')}`);
          for (const query of [{ identity: BOT }, { identity: BOT, action: 'llm.request' }, { identity: BOT, type: 'control' }]) await readsSubjectIndex(tx, { limit: 50, ...query }, NOT_ACTOR);
          const after = await Promise.all([listed(tx, BOT), listed(tx, BOT, 'llm.request'), listed(tx, BOT, 'grant.expire'), listed(tx, ALICE)]);
          assert.deepEqual(after, before);
          throw done;
        }),
        (err) => err === done,
      );
      // Rolled back: the full indexes are still there.
      assert.ok((await partitionIndexes(db, 'audit_events_subject')).length > 0);
    });
  }
});
