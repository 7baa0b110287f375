/**
 * A real MCP server (the SDK's McpServer over its StreamableHTTPServerTransport on node:http, session mode)
 * standing in for an upstream behind the gateway. It records every HTTP request it gets, so a test can say
 * what did, and what did not, reach it.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { McpGateway, isMcpRequest, type McpCallResult, type McpHooks, type McpToolCall } from '../../src/planes/mcp/proxy.js';
import { closable } from './closable.js';

export const UPSTREAM_SECRET = 'upstream-api-key-held-by-reins';

export interface UpstreamHit {
  method: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body of a POST; undefined for GET and DELETE. */
  body: unknown;
}

export interface McpUpstream {
  /** The MCP endpoint, e.g. http://127.0.0.1:PORT/mcp */
  url: string;
  hits: UpstreamHit[];
  /** Sessions the server ended on a DELETE. */
  closedSessions: string[];
  /** The JSON-RPC messages of every POST, flattened (batches included). */
  messages(): Record<string, unknown>[];
  /** The tools/call requests that reached the server, by tool name. */
  toolCalls(): { name: string; arguments: unknown }[];
  close(): Promise<void>;
}

function buildServer(): McpServer {
  const server = new McpServer({ name: 'fake-upstream', version: '1.0.0' });
  server.registerTool(
    'read_file',
    {
      description: 'Reads a file',
      inputSchema: { path: z.string() },
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async ({ path }) => ({ content: [{ type: 'text', text: `contents of ${path}` }] }),
  );
  server.registerTool(
    'delete_repo',
    {
      description: 'Deletes a repository',
      inputSchema: { repo: z.string() },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
    },
    async ({ repo }) => ({ content: [{ type: 'text', text: `deleted ${repo}` }] }),
  );
  server.registerTool('unannotated', { description: 'Declares no annotations', inputSchema: {} }, async () => ({
    content: [{ type: 'text', text: 'ran' }],
  }));
  server.registerTool(
    'slow_count',
    {
      description: 'Counts to n, reporting progress',
      inputSchema: { n: z.number().int() },
      annotations: { readOnlyHint: true, destructiveHint: false },
    },
    async ({ n }, extra) => {
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= n; i++) {
        if (token !== undefined) {
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: n, message: `step ${i}` } });
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      return { content: [{ type: 'text', text: `counted to ${n}` }] };
    },
  );
  server.registerTool(
    'echo',
    {
      description: 'Answers its arguments as JSON',
      inputSchema: { text: z.string(), nested: z.record(z.string(), z.unknown()).optional(), numbers: z.array(z.number()).optional() },
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    },
    async (args) => ({ content: [{ type: 'text', text: JSON.stringify(args) }] }),
  );
  server.registerTool(
    'broken',
    { description: 'Always fails', inputSchema: {}, annotations: { readOnlyHint: true } },
    async () => ({ content: [{ type: 'text', text: 'it broke' }], isError: true }),
  );
  return server;
}

/** `json: true` runs the transport with `enableJsonResponse` (answers as JSON, not SSE). */
export async function startMcpUpstream(options: { json?: boolean } = {}): Promise<McpUpstream> {
  const hits: UpstreamHit[] = [];
  const closedSessions: string[] = [];
  const transports = new Map<string, StreamableHTTPServerTransport>();

  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try {
          body = text === '' ? undefined : (JSON.parse(text) as unknown);
        } catch {
          body = text;
        }
        hits.push({ method: req.method ?? 'GET', headers: req.headers, body });
        const sid = req.headers['mcp-session-id'];
        let transport = typeof sid === 'string' ? transports.get(sid) : undefined;
        if (!transport) {
          if (req.method === 'POST' && isInitializeRequest(body)) {
            const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
              sessionIdGenerator: () => randomUUID(),
              enableJsonResponse: options.json === true,
              onsessioninitialized: (id) => {
                transports.set(id, created);
              },
              onsessionclosed: (id) => {
                transports.delete(id);
                closedSessions.push(id);
              },
            });
            await buildServer().connect(created);
            transport = created;
          } else {
            res.writeHead(typeof sid === 'string' ? 404 : 400, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no such session' } }));
            return;
          }
        }
        await transport.handleRequest(req, res, body);
      })().catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500);
        res.end(String(err));
      });
    });
  });
  const closeHttp = closable(http);
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const { port } = http.address() as AddressInfo;

  const messages = () =>
    hits.flatMap((h) => (Array.isArray(h.body) ? h.body : h.body === undefined ? [] : [h.body])).filter((m): m is Record<string, unknown> => typeof m === 'object' && m !== null);
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    hits,
    closedSessions,
    messages,
    toolCalls: () =>
      messages()
        .filter((m) => m.method === 'tools/call')
        .map((m) => {
          const params = m.params as { name: string; arguments?: unknown };
          return { name: params.name, arguments: params.arguments };
        }),
    async close() {
      await Promise.allSettled([...transports.values()].map((t) => t.close()));
      await closeHttp();
    },
  };
}

/* ------------------------------------------------------------------------------------------------------ */
/* The gateway in front of it, with simple hooks: one Reins token; a policy that refuses a tool that may
 * write and may destroy (so an unannotated tool, read with MCP's defaults, is refused too); a record of
 * every decision and completion. */

export const REINS_TOKEN = 'reins_agent_mcp_test_token_0123456789';
export const REFUSAL = 'Refused by Reins policy "no-destructive-tools": this tool may destroy data. Ask an admin for a grant.';

export interface TestCaller {
  tokenId: string;
}

export interface McpHarness {
  /** The gateway's origin. */
  origin: string;
  /** `${origin}/mcp/upstream`, the proxied server. */
  url: string;
  upstream: McpUpstream;
  gateway: McpGateway<TestCaller>;
  decided: McpToolCall<TestCaller>[];
  completed: { call: McpToolCall<TestCaller>; result: McpCallResult }[];
  warnings: string[];
  /** Resolves once `n` calls have been reported complete. */
  completions(n: number): Promise<{ call: McpToolCall<TestCaller>; result: McpCallResult }[]>;
  close(): Promise<void>;
}

export async function startMcpGateway(
  options: { json?: boolean; hideTool?: McpHooks<TestCaller>['hideTool']; upstreamUrl?: string; decide?: McpHooks<TestCaller>['decide'] } = {},
): Promise<McpHarness> {
  const upstream = await startMcpUpstream({ json: options.json === true });
  const decided: McpToolCall<TestCaller>[] = [];
  const completed: { call: McpToolCall<TestCaller>; result: McpCallResult }[] = [];
  const warnings: string[] = [];
  const hooks: McpHooks<TestCaller> = {
    authenticate: async ({ secret }) => (secret === REINS_TOKEN ? { tokenId: 'tok_mcp' } : null),
    decide:
      options.decide ??
      (async (call) => {
        decided.push(call);
        return !call.annotations.readOnlyHint && call.annotations.destructiveHint ? { outcome: 'deny', message: REFUSAL } : { outcome: 'allow' };
      }),
    completed: (call, result) => {
      completed.push({ call, result });
    },
    ...(options.hideTool ? { hideTool: options.hideTool } : {}),
  };
  const log = {
    warn: (_obj: object, msg: string) => warnings.push(msg),
    error: (_obj: object, msg: string) => warnings.push(msg),
  };
  const gateway = new McpGateway<TestCaller>(
    { servers: [{ name: 'upstream', url: options.upstreamUrl ?? upstream.url, headers: { Authorization: `Bearer ${UPSTREAM_SECRET}` } }], hooks },
    log,
  );
  const http = createServer((req, res) => {
    if (isMcpRequest(req.url)) return gateway.handle(req, res);
    res.writeHead(418);
    res.end('not the MCP gateway');
  });
  const closeHttp = closable(http);
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const { port } = http.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    url: `${origin}/mcp/upstream`,
    upstream,
    gateway,
    decided,
    completed,
    warnings,
    async completions(n) {
      // Generous: returns as soon as the n-th report is in; a loaded machine may take seconds.
      const started = Date.now();
      while (completed.length < n && Date.now() - started < 30_000) await new Promise((r) => setTimeout(r, 5));
      return completed;
    },
    async close() {
      await closeHttp();
      await gateway.close();
      await upstream.close();
    },
  };
}
