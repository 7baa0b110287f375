import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { answerJson, answerParts, AnswerStream } from '../../../src/runtime-guard/answer-json.js';

async function streamed(data: unknown): Promise<{ text: string; declared: number; pieces: number }> {
  const stream = new AnswerStream(answerParts(data));
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return { text: Buffer.concat(chunks).toString('utf8'), declared: stream.byteLength, pieces: chunks.length };
}

test('answerJson and the answer stream write exactly what JSON.stringify writes, rows reused or not', async () => {
  const row = fc.record({ workloadKey: fc.string(), m: fc.integer(), note: fc.string({ unit: 'binary' }), destinations: fc.array(fc.record({ destName: fc.string() })) });
  await fc.assert(
    fc.asyncProperty(fc.array(row, { maxLength: 8 }), fc.string(), fc.boolean(), async (rows, reason, reuse) => {
      const payload = { enabled: true, reason: `${reason}"rows":[]`, windowStartUnix: 1, rows, disabledReason: '"rows":[]' };
      if (reuse) answerJson(payload);
      const expected = JSON.stringify(payload);
      assert.equal(answerJson(payload), expected);
      const { text, declared } = await streamed(payload);
      assert.equal(text, expected);
      assert.equal(declared, Buffer.byteLength(expected));
    }),
  );
  assert.equal(answerJson({ error: { code: 'unauthorized', message: 'x' } }), '{"error":{"code":"unauthorized","message":"x"}}');
  assert.equal(answerJson(null), 'null');
});

test('a large answer streams in pieces (no answer-sized buffer), byte for byte', async () => {
  const rows = Array.from({ length: 5000 }, (_, i) => ({ workloadKey: `ns-${i}/Deployment/app-${i}`, note: 'é\u{1F600}'.repeat(i % 7), destinations: [{ destName: `api-${i}.openai.com` }] }));
  const payload = { enabled: true, reason: '', rows, ingestLag: { lag: 0 } };
  const { text, declared, pieces } = await streamed(payload);
  assert.equal(text, JSON.stringify(payload));
  assert.equal(declared, Buffer.byteLength(text));
  assert.ok(pieces > 1 && pieces < 20, `pieces: ${pieces}`);
});
