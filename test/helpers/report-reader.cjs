/**
 * Loaded by scripts/run-tests.mjs (`--require`, with `--expose-internals`) into the test runner's process: the
 * runner reads each test file's report with test/helpers/report-frames.cjs instead of Node 20's own reader.
 *
 * Node 20's reader (`FileTest#parseMessage` in lib/internal/test_runner/runner.js) puts the bytes it has in the
 * wrong order when a piece from the pipe ends five bytes into a frame and the fifth byte is 0xFF (a frame
 * length ending in 0xFF: one frame in 256 of a given size, and a file's frames repeat a few sizes): it sets the
 * 0xFF aside as a possible frame start, then joins the next piece to the five bytes before it, ahead of the 0xFF.
 * From there it reads frame lengths out of the middle of frames: the report turns to raw bytes in the output, and
 * at the file's end the reader waits for a frame that cannot come, spinning at full CPU without end (the hang of
 * nodejs/node#62693, which SIGTERM does not stop). Where a piece ends depends on how far the runner has fallen
 * behind its test processes, so it happens on a busy machine: seen on three files of 3,000 tests beside three busy
 * cores, a runner spinning for 30 minutes (and beside it an earlier CI run); test/unit/scripts/run-tests.test.ts
 * delivers such a frame in two pieces, which Node's reader fails to read.
 *
 * The replacement reads frames whole wherever the pieces end, hands each report item to the runner as Node's
 * reader would (`addToReport`), and at the file's end reports text left over as text. A report that ends inside
 * a frame (its process ended before the report was whole) fails the run, naming the file: its later tests are
 * missing, and a run must not pass without them.
 */
'use strict';

// Only the runner reads reports. Its test processes load this too (they inherit its options); they have none.
const isRunner = process.env.NODE_TEST_CONTEXT === undefined && process.execArgv.includes('--test');
if (isRunner) install();

function install() {
  let FileTest;
  try {
    ({ FileTest } = require('internal/test_runner/runner'));
  } catch (error) {
    throw new Error(`test/helpers/report-reader.cjs needs --expose-internals beside --require: ${error.message}`);
  }
  const proto = FileTest.prototype;
  if (typeof proto.parseMessage !== 'function' || typeof proto.drain !== 'function' || typeof proto.addToReport !== 'function') {
    // A Node whose runner no longer has the methods replaced here: its own reader is used, as it stands.
    process.stderr.write('test/helpers/report-reader.cjs: this Node.js test runner is not the one it was written for; left as is\n');
    return;
  }
  const { ReportFrames } = require('./report-frames.cjs');
  const readers = new WeakMap();
  const readerOf = (fileTest) => {
    let reader = readers.get(fileTest);
    if (reader === undefined) {
      reader = new ReportFrames(fileTest.name);
      readers.set(fileTest, reader);
    }
    return reader;
  };
  const nodeDrain = proto.drain;

  proto.parseMessage = function parseMessage(piece) {
    for (const item of readerOf(this).push(piece)) this.addToReport(item);
  };

  // Called once the file has ended, before its report: what is left is read to the end, then Node's own drain
  // (whose raw buffer stays empty) reports what waited for the file's turn.
  proto.drain = function drain() {
    const reader = readers.get(this);
    if (reader !== undefined) {
      const { items, cut, cutBytes } = reader.end();
      for (const item of items) this.addToReport(item);
      if (cut) {
        this.addToReport({
          __proto__: null,
          type: 'test:stderr',
          data: {
            __proto__: null,
            file: this.name,
            message: `npm test: ${this.name}: its report ended inside a message (${cutBytes} bytes of it arrived); what it reported after that is missing\n`,
          },
        });
        process.exitCode = 1;
      }
    }
    return nodeDrain.call(this);
  };
}
