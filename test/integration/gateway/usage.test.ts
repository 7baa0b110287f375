import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { meterFor, usageOfEvent } from '../../../src/planes/llm/usage.js';
import { BEDROCK_STREAM_EVENTS, eventStreamFrame } from '../../fakes/fake-providers.js';

function meter(contentType: string, bytes: Buffer, cuts: number[] = [], headers: Record<string, string> = {}) {
  const m = meterFor(new Map(Object.entries({ 'content-type': contentType, ...headers })));
  let at = 0;
  for (const cut of [...new Set(cuts)].sort((a, b) => a - b)) {
    m.push(bytes.subarray(at, cut));
    at = cut;
  }
  m.push(bytes.subarray(at));
  return m.finish();
}

const anthropicSse = Buffer.from(
  [
    'event: message_start\r\ndata: {"type":"message_start","message":{"usage":{"input_tokens":21,"output_tokens":1}}}\r\n\r\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"type":"text_delta","text":"h\u00e9llo \u{1F600}"}}\n\n',
    'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":9}}\n\n',
  ].join(''),
);

const bedrockStream = Buffer.concat(BEDROCK_STREAM_EVENTS.map((e) => Buffer.from(eventStreamFrame('chunk', { bytes: Buffer.from(JSON.stringify(e)).toString('base64') }))));

describe('usage read as bytes stream past', () => {
  test('the shapes of every provider are recognised', () => {
    const table: [string, unknown, { inputTokens?: number; outputTokens?: number }][] = [
      ['OpenAI chat', { usage: { prompt_tokens: 3, completion_tokens: 4 } }, { inputTokens: 3, outputTokens: 4 }],
      ['OpenAI Responses event', { type: 'response.completed', response: { usage: { input_tokens: 5, output_tokens: 6 } } }, { inputTokens: 5, outputTokens: 6 }],
      ['Anthropic message', { usage: { input_tokens: 7, output_tokens: 8 } }, { inputTokens: 7, outputTokens: 8 }],
      ['Anthropic message_start', { type: 'message_start', message: { usage: { input_tokens: 9, output_tokens: 1 } } }, { inputTokens: 9, outputTokens: 1 }],
      ['Bedrock Converse', { usage: { inputTokens: 10, outputTokens: 11 } }, { inputTokens: 10, outputTokens: 11 }],
      ['Bedrock invocation metrics', { 'amazon-bedrock-invocationMetrics': { inputTokenCount: 12, outputTokenCount: 13 } }, { inputTokens: 12, outputTokens: 13 }],
      ['Meta Llama native', { prompt_token_count: 14, generation_token_count: 15 }, { inputTokens: 14, outputTokens: 15 }],
      ['a chunk without usage', { choices: [], usage: null }, {}],
    ];
    for (const [name, event, expected] of table) {
      const got = usageOfEvent(event);
      assert.deepEqual({ inputTokens: got.inputTokens, outputTokens: got.outputTokens }, { inputTokens: expected.inputTokens, outputTokens: expected.outputTokens }, name);
    }
  });

  test('SSE usage is the same wherever the stream is cut into chunks', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: anthropicSse.length }), { maxLength: 12 }), (cuts) => {
        assert.deepEqual(meter('text/event-stream', anthropicSse, cuts), { inputTokens: 21, outputTokens: 9 });
      }),
    );
  });

  test('AWS event-stream usage is the same wherever the stream is cut into chunks', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: bedrockStream.length }), { maxLength: 12 }), (cuts) => {
        assert.deepEqual(meter('application/vnd.amazon.eventstream', bedrockStream, cuts), { inputTokens: 31, outputTokens: 12 });
      }),
    );
  });

  test('a JSON answer larger than the kept copy is still metered from its tail', () => {
    const huge = Buffer.from(JSON.stringify({ data: [{ embedding: 'x'.repeat(9 * 1024 * 1024) }], usage: { prompt_tokens: 8, total_tokens: 8 } }));
    assert.deepEqual(meter('application/json', huge, [1000, 5_000_000, huge.length - 10]), { inputTokens: 8, outputTokens: 0 });
  });

  test("Bedrock's token-count headers win over the body", () => {
    const body = Buffer.from(JSON.stringify({ usage: { input_tokens: 1, output_tokens: 2 } }));
    assert.deepEqual(meter('application/json', body, [], { 'x-amzn-bedrock-input-token-count': '30', 'x-amzn-bedrock-output-token-count': '40' }), { inputTokens: 30, outputTokens: 40 });
  });

  test('a compressed answer is not metered rather than misread', () => {
    const m = meterFor(new Map([['content-type', 'application/json'], ['content-encoding', 'gzip']]));
    m.push(Buffer.from('{"usage":{"prompt_tokens":1}}'));
    assert.equal(m.finish(), undefined);
  });
});

describe('prompt cache tokens are counted apart, additively', () => {
  test('Anthropic: cache reads and writes beside uncached input', () => {
    const sse = Buffer.from(
      [
        'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":4,"cache_read_input_tokens":1200,"cache_creation_input_tokens":300,"output_tokens":1}}}\n\n',
        'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":50}}\n\n',
      ].join(''),
    );
    assert.deepEqual(meter('text/event-stream', sse, [17, 90]), { inputTokens: 4, outputTokens: 50, cacheReadTokens: 1200, cacheWriteTokens: 300 });
  });

  test('OpenAI: cached tokens are moved out of prompt_tokens (chat) and input_tokens (responses)', () => {
    assert.deepEqual(usageOfEvent({ usage: { prompt_tokens: 2000, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 1536 } } }), {
      inputTokens: 464,
      outputTokens: 10,
      cacheReadTokens: 1536,
    });
    assert.deepEqual(
      usageOfEvent({ type: 'response.completed', response: { usage: { input_tokens: 900, output_tokens: 3, input_tokens_details: { cached_tokens: 0 } } } }),
      { inputTokens: 900, outputTokens: 3, cacheReadTokens: 0 },
    );
    assert.deepEqual(meter('application/json', Buffer.from('{"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}}')), {
      inputTokens: 10,
      outputTokens: 2,
    });
  });

  test('Bedrock Converse: cacheReadInputTokens and cacheWriteInputTokens', () => {
    assert.deepEqual(usageOfEvent({ usage: { inputTokens: 7, outputTokens: 2, cacheReadInputTokens: 512, cacheWriteInputTokens: 64 } }), {
      inputTokens: 7,
      outputTokens: 2,
      cacheReadTokens: 512,
      cacheWriteTokens: 64,
    });
  });
});
