import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareCounters, parseRecordedCounters, type NodeCounterState } from '../../../src/runtime-guard/ingest-lag.js';

test('the recorded counter is read per node label, summed over other labels, other metrics ignored', () => {
  const text = [
    '# HELP reins_sensor_observations_recorded_total Observation items recorded',
    '# TYPE reins_sensor_observations_recorded_total counter',
    'reins_sensor_observations_recorded_total{node="node-a",family="dns"} 10',
    'reins_sensor_observations_recorded_total{family="network",node="node-a"} 5 1700000000000',
    'reins_sensor_observations_recorded_total{node="node-b"} 2.0e3',
    'reins_sensor_observations_recorded_created{node="node-a"} 1700000000',
    'reins_sensor_observations_dropped_total{node="node-a"} 99',
    'process_cpu_seconds_total 12',
    '',
  ].join('\n');
  assert.deepEqual([...parseRecordedCounters(text)], [['node-a', 15], ['node-b', 2000]]);
});

test('label values with escapes; a target without the counter yields no nodes', () => {
  assert.deepEqual([...parseRecordedCounters('reins_sensor_observations_recorded_total{node="we\\"ird\\\\n"} 1\n')], [['we"ird\\n', 1]]);
  assert.equal(parseRecordedCounters('up 1\n').size, 0);
});

test('a malformed sample of the counter is an error, not a zero', () => {
  assert.throws(() => parseRecordedCounters('reins_sensor_observations_recorded_total{node="a"} NaN'), /bad value/);
  assert.throws(() => parseRecordedCounters('reins_sensor_observations_recorded_total{node="a" 3'), /unterminated|bad label/);
  assert.throws(() => parseRecordedCounters('reins_sensor_observations_recorded_total 3'), /without a node label/);
  assert.throws(() => parseRecordedCounters('reins_sensor_observations_recorded_total{node=a} 3'), /bad label/);
});

const NOW = 1_800_000_000;

test('lag is recorded minus stored per node, never negative, summed over nodes', () => {
  const r = compareCounters([], new Map([['a', 100], ['b', 40]]), new Map([['a', 90], ['b', 50]]), NOW);
  assert.deepEqual(r.perNode, [
    { node: 'a', recorded: 100, stored: 90, lag: 10 },
    { node: 'b', recorded: 40, stored: 50, lag: 0 },
  ]);
  assert.equal(r.lag, 10);
});

test('a node with no stored items yet lags by everything it recorded', () => {
  const r = compareCounters([], new Map([['a', 7]]), new Map(), NOW);
  assert.equal(r.lag, 7);
});

test('a sensor restart (counter went down) re-baselines the node: its lag restarts at 0, later loss shows again', () => {
  const first = compareCounters([], new Map([['a', 1000]]), new Map([['a', 990]]), NOW);
  assert.equal(first.lag, 10);
  // Restarted: the counter is 30, the store holds 1,025 in all. Without a baseline the lag would read 0 forever.
  const restarted = compareCounters(first.states, new Map([['a', 30]]), new Map([['a', 1025]]), NOW + 15);
  assert.deepEqual(restarted.perNode, [{ node: 'a', recorded: 30, stored: 30, lag: 0 }]);
  // Then 100 more recorded, 60 of them stored: a lag of 40 shows.
  const later = compareCounters(restarted.states, new Map([['a', 130]]), new Map([['a', 1085]]), NOW + 30);
  assert.deepEqual(later.perNode, [{ node: 'a', recorded: 130, stored: 90, lag: 40 }]);
});

test('a node not read this round keeps its baseline (not listed), and is forgotten after a day', () => {
  const state: NodeCounterState = { node: 'a', recorded: 10, stored: 10, lag: 0, storedTotal: 10, offset: 0, seenAtUnix: NOW };
  const r = compareCounters([state], new Map(), new Map([['a', 10]]), NOW + 15);
  assert.deepEqual(r.perNode, []);
  assert.deepEqual(r.states, [state]);
  assert.deepEqual(compareCounters([state], new Map(), new Map(), NOW + 86_401).states, []);
});
