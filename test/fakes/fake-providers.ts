/**
 * A local fake of OpenAI, Anthropic, Bedrock runtime, Azure OpenAI (`/openai/…`) and Gemini (`/v1beta/models/…`)
 * speaking each real wire format (JSON, SSE, AWS event-stream), on 127.0.0.1 and a random port. It records every
 * request it gets, so tests can check what the gateway forwarded. Models named `rate-limited` and `bad-request`
 * answer the provider's 429 and 400; `no-usage` answers an OpenAI chat without usage (as many OpenAI-compatible
 * servers do).
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { closable } from './closable.js';
import { verifySigV4, type AwsKeys } from './sigv4-verify.js';

export interface UpstreamHit {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface FakeProviders {
  origin: string;
  hits: UpstreamHit[];
  /** Responses the gateway hung up on before they ended. */
  abandoned: number;
  /** Writes of the `big-stream` answer that found the gateway's side of the socket full (the fake then waits for drain). */
  backpressured: number;
  /** `big-stream` answers written to their end. */
  bigStreamsSent: number;
  close(): Promise<void>;
}

/** Token counts the fake reports, so tests can compare with what the gateway metered. */
export const FAKE_USAGE = {
  openaiChat: { inputTokens: 11, outputTokens: 7 },
  openaiResponses: { inputTokens: 13, outputTokens: 5 },
  openaiEmbeddings: { inputTokens: 8, outputTokens: 0 },
  anthropic: { inputTokens: 21, outputTokens: 9 },
  bedrockInvoke: { inputTokens: 31, outputTokens: 12 },
  bedrockConverse: { inputTokens: 17, outputTokens: 4 },
  gemini: { inputTokens: 14, outputTokens: 6 },
} as const;

/** The model every Azure deployment of the fake runs, as its answers name it. */
export const AZURE_DEPLOYMENT_MODEL = 'gpt-4o-mini-2024-07-18';

const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes).toString('utf8'),
  (text) => new Uint8Array(Buffer.from(text, 'utf8')),
);

/** The native Anthropic events a Bedrock invoke stream carries, in order (the last with invocation metrics). */
export const BEDROCK_STREAM_EVENTS: readonly Record<string, unknown>[] = [
  { type: 'message_start', message: { id: 'msg_br', type: 'message', role: 'assistant', model: 'claude', content: [], stop_reason: null, usage: { input_tokens: 31, output_tokens: 1 } } },
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello from Bedrock' } },
  { type: 'content_block_stop', index: 0 },
  { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 12 } },
  {
    type: 'message_stop',
    'amazon-bedrock-invocationMetrics': { inputTokenCount: 31, outputTokenCount: 12, invocationLatency: 10, firstByteLatency: 5 },
  },
];

export function eventStreamFrame(eventType: string, payload: unknown): Uint8Array {
  return codec.encode({
    headers: {
      ':message-type': { type: 'string', value: 'event' },
      ':event-type': { type: 'string', value: eventType },
      ':content-type': { type: 'string', value: 'application/json' },
    },
    body: new Uint8Array(Buffer.from(JSON.stringify(payload), 'utf8')),
  });
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  // Sized, as the providers send a whole JSON answer.
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

function sse(res: ServerResponse, events: readonly { event?: string; data: unknown }[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const e of events) {
    const data = typeof e.data === 'string' ? e.data : JSON.stringify(e.data);
    res.write(`${e.event ? `event: ${e.event}\n` : ''}data: ${data}\n\n`);
  }
  res.end();
}

/** What `big-stream` sends: BIG_STREAM_EVENTS events of about 64 KiB (16 MiB), written as fast as the gateway takes them. */
export const BIG_STREAM_EVENTS = 256;
export const BIG_STREAM_TEXT = 'x'.repeat(64_000);

function bigStream(res: ServerResponse, state: { backpressured: number; bigStreamsSent: number }): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const event = `data: ${JSON.stringify({ id: 'chatcmpl-big', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: BIG_STREAM_TEXT } }] })}\n\n`;
  let sent = 0;
  const more = (): void => {
    while (sent < BIG_STREAM_EVENTS) {
      sent++;
      if (!res.write(event)) {
        state.backpressured++;
        res.once('drain', more);
        return;
      }
    }
    res.end('data: [DONE]\n\n');
    state.bigStreamsSent++;
  };
  more();
}

function openai(res: ServerResponse, method: string, path: string, body: Record<string, unknown>, answerModel?: string): void {
  if (body.model === 'rate-limited') {
    return json(res, 429, { error: { message: 'Rate limit reached for requests (fake)', type: 'requests', param: null, code: 'rate_limit_exceeded' } });
  }
  if (body.model === 'bad-request') {
    return json(res, 400, { error: { message: "Invalid value for 'temperature' (fake)", type: 'invalid_request_error', param: 'temperature', code: null } });
  }
  if (body.model === 'silent') {
    // No answer at all until the gateway hangs up: a provider still thinking.
    return;
  }
  if (body.model === 'cut-stream') {
    // One chunk, then the provider's connection drops mid-answer.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"id":"chatcmpl-cut","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n', () => res.socket?.destroy());
    return;
  }
  if (body.model === 'slow-stream') {
    // One chunk, then silence until the gateway hangs up: lets a test see the upstream call cancelled.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"id":"chatcmpl-slow","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n');
    return;
  }
  const created = 1_700_000_000;
  const { inputTokens, outputTokens } = FAKE_USAGE.openaiChat;
  const usage = body.model === 'no-usage' ? undefined : { prompt_tokens: inputTokens, completion_tokens: outputTokens, total_tokens: inputTokens + outputTokens };
  const model = answerModel ?? body.model;
  if (method === 'GET' && path === '/v1/models') {
    return json(res, 200, { object: 'list', data: [{ id: 'gpt-fake', object: 'model', created, owned_by: 'fake' }] });
  }
  if (path === '/v1/chat/completions' && body.stream === true) {
    const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created, model };
    const includeUsage = usage !== undefined && (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
    return sse(res, [
      { data: { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }], usage: null } },
      { data: { ...base, choices: [{ index: 0, delta: { content: 'Hello' }, finish_reason: null }], usage: null } },
      { data: { ...base, choices: [{ index: 0, delta: { content: ' world' }, finish_reason: null }], usage: null } },
      { data: { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: null } },
      ...(includeUsage ? [{ data: { ...base, choices: [], usage } }] : []),
      { data: '[DONE]' },
    ]);
  }
  if (path === '/v1/chat/completions') {
    return json(res, 200, {
      id: 'chatcmpl-fake',
      object: 'chat.completion',
      created,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello world', refusal: null }, finish_reason: 'stop', logprobs: null }],
      usage,
    });
  }
  if (path === '/v1/responses') {
    const r = FAKE_USAGE.openaiResponses;
    return json(res, 200, {
      id: 'resp_fake',
      object: 'response',
      created_at: created,
      status: 'completed',
      model: body.model,
      output: [{ type: 'message', id: 'msg_fake', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Hello from responses', annotations: [] }] }],
      usage: { input_tokens: r.inputTokens, output_tokens: r.outputTokens, total_tokens: r.inputTokens + r.outputTokens },
    });
  }
  if (path === '/v1/embeddings') {
    const e = FAKE_USAGE.openaiEmbeddings;
    return json(res, 200, { object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }], model, usage: { prompt_tokens: e.inputTokens, total_tokens: e.inputTokens } });
  }
  json(res, 404, { error: { message: `fake has no ${path}`, type: 'invalid_request_error', param: null, code: 'unknown_url' } });
}

function anthropicMessage(model: unknown): Record<string, unknown> {
  const { inputTokens, outputTokens } = FAKE_USAGE.anthropic;
  return {
    id: 'msg_fake',
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text: 'Hello from Claude' }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: inputTokens, output_tokens: outputTokens },
  };
}

function anthropic(res: ServerResponse, path: string, body: Record<string, unknown>): void {
  if (body.model === 'rate-limited') {
    return json(res, 429, { type: 'error', error: { type: 'rate_limit_error', message: 'Number of requests has exceeded your rate limit (fake)' } });
  }
  if (path === '/v1/messages/count_tokens') return json(res, 200, { input_tokens: 42 });
  if (path !== '/v1/messages') return json(res, 404, { type: 'error', error: { type: 'not_found_error', message: `fake has no ${path}` } });
  if (body.stream !== true) return json(res, 200, anthropicMessage(body.model));
  const { inputTokens, outputTokens } = FAKE_USAGE.anthropic;
  const start = { ...anthropicMessage(body.model), content: [], stop_reason: null, usage: { input_tokens: inputTokens, output_tokens: 1 } };
  const events: { event: string; data: unknown }[] = [
    { event: 'message_start', data: { type: 'message_start', message: start } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
    { event: 'ping', data: { type: 'ping' } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello ' } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'from Claude' } } },
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: outputTokens } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ];
  sse(res, events);
}

function bedrock(res: ServerResponse, path: string, body: Record<string, unknown>): void {
  const m = /^\/model\/([^/]+)\/([a-z-]+)$/.exec(path);
  const action = m?.[2];
  if (decodeURIComponent(m?.[1] ?? '') === 'rate-limited') {
    return json(res, 429, { message: 'Too many requests, please wait before trying again (fake).' }, { 'x-amzn-errortype': 'ThrottlingException' });
  }
  const invoke = FAKE_USAGE.bedrockInvoke;
  switch (action) {
    case 'invoke':
      return json(
        res,
        200,
        { id: 'msg_br', type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Hello from Bedrock' }], stop_reason: 'end_turn', usage: { input_tokens: invoke.inputTokens, output_tokens: invoke.outputTokens }, echo: body.max_tokens },
        { 'x-amzn-bedrock-input-token-count': String(invoke.inputTokens), 'x-amzn-bedrock-output-token-count': String(invoke.outputTokens) },
      );
    case 'invoke-with-response-stream': {
      res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-bedrock-content-type': 'application/json' });
      for (const event of BEDROCK_STREAM_EVENTS) {
        res.write(eventStreamFrame('chunk', { bytes: Buffer.from(JSON.stringify(event)).toString('base64') }));
      }
      return void res.end();
    }
    case 'converse-stream': {
      const c = FAKE_USAGE.bedrockConverse;
      res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
      res.write(eventStreamFrame('messageStart', { role: 'assistant' }));
      res.write(eventStreamFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hello from ConverseStream' } }));
      res.write(eventStreamFrame('contentBlockStop', { contentBlockIndex: 0 }));
      res.write(eventStreamFrame('messageStop', { stopReason: 'end_turn' }));
      res.write(eventStreamFrame('metadata', { usage: { inputTokens: c.inputTokens, outputTokens: c.outputTokens, totalTokens: c.inputTokens + c.outputTokens }, metrics: { latencyMs: 5 } }));
      return void res.end();
    }
    case 'converse': {
      const c = FAKE_USAGE.bedrockConverse;
      return json(res, 200, {
        output: { message: { role: 'assistant', content: [{ text: 'Hello from Converse' }] } },
        stopReason: 'end_turn',
        usage: { inputTokens: c.inputTokens, outputTokens: c.outputTokens, totalTokens: c.inputTokens + c.outputTokens },
        metrics: { latencyMs: 5 },
      });
    }
    default:
      return json(res, 404, { message: `fake has no ${path}` }, { 'x-amzn-errortype': 'UnknownOperationException' });
  }
}

/** Azure OpenAI: a deployment's operations (the answer names the deployment's model) and the v1 paths. */
function azure(res: ServerResponse, method: string, path: string, body: Record<string, unknown>): void {
  const deployment = /^\/openai\/deployments\/[^/]+(\/.+)$/.exec(path);
  if (deployment) return openai(res, method, `/v1${deployment[1]}`, body, body.model === 'no-usage' ? undefined : AZURE_DEPLOYMENT_MODEL);
  if (path.startsWith('/openai/v1/')) return openai(res, method, path.slice('/openai'.length), body);
  json(res, 404, { error: { code: '404', message: 'Resource not found' } });
}

function geminiAnswer(model: string, text: string, usage: { inputTokens: number; outputTokens: number }): Record<string, unknown> {
  return {
    candidates: [{ content: { parts: [{ text }], role: 'model' }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: usage.inputTokens, candidatesTokenCount: usage.outputTokens, totalTokenCount: usage.inputTokens + usage.outputTokens },
    modelVersion: model,
    responseId: 'resp-gemini-fake',
  };
}

/** Gemini: generateContent, streamGenerateContent (SSE with ?alt=sse, else one JSON array), countTokens, models. */
function gemini(res: ServerResponse, method: string, url: string, path: string): void {
  const m = /^\/(v1beta|v1)\/models\/([^/:]+):([A-Za-z]+)$/.exec(path);
  if (!m) {
    if (method === 'GET') return json(res, 200, { models: [{ name: 'models/gemini-fake', displayName: 'Gemini fake' }] });
    return json(res, 404, { error: { code: 404, message: `fake has no ${path}`, status: 'NOT_FOUND' } });
  }
  const [, , model, action] = m as unknown as [string, string, string, string];
  if (model === 'rate-limited') return json(res, 429, { error: { code: 429, message: 'Resource has been exhausted (fake)', status: 'RESOURCE_EXHAUSTED' } });
  const u = FAKE_USAGE.gemini;
  if (action === 'countTokens') return json(res, 200, { totalTokens: 42 });
  if (action === 'generateContent') return json(res, 200, geminiAnswer(model, 'Hello from Gemini', u));
  if (action === 'streamGenerateContent') {
    const chunks = [
      geminiAnswer(model, 'Hello ', { inputTokens: u.inputTokens, outputTokens: 2 }),
      geminiAnswer(model, 'from Gemini', u),
    ];
    if (!/[?&]alt=sse(&|$)/.test(url)) return json(res, 200, chunks);
    return sse(res, chunks.map((data) => ({ data })));
  }
  json(res, 400, { error: { code: 400, message: `fake has no method ${action}`, status: 'INVALID_ARGUMENT' } });
}

export interface FakeOptions {
  /** Every answer waits this long first, so tests can have many calls in flight at once. */
  delayMs?: number;
  /** Bedrock requests must be SigV4-signed with these keys (as AWS checks them); else 403 InvalidSignatureException. */
  sigv4?: { keys: AwsKeys; region: string };
}

export async function startFakeProviders(options: FakeOptions = {}): Promise<FakeProviders> {
  const hits: UpstreamHit[] = [];
  const state = { abandoned: 0, backpressured: 0, bigStreamsSent: 0 };
  const server = createServer((req, res) => {
    res.on('close', () => {
      if (!res.writableFinished) state.abandoned++;
    });
    void readBody(req).then(async (raw) => {
      if (options.delayMs) await new Promise((r) => setTimeout(r, options.delayMs));
      const url = req.url ?? '/';
      hits.push({ method: req.method ?? 'GET', url, headers: req.headers, body: raw });
      let body: Record<string, unknown> = {};
      try {
        body = raw.length > 0 ? (JSON.parse(raw.toString('utf8')) as Record<string, unknown>) : {};
      } catch {
        body = {};
      }
      const path = url.split('?')[0] ?? url;
      if (body.model === 'big-stream') return bigStream(res, state);
      if (path.startsWith('/model/')) {
        const bad = options.sigv4 ? verifySigV4(req.method ?? 'GET', url, req.headers, raw, options.sigv4.keys, options.sigv4.region) : null;
        if (bad !== null) return json(res, 403, { message: `${bad} (fake)` }, { 'x-amzn-errortype': 'InvalidSignatureException' });
        return bedrock(res, path, body);
      }
      if (path.startsWith('/openai/')) return azure(res, req.method ?? 'GET', path, body);
      if (path.startsWith('/v1beta/') || /^\/v1\/models\/[^/]+:/.test(path)) return gemini(res, req.method ?? 'GET', url, path);
      // Anthropic requests carry anthropic-version; OpenAI's do not.
      if (req.headers['anthropic-version'] !== undefined) return anthropic(res, path, body);
      return openai(res, req.method ?? 'GET', path, body);
    });
  });
  const closeServer = closable(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    hits,
    get abandoned() {
      return state.abandoned;
    },
    get backpressured() {
      return state.backpressured;
    },
    get bigStreamsSent() {
      return state.bigStreamsSent;
    },
    close: closeServer,
  };
}
