/**
 * One frame of a test file's report as Node 20's v8-serializer reporter writes it to the runner: the serializer's
 * header, the payload's length as 4 bytes big-endian, then the payload (the item, serialized with its own header).
 * For tests of the runner's reader (test/helpers/report-frames.cjs).
 */
import { DefaultSerializer } from 'node:v8';

export function frame(item: unknown): Buffer {
  const serializer = new DefaultSerializer();
  serializer.writeHeader();
  serializer.writeValue(item);
  const payload = serializer.releaseBuffer();
  const head = Buffer.from([0xff, 0x0f, 0, 0, 0, 0]);
  head.writeUInt32BE(payload.length, 2);
  return Buffer.concat([head, payload]);
}
