/**
 * Reads a test file's report as the test runner receives it: the bytes a test process writes to its stdout, in
 * whatever pieces the pipe delivers them. Used in place of Node 20's own reader (test/helpers/report-reader.cjs
 * says why).
 *
 * A test process run by `node --test` reports in frames written by Node's v8-serializer reporter: the V8
 * serializer's header (0xFF and its format version), the payload's length as 4 bytes big-endian, then the payload,
 * one serialized report item. Anything else on the process's stdout (a test's own `console.log`) is text between
 * frames, reported as `test:stdout`.
 */
'use strict';

const { StringDecoder } = require('node:string_decoder');
const { DefaultDeserializer, DefaultSerializer } = require('node:v8');

const serializer = new DefaultSerializer();
serializer.writeHeader();
/** What every frame starts with: the serializer's header, as Node's reporter writes it. */
const FRAME_START = serializer.releaseBuffer();
const LENGTH_AT = FRAME_START.length;
const PAYLOAD_AT = LENGTH_AT + 4;

/** How many bytes at the end of `bytes` could be the start of a frame whose rest has not arrived yet. */
function frameStartAtEnd(bytes) {
  for (let kept = Math.min(FRAME_START.length - 1, bytes.length); kept > 0; kept--) {
    if (bytes.subarray(bytes.length - kept).equals(FRAME_START.subarray(0, kept))) return kept;
  }
  return 0;
}

class ReportFrames {
  /** Bytes received and not yet read, in arrival order; joined only once they hold the next whole step. */
  #pieces = [];
  #size = 0;
  /** Bytes needed before the next step can be taken: a frame's head, a whole frame, or one more byte. */
  #needed = 1;
  /** Text read and not yet reported; the decoder keeps a character whose bytes are split between pieces. */
  #text = '';
  #decoder = new StringDecoder('utf8');

  /** @param {string} file the test file, named in the `test:stdout` items of its text */
  constructor(file) {
    this.file = file;
  }

  /** Takes the next piece of the stream; returns the report items it completed, in order. */
  push(piece) {
    const items = [];
    if (piece.length === 0) return items;
    this.#pieces.push(piece);
    this.#size += piece.length;
    while (this.#size >= this.#needed) {
      const bytes = this.#joined();
      if (bytes.length >= FRAME_START.length && bytes.subarray(0, FRAME_START.length).equals(FRAME_START)) {
        if (bytes.length < PAYLOAD_AT) {
          this.#needed = PAYLOAD_AT;
          break;
        }
        const end = PAYLOAD_AT + bytes.readUInt32BE(LENGTH_AT);
        if (bytes.length < end) {
          this.#needed = end;
          break;
        }
        const item = deserialize(bytes.subarray(PAYLOAD_AT, end));
        if (item === undefined) {
          // Not a frame after all: a test wrote these bytes itself. Its first byte is text; read on from the next.
          this.#addText(bytes.subarray(0, 1));
          this.#keep(bytes.subarray(1));
        } else {
          this.#flushText(items);
          items.push(item);
          this.#keep(bytes.subarray(end));
        }
        continue;
      }
      let textEnd = bytes.indexOf(FRAME_START);
      if (textEnd === -1) textEnd = bytes.length - frameStartAtEnd(bytes);
      if (textEnd === 0) {
        // A frame's first byte, alone: wait for the next to tell.
        this.#needed = FRAME_START.length;
        break;
      }
      this.#addText(bytes.subarray(0, textEnd));
      this.#keep(bytes.subarray(textEnd));
    }
    this.#flushText(items);
    return items;
  }

  /**
   * The stream has ended: returns what is left as text items, and `cut` when it stopped inside a frame (the
   * process that wrote it ended before its report was whole: whatever came after is lost).
   */
  end() {
    const items = [];
    const rest = this.#joined();
    const cut = rest.length >= FRAME_START.length && rest.subarray(0, FRAME_START.length).equals(FRAME_START);
    this.#addText(rest);
    this.#keep(Buffer.alloc(0));
    this.#text += this.#decoder.end();
    this.#flushText(items);
    return { items, cut, cutBytes: cut ? rest.length : 0 };
  }

  #addText(bytes) {
    this.#text += this.#decoder.write(bytes);
  }

  #flushText(items) {
    if (this.#text === '') return;
    items.push({ __proto__: null, type: 'test:stdout', data: { __proto__: null, file: this.file, message: this.#text } });
    this.#text = '';
  }

  #joined() {
    if (this.#pieces.length > 1) this.#pieces = [Buffer.concat(this.#pieces, this.#size)];
    return this.#pieces[0] ?? Buffer.alloc(0);
  }

  #keep(rest) {
    this.#pieces = rest.length > 0 ? [rest] : [];
    this.#size = rest.length;
    this.#needed = 1;
  }
}

/** The report item in a frame's payload, or undefined when the payload is not one. */
function deserialize(payload) {
  try {
    const deserializer = new DefaultDeserializer(payload);
    deserializer.readHeader();
    const item = deserializer.readValue();
    return item !== null && typeof item === 'object' && typeof item.type === 'string' ? item : undefined;
  } catch {
    return undefined;
  }
}

module.exports = { ReportFrames };
