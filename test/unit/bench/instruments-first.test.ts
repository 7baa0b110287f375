/**
 * How the gateway bench runs its instruments (the load generator and the fake upstream) during the 1,000 requests/s
 * job (bench/gateway-overhead/processes.ts): the main thread at real-time priority, the helper threads free to run
 * on the other CPU meanwhile, both put back afterwards; and the collector's work kept on the main thread of a
 * pinned instrument, so that a real-time main thread has no helper of its own CPU to wait on.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { allowedCpus, canPin, helperThreads, instrumentFlags, instrumentsFirst } from '../../../bench/gateway-overhead/processes.js';

/** A node process pinned to CPU 0 (taskset execs node under its own pid), signalling once it runs. */
async function pinnedIdle(flags: string[] = []): Promise<ChildProcess> {
  const child = spawn('taskset', ['--cpu-list', '0', process.execPath, ...flags, '-e', `process.stdout.write('go\\n'); setInterval(() => {}, 60_000);`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await once(child.stdout!, 'data');
  return child;
}

function policyOf(pid: number): string {
  return /policy:\s*(\S+)/.exec(execFileSync('chrt', ['--pid', String(pid)]).toString())?.[1] ?? '';
}

describe('the instruments at real-time priority', { skip: !canPin() && 'taskset or a second CPU is missing' }, () => {
  test('the main thread is raised and the helpers may use every CPU until the restore puts both back', async (t) => {
    const child = await pinnedIdle();
    const pid = child.pid!;
    try {
      const helpers = helperThreads(pid);
      assert.ok(helpers.length > 0, 'a node process has helper threads');
      assert.equal(helpers.includes(pid), false, 'the main thread is not a helper');
      const restore = instrumentsFirst([pid], '0-1');
      if (restore === null) {
        t.skip('this user may not raise a thread to real-time priority');
        return;
      }
      assert.match(policyOf(pid), /^SCHED_FIFO/);
      assert.equal(allowedCpus(pid, pid), '0', 'the main thread stays on its CPU');
      for (const tid of helpers) assert.equal(allowedCpus(pid, tid), '0-1', `helper ${String(tid)}`);
      restore();
      assert.equal(policyOf(pid), 'SCHED_OTHER');
      for (const tid of helpers) assert.equal(allowedCpus(pid, tid), '0', `helper ${String(tid)} back on CPU 0`);
    } finally {
      child.kill('SIGKILL');
    }
  });

  test('a process that is gone has no helpers and no CPUs', () => {
    assert.deepEqual(helperThreads(2 ** 22 + 1), []);
    assert.equal(allowedCpus(2 ** 22 + 1, 2 ** 22 + 1), null);
  });

  test('pinned instruments run with the single-threaded collector, which this Node accepts', async () => {
    assert.deepEqual(instrumentFlags(null), []);
    const flags = instrumentFlags(0);
    assert.deepEqual(flags, ['--single-threaded-gc']);
    const child = await pinnedIdle(flags);
    child.kill('SIGKILL');
  });
});
