/**
 * The benches' check for a machine that is not idle before a run (bench/gateway-overhead/processes.ts
 * busyProcesses): a process spinning on a core is named in the report's warnings, an idle one is not.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { busyAtStartWarnings, busyProcesses } from '../../../bench/gateway-overhead/processes.js';

/** A node process that signals once it runs `code`'s loop (or its timer). */
async function started(code: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', `process.stdout.write('go\\n'); ${code}`], { stdio: ['ignore', 'pipe', 'inherit'] });
  await once(child.stdout!, 'data');
  return child;
}

describe('processes busy before a benchmark run', () => {
  test('a process spinning on a core is listed with its share of a CPU; an idle one is not', async () => {
    const spinning = await started('for (;;) {}');
    const idle = await started('setInterval(() => {}, 60_000);');
    try {
      // The whole test suite shares the two cores: the spinning process gets far less than a core then, but more
      // than 5% of one over a second, and the idle one uses none.
      const busy = busyProcesses(1000, 5);
      const found = busy.find((b) => b.pid === spinning.pid);
      assert.ok(found, `the spinning process ${String(spinning.pid)} is not among ${JSON.stringify(busy)}`);
      assert.equal(found.command, 'node');
      assert.ok(found.cpuPercent >= 5 && found.cpuPercent <= 110, `cpuPercent ${String(found.cpuPercent)}`);
      assert.equal(busy.some((b) => b.pid === idle.pid), false);
      assert.equal(busy.some((b) => b.pid === process.pid), false, 'the measuring process itself is never listed');
    } finally {
      spinning.kill('SIGKILL');
      idle.kill('SIGKILL');
    }
  });

  test('each busy process becomes one warning naming it', () => {
    assert.deepEqual(busyAtStartWarnings({ busyAtStart: [{ pid: 42, command: 'node', cpuPercent: 97 }] }), [
      'before the run, process 42 (node) used 97% of a CPU: every figure of this run shared the machine with it',
    ]);
    assert.deepEqual(busyAtStartWarnings({ busyAtStart: [] }), []);
    // Results recorded before the check existed have no busyAtStart.
    assert.deepEqual(busyAtStartWarnings({}), []);
  });
});
