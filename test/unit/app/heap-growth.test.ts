/**
 * The heap-growth governor: conservative growth above the large-heap threshold, V8's own below three quarters of it,
 * one governor per process however many replicas hold it, and hands off when the operator set the flag.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { LARGE_HEAP_BYTES, governHeapGrowth, growthSetByOperator, heapGrowthMode, nextMode } from '../../../src/app/heap-growth.js';

describe('heap growth', () => {
  test('conservative above the threshold, V8 below three quarters of it, unchanged between', () => {
    assert.equal(nextMode('v8', LARGE_HEAP_BYTES + 1), 'conservative');
    assert.equal(nextMode('conservative', LARGE_HEAP_BYTES * 0.8), 'conservative');
    assert.equal(nextMode('v8', LARGE_HEAP_BYTES * 0.8), 'v8');
    assert.equal(nextMode('conservative', LARGE_HEAP_BYTES * 0.74), 'v8');
    assert.equal(nextMode('v8', 1000, 500), 'conservative');
  });

  test("the operator's own flag, on the command line or in NODE_OPTIONS, is left alone", () => {
    assert.equal(growthSetByOperator(['--heap-growing-percent=25'], ''), true);
    assert.equal(growthSetByOperator(['--heap_growing_percent', '25'], ''), true);
    assert.equal(growthSetByOperator([], '--max-old-space-size=2048 --heap-growing-percent=5'), true);
    assert.equal(growthSetByOperator(['--enable-source-maps'], '--max-old-space-size=2048'), false);
  });

  test('held by two replicas: conservative while the heap is large, V8 again after the last release', () => {
    // A threshold below this test process's heap: the governor turns conservative at once.
    const releaseA = governHeapGrowth({ largeHeapBytes: 1024 * 1024 });
    const releaseB = governHeapGrowth();
    if (growthSetByOperator()) return; // run with the flag: nothing to govern
    assert.equal(heapGrowthMode(), 'conservative');
    releaseA();
    releaseA(); // twice is once
    assert.equal(heapGrowthMode(), 'conservative');
    releaseB();
    assert.equal(heapGrowthMode(), 'v8');
  });

  test('V8 takes the changed flag: the same allocations collect more often held to 10% than with its own growth', () => {
    // A child process per setting; the operator's flag is given at run time, as the governor gives it.
    const script = `
      const v8 = require('node:v8');
      const { PerformanceObserver, constants } = require('node:perf_hooks');
      let majors = 0;
      new PerformanceObserver((l) => { for (const e of l.getEntries()) if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++; }).observe({ entryTypes: ['gc'] });
      if (process.argv[1]) v8.setFlagsFromString(process.argv[1]);
      const keep = [];
      for (let i = 0; i < 4e6; i++) { const o = { a: i, b: 'x' + i, c: [i] }; if (i % 4 === 0) keep.push(o); if (keep.length > 300000) keep.splice(0, 150000); }
      setTimeout(() => process.stdout.write(String(majors)), 50);`;
    const majors = (flag: string) => {
      const r = spawnSync(process.execPath, ['-e', script, flag], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
      assert.equal(r.status, 0, r.stderr);
      return Number(r.stdout);
    };
    const own = majors('--heap-growing-percent=0');
    const held = majors('--heap-growing-percent=10');
    assert.ok(held > own, `held to 10%: ${held} full collections, V8's own growth: ${own}`);
  });
});
