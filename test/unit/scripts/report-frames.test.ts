/**
 * The test runner's reader of a test file's report (test/helpers/report-frames.cjs): frames of Node's
 * v8-serializer reporter with text between them, read whole wherever the pipe's pieces end.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, test } from 'node:test';
import { frame } from '../../helpers/report-frame.js';

interface Item {
  type: string;
  data: { message?: string; name?: string; file?: string };
}
interface ReportFramesClass {
  new (file: string): { push(piece: Buffer): Item[]; end(): { items: Item[]; cut: boolean; cutBytes: number } };
}
const { ReportFrames } = createRequire(import.meta.url)('../../helpers/report-frames.cjs') as {
  ReportFrames: ReportFramesClass;
};

/** A test:pass frame whose payload length ends in `lastByte` (padding its name until it does). */
function passWithLength(name: string, lastByte: number): { bytes: Buffer; item: Item } {
  for (let pad = 0; ; pad++) {
    const item = { type: 'test:pass', data: { name: name + '.'.repeat(pad) } };
    const bytes = frame(item);
    if (bytes.readUInt32BE(2) % 256 === lastByte) return { bytes, item };
  }
}

/** Everything the reader returns for `stream` cut into pieces at `cuts`, text joined as one reads it. */
function read(stream: Buffer, cuts: number[]): { items: Item[]; cut: boolean } {
  const reader = new ReportFrames('a.test.ts');
  const items: Item[] = [];
  let from = 0;
  for (const at of [...cuts, stream.length]) {
    items.push(...reader.push(stream.subarray(from, at)));
    from = at;
  }
  const end = reader.end();
  items.push(...end.items);
  // Text arrives in as many items as pieces; what matters is what it says, in its place among the frames.
  const joined: Item[] = [];
  for (const item of items) {
    const last = joined.at(-1);
    if (item.type === 'test:stdout' && last?.type === 'test:stdout') {
      last.data.message = (last.data.message ?? '') + item.data.message;
    } else {
      joined.push({ type: item.type, data: { ...item.data } });
    }
  }
  return { items: joined, cut: end.cut };
}

const stdout = (message: string): Item => ({ type: 'test:stdout', data: { file: 'a.test.ts', message } });
const plain = (item: Item): Item => JSON.parse(JSON.stringify(item)) as Item;

describe('a report read in pieces', () => {
  // Frames whose length ends in 0xFF (the byte Node 20's own reader mistakes for a frame start when a piece ends
  // on it), text with a multi-byte character and a lone 0xFF, and a frame right after text.
  const first = passWithLength('first', 0xff);
  const second = passWithLength('second', 0xff);
  const third = passWithLength('third', 0x0f);
  const stream = Buffer.concat([
    first.bytes,
    Buffer.from('a test printed this: é \u00ff\n'),
    Buffer.from([0xff]),
    Buffer.from(' and this\n'),
    second.bytes,
    third.bytes,
  ]);
  const expected = [
    plain(first.item),
    stdout('a test printed this: é \u00ff\n\ufffd and this\n'),
    plain(second.item),
    plain(third.item),
  ];

  test('in one piece', () => {
    assert.deepEqual(plain(read(stream, []).items as never), expected);
  });

  test('cut in two at every byte', () => {
    for (let at = 1; at < stream.length; at++) {
      const { items, cut } = read(stream, [at]);
      assert.deepEqual(plain(items as never), expected, `cut at byte ${at}`);
      assert.equal(cut, false);
    }
  });

  test('cut in three at every pair of bytes near the frames\' starts', () => {
    const starts = [0, stream.indexOf(second.bytes), stream.indexOf(third.bytes)];
    for (const start of starts) {
      for (let a = Math.max(1, start - 2); a < start + 8; a++) {
        for (let b = a + 1; b < Math.min(stream.length, start + 10); b++) {
          assert.deepEqual(plain(read(stream, [a, b]).items as never), expected, `cut at bytes ${a} and ${b}`);
        }
      }
    }
  });

  test('a byte at a time', () => {
    const cuts = Array.from({ length: stream.length - 1 }, (_, i) => i + 1);
    assert.deepEqual(plain(read(stream, cuts).items as never), expected);
  });
});

describe('a report that is not only frames', () => {
  test('bytes that start like a frame but hold no report item are text, and reading goes on after them', () => {
    const after = passWithLength('after', 0x10);
    // 0xFF 0x0F, a length of 3, then three bytes that are not a serialized value.
    const stream = Buffer.concat([Buffer.from([0xff, 0x0f, 0, 0, 0, 3, 1, 2, 3]), after.bytes]);
    const { items, cut } = read(stream, [4]);
    assert.equal(cut, false);
    assert.deepEqual(plain(items.at(-1) as never), plain(after.item));
    assert.equal(items.length, 2);
    assert.equal(items[0]?.type, 'test:stdout');
  });

  test('a report that ends inside a frame is reported cut, its bytes kept as text', () => {
    const whole = passWithLength('whole', 0x20);
    const cutOff = passWithLength('cut off', 0x30).bytes.subarray(0, 20);
    const { items, cut } = read(Buffer.concat([whole.bytes, cutOff]), [whole.bytes.length + 3]);
    assert.equal(cut, true);
    assert.deepEqual(plain(items[0] as never), plain(whole.item));
    assert.equal(items[1]?.type, 'test:stdout');
  });

  test('a report that ends on text is whole', () => {
    const { items, cut } = read(Buffer.from('just text\n'), [3]);
    assert.equal(cut, false);
    assert.deepEqual(plain(items as never), [stdout('just text\n')]);
  });
});
