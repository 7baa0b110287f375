import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { parseWindow, resolveWindow } from '../../../src/runtime-guard/window.js';

describe('window parameter', () => {
  test('absent means the 1h default', () => {
    assert.equal(parseWindow(undefined), 3600);
  });

  const inRange: Array<[string, number]> = [
    ['15m', 900],
    ['1h', 3600],
    ['6h', 21_600],
    ['24h', 86_400],
    ['1h30m', 5400],
    ['1.5h', 5400],
    ['600s', 600],
    ['5m', 300],
    ['1H', 3600],
    [' 2h ', 7200],
  ];
  for (const [raw, seconds] of inRange) {
    test(`Go-style duration ${JSON.stringify(raw)} is ${seconds} s`, () => {
      assert.equal(parseWindow(raw), seconds);
    });
  }

  const clamped: Array<[string, number]> = [
    ['90s', 300],
    ['1m', 300],
    ['0', 300],
    ['-1h', 300],
    ['48h', 86_400],
    ['2d', 86_400],
    ['99999999h', 86_400],
  ];
  for (const [raw, seconds] of clamped) {
    test(`out-of-range ${JSON.stringify(raw)} is clamped to ${seconds} s, not refused`, () => {
      assert.equal(parseWindow(raw), seconds);
    });
  }

  for (const raw of ['', 'abc', '15', '1x', 'h', '1h junk', '1.5.5h', 'NaN', 'Infinity', '--1h', '1e3s', '٣h']) {
    test(`unparseable ${JSON.stringify(raw)} falls back to 1h without an error`, () => {
      assert.equal(parseWindow(raw), 3600);
    });
  }

  test('the resolved window ends now and spans the clamped length', () => {
    assert.deepEqual(resolveWindow(1_000_000, '15m'), { windowStartUnix: 999_100, windowEndUnix: 1_000_000 });
    assert.deepEqual(resolveWindow(1_000_000.7, '1s'), { windowStartUnix: 999_700, windowEndUnix: 1_000_000 });
    assert.deepEqual(resolveWindow(1_000_000, 'garbage'), { windowStartUnix: 996_400, windowEndUnix: 1_000_000 });
  });
});
