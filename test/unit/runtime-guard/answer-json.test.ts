import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { answerJson } from '../../../src/runtime-guard/answer-json.js';

test('answerJson writes exactly what JSON.stringify writes, rows reused or not', () => {
  const row = fc.record({ workloadKey: fc.string(), m: fc.integer(), note: fc.string({ unit: 'binary' }), destinations: fc.array(fc.record({ destName: fc.string() })) });
  fc.assert(
    fc.property(fc.array(row, { maxLength: 8 }), fc.string(), fc.boolean(), (rows, reason, reuse) => {
      const payload = { enabled: true, reason: `${reason}"rows":[]`, windowStartUnix: 1, rows, disabledReason: '"rows":[]' };
      if (reuse) answerJson(payload);
      assert.equal(answerJson(payload), JSON.stringify(payload));
    }),
  );
  assert.equal(answerJson({ error: { code: 'unauthorized', message: 'x' } }), '{"error":{"code":"unauthorized","message":"x"}}');
  assert.equal(answerJson(null), 'null');
});
