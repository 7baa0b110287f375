/**
 * shared/bearer.ts reads `Authorization: Bearer` by hand; the expression it replaced defines what it accepts, and
 * generated headers with every kind of whitespace compare the two.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bearerSecret, isSpace } from '../../../src/shared/bearer.js';

const byExpression = (header: string | undefined): string | null => {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1]! : null;
};

test('bearer: the usual shapes', () => {
  assert.equal(bearerSecret('Bearer rk_abc'), 'rk_abc');
  assert.equal(bearerSecret('bearer\trk_abc  '), 'rk_abc');
  assert.equal(bearerSecret('BEARER   rk_abc'), 'rk_abc');
  assert.equal(bearerSecret(' Bearer rk_abc'), null, 'nothing before the scheme');
  assert.equal(bearerSecret('Bearer rk abc'), null, 'one token');
  assert.equal(bearerSecret('Bearerrk_abc'), null);
  assert.equal(bearerSecret('Bearer '), null);
  assert.equal(bearerSecret('Basic abc'), null);
  assert.equal(bearerSecret(''), null);
  assert.equal(bearerSecret(undefined), null);
});

test('bearer: generated headers, the same answer as /^Bearer\\s+(\\S+)\\s*$/i', () => {
  const spaces = [' ', '\t', '\n', '\v', '\f', '\r', '\u00a0', '\u1680', '\u2000', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff', '\u0085', '\u180e', '\u200b'];
  const words = ['Bearer', 'bearer', 'BEARER', 'bEaReR', 'Bearer\u017f', 'Bеarer', 'Beare', 'rk_1', 'x', '', 'tok:en', '\u212aey'];
  let seed = 11;
  const pick = <T,>(xs: readonly T[]): T => xs[(seed = (seed * 1103515245 + 12345) % 2147483648) % xs.length]!;
  let secrets = 0;
  for (let i = 0; i < 20_000; i++) {
    let header = i % 4 === 0 ? pick(spaces) : '';
    const parts = 1 + (i % 4);
    for (let p = 0; p < parts; p++) header += pick(p === 0 ? words : [...words, ...spaces]) + (p < parts - 1 ? pick(spaces).repeat(1 + (i % 3)) : '');
    if (i % 5 === 0) header += pick(spaces);
    const got = bearerSecret(header);
    assert.equal(got, byExpression(header), JSON.stringify(header));
    if (got !== null) secrets++;
  }
  assert.ok(secrets > 500 && secrets < 19_500, `${secrets} of 20000 headers carried a secret`);
});

test('isSpace is \\s for every UTF-16 code unit', () => {
  for (let c = 0; c <= 0xffff; c++) assert.equal(isSpace(c), /\s/.test(String.fromCharCode(c)), `U+${c.toString(16)}`);
});
