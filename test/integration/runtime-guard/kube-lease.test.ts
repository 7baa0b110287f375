/**
 * The runtime guard's leader Lease: several replicas (`startRuntimeCluster`) on one fake API server.
 */
import { test, describe, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { RuntimeCluster } from '../../../src/runtime-guard/cluster.js';
import { kube, startFakeKubeApi, type FakeKubeApi } from '../../fakes/fake-kube-api.js';
import { FAST, seedCluster, startCluster, until } from './kube-helpers.js';

const LEASE_PATH = '/apis/coordination.k8s.io/v1/namespaces/reins/leases/reins-runtime-guard';
const LEASES_PATH = '/apis/coordination.k8s.io/v1/namespaces/reins/leases';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function fakeApi(): Promise<FakeKubeApi> {
  const api = await startFakeKubeApi();
  seedCluster(api);
  cleanups.push(() => api.close());
  return api;
}

/** A replica with its own identity and its own bearer token (so the fake can tell replicas apart). */
async function replica(api: FakeKubeApi, identity: string, overrides: Parameters<typeof startCluster>[1] = {}): Promise<RuntimeCluster> {
  const { cluster } = await startCluster(api, { identity, ...overrides, environment: { kind: 'kubeconfig', kubeconfigPath: api.kubeconfigFor(identity) } });
  cleanups.push(() => cluster.stop());
  return cluster;
}

const holder = (api: FakeKubeApi): string | undefined => (api.get('leases', 'reins', 'reins-runtime-guard')?.spec as { holderIdentity?: string } | undefined)?.holderIdentity;

/** Samples both replicas until `ms` passed; fails at once if both lead at the same moment. */
async function neverTwoLeaders(a: RuntimeCluster, b: RuntimeCluster, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    assert.ok(!(a.isLeader() && b.isLeader()), 'two leaders at once');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('leader Lease', () => {
  test('two replicas on one API server: exactly one leads, and the Lease names it', async () => {
    const api = await fakeApi();
    const a = await replica(api, 'replica-a');
    const b = await replica(api, 'replica-b');
    await until('a leader', () => a.isLeader() || b.isLeader());
    await neverTwoLeaders(a, b, 1500);
    const leader = a.isLeader() ? 'replica-a' : 'replica-b';
    assert.ok(a.isLeader() !== b.isLeader());
    assert.equal(holder(api), leader);
    const lease = api.get('leases', 'reins', 'reins-runtime-guard')!.spec as { leaseDurationSeconds: number; renewTime: string };
    assert.equal(lease.leaseDurationSeconds, FAST.leaseDurationSeconds);
    assert.match(lease.renewTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'a MicroTime');
  });

  test('the leader stops: it releases the Lease and the other takes over at its next poll', async () => {
    const api = await fakeApi();
    const a = await replica(api, 'replica-a', { leaseDurationSeconds: 30, renewMs: 100 });
    await until('a leads', () => a.isLeader());
    const b = await replica(api, 'replica-b', { leaseDurationSeconds: 30, renewMs: 100 });
    await neverTwoLeaders(a, b, 300);
    assert.equal(b.isLeader(), false, 'a 30 s Lease held by a live leader is not taken');
    const t0 = Date.now();
    await a.stop();
    await until('b leads', () => b.isLeader());
    // Well short of the 30 s expiry (a busy machine may take seconds to stop a and to poll again).
    assert.ok(Date.now() - t0 < 15_000, `released: no wait for the 30 s expiry (took ${Date.now() - t0} ms)`);
    assert.equal(holder(api), 'replica-b');
  });

  test('a leader that stops renewing steps down, and the other takes over once the Lease expired', async () => {
    const api = await fakeApi();
    // A 3 s Lease (each request may take 2 s): short enough to wait out, long enough for a busy machine.
    const a = await replica(api, 'replica-a', { leaseDurationSeconds: 3, renewMs: 100 });
    await until('a leads', () => a.isLeader());
    const b = await replica(api, 'replica-b', { leaseDurationSeconds: 3, renewMs: 100 });
    await neverTwoLeaders(a, b, 300);
    // Replica a loses the API server (its Lease requests hang), as a crashed or partitioned leader would.
    const cut = api.gate((r) => r.authorization === 'Bearer replica-a' && r.path.startsWith(LEASES_PATH));
    let tookOverAt = 0;
    const takeover = until('b leads', () => b.isLeader()).then(() => (tookOverAt = Date.now()));
    // Sampled for the whole takeover, however long the machine makes it.
    while (tookOverAt === 0) await neverTwoLeaders(a, b, 50);
    await takeover;
    assert.equal(a.isLeader(), false, 'the cut-off leader stepped down');
    // Counted from a's last write that reached the server (the Lease is unchanged from then on), not from the
    // cut: on a busy machine that write may be well before it.
    const lastWriteAt = Math.max(
      ...api.requests.filter((r) => r.authorization === 'Bearer replica-a' && r.path.startsWith(LEASES_PATH) && (r.status === 200 || r.status === 201) && r.method !== 'GET').map((r) => r.atMs),
    );
    const took = tookOverAt - lastWriteAt;
    assert.ok(took >= 2_950, `took over ${took} ms after a's last write, before the 3 s Lease could have expired`);
    assert.equal(holder(api), 'replica-b');
    cut.release();
    await neverTwoLeaders(a, b, 500);
    assert.equal(b.isLeader(), true);
  });

  /** Holds the matching requests of each replica separately, so a retry of one cannot stand for the other's. */
  function perReplicaGates(api: FakeKubeApi, match: (method: string, path: string) => boolean) {
    const gates = ['replica-a', 'replica-b'].map((id) => api.gate((r) => r.authorization === `Bearer ${id}` && match(r.method, r.path)));
    return {
      bothHeld: () => Promise.all(gates.map((g) => g.waitFor(1))),
      release: () => gates.forEach((g) => g.release()),
    };
  }

  // A 3 s Lease gives each request 2 s: a busy machine must not turn the race into a timeout and a retry.
  const RACE = { leaseDurationSeconds: 3, renewMs: 100 };

  test('a race for a missing Lease: both create, one gets 409, one leads', async () => {
    const api = await fakeApi();
    const reads = perReplicaGates(api, (method, path) => method === 'GET' && path === LEASE_PATH);
    const a = await replica(api, 'replica-a', RACE);
    const b = await replica(api, 'replica-b', RACE);
    await reads.bothHeld();
    reads.release();
    await until('a leader', () => a.isLeader() || b.isLeader());
    await neverTwoLeaders(a, b, 500);
    const creates = api.requests.filter((r) => r.method === 'POST' && r.path === LEASES_PATH);
    assert.deepEqual(creates.map((r) => r.status).sort(), [201, 409]);
    const winner = creates.find((r) => r.status === 201)!.authorization.replace('Bearer ', '');
    assert.equal(holder(api), winner);
    assert.equal((winner === 'replica-a' ? a : b).isLeader(), true);
  });

  test('a race for an expired Lease: both replace with the same resourceVersion, one gets 409, one leads', async () => {
    const api = await fakeApi();
    // A holder that died an hour ago.
    api.upsert('leases', kube.lease({ namespace: 'reins', name: 'reins-runtime-guard', holder: 'ghost', durationSeconds: 1, renewTime: new Date(Date.now() - 3_600_000) }));
    const writes = perReplicaGates(api, (method, path) => method === 'PUT' && path === LEASE_PATH);
    const a = await replica(api, 'replica-a', RACE);
    const b = await replica(api, 'replica-b', RACE);
    await writes.bothHeld();
    assert.equal(a.isLeader() || b.isLeader(), false, 'nobody leads before the write');
    writes.release();
    await until('a leader', () => a.isLeader() || b.isLeader());
    await neverTwoLeaders(a, b, 500);
    const replaces = api.requests.filter((r) => r.method === 'PUT' && r.path === LEASE_PATH);
    assert.deepEqual(replaces.slice(0, 2).map((r) => r.status).sort(), [200, 409]);
    const lease = api.get('leases', 'reins', 'reins-runtime-guard')!.spec as { holderIdentity: string; leaseTransitions: number };
    assert.equal(lease.holderIdentity, replaces.find((r) => r.status === 200)!.authorization.replace('Bearer ', ''));
    assert.equal(lease.leaseTransitions, 1);
  });

  test('a Lease held by a live holder is waited out for its duration, measured on this replica\'s clock', async () => {
    const api = await fakeApi();
    // Its renewTime says an hour ago (the holder's clock may be wrong): only an unchanged record for the
    // whole duration, as this replica sees it, makes it expired.
    api.upsert('leases', kube.lease({ namespace: 'reins', name: 'reins-runtime-guard', holder: 'skewed', durationSeconds: 1, renewTime: new Date(Date.now() - 3_600_000) }));
    const t0 = Date.now();
    const a = await replica(api, 'replica-a', { renewMs: 50 });
    await until('a leads', () => a.isLeader());
    assert.ok(Date.now() - t0 >= 900, 'waited the lease duration');
  });
});
