/**
 * PodOwnerHistory reads the remembered owners back only when the store's rows moved (their count and hash sum),
 * and then sees every change another replica made: a new pod, an owner rewritten, a row aged out.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Replica } from '../../../src/app/server.js';
import { PodOwnerHistory } from '../../../src/runtime-guard/pod-owner-history.js';
import type { Queryable } from '../../../src/store/db.js';
import { describeEachStore, startTestReplica } from '../../helpers/harness.js';

describeEachStore('runtime guard: pod owners read back only when the store moved', ({ store }) => {
  let replica: Replica;
  before(async () => {
    replica = await startTestReplica(store());
  });
  after(async () => {
    await replica?.close();
  });

  test('unchanged rows are not read again; every change another replica makes is', async () => {
    const db = replica.db;
    await db.query('DELETE FROM runtime_pod_owners');
    let rowReads = 0;
    const counting: Queryable = {
      query: (sql, params) => {
        if (/^SELECT namespace, name, kind, workload/.test(sql)) rowReads += 1;
        return db.query(sql, params);
      },
    };
    let nowMs = Date.UTC(2026, 10, 27, 12);
    const history = new PodOwnerHistory(counting, () => nowMs, 3_600_000);
    // Another replica's writes, as PodOwnerHistory.write stores them.
    const put = (name: string, workload: string, atMs: number) =>
      db.query(
        `INSERT INTO runtime_pod_owners (namespace, name, kind, workload, last_seen_at) VALUES ('eng', $1, 'Deployment', $2, to_timestamp($3))
         ON CONFLICT (namespace, name) DO UPDATE SET workload = EXCLUDED.workload, last_seen_at = EXCLUDED.last_seen_at`,
        [name, workload, atMs / 1000],
      );
    const tickLater = async () => {
      nowMs += 6_000; // past READ_EVERY_MS
      await history.tick(null);
    };

    await put('agent-6c1-a1', 'agent', nowMs);
    await history.refresh(null);
    assert.deepEqual(history.current().map((o) => `${o.name}=${o.workload}`), ['agent-6c1-a1=agent']);
    assert.equal(rowReads, 1);

    const first = history.current();
    await tickLater();
    await tickLater();
    assert.equal(rowReads, 1, 'nothing moved in the store: the rows were not read again');
    assert.equal(history.current(), first, 'the list keeps its identity');

    await put('agent-6c1-a2', 'agent', nowMs);
    await tickLater();
    assert.equal(rowReads, 2);
    assert.deepEqual(history.current().map((o) => o.name), ['agent-6c1-a1', 'agent-6c1-a2']);

    // An owner rewritten (same count of rows) is seen.
    await put('agent-6c1-a2', 'agent-v2', nowMs);
    await tickLater();
    assert.deepEqual(history.current().map((o) => `${o.name}=${o.workload}`), ['agent-6c1-a1=agent', 'agent-6c1-a2=agent-v2']);

    // Rows older than the memory age out of the list without any write.
    await put('agent-6c1-a1', 'agent', nowMs - 3_000_000);
    await tickLater();
    nowMs += 700_000;
    await history.tick(null);
    assert.deepEqual(history.current().map((o) => o.name), ['agent-6c1-a2']);
  });
});
