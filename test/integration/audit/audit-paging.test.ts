/**
 * Issue 23: every combination of the audit list's filters (type, action, identity, callId, since, until; each absent, with a
 * value that matches some events, or one that matches none) pages, 7 events a page through the HTTP API, to exactly
 * what a plain scan of the table gives for the same filters: the same events, in the API's order (newest first, by
 * id), none twice, none missing. And a keyset page walk does not move while events arrive between its requests.
 *
 * The seed spans several UTC days (day partitions of past days, and the default partition for days that have none),
 * groups of events with the same `at` (so `since`/`until` fall on ties and only the id orders them), some events
 * recorded late with an older `at` (ids and `at` disagree), and identities as actor only, as subject only, as both
 * in one event, and beside each other.
 *
 * The identity filter's meaning is the contract's (contract.ts, docs/api.md): events whose actor or whose subject is
 * that identity. Identities named only inside `data` (a governed call's `data.developer`, a held call's agent) do not
 * match.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Replica } from '../../../src/app/server.js';
import type { Db } from '../../../src/store/db.js';
import { ADMIN_TOKEN, Client, describeEachStore, enc, startTestReplica } from '../../helpers/harness.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const PAGE = 7;

interface Row {
  id: string;
  at: Date;
  type: string;
  action: string;
  actorKind: string;
  actorId: string | null;
  subject: string | null;
  host: string | null;
  callId: string | null;
}

interface Filter {
  type?: string;
  action?: string;
  identity?: string;
  callId?: string;
  since?: Date;
  until?: Date;
}

/** A small deterministic generator (mulberry32): the seed is the same on every run, so a failure repeats. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ALICE = 'eng/alice';
const BOB = 'eng/bob';
const BOT = 'eng/bot-1';
const BOT2 = 'eng/bot-2';

/** Who acts and whom it is about, in every shape the product records (src/governance/caller.ts and the control plane). */
const SHAPES: { type: string; action: string; actorKind: string; actorId: string | null; subject: string | null; host?: string; data?: Record<string, unknown> }[] = [
  // Governed calls: an agent key (actor and subject the agent), a developer with an agent (actor the developer,
  // subject the agent), a developer whose tool is the agent (actor and subject the developer).
  { type: 'llm', action: 'llm.request', actorKind: 'agent', actorId: BOT, subject: BOT },
  { type: 'llm', action: 'llm.request', actorKind: 'developer', actorId: ALICE, subject: BOT },
  { type: 'llm', action: 'llm.request_end', actorKind: 'developer', actorId: ALICE, subject: ALICE },
  { type: 'llm', action: 'llm.request', actorKind: 'developer', actorId: BOB, subject: BOT2 },
  { type: 'mcp', action: 'mcp.tool_call', actorKind: 'developer', actorId: BOB, subject: BOT },
  { type: 'mcp', action: 'mcp.tool_call', actorKind: 'agent', actorId: BOT2, subject: BOT2 },
  { type: 'egress', action: 'egress.connect', actorKind: 'agent', actorId: BOT, subject: BOT, host: 'api.example.com' },
  // Control plane: an admin acting on someone, someone on themself, the system on someone, a rule as the subject.
  { type: 'control', action: 'access_request.approve', actorKind: 'developer', actorId: BOB, subject: ALICE },
  { type: 'control', action: 'access_request.approve', actorKind: 'developer', actorId: ALICE, subject: BOB },
  { type: 'control', action: 'identity.create', actorKind: 'developer', actorId: ALICE, subject: BOT },
  { type: 'control', action: 'session.create', actorKind: 'developer', actorId: ALICE, subject: ALICE },
  { type: 'control', action: 'grant.expire', actorKind: 'system', actorId: 'system:expiry', subject: ALICE },
  { type: 'control', action: 'policy.create', actorKind: 'developer', actorId: BOB, subject: 'no-prod-writes' },
  { type: 'control', action: 'audit.retention', actorKind: 'system', actorId: 'system:retention', subject: null },
  // Identities named only inside `data` (an agent's new owners, a rule's approvers): not a match for them.
  { type: 'control', action: 'identity.owners_set', actorKind: 'developer', actorId: BOB, subject: BOT2, data: { oldOwners: [], newOwners: [ALICE] } },
  { type: 'control', action: 'exception_rule.create', actorKind: 'developer', actorId: BOB, subject: 'no-prod-writes', data: { requiredApprovers: [ALICE] } },
];

/** The contract's filter, evaluated on a row: what the API must answer, computed without it. */
function matches(r: Row, f: Filter): boolean {
  if (f.type !== undefined && r.type !== f.type) return false;
  if (f.action !== undefined && r.action !== f.action) return false;
  if (f.identity !== undefined && r.actorId !== f.identity && r.subject !== f.identity) return false;
  if (f.callId !== undefined && r.callId !== f.callId) return false;
  if (f.since !== undefined && r.at.getTime() < f.since.getTime()) return false;
  if (f.until !== undefined && r.at.getTime() >= f.until.getTime()) return false;
  return true;
}

function queryOf(f: Filter, cursor: string | null): string {
  const q = [`limit=${PAGE}`];
  if (f.type !== undefined) q.push(`type=${enc(f.type)}`);
  if (f.action !== undefined) q.push(`action=${enc(f.action)}`);
  if (f.identity !== undefined) q.push(`identity=${enc(f.identity)}`);
  if (f.callId !== undefined) q.push(`callId=${enc(f.callId)}`);
  if (f.since !== undefined) q.push(`since=${enc(f.since.toISOString())}`);
  if (f.until !== undefined) q.push(`until=${enc(f.until.toISOString())}`);
  if (cursor) q.push(`cursor=${enc(cursor)}`);
  return `/api/v1/audit-events?${q.join('&')}`;
}

const describe = (f: Filter) =>
  JSON.stringify({ ...f, since: f.since?.toISOString(), until: f.until?.toISOString() });

/** Every row of the table, read without any condition: the plain scan the API is compared with. */
async function scanAll(db: Db): Promise<Row[]> {
  const r = await db.query<{ id: string; at: Date; type: string; action: string; actor_kind: string; actor_id: string | null; subject: string | null; host: string | null; call_id: string | null }>(
    `SELECT id::text AS id, at, type, action, actor_kind, actor_id, subject, host, data->>'callId' AS call_id FROM audit_events`,
  );
  const rows = r.rows.map((x) => ({ id: x.id, at: x.at, type: x.type, action: x.action, actorKind: x.actor_kind, actorId: x.actor_id, subject: x.subject, host: x.host, callId: x.call_id }));
  // The API's order: newest first by id (ids come from one sequence, in the order events were recorded).
  return rows.sort((a, b) => (BigInt(b.id) > BigInt(a.id) ? 1 : BigInt(b.id) < BigInt(a.id) ? -1 : 0));
}

/** Governed calls' events share a callId in turn (`c0`..`c29`), across days: the callId filter has pairs and more to find. */
let calls = 0;

async function insert(db: Db, rows: { at: Date; shape: (typeof SHAPES)[number]; marker: string }[]): Promise<void> {
  for (const { at, shape, marker } of rows) {
    const callId = shape.type === 'control' ? {} : { callId: `c${calls++ % 30}` };
    await db.query(
      `INSERT INTO audit_events (at, type, action, actor_kind, actor_id, subject, host, data) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [at, shape.type, shape.action, shape.actorKind, shape.actorId, shape.subject, shape.host ?? null, JSON.stringify({ ...shape.data, ...callId, marker })],
    );
  }
}

describeEachStore('audit pages: every filter combination', ({ store }) => {
  let replica: Replica;
  let admin: Client;
  let db: Db;
  // Whole-hour times of the seed, far from the replica's own events (recorded at start-up, now).
  const base = Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR;
  const tie1 = new Date(base - 3 * DAY + 5 * HOUR);
  const tie2 = new Date(base - DAY - 2 * HOUR);

  before(async () => {
    replica = await startTestReplica(store());
    admin = new Client(replica.url, ADMIN_TOKEN);
    db = replica.db;
    // Partitions for the past five days, as a replica running that long would have made them; the events 20 days
    // back have none and land in the default partition.
    await db.query(`SELECT audit_events_ensure_partitions((now() AT TIME ZONE 'UTC')::date - 5, (now() AT TIME ZONE 'UTC')::date)`);
    const rnd = random(23);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const seed: { at: Date; shape: (typeof SHAPES)[number]; marker: string }[] = [];
    // Oldest first, as events are recorded: 20 days back (default partition), then each of the last five days.
    const days = [20, 5, 4, 3, 2, 1, 0];
    for (const d of days) {
      let t = base - d * DAY;
      for (let i = 0; i < 30; i++) {
        // Every fourth step keeps the previous event's `at`: runs of equal timestamps, ordered by id alone.
        if (i % 4 !== 0) t += Math.floor(rnd() * 20) * 60_000;
        seed.push({ at: new Date(t), shape: pick(SHAPES), marker: `d${d}-${i}` });
      }
    }
    // The window boundaries sit on ties: several events at exactly `since` (included) and at `until` (excluded).
    for (let i = 0; i < 4; i++) seed.push({ at: tie1, shape: SHAPES[i * 3]!, marker: `tie1-${i}` });
    for (let i = 0; i < 4; i++) seed.push({ at: tie2, shape: SHAPES[1 + i * 3]!, marker: `tie2-${i}` });
    // Recorded late with an older `at` (a batch that waited): their ids are the newest, their `at` days old.
    for (let i = 0; i < 12; i++) seed.push({ at: new Date(base - (1 + (i % 4)) * DAY + i * 1000), shape: SHAPES[i % SHAPES.length]!, marker: `late-${i}` });
    await insert(db, seed);
  });
  after(() => replica.close());

  test('the seed spans day partitions and the default partition', async () => {
    const r = await db.query<{ t: string; n: string }>(
      `SELECT tableoid::regclass::text AS t, count(*)::text AS n FROM audit_events WHERE data ? 'marker' GROUP BY 1 ORDER BY 1`,
    );
    const parts = r.rows.map((x) => x.t);
    assert.ok(parts.includes('audit_events_default'), parts.join(', '));
    assert.ok(parts.filter((t) => /^audit_events_p\d{8}$/.test(t)).length >= 5, parts.join(', '));
    assert.ok(r.rows.reduce((n, x) => n + Number(x.n), 0) >= 7 * 30);
  });

  test('every combination pages to the plain scan: same events, same order, no duplicate, no gap', async () => {
    const all = await scanAll(db);
    const newest = all[0]!.id;
    const far = new Date(base + 30 * DAY);
    const long = new Date(base - 400 * DAY);
    const types = [undefined, 'llm', 'control', 'nothing'];
    const actions = [undefined, 'llm.request', 'access_request.approve', 'nothing.none'];
    const identities = [undefined, ALICE, BOT, 'nobody/none'];
    const callIds = [undefined, 'c7', 'c-none'];
    const sinces = [undefined, tie1, far];
    const untils = [undefined, tie2, long];
    const filters: Filter[] = [];
    for (const type of types)
      for (const action of actions)
        for (const identity of identities)
          for (const callId of callIds)
            for (const since of sinces)
              for (const until of untils)
                filters.push({
                  ...(type !== undefined ? { type } : {}),
                  ...(action !== undefined ? { action } : {}),
                  ...(identity !== undefined ? { identity } : {}),
                  ...(callId !== undefined ? { callId } : {}),
                  ...(since !== undefined ? { since } : {}),
                  ...(until !== undefined ? { until } : {}),
                });
    let combinations = 0;
    let nonEmpty = 0;
    const check = async (f: Filter): Promise<void> => {
      const expected = all.filter((r) => matches(r, f)).map((r) => r.id);
      const got = await pageThrough(admin, f);
      // An event the replica itself recorded after the scan can only come first (newest): leave it out.
      const paged = got.filter((id) => BigInt(id) <= BigInt(newest));
      assert.deepEqual(got.slice(got.length - paged.length), paged, `${describe(f)}: a newer event inside the pages`);
      assert.equal(new Set(paged).size, paged.length, `${describe(f)}: an event twice`);
      assert.deepEqual(paged, expected, `${describe(f)}: pages differ from the plain scan`);
      combinations++;
      if (expected.length > 0) nonEmpty++;
    };
    // Four walks at a time: each is read-only and independent of the others, and the replica answers them as it
    // would four consoles. One at a time, over a seed of 50 events a day, the 1,728 walks took 9 s a store on an idle
    // machine and up to 141 s under the whole suite's load; at 30 a day the broad filters still walk 20-30 pages.
    let next = 0;
    const walker = async (): Promise<void> => {
      while (next < filters.length) await check(filters[next++]!);
    };
    await Promise.all([walker(), walker(), walker(), walker()]);
    assert.equal(combinations, 4 * 4 * 4 * 3 * 3 * 3);
    // The values were chosen so that many combinations match something, and some match nothing.
    assert.ok(nonEmpty > 50 && nonEmpty < combinations, `${nonEmpty} of ${combinations} combinations match events`);
  });

  test('an empty filter value is no filter', async () => {
    const plain = await admin.get(`/api/v1/audit-events?limit=${PAGE}`);
    const empty = await admin.get(`/api/v1/audit-events?limit=${PAGE}&type=&action=&identity=&since=&until=`);
    assert.equal(empty.status, 200);
    assert.deepEqual(empty.body, plain.body);
  });

  test('a page walk does not move while events arrive between its requests', async () => {
    const filters: Filter[] = [
      {},
      { identity: ALICE },
      { identity: BOT, type: 'llm' },
      { action: 'llm.request', since: tie1 },
      { identity: ALICE, since: tie1, until: tie2 },
      { type: 'control', identity: BOB },
    ];
    let n = 0;
    for (const f of filters) {
      const expected = (await scanAll(db)).filter((r) => matches(r, f)).map((r) => r.id);
      const got: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { status: number; body: { items: { id: string }[]; nextCursor: string | null } } = await admin.get(queryOf(f, cursor));
        assert.equal(page.status, 200);
        got.push(...page.body.items.map((e) => e.id));
        cursor = page.body.nextCursor;
        // Events that match the filter, recorded between two requests: now, at the window's own boundaries, and
        // days back (a late batch). Each has a newer id than every page read so far.
        const at = f.since ?? new Date(base - 2 * DAY);
        const late = SHAPES.filter((s) => (f.type === undefined || s.type === f.type) && (f.action === undefined || s.action === f.action));
        await insert(db, [
          { at, shape: late[n % late.length]!, marker: `arrived-${n}` },
          { at: new Date(), shape: late[(n + 1) % late.length]!, marker: `arrived-now-${n}` },
        ]);
        n++;
      } while (cursor);
      assert.deepEqual(got, expected, `${describe(f)}: the walk moved while events arrived`);
      // Read again from the start, the arrivals that match are there, first.
      const again = await pageThrough(admin, f);
      assert.deepEqual(again.slice(again.length - expected.length), expected, describe(f));
      const arrivedMatching = (await scanAll(db)).filter((r) => matches(r, f) && BigInt(r.id) > BigInt(expected[0] ?? '0'));
      assert.deepEqual(again.slice(0, again.length - expected.length), arrivedMatching.map((r) => r.id), describe(f));
    }
  });
});

async function pageThrough(admin: Client, f: Filter): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; ; pages++) {
    const r: { status: number; body: { items: { id: string }[]; nextCursor: string | null } } = await admin.get(queryOf(f, cursor));
    assert.equal(r.status, 200, `${describe(f)}: ${JSON.stringify(r.body)}`);
    assert.ok(r.body.items.length <= PAGE);
    // A page that is not the last is full: the cursor is only given when more may follow.
    if (r.body.nextCursor) assert.equal(r.body.items.length, PAGE, `${describe(f)}: a short page before the end`);
    ids.push(...r.body.items.map((e) => e.id));
    cursor = r.body.nextCursor;
    if (!cursor) return ids;
    assert.ok(pages < 1000, `${describe(f)}: pages never end`);
  }
}
