import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fleetBpfLsm, NODE_STATUS_MAX_AGE_SECONDS, nodeView, nodeViews, type StoredNodeStatus } from '../../../src/runtime-guard/node-status.js';

const NOW = 1_800_000_000;
const status = (node: string, fields: Partial<StoredNodeStatus> = {}): StoredNodeStatus => ({
  node,
  sensorAlive: true,
  bpfLsm: 'available',
  reason: 'bpf in /sys/kernel/security/lsm',
  reportedAtUnix: NOW - 10,
  ...fields,
});

test('node view: a fresh, running sensor is taken at its word', () => {
  assert.deepEqual(nodeView('a', status('a'), NOW), { node: 'a', sensorAlive: true, bpfLsm: 'available', reason: 'bpf in /sys/kernel/security/lsm' });
  assert.equal(nodeView('a', status('a', { bpfLsm: 'unavailable' }), NOW).bpfLsm, 'unavailable');
});

test('node view: exactly 2 minutes old is fresh; older reads as unknown, not alive, and says stale', () => {
  assert.equal(nodeView('a', status('a', { reportedAtUnix: NOW - NODE_STATUS_MAX_AGE_SECONDS }), NOW).bpfLsm, 'available');
  const stale = nodeView('a', status('a', { reportedAtUnix: NOW - NODE_STATUS_MAX_AGE_SECONDS - 1, bpfLsm: 'unavailable' }), NOW);
  assert.equal(stale.bpfLsm, 'unknown');
  assert.equal(stale.sensorAlive, false);
  assert.match(stale.reason, /stale: last report 121 s ago/);
});

test('node view: an idle node (no positive evidence source) is unknown, never available or unavailable', () => {
  const idle = nodeView('a', status('a', { bpfLsm: 'unknown', reason: '' }), NOW);
  assert.deepEqual(idle, { node: 'a', sensorAlive: true, bpfLsm: 'unknown', reason: 'no positive BPF-LSM evidence source on this node (idle)' });
});

test('node view: a sensor that is not running is no evidence source, whatever it said', () => {
  const down = nodeView('a', status('a', { sensorAlive: false, bpfLsm: 'available', reason: 'crash loop' }), NOW);
  assert.equal(down.bpfLsm, 'unknown');
  assert.match(down.reason, /not running: crash loop/);
});

test('node view: a node that never reported is unknown', () => {
  assert.deepEqual(nodeView('a', undefined, NOW), { node: 'a', sensorAlive: false, bpfLsm: 'unknown', reason: 'no sensor status received from this node' });
});

test('node list: facts nodes without status are listed; a stale status of a node the facts no longer list is dropped', () => {
  const views = nodeViews([status('b'), status('gone', { reportedAtUnix: NOW - 3600 }), status('new-node')], ['a', 'b'], NOW);
  assert.deepEqual(views.map((v) => [v.node, v.bpfLsm]), [['a', 'unknown'], ['b', 'available'], ['new-node', 'available']]);
});

test('node list: without usable facts every stored status is listed, stale ones as unknown', () => {
  const views = nodeViews([status('b'), status('gone', { reportedAtUnix: NOW - 3600 })], null, NOW);
  assert.deepEqual(views.map((v) => [v.node, v.bpfLsm]), [['b', 'available'], ['gone', 'unknown']]);
});

const fleet: Array<[string, Array<Partial<StoredNodeStatus> | 'none'>, string, RegExp]> = [
  ['no nodes: unknown', [], 'unknown', /no node has reported/],
  ['every fresh node available: available', [{}, {}], 'available', /every node \(2\) positively reports/],
  ['one stale among available: unknown', [{}, { reportedAtUnix: NOW - 500 }], 'unknown', /n1/],
  ['one idle among available: unknown', [{}, { bpfLsm: 'unknown' }], 'unknown', /n1/],
  ['one node without a sensor among available: unknown', [{}, 'none'], 'unknown', /n1/],
  ['a fresh node positively unavailable: unavailable, naming it', [{}, { bpfLsm: 'unavailable' }], 'unavailable', /node n1/],
  ['unavailable wins over unknown', [{ reportedAtUnix: NOW - 500 }, { bpfLsm: 'unavailable' }], 'unavailable', /n1/],
  ['a stale unavailable is not positive any more: unknown', [{}, { bpfLsm: 'unavailable', reportedAtUnix: NOW - 500 }], 'unknown', /n1/],
  ['all idle: unknown, never available', [{ bpfLsm: 'unknown' }, { bpfLsm: 'unknown' }], 'unknown', /n0, n1/],
];
for (const [name, nodes, state, reason] of fleet) {
  test(`fleet BPF-LSM: ${name}`, () => {
    const views = nodes.map((n, i) => nodeView(`n${i}`, n === 'none' ? undefined : status(`n${i}`, n), NOW));
    const got = fleetBpfLsm(views);
    assert.equal(got.bpfLsm, state);
    assert.match(got.bpfLsmReason, reason);
  });
}
