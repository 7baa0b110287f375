/**
 * The MCP upstream: a real MCP SDK server (McpServer over StreamableHTTPServerTransport on node:http, session
 * mode, JSON answers with `enableJsonResponse`), built as test/fakes/mcp-upstream.ts builds one, with one
 * read-only tool whose annotations let the built-in policies allow it at any tier. `GET /__count` answers how many
 * `tools/call` requests it has served, so the runner can tell that every measured answer came from here.
 *
 * Run as a child: node --import tsx bench/planes-overhead/mcp-upstream.ts; prints {"ready":"<url of /mcp>"}.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { TOOL_NAME, toolAnswer } from './payloads.js';
import { announceReady, endWithRunner } from '../gateway-overhead/server-child.js';

let toolCalls = 0;

function buildServer(): McpServer {
  const server = new McpServer({ name: 'bench-upstream', version: '1.0.0' });
  server.registerTool(
    TOOL_NAME,
    {
      description: 'Looks a key up (read-only)',
      inputSchema: { key: z.string() },
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async ({ key }) => {
      toolCalls++;
      return { content: [{ type: 'text', text: toolAnswer(key) }] };
    },
  );
  return server;
}

const transports = new Map<string, StreamableHTTPServerTransport>();

const http = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/__count') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ toolCalls }));
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    void (async () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const body: unknown = text === '' ? undefined : JSON.parse(text);
      const sid = req.headers['mcp-session-id'];
      let transport = typeof sid === 'string' ? transports.get(sid) : undefined;
      if (!transport) {
        if (req.method !== 'POST' || !isInitializeRequest(body)) {
          res.writeHead(typeof sid === 'string' ? 404 : 400, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no such session' } }));
          return;
        }
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableJsonResponse: true,
          onsessioninitialized: (id) => {
            transports.set(id, created);
          },
          onsessionclosed: (id) => {
            transports.delete(id);
          },
        });
        await buildServer().connect(created);
        transport = created;
      }
      await transport.handleRequest(req, res, body);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
  });
});
http.keepAliveTimeout = 60_000;
await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
const { port } = http.address() as AddressInfo;
announceReady(`http://127.0.0.1:${port}/mcp`);
endWithRunner();
