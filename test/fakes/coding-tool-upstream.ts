/**
 * A local fake of the two provider APIs the coding tools speak, for driving the real Claude Code and Codex CLI
 * through Reins: Anthropic Messages (`/v1/messages`, streamed as SSE or JSON, and `/v1/messages/count_tokens`) and
 * the OpenAI Responses API (`/v1/responses`, streamed as SSE or JSON). Unlike `fake-providers.ts` it can play an
 * agent's turn: given a tool, it answers a request that offers that tool with a `tool_use` block (Anthropic), and
 * the request that carries the tool's result with text quoting it, so a tool call goes round trip through the client.
 * Stateless: each answer is decided from the request alone, as a model would (side requests a client makes with
 * other prompts or a smaller model get plain text). Every request is recorded.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closable } from './closable.js';

export interface CodingToolHit {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body, or {} when there was none. */
  body: Record<string, any>;
}

export interface CodingToolUpstream {
  origin: string;
  hits: CodingToolHit[];
  close(): Promise<void>;
}

export interface CodingToolOptions {
  /** A tool to call when a request offers it (Anthropic `tools[].name`), with these arguments. */
  toolUse?: { name: string; input: Record<string, unknown> };
}

/** What the fake answers, so a test can look for it in the client's output. */
export const CODING_TOOL_TEXT = {
  anthropic: 'Hello from the fake Anthropic upstream',
  responses: 'Hello from the fake Responses upstream',
  /** The answer to the turn that carries a tool's result: this, then the result's text. */
  afterTool: 'The tool answered: ',
} as const;

/** Token counts the fake reports, so a test can compare with what Reins metered. */
export const CODING_TOOL_USAGE = {
  anthropic: { inputTokens: 23, outputTokens: 11 },
  responses: { inputTokens: 19, outputTokens: 6 },
} as const;

type SseEvent = { event: string; data: Record<string, unknown> };

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function sse(res: ServerResponse, events: readonly SseEvent[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const e of events) res.write(`event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`);
  res.end();
}

/** The text of the last `tool_result` block of the conversation, or undefined when there is none. */
function lastToolResult(messages: unknown): string | undefined {
  if (!Array.isArray(messages)) return undefined;
  const last = messages.at(-1) as { role?: string; content?: unknown } | undefined;
  if (last?.role !== 'user' || !Array.isArray(last.content)) return undefined;
  const result = (last.content as { type?: string; content?: unknown }[]).find((b) => b.type === 'tool_result');
  if (!result) return undefined;
  if (typeof result.content === 'string') return result.content;
  if (!Array.isArray(result.content)) return '';
  return (result.content as { type?: string; text?: string }[]).map((b) => (b.type === 'text' ? (b.text ?? '') : '')).join('');
}

type Block = { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

function anthropicTurn(body: Record<string, any>, options: CodingToolOptions): Block {
  const result = lastToolResult(body.messages);
  if (result !== undefined) return { type: 'text', text: `${CODING_TOOL_TEXT.afterTool}${result}` };
  const offered = Array.isArray(body.tools) && body.tools.some((t: { name?: string }) => t.name === options.toolUse?.name);
  if (options.toolUse && offered) return { type: 'tool_use', id: 'toolu_fake_01', name: options.toolUse.name, input: options.toolUse.input };
  return { type: 'text', text: CODING_TOOL_TEXT.anthropic };
}

function anthropic(res: ServerResponse, path: string, body: Record<string, any>, options: CodingToolOptions): void {
  if (path === '/v1/messages/count_tokens') return json(res, 200, { input_tokens: 42 });
  if (path !== '/v1/messages') return json(res, 404, { type: 'error', error: { type: 'not_found_error', message: `fake has no ${path}` } });
  const block = anthropicTurn(body, options);
  const stopReason = block.type === 'tool_use' ? 'tool_use' : 'end_turn';
  const { inputTokens, outputTokens } = CODING_TOOL_USAGE.anthropic;
  const message = {
    id: 'msg_fake_coding',
    type: 'message',
    role: 'assistant',
    model: body.model,
    content: [block],
    stop_reason: stopReason,
    stop_sequence: null,
    usage: { input_tokens: inputTokens, output_tokens: outputTokens },
  };
  if (body.stream !== true) return json(res, 200, message);
  const events: SseEvent[] = [
    { event: 'message_start', data: { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { input_tokens: inputTokens, output_tokens: 1 } } } },
  ];
  if (block.type === 'text') {
    events.push(
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
      { event: 'ping', data: { type: 'ping' } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: block.text } } },
    );
  } else {
    // The arguments stream as partial JSON, split mid-value as the real API does.
    const input = JSON.stringify(block.input);
    const half = Math.floor(input.length / 2);
    events.push(
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { ...block, input: {} } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: input.slice(0, half) } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: input.slice(half) } } },
    );
  }
  events.push(
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  );
  sse(res, events);
}

/** The Responses API: a message with one output_text, streamed with the events and sequence numbers the API sends. */
function responses(res: ServerResponse, path: string, body: Record<string, any>): void {
  if (path !== '/v1/responses') {
    return json(res, 404, { error: { message: `fake has no ${path}`, type: 'invalid_request_error', param: null, code: 'unknown_url' } });
  }
  const text = CODING_TOOL_TEXT.responses;
  const { inputTokens, outputTokens } = CODING_TOOL_USAGE.responses;
  const usage = {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + outputTokens,
  };
  const base = { id: 'resp_fake_coding', object: 'response', created_at: 1_700_000_000, model: body.model, error: null, incomplete_details: null };
  const part = { type: 'output_text', text, annotations: [] };
  const item = { id: 'msg_fake_coding', type: 'message', status: 'completed', role: 'assistant', content: [part] };
  const completed = { ...base, status: 'completed', output: [item], usage };
  if (body.stream !== true) return json(res, 200, completed);
  const inProgress = { ...base, status: 'in_progress', output: [], usage: null };
  const ids = { item_id: item.id, output_index: 0, content_index: 0 };
  const events: Record<string, unknown>[] = [
    { type: 'response.created', response: inProgress },
    { type: 'response.in_progress', response: inProgress },
    { type: 'response.output_item.added', output_index: 0, item: { ...item, status: 'in_progress', content: [] } },
    { type: 'response.content_part.added', ...ids, part: { ...part, text: '' } },
    { type: 'response.output_text.delta', ...ids, delta: text },
    { type: 'response.output_text.done', ...ids, text },
    { type: 'response.content_part.done', ...ids, part },
    { type: 'response.output_item.done', output_index: 0, item },
    { type: 'response.completed', response: completed },
  ];
  sse(res, events.map((data, i) => ({ event: data.type as string, data: { ...data, sequence_number: i } })));
}

export async function startCodingToolUpstream(options: CodingToolOptions = {}): Promise<CodingToolUpstream> {
  const hits: CodingToolHit[] = [];
  const server = createServer((req, res) => {
    void readBody(req).then((raw) => {
      const url = req.url ?? '/';
      let body: Record<string, any> = {};
      try {
        body = raw.length > 0 ? (JSON.parse(raw.toString('utf8')) as Record<string, any>) : {};
      } catch {
        body = {};
      }
      hits.push({ method: req.method ?? 'GET', url, headers: req.headers, body });
      const path = url.split('?')[0] ?? url;
      // Anthropic requests carry anthropic-version; OpenAI's do not.
      if (req.headers['anthropic-version'] !== undefined) return anthropic(res, path, body, options);
      return responses(res, path, body);
    });
  });
  const close = closable(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { origin: `http://127.0.0.1:${port}`, hits, close };
}
