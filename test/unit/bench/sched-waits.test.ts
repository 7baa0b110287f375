/**
 * bench/gateway-overhead/sched-waits.ts: reading `perf sched timehist` and charging a thread's long waits for its CPU
 * to what ran there meanwhile (tail-sched.ts's report).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseTimehist, waitsOf } from '../../../bench/gateway-overhead/sched-waits.js';

// The header and lines as perf 6.1 prints them (times in s, the last three columns in ms).
const TIMEHIST = `
           time    cpu  task name                       wait time  sch delay   run time
                        [tid/pid]                          (msec)     (msec)     (msec)
--------------- ------  ------------------------------  ---------  ---------  ---------
    1006.215512 [0000]  perf[7536]                          0.000      0.000      0.000 
    1006.215957 [0000]  1_scheduler[3000/2970]              0.000      0.000      0.121 
    1006.216011 [0000]  node[7469]                          0.121      0.000      0.053 
    1006.220000 [0000]  postgres[7535]                      0.000      0.000      3.900 
    1006.221000 [0000]  node[7469]                          0.500      3.000      1.000 
    1006.222000 [0001]  node[7519/7517]                     0.000      0.000      0.900 
    1006.222100 [0001]  node[7517]                          0.000      0.800      0.100 
    1006.222200 [0001]  kworker/u8:3-ev[4739]               0.000      0.000      0.050 
    1006.222300 [0001]  node[7517]                          0.000      0.200      0.050 
`;

test('timehist lines become slices; the header, blank lines and notes are skipped', () => {
  const slices = parseTimehist(`${TIMEHIST}\nSamples do not have callchains.\n`);
  assert.equal(slices.length, 9);
  assert.deepEqual(slices[1], { end: 1006.215957, cpu: 0, comm: '1_scheduler', tid: 3000, pid: 2970, run: 0.121 / 1000, delay: 0 });
  // A main thread names only its own id, which is also its process's.
  assert.equal(slices[2]!.pid, 7469);
  assert.equal(slices[2]!.tid, 7469);
  // A name with a dash and a colon keeps them.
  assert.equal(slices[7]!.comm, 'kworker/u8:3-ev');
});

test("a thread's waits: percentiles over every run, blockers over the long ones only, charged by overlap", () => {
  const slices = parseTimehist(TIMEHIST);
  const gen = waitsOf(slices, 7469, (s) => s.comm);
  assert.equal(gen.runs, 2);
  assert.equal(gen.long, 1);
  assert.equal(gen.max, 3);
  // Woken at 1006.217, started at 1006.220: PostgreSQL ran from 1006.2161 to 1006.220, of which 3 ms in the wait.
  assert.equal(gen.blockers.length, 1);
  assert.equal(gen.blockers[0]![0], 'postgres');
  assert.ok(Math.abs(gen.blockers[0]![1] - 3) < 1e-6, String(gen.blockers[0]![1]));

  // On the other CPU: the event loop waited 0.8 ms behind its own helper thread, then 0.2 ms (under the threshold).
  const loop = waitsOf(slices, 7517, (s) => (s.pid === 7517 ? 'own thread' : s.comm));
  assert.equal(loop.runs, 2);
  assert.equal(loop.long, 1);
  assert.deepEqual(
    loop.blockers.map(([who, ms]) => [who, Math.round(ms * 1000) / 1000]),
    [['own thread', 0.8]],
  );
});

test('a thread perf never saw has no waits', () => {
  const none = waitsOf(parseTimehist(TIMEHIST), 1, (s) => s.comm);
  assert.deepEqual(none, { runs: 0, p50: 0, p99: 0, max: 0, long: 0, blockers: [] });
});
