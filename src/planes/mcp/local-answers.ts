/** Answers the MCP proxy writes itself (refusals, protocol errors), as JSON or SSE. */
import type { ServerResponse } from 'node:http';
import { accepts, errorMessage } from './json-rpc.js';
import { sseEvent } from './sse.js';
import type { JsonRpcId } from './types.js';

export function send(res: ServerResponse, status: number, payload: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(payload);
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

export function sendError(res: ServerResponse, status: number, id: JsonRpcId | null, code: number, message: string, headers?: Record<string, string>): void {
  send(res, status, errorMessage(id, code, message), headers);
}

/**
 * Answers Reins writes itself (refusals): JSON unless the client takes only SSE, or the answer is already an
 * SSE stream (a held call's: see held-stream.ts).
 */
export function answerLocally(res: ServerResponse, accept: string | undefined, payload: object | object[]): void {
  const messages = Array.isArray(payload) ? payload : [payload];
  if (res.headersSent) {
    res.end(messages.map(sseEvent).join(''));
    return;
  }
  if (accepts(accept, 'application/json') || !accepts(accept, 'text/event-stream')) return send(res, 200, payload);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.end(messages.map(sseEvent).join(''));
}

