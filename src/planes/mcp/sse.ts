/**
 * Server-sent events read as they arrive: the stream is cut into events (each with its raw text, so an event
 * the gateway leaves alone goes on byte for byte) and the `data` of each, per the WHATWG event-stream rules
 * (lines end in CRLF, LF or CR; an empty line ends an event; one space after the colon is dropped).
 */
import { StringDecoder } from 'node:string_decoder';

export interface SseEvent {
  /** The event's text as received, its closing empty line included. */
  raw: string;
  /** The `data` lines joined by "\n"; null when the event had none (a comment, a `retry:` alone). */
  data: string | null;
}

export class SseSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private buffer = '';
  private eventRaw = '';
  private dataLines: string[] | null = null;

  /** The events this chunk completed. */
  push(chunk: Buffer | string): SseEvent[] {
    this.buffer += typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    return this.drain(false);
  }

  /** At the end of the stream: what is left that was never closed by an empty line (raw text only). */
  end(): string {
    this.buffer += this.decoder.end();
    this.drain(true);
    const rest = this.eventRaw + this.buffer;
    this.eventRaw = '';
    this.buffer = '';
    this.dataLines = null;
    return rest;
  }

  private drain(final: boolean): SseEvent[] {
    const events: SseEvent[] = [];
    let start = 0;
    const text = this.buffer;
    for (;;) {
      let i = start;
      while (i < text.length && text[i] !== '\n' && text[i] !== '\r') i++;
      if (i >= text.length) break;
      // A CR at the end of what has arrived may be the first half of a CRLF.
      if (text[i] === '\r' && i + 1 >= text.length && !final) break;
      const terminator = text[i] === '\r' && text[i + 1] === '\n' ? 2 : 1;
      const line = text.slice(start, i);
      this.eventRaw += text.slice(start, i + terminator);
      start = i + terminator;
      if (line === '') {
        events.push({ raw: this.eventRaw, data: this.dataLines === null ? null : this.dataLines.join('\n') });
        this.eventRaw = '';
        this.dataLines = null;
        continue;
      }
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      if (field !== 'data') continue;
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      (this.dataLines ??= []).push(value);
    }
    this.buffer = text.slice(start);
    return events;
  }
}

/** The event with its data replaced; its other fields (`id:` for resumption, `event:`) kept. */
export function withData(event: SseEvent, data: string): string {
  const kept = event.raw
    .split(/\r\n|\r|\n/)
    .filter((line) => line !== '' && line !== 'data' && !line.startsWith('data:'));
  return [...kept, ...data.split('\n').map((l) => `data: ${l}`)].join('\n') + '\n\n';
}

export function sseEvent(message: object): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}
