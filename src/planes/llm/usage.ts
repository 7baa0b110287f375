/**
 * Token usage read from a provider's answer as its bytes stream past to the client. The meter observes
 * copies of the chunks; it never holds the stream back. JSON answers are kept up to a cap to be parsed at the
 * end (past the cap only the tail is kept, where every provider puts `usage`); SSE and AWS event-stream
 * answers are parsed event by event, keeping only the incomplete event.
 */
import { StringDecoder } from 'node:string_decoder';
import type { TokenUsage } from './types.js';

export interface UsageMeter {
  push(chunk: Buffer): void;
  /** The usage read, or undefined when the answer carried none. */
  finish(): TokenUsage | undefined;
  /** After finish: the model the answer named (`model`, Gemini's `modelVersion`), and the characters of generated text seen. */
  seen?(): { model?: string; textChars: number };
}

type Counts = { inputTokens?: number; outputTokens?: number; cacheReadTokens?: number; cacheWriteTokens?: number };

/** What an answer says besides usage: the model it names and how much text it generated (for an estimate). */
interface Seen {
  model?: string;
  textChars: number;
}

/**
 * The model an answer or stream event names: OpenAI's `model`, Anthropic's `message.model`, the Responses API's
 * `response.model`, Gemini's `modelVersion`.
 */
function modelOfEvent(event: Record<string, unknown>): string | undefined {
  if (typeof event.model === 'string') return event.model;
  if (typeof event.modelVersion === 'string') return event.modelVersion;
  if (isObject(event.message) && typeof event.message.model === 'string') return event.message.model;
  if (isObject(event.response) && typeof event.response.model === 'string') return event.response.model;
  return undefined;
}

/** What a model name may be to be reported: short and printable (it is the provider's text, shown in traces). */
function reportable(model: string | undefined): string | undefined {
  if (model === undefined || model.length === 0 || model.length > 200) return undefined;
  for (let i = 0; i < model.length; i++) if (model.charCodeAt(i) < 0x20) return undefined;
  return model;
}

/** The model an answer or event names, and the length of the text it generates (OpenAI choices, Gemini candidates). */
function seenIn(event: unknown, into: Seen): void {
  if (!isObject(event)) return;
  const model = reportable(modelOfEvent(event));
  if (model) into.model = model;
  if (Array.isArray(event.choices)) {
    for (const c of event.choices) {
      if (!isObject(c)) continue;
      const message = isObject(c.message) ? c.message : isObject(c.delta) ? c.delta : {};
      if (typeof message.content === 'string') into.textChars += message.content.length;
      if (typeof c.text === 'string') into.textChars += c.text.length;
    }
  }
}
type Json = Record<string, unknown>;

const JSON_CAP = 8 * 1024 * 1024;
const TAIL = 64 * 1024;
const EVENT_CAP = 16 * 1024 * 1024;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function count(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}

/**
 * Input tokens are reported additively, as Anthropic and Bedrock do: `inputTokens` excludes tokens read from
 * or written to the prompt cache, which are counted apart because they are priced apart. OpenAI includes its
 * cached tokens in `prompt_tokens` / `input_tokens` (`*_tokens_details.cached_tokens`): they are moved out.
 */
function fromUsageObject(u: Json): Counts {
  // OpenAI chat/completions/embeddings; Anthropic and the Responses API; Bedrock Converse.
  const input = count(u.prompt_tokens) ?? count(u.input_tokens) ?? count(u.inputTokens);
  const details = isObject(u.prompt_tokens_details) ? u.prompt_tokens_details : isObject(u.input_tokens_details) ? u.input_tokens_details : {};
  const cachedIncluded = count(details.cached_tokens);
  const counts: Counts = {
    inputTokens: input !== undefined && cachedIncluded !== undefined ? Math.max(0, input - cachedIncluded) : input,
    outputTokens: count(u.completion_tokens) ?? count(u.output_tokens) ?? count(u.outputTokens),
  };
  const cacheRead = count(u.cache_read_input_tokens) ?? count(u.cacheReadInputTokens) ?? cachedIncluded;
  const cacheWrite = count(u.cache_creation_input_tokens) ?? count(u.cacheWriteInputTokens);
  if (cacheRead !== undefined) counts.cacheReadTokens = cacheRead;
  if (cacheWrite !== undefined) counts.cacheWriteTokens = cacheWrite;
  return counts;
}

/**
 * The usage one JSON document or stream event carries, in any of the shapes the three providers use.
 * Later events overwrite earlier ones field by field: Anthropic's `message_delta` and OpenAI's last chunk
 * carry cumulative counts.
 */
export function usageOfEvent(event: unknown): Counts {
  if (!isObject(event)) return {};
  // A Bedrock invoke-with-response-stream chunk: base64 of the model's native JSON.
  if (typeof event.bytes === 'string') {
    try {
      return usageOfEvent(JSON.parse(Buffer.from(event.bytes, 'base64').toString('utf8')));
    } catch {
      return {};
    }
  }
  let found: Counts = {};
  if (event.type === 'message_start' && isObject(event.message) && isObject(event.message.usage)) {
    found = fromUsageObject(event.message.usage);
  } else if (typeof event.type === 'string' && event.type.startsWith('response.') && isObject(event.response) && isObject(event.response.usage)) {
    found = fromUsageObject(event.response.usage);
  } else if (isObject(event.usage)) {
    found = fromUsageObject(event.usage);
  } else if (isObject(event.usageMetadata)) {
    // Gemini: promptTokenCount includes the cached tokens; thoughts are output, billed as such.
    const u = event.usageMetadata;
    const prompt = count(u.promptTokenCount);
    const cached = count(u.cachedContentTokenCount);
    const toolPrompt = count(u.toolUsePromptTokenCount) ?? 0;
    const candidates = count(u.candidatesTokenCount);
    const thoughts = count(u.thoughtsTokenCount) ?? 0;
    found = {
      inputTokens: prompt === undefined ? undefined : Math.max(0, prompt - (cached ?? 0)) + toolPrompt,
      outputTokens: candidates === undefined && thoughts === 0 ? undefined : (candidates ?? 0) + thoughts,
    };
    if (cached !== undefined) found.cacheReadTokens = cached;
  } else if (count(event.prompt_token_count) !== undefined || count(event.generation_token_count) !== undefined) {
    // Meta Llama's native body on Bedrock.
    found = { inputTokens: count(event.prompt_token_count), outputTokens: count(event.generation_token_count) };
  }
  const metrics = event['amazon-bedrock-invocationMetrics'];
  if (isObject(metrics)) {
    found = merge(found, { inputTokens: count(metrics.inputTokenCount), outputTokens: count(metrics.outputTokenCount) });
  }
  return found;
}

function merge(into: Counts, next: Counts): Counts {
  const merged: Counts = {
    inputTokens: next.inputTokens ?? into.inputTokens,
    outputTokens: next.outputTokens ?? into.outputTokens,
  };
  const cacheRead = next.cacheReadTokens ?? into.cacheReadTokens;
  const cacheWrite = next.cacheWriteTokens ?? into.cacheWriteTokens;
  if (cacheRead !== undefined) merged.cacheReadTokens = cacheRead;
  if (cacheWrite !== undefined) merged.cacheWriteTokens = cacheWrite;
  return merged;
}

function complete(p: Counts): TokenUsage | undefined {
  if (p.inputTokens === undefined && p.outputTokens === undefined) return undefined;
  const usage: TokenUsage = { inputTokens: p.inputTokens ?? 0, outputTokens: p.outputTokens ?? 0 };
  // Only when the prompt cache was used, so the common usage stays two numbers.
  if (p.cacheReadTokens) usage.cacheReadTokens = p.cacheReadTokens;
  if (p.cacheWriteTokens) usage.cacheWriteTokens = p.cacheWriteTokens;
  return usage;
}

/** Index just past the JSON object starting at `start` (a `{`), or -1 when it does not close. */
function objectEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i + 1;
  }
  return -1;
}

/** The last `"usage": {…}` object in a piece of JSON text too large to have been kept whole. */
function usageInTail(text: string): Counts {
  let at = text.lastIndexOf('"usage"');
  while (at >= 0) {
    const brace = text.indexOf('{', at);
    const end = brace < 0 ? -1 : objectEnd(text, brace);
    if (end > 0 && /^"usage"\s*:\s*$/.test(text.slice(at, brace))) {
      try {
        return usageOfEvent({ usage: JSON.parse(text.slice(brace, end)) as unknown });
      } catch {
        // not the object we want; look further back
      }
    }
    at = text.lastIndexOf('"usage"', at - 1);
  }
  return {};
}

class JsonMeter implements UsageMeter {
  private chunks: Buffer[] = [];
  private size = 0;
  private truncated = false;
  private readonly found: Seen = { textChars: 0 };

  seen(): Seen {
    return this.found;
  }

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    if (this.size > JSON_CAP) {
      const all = Buffer.concat(this.chunks);
      this.chunks = [all.subarray(all.length - TAIL)];
      this.size = TAIL;
      this.truncated = true;
    }
  }

  finish(): TokenUsage | undefined {
    // Most answers arrive in one chunk: decoded as it is, without a concatenated copy.
    const text = (this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks)).toString('utf8');
    if (this.truncated) return complete(usageInTail(text));
    try {
      const parsed = JSON.parse(text) as unknown;
      // Gemini's streamGenerateContent without alt=sse answers one JSON array of the stream's chunks.
      const events = Array.isArray(parsed) ? parsed : [parsed];
      let usage: Counts = {};
      for (const event of events) {
        usage = merge(usage, usageOfEvent(event));
        seenIn(event, this.found);
      }
      return complete(usage);
    } catch {
      return undefined;
    }
  }
}

/** Server-sent events (OpenAI chat and Responses streams, Anthropic message streams). */
class SseMeter implements UsageMeter {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  private data: string[] = [];
  private usage: Counts = {};
  private readonly found: Seen = { textChars: 0 };

  seen(): Seen {
    return this.found;
  }

  push(chunk: Buffer): void {
    this.pending += this.decoder.write(chunk);
    let nl = this.pending.search(/\r\n|\r|\n/);
    while (nl >= 0) {
      const line = this.pending.slice(0, nl);
      const sep = this.pending.startsWith('\r\n', nl) ? 2 : 1;
      this.pending = this.pending.slice(nl + sep);
      this.line(line);
      nl = this.pending.search(/\r\n|\r|\n/);
    }
    // A single line this long is no event we meter; drop it rather than grow without bound.
    if (this.pending.length > EVENT_CAP) this.pending = '';
  }

  private line(line: string): void {
    if (line === '') {
      this.dispatch();
      return;
    }
    if (line.startsWith('data:')) {
      this.data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
    }
  }

  private dispatch(): void {
    const data = this.data.join('\n');
    this.data = [];
    if (data === '' || data === '[DONE]') return;
    try {
      const event = JSON.parse(data) as unknown;
      this.usage = merge(this.usage, usageOfEvent(event));
      seenIn(event, this.found);
    } catch {
      // not JSON: nothing to meter
    }
  }

  finish(): TokenUsage | undefined {
    this.pending += this.decoder.end();
    if (this.pending !== '') this.line(this.pending);
    this.dispatch();
    return complete(this.usage);
  }
}

/**
 * AWS event-stream frames: a 12-byte prelude (total length, headers length, CRC), headers, payload, CRC.
 * Only the payload matters for usage; the client verifies the CRCs on the bytes it receives unchanged.
 */
class EventStreamMeter implements UsageMeter {
  private buffer: Buffer = Buffer.alloc(0);
  private usage: Counts = {};
  private broken = false;

  push(chunk: Buffer): void {
    if (this.broken) return;
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    while (this.buffer.length >= 12) {
      const total = this.buffer.readUInt32BE(0);
      const headersLength = this.buffer.readUInt32BE(4);
      if (total < 16 + headersLength || total > EVENT_CAP) {
        this.broken = true;
        this.buffer = Buffer.alloc(0);
        return;
      }
      if (this.buffer.length < total) return;
      const payload = this.buffer.subarray(12 + headersLength, total - 4);
      try {
        this.usage = merge(this.usage, usageOfEvent(JSON.parse(payload.toString('utf8'))));
      } catch {
        // an event without a JSON payload
      }
      this.buffer = this.buffer.subarray(total);
    }
  }

  finish(): TokenUsage | undefined {
    return complete(this.usage);
  }
}

class NoMeter implements UsageMeter {
  push(): void {}
  finish(): undefined {
    return undefined;
  }
}

/** An answer's headers by lower-case name (shared/answer-headers.ts's AnswerHeaders; a Map in tests). */
export interface HeaderLookup {
  get(name: string): string | undefined;
}

/**
 * The meter for an answer, chosen by its content type. Answers whose bytes are compressed are not metered
 * (the gateway asks upstream for `identity`; a provider that compresses anyway is passed through untouched).
 * Bedrock's token-count headers, when present, win over the body.
 */
export function meterFor(headers: HeaderLookup): UsageMeter {
  const encoding = (headers.get('content-encoding') ?? 'identity').toLowerCase();
  const type = (headers.get('content-type') ?? '').toLowerCase();
  let meter: UsageMeter;
  if (encoding !== 'identity' && encoding !== '') meter = new NoMeter();
  else if (type.startsWith('text/event-stream')) meter = new SseMeter();
  else if (type.startsWith('application/vnd.amazon.eventstream')) meter = new EventStreamMeter();
  else if (type.includes('json')) meter = new JsonMeter();
  else meter = new NoMeter();
  const headerUsage: Counts = {
    inputTokens: numberHeader(headers.get('x-amzn-bedrock-input-token-count')),
    outputTokens: numberHeader(headers.get('x-amzn-bedrock-output-token-count')),
  };
  if (headerUsage.inputTokens === undefined && headerUsage.outputTokens === undefined) return meter;
  return {
    push: (chunk) => meter.push(chunk),
    finish: () => complete(merge(meter.finish() ?? {}, headerUsage)),
    seen: () => meter.seen?.() ?? { textChars: 0 },
  };
}

/** Characters per token when a server sends no usage: the usual rule of thumb for English text and code. */
const CHARS_PER_TOKEN = 4;

/**
 * The usage of a call whose server sent none, counted by the gateway (marked estimated): the request's text
 * (messages, prompt, input) and the answer's generated text, at CHARS_PER_TOKEN characters a token.
 */
export function estimatedUsage(requestBody: unknown, answerTextChars: number): TokenUsage {
  return { inputTokens: Math.ceil(requestTextChars(requestBody) / CHARS_PER_TOKEN), outputTokens: Math.ceil(answerTextChars / CHARS_PER_TOKEN), estimated: true };
}

function requestTextChars(body: unknown): number {
  if (!isObject(body)) return 0;
  let chars = 0;
  const add = (v: unknown): void => {
    if (typeof v === 'string') chars += v.length;
    else if (Array.isArray(v)) v.forEach(add);
    else if (isObject(v)) {
      if (typeof v.text === 'string') chars += v.text.length;
      if (v.content !== undefined) add(v.content);
    }
  };
  add(body.messages);
  add(body.prompt);
  add(body.input);
  return chars;
}

function numberHeader(s: string | undefined): number | undefined {
  if (s === undefined || !/^\d+$/.test(s.trim())) return undefined;
  return Number(s);
}
