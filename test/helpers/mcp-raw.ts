/**
 * MCP by hand, for requests the SDK client would not send (batches, malformed messages, headers of the stateless
 * revision): an initialized session with the Reins token, and the JSON-RPC messages of an answer, JSON or SSE.
 */
import assert from 'node:assert/strict';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { REINS_TOKEN } from '../fakes/mcp-upstream.js';

export const RAW_HEADERS = { authorization: `Bearer ${REINS_TOKEN}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json' };

/** An initialized session opened by hand: the headers every later request of it carries. */
export async function rawSession(url: string): Promise<Record<string, string>> {
  const r = await fetch(url, {
    method: 'POST',
    headers: RAW_HEADERS,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  });
  await r.text();
  const sid = r.headers.get('mcp-session-id');
  assert.ok(sid, 'initialize answers a session id');
  const session = { ...RAW_HEADERS, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  await (await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  return session;
}

/** The JSON-RPC messages of an answer, JSON or SSE. */
export async function messagesOf(r: Response): Promise<Record<string, unknown>[]> {
  const text = await r.text();
  if ((r.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    return text
      .split(/\n\n/)
      .map((e) => e.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n'))
      .filter((d) => d !== '')
      .flatMap((d) => {
        const v = JSON.parse(d) as unknown;
        return (Array.isArray(v) ? v : [v]) as Record<string, unknown>[];
      });
  }
  const v = JSON.parse(text) as unknown;
  return (Array.isArray(v) ? v : [v]) as Record<string, unknown>[];
}

/** The text of a tool result's first content item ('' when it is not text). */
export function textOf(result: unknown): string {
  const first = (result as CallToolResult).content[0];
  return first?.type === 'text' ? first.text : '';
}
