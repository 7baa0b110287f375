/**
 * The reconciliation answer as JSON bytes, each row's bytes kept with the row object. With RowMemo a warm answer
 * hands out nearly all the rows of the previous one; their bytes are then sent again, not written again. At 20,000
 * workloads the answer is about 20 MB: `JSON.stringify` of it cost about 180 ms a request, and the text (a 20 MB
 * string, then its 20 MB UTF-8 copy) landed in the large-object space on every answer, where it counts towards the
 * next full collection of a heap that holds the day's index. Sent as a stream of pieces of PIECE_BYTES, an answer
 * allocates only those pieces, one or two at a time.
 */
import { Readable } from 'node:stream';

const rowBytes = new WeakMap<object, Buffer>();
const COMMA = Buffer.from(',');
/** Bytes per piece handed to the socket: few writes, and no answer-sized buffer. */
const PIECE_BYTES = 256 * 1024;

/** `JSON.stringify(data)` as UTF-8, in parts (concatenated, byte for byte); the `rows` array's rows written once per row object. */
export function answerParts(data: unknown): Buffer[] {
  const rows = (data as { rows?: unknown } | null)?.rows;
  if (!Array.isArray(rows) || rows.length === 0) return [Buffer.from(JSON.stringify(data) ?? 'null')];
  // Every other field written by JSON.stringify; the rows go where their empty array is. A string value cannot hold
  // `"rows":[]` unescaped, so the first one is the field's.
  const head = JSON.stringify({ ...(data as object), rows: [] });
  const at = head.indexOf('"rows":[]') + '"rows":['.length;
  const parts = new Array<Buffer>(rows.length * 2 + 1);
  parts[0] = Buffer.from(head.slice(0, at));
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as object;
    let bytes = rowBytes.get(row);
    // JSON.stringify escapes lone surrogates, so its text converts to UTF-8 and back unchanged.
    if (bytes === undefined) rowBytes.set(row, (bytes = Buffer.from(JSON.stringify(row))));
    parts[i * 2 + 1] = bytes;
    parts[i * 2 + 2] = i === rows.length - 1 ? Buffer.from(head.slice(at)) : COMMA;
  }
  return parts;
}

/** `JSON.stringify(data)`, byte for byte, through the same row cache (tests, benchmarks). */
export function answerJson(data: unknown): string {
  return Buffer.concat(answerParts(data)).toString('utf8');
}

/** The parts as a byte stream of pieces of about PIECE_BYTES, each built when the socket asks for more. */
export class AnswerStream extends Readable {
  readonly byteLength: number;
  private next = 0;

  constructor(private readonly parts: Buffer[]) {
    super({ highWaterMark: PIECE_BYTES });
    let length = 0;
    for (const part of parts) length += part.length;
    this.byteLength = length;
  }

  override _read(): void {
    const { parts } = this;
    if (this.next >= parts.length) {
      this.push(null);
      return;
    }
    const from = this.next;
    let size = 0;
    while (this.next < parts.length && size < PIECE_BYTES) size += parts[this.next++]!.length;
    this.push(this.next - from === 1 ? parts[from]! : Buffer.concat(parts.slice(from, this.next), size));
  }
}
