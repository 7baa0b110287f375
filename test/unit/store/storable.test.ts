import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { STORED_NUL, storableParams, storableText } from '../../../src/store/storable.js';

const storable = (s: string) => !s.includes('\u0000') && s.isWellFormed();

test('text: U+0000 becomes the six characters \\u0000, a lone surrogate U+FFFD; anything else is the same string', () => {
  assert.equal(storableText(`a\u0000b`), `a${STORED_NUL}b`);
  assert.equal(storableText('x\ud800y\udfff'), 'x\ufffdy\ufffd');
  assert.equal(storableText('pair \ud83e\udd16'), 'pair \ud83e\udd16');
  const plain = 'nothing to do \\u0000 here';
  assert.equal(storableText(plain), plain, 'the text \\u0000 outside JSON is left alone');
});

test('JSON text: \\u0000 and unpaired surrogate escapes are rewritten; pairs and escaped backslashes are not', () => {
  const json = JSON.stringify({ a: 'x\u0000y', b: 'lone \ud800', c: 'lone \udfff', d: 'pair \ud83e\udd16', e: 'text \\u0000', f: '\u001b' });
  const out = storableText(json);
  assert.deepEqual(JSON.parse(out), { a: `x${STORED_NUL}y`, b: 'lone \ufffd', c: 'lone \ufffd', d: 'pair \ud83e\udd16', e: 'text \\u0000', f: '\u001b' });
  assert.equal(storableText('{"pair":"\\ud83e\\udd16"}'), '{"pair":"\\ud83e\\udd16"}');
});

test('any JSON value stringified is storable and parses back with every string and name storable', () => {
  const allStorable = (v: unknown): boolean =>
    typeof v === 'string'
      ? storable(v)
      : Array.isArray(v)
        ? v.every(allStorable)
        : v !== null && typeof v === 'object'
          ? Object.entries(v).every(([k, x]) => storable(k) && allStorable(x))
          : true;
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 3 }), fc.constantFrom('\u0000', '\ud800', '\udfff', '\\u0000', 'x'), (v, extra) => {
      const out = storableText(JSON.stringify({ v, extra, [`k${extra}`]: extra }));
      assert.ok(storable(out));
      // What jsonb refuses is gone: no \u0000 escape after an even run of escaped backslashes.
      assert.doesNotMatch(out, /(?<!\\)(\\\\)*\\u0000/);
      const parsed = JSON.parse(out) as Record<string, unknown>;
      assert.equal(Object.keys(parsed).length, 3);
      assert.ok(allStorable(parsed), out);
    }),
    { numRuns: 300 },
  );
});

test('params: the same array when nothing needs it; objects as JSON text, arrays element by element', () => {
  const params = ['a', 1, null, new Date(0), ['x', 'y'], { a: 1 }];
  assert.equal(storableParams(params), params);
  const out = storableParams(['a\u0000', ['ok', 'b\u0000'], { note: 'c\u0000' }, 5]);
  assert.deepEqual(out, [`a${STORED_NUL}`, ['ok', `b${STORED_NUL}`], JSON.stringify({ note: `c${STORED_NUL}` }), 5]);
});
