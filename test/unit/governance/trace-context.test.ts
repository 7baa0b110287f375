import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createPriceTable } from '../../../src/budgets/prices.js';
import { genAiOperation, ModelLabels } from '../../../src/governance/call-telemetry.js';
import { formatTraceparent, parseTraceparent } from '../../../src/governance/trace-context.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

test('a valid traceparent parses; tracestate rides along', () => {
  assert.deepEqual(parseTraceparent(`00-${TRACE}-${SPAN}-01`, 'congo=t61rcWkgMzE'), { traceId: TRACE, spanId: SPAN, flags: 1, state: 'congo=t61rcWkgMzE' });
  assert.deepEqual(parseTraceparent(` 00-${TRACE}-${SPAN}-00 `, undefined), { traceId: TRACE, spanId: SPAN, flags: 0, state: null });
  // A later version may append fields; version 00 may not.
  assert.equal(parseTraceparent(`01-${TRACE}-${SPAN}-01-extra`, undefined)?.traceId, TRACE);
});

test('a traceparent that does not parse, or names no trace, is ignored', () => {
  for (const bad of [
    '',
    'garbage',
    `00-${TRACE}-${SPAN}-01-extra`,
    `ff-${TRACE}-${SPAN}-01`,
    `00-${'0'.repeat(32)}-${SPAN}-01`,
    `00-${TRACE}-${'0'.repeat(16)}-01`,
    `00-${TRACE.toUpperCase()}-${SPAN}-01`,
    `00-${TRACE.slice(1)}-${SPAN}-01`,
  ]) {
    assert.equal(parseTraceparent(bad, undefined), null, bad);
  }
  assert.equal(parseTraceparent(undefined, 'a=b'), null);
  assert.equal(parseTraceparent(`00-${TRACE}-${SPAN}-01`, 'x'.repeat(513))?.state, null);
});

test('formatTraceparent writes version 00 and two hex digits of flags', () => {
  assert.equal(formatTraceparent(TRACE, SPAN, 1), `00-${TRACE}-${SPAN}-01`);
  assert.equal(formatTraceparent(TRACE, SPAN, 0), `00-${TRACE}-${SPAN}-00`);
});

test('model labels: listed models by id, the rest "other", at most N ids per provider', () => {
  const labels = new ModelLabels(createPriceTable({ 'in-house-*': { inputPerMTok: 1, outputPerMTok: 1 } }), 3);
  assert.equal(labels.label('openai', 'gpt-4o-mini'), 'gpt-4o-mini');
  assert.equal(labels.label('openai', 'made-up-model'), 'other');
  assert.equal(labels.label('openai', 'in-house-7b'), 'in-house-7b');
  assert.equal(labels.label('openai', null), 'none');
  // A provider's list price does not name another provider's model.
  assert.equal(labels.label('anthropic', 'gpt-4o-mini'), 'other');
  assert.equal(labels.label('openai', 'gpt-4o'), 'gpt-4o');
  // The bound: a fourth listed id of the same provider is "other"; ids seen before keep their label.
  assert.equal(labels.label('openai', 'gpt-4.1'), 'other');
  assert.equal(labels.label('openai', 'gpt-4o-mini'), 'gpt-4o-mini');
  assert.equal(labels.label('anthropic', 'claude-sonnet-4-5'), 'claude-sonnet-4-5');
});

test('gen_ai.operation.name of the LLM routes', () => {
  assert.equal(genAiOperation('chat/completions'), 'chat');
  assert.equal(genAiOperation('messages'), 'chat');
  assert.equal(genAiOperation('responses'), 'chat');
  assert.equal(genAiOperation('converse-stream'), 'chat');
  assert.equal(genAiOperation('completions'), 'text_completion');
  assert.equal(genAiOperation('embeddings'), 'embeddings');
  assert.equal(genAiOperation('messages/count_tokens'), 'messages/count_tokens');
});
