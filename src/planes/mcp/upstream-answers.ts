/** Reading an upstream's answer on the side: its media kind, SSE events' JSON, one response by id. */
import { readOutbound } from './json-rpc.js';
import { SseSplitter, type SseEvent } from './sse.js';

export function mediaKind(contentType: string | string[] | undefined): 'sse' | 'json' | 'other' {
  const ct = (Array.isArray(contentType) ? contentType[0] : contentType)?.toLowerCase() ?? '';
  if (ct.startsWith('text/event-stream')) return 'sse';
  return ct.includes('json') ? 'json' : 'other';
}

export function parseEventData(event: SseEvent): unknown[] {
  if (event.data === null || event.data === '') return [];
  try {
    const v = JSON.parse(event.data) as unknown;
    return Array.isArray(v) ? v : [v];
  } catch {
    return [];
  }
}

/** The upstream's answer to one request of the gateway's own, in a JSON or SSE body. */
export function findAnswer(text: string, kind: 'sse' | 'json' | 'other', id: string): unknown {
  let messages: unknown[] = [];
  if (kind === 'sse') {
    const splitter = new SseSplitter();
    const events = splitter.push(text);
    splitter.end();
    messages = events.flatMap(parseEventData);
  } else {
    const v = JSON.parse(text) as unknown;
    messages = Array.isArray(v) ? v : [v];
  }
  return messages.find((m) => {
    const o = readOutbound(m);
    return o.kind === 'response' && o.id === id;
  });
}

