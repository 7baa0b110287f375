/**
 * The observation tail's batch as one text (observation-store.ts): split into rows of five fields, or refused whole
 * when it does not split into the rows counted, so that the feed reads that batch row by row instead.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rowsOfText as batchOfText } from '../../../src/runtime-guard/observation-store.js';

/** The batch's rows as objects of their own (the batch hands out one object, rewritten for each row). */
function rowsOfText(n: number, text: string | null) {
  const batch = batchOfText(n, text);
  return batch === null ? null : Array.from(batch, (row) => ({ ...row }));
}

const row = (id: number, g: string, r = 'node-1\u0001rule\u0001/bin/sh\u0001allowed\u0001monitor') => [String(id), '3', '1700000000', g, r].join('\u0002');

test('a batch splits into its rows: id, count and observed_at as numbers, the two keys whole', () => {
  const g1 = 'network\u0001eng\u0001agent\u000110.0.0.1\u00011.2.3.4\u0001\u0001tcp-connect';
  const g2 = 'dns\u0001eng\u0001agent\u0001\u0001\u0001api.openai.com\u0001dns-query';
  assert.deepEqual(rowsOfText(2, [row(7, g1), row(9, g2)].join('\u0003')), [
    { id: 7, count: 3, observed_at: 1700000000, g: g1, r: 'node-1\u0001rule\u0001/bin/sh\u0001allowed\u0001monitor' },
    { id: 9, count: 3, observed_at: 1700000000, g: g2, r: 'node-1\u0001rule\u0001/bin/sh\u0001allowed\u0001monitor' },
  ]);
});

test('rows given out of id order come back in it', () => {
  assert.deepEqual(
    rowsOfText(3, [row(12, 'c'), row(9, 'a'), row(10, 'b')].join('\u0003'))!.map((r) => [r.id, r.g]),
    [[9, 'a'], [10, 'b'], [12, 'c']],
  );
});

test('no rows: an empty batch (string_agg of nothing is NULL)', () => {
  assert.deepEqual(rowsOfText(0, null), []);
});

test('a text that does not split into the rows counted is refused, not read', () => {
  // A field holding the row separator: one row more than counted.
  assert.equal(rowsOfText(2, [row(1, 'a\u0003b'), row(2, 'c')].join('\u0003')), null);
  // A field holding the field separator: six fields.
  assert.equal(rowsOfText(1, row(1, 'a\u0002b')), null);
  // Rows counted, no text.
  assert.equal(rowsOfText(1, null), null);
  // Fewer rows than counted.
  assert.equal(rowsOfText(3, [row(1, 'a'), row(2, 'b')].join('\u0003')), null);
  // More rows than counted, or a row separator in the last row's last field.
  assert.equal(rowsOfText(1, [row(1, 'a'), row(2, 'b')].join('\u0003')), null);
  assert.equal(rowsOfText(2, [row(1, 'a'), row(2, 'b', 'x\u0003y')].join('\u0003')), null);
  // A field separator in the last field of a row that is not the last.
  assert.equal(rowsOfText(2, [row(1, 'a', 'x\u0002y'), row(2, 'b')].join('\u0003')), null);
});
