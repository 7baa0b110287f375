/**
 * Loaded into every test process by scripts/run-tests.mjs (`--import`), after tsx.
 *
 * A failing `assert.ok(value)` without a message makes Node build one from the call site's source: it reads
 * the file at the line and column of the call and parses forward with acorn until an expression parses. Under
 * tsx those positions are the transpiled code's (line 1, column ~10000), not the .ts file's, and nothing in a
 * TypeScript file parses as JavaScript: on Node 20 the search then recurses, re-parsing the same text at
 * every level, for minutes. The test never reports its failure and the file ends at the runner's time limit
 * instead (seen as "test timed out after 120000ms" right after a test that had just failed).
 *
 * So `ok` gets its message here when the caller gave none: the value it got, and the stack names the line.
 */
import assert from 'node:assert';
import strict from 'node:assert/strict';
import { syncBuiltinESMExports } from 'node:module';
import { inspect } from 'node:util';

for (const target of [assert, strict]) {
  const original = target.ok as (...args: unknown[]) => void;
  const ok = function ok(...args: unknown[]): void {
    if (args.length >= 1 && !args[0] && args[1] == null) {
      throw new assert.AssertionError({
        message: `expected a truthy value, got ${inspect(args[0])}`,
        actual: args[0],
        expected: true,
        operator: '==',
        stackStartFn: ok,
      });
    }
    original(...args);
  } as typeof assert.ok;
  target.ok = ok;
}
// `import { ok } from 'node:assert/strict'` reads the patched function too.
syncBuiltinESMExports();
