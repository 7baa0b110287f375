/**
 * bench/gateway-overhead/perf-samples.ts: perf's samples charged to the first JavaScript function on each stack, the
 * JIT frames named from Node's perf map with the last entry for an address winning (V8 reuses the addresses of code
 * it freed; perf names the first entry, which charged a hot function to start-up code that once sat there).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { attribute, PERF_HZ, PerfMap } from '../../../bench/gateway-overhead/perf-samples.js';

const MAP = [
  '7ff0440ed4c0 4eb8 JS:^ /app/node_modules/undici/lib/llhttp/constants.js:1:1',
  '7ff0440f8000 100 JS:*later node:internal/x:1:1',
  '7ff0440ed4c0 236c JS:*clearBuffer node:internal/streams/writable:744:21',
].join('\n');

describe('perf samples', () => {
  test('an address names the code written there last; past that code, an earlier entry still covering it', () => {
    const map = new PerfMap(MAP);
    assert.equal(map.nameAt(0x7ff0440ee8aa), 'JS:*clearBuffer node:internal/streams/writable:744:21');
    // Beyond clearBuffer's 0x236c bytes, only the start-up entry covers it.
    assert.equal(map.nameAt(0x7ff0440ed4c0 + 0x3000), 'JS:^ /app/node_modules/undici/lib/llhttp/constants.js:1:1');
    assert.equal(map.nameAt(0x7ff0440f8010), 'JS:*later node:internal/x:1:1');
    assert.equal(map.nameAt(0x1000), null);
  });

  test('each sample is charged to its first JavaScript frame, named from the map; none: to the no-JavaScript row', () => {
    const script = [
      '\t          9d72ac node::StreamBase::Writev (/usr/bin/node)',
      '\t    7ff0440ee8aa JS:^ /app/node_modules/undici/lib/llhttp/constants.js:1:1 (/tmp/perf-42.map)',
      '\t    7ff0440f8010 JS:*later node:internal/x:1:1 (/tmp/perf-42.map)',
      '',
      '\t          9d72ac node::StreamBase::Writev (/usr/bin/node)',
      '\t    7ff0440f8010 JS:*later node:internal/x:1:1 (/tmp/perf-42.map)',
      '',
      '\t          9f7f88 v8::internal::Heap::Scavenge (/usr/bin/node)',
      '',
    ].join('\n');
    const read: string[] = [];
    const by = attribute(script, 1, (path) => (read.push(path), MAP));
    const us = 1e6 / PERF_HZ;
    assert.deepEqual(Object.fromEntries(by), {
      'clearBuffer node:internal/streams/writable:744': us,
      'later node:internal/x:1': us,
      '(no JavaScript on the stack: GC helpers, libuv, the kernel alone)': us,
    });
    assert.deepEqual(read, ['/tmp/perf-42.map'], 'the map is read once');
  });
});
