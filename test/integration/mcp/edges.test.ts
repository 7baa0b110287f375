/**
 * The MCP proxy's answer path at its edges (shared/answer-relay.ts under planes/mcp/proxy.ts): a client that leaves
 * before the server answers, a server that drops mid-answer, a slow reader of a large SSE answer, a sized JSON
 * answer. The upstream is a scripted MCP server on node:http that answers each tool its own way (the SDK's server
 * cannot be told to stall, cut or flood a stream).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buffer as readBytes, text as readText } from 'node:stream/consumers';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closable } from '../../fakes/closable.js';
import { startMcpGateway, type McpHarness } from '../../fakes/mcp-upstream.js';
import { RAW_HEADERS } from '../../helpers/mcp-raw.js';

/** The `big` tool's answer: this many notifications of about 64 KiB (16 MiB), then the result. */
const BIG_EVENTS = 256;
const BIG_TEXT = 'y'.repeat(64_000);
const READ_ONLY = { readOnlyHint: true, destructiveHint: false };

interface Scripted {
  url: string;
  /** tools/call requests received, by tool name. */
  calls: string[];
  /** Requests whose connection closed before the server answered them (`hang`). */
  abandoned: number;
  /** Writes of the `big` answer that found the proxy's side of the socket full. */
  backpressured: number;
  /** `big` answers written to their end. */
  bigSent: number;
  close(): Promise<void>;
}

async function startScripted(): Promise<Scripted> {
  const state: Scripted = { url: '', calls: [], abandoned: 0, backpressured: 0, bigSent: 0, close: async () => {} };
  const json = (res: ServerResponse, message: object): void => {
    const body = JSON.stringify(message);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  const sse = (message: object): string => `event: message\ndata: ${JSON.stringify(message)}\n\n`;
  const serve = (req: IncomingMessage, res: ServerResponse, raw: string): void => {
    const m = JSON.parse(raw) as { id?: number | string; method?: string; params?: { name?: string } };
    if (m.method === 'tools/list') {
      const tools = ['hang', 'cut', 'big', 'sized'].map((name) => ({ name, inputSchema: { type: 'object' }, annotations: READ_ONLY }));
      return json(res, { jsonrpc: '2.0', id: m.id, result: { tools } });
    }
    if (m.method !== 'tools/call') {
      res.writeHead(202);
      return void res.end();
    }
    const tool = m.params?.name ?? '';
    state.calls.push(tool);
    const result = (text: string, isError = false) => ({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text }], isError } });
    if (tool === 'hang') {
      // Never answers; counts the proxy giving up on it.
      res.once('close', () => {
        if (!res.writableFinished) state.abandoned++;
      });
      return;
    }
    if (tool === 'sized') return json(res, result('sized answer', true));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (tool === 'cut') {
      res.write(sse({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } }));
      // Part of the result, then the connection drops.
      res.write('event: message\ndata: {"jsonrpc":"2.0","id":');
      setTimeout(() => res.socket?.destroy(), 20);
      return;
    }
    // big: written as fast as the proxy takes it.
    const event = sse({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: BIG_TEXT } });
    let sent = 0;
    const more = (): void => {
      while (sent < BIG_EVENTS) {
        sent++;
        if (!res.write(event)) {
          state.backpressured++;
          res.once('drain', more);
          return;
        }
      }
      state.bigSent++;
      res.end(sse(result('big done')));
    };
    more();
  };
  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => serve(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  const closeHttp = closable(http);
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  state.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  state.close = closeHttp;
  return state;
}

const call = (id: number, name: string): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });

function post(url: string, body: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { ...RAW_HEADERS, 'content-length': Buffer.byteLength(body) } }, resolve);
    req.on('error', reject);
    req.end(body);
  });
}

async function until(done: () => boolean, what: string): Promise<void> {
  // Generous: returns as soon as it holds; a loaded machine may take seconds.
  for (let i = 0; i < 3000 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(done(), what);
}

describe('MCP gateway: edges of the answer path', () => {
  let upstream: Scripted;
  let h: McpHarness;
  before(async () => {
    upstream = await startScripted();
    h = await startMcpGateway({ upstreamUrl: upstream.url });
  });
  after(async () => {
    await h.close();
    await upstream.close();
  });

  test('a client that goes away before the server answers cancels the upstream request (499, client_aborted)', async () => {
    const before = h.completed.length;
    const abandoned = upstream.abandoned;
    const calls = upstream.calls.length;
    const body = call(1, 'hang');
    const req = request(h.url, { method: 'POST', headers: { ...RAW_HEADERS, 'content-length': Buffer.byteLength(body) } });
    req.on('error', () => {});
    req.end(body);
    await until(() => upstream.calls.length > calls, 'the call reached the server');
    req.destroy();
    const done = (await h.completions(before + 1))[before];
    assert.deepEqual([done?.call.tool, done?.result.status, done?.result.end], ['hang', 499, 'client_aborted']);
    await until(() => upstream.abandoned > abandoned, 'the upstream request was closed');
  });

  test("a server that drops mid-answer: the client's answer is cut too, and the call is upstream_unreachable", async () => {
    const before = h.completed.length;
    const res = await post(h.url, call(2, 'cut'));
    assert.equal(res.statusCode, 200);
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (text += chunk));
    // The bytes that came are the client's; the answer then fails instead of ending as if complete.
    await new Promise<void>((resolve, reject) => {
      res.once('end', () => reject(new Error('the cut answer ended as if complete')));
      res.once('aborted', () => resolve());
      res.once('error', () => resolve());
    });
    assert.match(text, /working/);
    const done = (await h.completions(before + 1))[before];
    assert.deepEqual([done?.call.tool, done?.result.status, done?.result.end], ['cut', 200, 'upstream_unreachable']);
  });

  test('a client that reads a large SSE answer slowly holds the server back, then gets every byte; the result is read on the way', async () => {
    const before = h.completed.length;
    const pressed = upstream.backpressured;
    const sent = upstream.bigSent;
    const res = await post(h.url, call(3, 'big'));
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/event-stream');
    // Not reading: once the client's socket and Reins' are full, Reins stops reading the server, whose writes wait.
    res.pause();
    await until(() => upstream.backpressured > pressed, 'the server was held back');
    for (let i = 0; i < 200 && upstream.bigSent === sent; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(upstream.bigSent, sent, 'the server is still waiting to write');
    assert.equal(h.completed.length, before, 'the call is still under way');
    // Reading now: every byte the client was held back from.
    const text = await readText(res);
    assert.equal(text.split(BIG_TEXT).length - 1, BIG_EVENTS, 'every event arrived');
    assert.match(text, /big done/);
    const done = (await h.completions(before + 1))[before];
    assert.deepEqual([done?.call.tool, done?.result.end, done?.result.isError], ['big', 'forwarded', false]);
  });

  test("a JSON answer passed byte for byte keeps the server's content-length; what it said is still reported", async () => {
    const before = h.completed.length;
    const res = await post(h.url, call(4, 'sized'));
    const bytes = await readBytes(res);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-length'], String(bytes.length));
    assert.equal(res.headers['transfer-encoding'], undefined);
    assert.equal((JSON.parse(bytes.toString('utf8')) as { result: { isError: boolean } }).result.isError, true);
    const done = (await h.completions(before + 1))[before];
    assert.deepEqual([done?.call.tool, done?.result.end, done?.result.isError], ['sized', 'forwarded', true]);
  });
});
