/**
 * The service's own pods as every replica saw them, in the store: a later sighting wins, a row is forgotten 25 h
 * after it was last seen, and what the store knows merges with a replica's own facts in one stable order.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Replica } from '../../../src/app/server.js';
import { SELF_POD_MEMORY_MS, SelfPodHistory } from '../../../src/runtime-guard/self-pod-history.js';
import { describeEachStore, startTestReplica } from '../../helpers/harness.js';

describeEachStore('self pod history', ({ store }) => {
  let replica: Replica;
  before(async () => {
    replica = await startTestReplica(store(), {}, { listen: false });
  });
  after(async () => replica.close());

  test('each replica writes what it saw; every replica merges it in until 25 h after it was last seen', async () => {
    let now = Date.UTC(2026, 10, 21, 12, 0, 0);
    const a = new SelfPodHistory(replica.db, () => now);
    const b = new SelfPodHistory(replica.db, () => now);
    const nowUnix = () => Math.floor(now / 1000);
    await a.remember([
      { namespace: 'reins', name: 'reins-new', ip: '10.0.0.2' },
      { namespace: 'reins', name: 'reins-old', ip: '10.0.0.1', goneAtUnix: nowUnix() - 7200 },
    ]);
    // B's own facts know only the new pod, in its own order: the merge is the same list A's would be.
    assert.deepEqual(await b.merged([{ namespace: 'reins', name: 'reins-new', ip: '10.0.0.2' }]), [
      { namespace: 'reins', name: 'reins-new', ip: '10.0.0.2' },
      { namespace: 'reins', name: 'reins-old', ip: '10.0.0.1' },
    ]);
    // An older sighting does not move a row back: reins-new was seen now, not an hour ago.
    await b.remember([{ namespace: 'reins', name: 'reins-new', ip: '10.0.0.2', goneAtUnix: nowUnix() - 3600 }]);
    // 24 h on: reins-old (gone 26 h ago) is forgotten, reins-new (seen 24 h ago) still remembered.
    now += 24 * 3600_000;
    assert.deepEqual((await b.merged([])).map((p) => p.name), ['reins-new']);
    now += SELF_POD_MEMORY_MS - 24 * 3600_000 + 1000;
    assert.deepEqual(await b.merged([]), []);
    // The next write also deletes what is past the memory.
    await a.remember([{ namespace: 'reins', name: 'reins-next', ip: '10.0.0.3' }]);
    const left = (await replica.db.query<{ name: string }>('SELECT name FROM runtime_self_pods ORDER BY name')).rows.map((r) => r.name);
    assert.deepEqual(left, ['reins-next']);
  });
});
