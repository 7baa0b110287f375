/**
 * The built-in Reins MCP server at `/mcp/reins`: tools a developer's coding tool (Claude Code, Cursor, Codex)
 * calls to ask for a policy exception, model access or a budget top-up, and to check on a request, without
 * leaving the conversation. Built with the MCP SDK (streamable HTTP, stateless: every POST is served by a fresh
 * server bound to the caller), so any MCP client can use it.
 *
 * The requester is the developer of the personal access token in `Authorization: Bearer`, never a tool
 * argument. Agent keys are refused: an agent has no developer to request for.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { bearerSecret } from '../../shared/bearer.js';
import type { FailedAuthGate } from '../../shared/failed-auth.js';
import { refusedOrigin } from '../../shared/mcp-origin.js';
import { nestedTooDeep, TOO_DEEP_MESSAGE } from '../../shared/json-depth.js';
import { readBody } from '../../shared/read-body.js';

/** What the approvals workflow offers the built-in server; absent until that workflow is enabled. */
export interface AccessRequestDesk {
  submit(
    developer: { id: string; tokenId: string },
    input: {
      type: 'exception' | 'model_access' | 'budget_topup';
      justification: string;
      targetPolicy?: string;
      requestedModel?: string;
      requestedAmountUsd?: number;
      durationSeconds?: number;
      projectScope?: string;
    },
  ): Promise<{ id: string; state: string; message: string }>;
  status(developer: { id: string }, requestId: string): Promise<{ id: string; state: string; message: string }>;
}

/** The least the server needs of the caller a Reins secret stands for (the governance's caller resolution fills it). */
export interface ReinsMcpCaller {
  tokenId: string;
  /** The developer of a personal access token; null for an agent key. */
  developer: { id: string } | null;
}

export interface ReinsMcpDeps {
  resolve(secret: string, headers: IncomingMessage['headers']): Promise<ReinsMcpCaller | null>;
  desk: AccessRequestDesk | null;
  version: string;
  log: { error(obj: object, msg: string): void };
  /** Failed Reins keys counted per client address; past the limit, 429 with a JSON-RPC error. */
  failedAuth?: FailedAuthGate;
  /** Browser origins allowed besides loopback ones (`gateway.mcpAllowedOrigins`; '*' any): shared/mcp-origin.ts. */
  allowedOrigins?: readonly string[];
}

/** The MCP SDK transport's own limit for one POST (tool arguments here are a few sentences). */
const REINS_MCP_BODY_LIMIT = 4 * 1024 * 1024;

const NOT_YET =
  'Reins cannot take access requests on this server yet: the approvals workflow is not enabled. Ask a Reins admin ' +
  'directly; they can grant exceptions, model access and budget top-ups in the console.';

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  const body = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

function text(message: string, isError = false) {
  return { content: [{ type: 'text' as const, text: message }], ...(isError ? { isError: true } : {}) };
}

const Justification = z.string().min(1).max(4000).describe('Why you need it, in your own words; shown to the approver verbatim');
const Duration = z.number().int().min(60).max(90 * 86_400).optional().describe('How long the grant should last, in seconds');

export class ReinsMcpServer {
  constructor(private readonly deps: ReinsMcpDeps) {}

  /** Serves `/mcp/reins`; `parsedBody` when a framework already read the body. Never throws. */
  handle(req: IncomingMessage, res: ServerResponse, parsedBody?: unknown): void {
    this.serve(req, res, parsedBody).catch((err: unknown) => {
      this.deps.log.error({ err }, 'reins MCP server failed');
      if (!res.headersSent) jsonRpcError(res, 500, -32603, 'the Reins MCP server failed on this request; it has been logged');
      else res.destroy();
    });
  }

  private async serve(req: IncomingMessage, res: ServerResponse, parsedBody: unknown): Promise<void> {
    const badOrigin = refusedOrigin(req.headers, this.deps.allowedOrigins ?? []);
    if (badOrigin) {
      req.resume();
      return jsonRpcError(res, 403, -32000, badOrigin);
    }
    const secret = bearerSecret(req.headers.authorization);
    const wait = secret ? (this.deps.failedAuth?.retryAfter(req) ?? null) : null;
    if (wait !== null) {
      req.resume();
      return jsonRpcError(res, 429, -32000, `too many failed authentications from your address; retry in ${wait} s`, { 'retry-after': String(wait) });
    }
    const caller = secret ? await this.deps.resolve(secret, req.headers) : null;
    if (!caller) {
      if (secret) this.deps.failedAuth?.failed(req, 'mcp', 'unknown, revoked or expired token');
      req.resume();
      return jsonRpcError(res, 401, -32001, 'send your Reins personal access token: Authorization: Bearer <token>', { 'www-authenticate': 'Bearer realm="reins"' });
    }
    if (!caller.developer) {
      req.resume();
      return jsonRpcError(res, 403, -32001, 'the reins MCP server is for developer tools: use a personal access token, not an agent key');
    }
    if (req.method !== 'POST') {
      // Stateless: no server-initiated stream to resume and no session to end.
      req.resume();
      return jsonRpcError(res, 405, -32000, 'the reins MCP server is stateless: send JSON-RPC requests with POST', { allow: 'POST' });
    }
    let body = parsedBody;
    if (body === undefined) {
      // Read here rather than by the SDK's transport: a body nested too deep is refused before anything walks it.
      const raw = await readBody(req, REINS_MCP_BODY_LIMIT);
      if (raw === 'aborted') return;
      if (raw === 'too_large') return jsonRpcError(res, 413, -32000, `Request too large: the reins MCP server accepts ${REINS_MCP_BODY_LIMIT} bytes per POST`, { connection: 'close' });
      try {
        body = JSON.parse(raw.toString('utf8')) as unknown;
      } catch {
        return jsonRpcError(res, 400, -32700, 'Parse error: Invalid JSON');
      }
      if (nestedTooDeep(body)) return jsonRpcError(res, 400, -32600, `Invalid Request: ${TOO_DEEP_MESSAGE}`);
    }
    const server = this.serverFor({ id: caller.developer.id, tokenId: caller.tokenId });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.once('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }

  /** A server whose tools act for this developer; the requester is bound here, never read from arguments. */
  private serverFor(developer: { id: string; tokenId: string }): McpServer {
    const server = new McpServer({ name: 'reins', version: this.deps.version });
    const desk = this.deps.desk;
    const submit = async (input: Parameters<AccessRequestDesk['submit']>[1]) => {
      if (!desk) return text(NOT_YET, true);
      const r = await desk.submit(developer, input);
      return text(`${r.message} (request ${r.id}, ${r.state})`);
    };

    server.registerTool(
      'request_policy_exception',
      {
        title: 'Request an exception to a Reins policy',
        description:
          'Ask a Reins admin to exempt you from one policy that blocked or held your call (its name is in the refusal). ' +
          'The answer arrives as a request id; check it with get_request_status.',
        inputSchema: { policy: z.string().min(1).max(63).describe('The policy name from the refusal, e.g. autonomy-model-ceiling'), justification: Justification, durationSeconds: Duration, projectScope: z.string().max(200).optional() },
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      async ({ policy, justification, durationSeconds, projectScope }) =>
        submit({ type: 'exception', justification, targetPolicy: policy, ...(durationSeconds ? { durationSeconds } : {}), ...(projectScope ? { projectScope } : {}) }),
    );
    server.registerTool(
      'request_model_access',
      {
        title: 'Request access to a model',
        description: 'Ask a Reins admin to let you use a model you were refused.',
        inputSchema: { model: z.string().min(1).max(200).describe('The model id as your tool sends it'), justification: Justification, durationSeconds: Duration },
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      async ({ model, justification, durationSeconds }) => submit({ type: 'model_access', justification, requestedModel: model, ...(durationSeconds ? { durationSeconds } : {}) }),
    );
    server.registerTool(
      'request_budget_topup',
      {
        title: 'Request a budget top-up',
        description: 'Ask a Reins admin for more budget when a call was refused because a budget is used up.',
        inputSchema: { amountUsd: z.number().positive().max(1_000_000).describe('How many USD to add'), justification: Justification, durationSeconds: Duration },
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      async ({ amountUsd, justification, durationSeconds }) => submit({ type: 'budget_topup', justification, requestedAmountUsd: amountUsd, ...(durationSeconds ? { durationSeconds } : {}) }),
    );
    server.registerTool(
      'get_request_status',
      {
        title: 'Check an access request',
        description: 'The state of one of your requests: pending, under review, approved (retry your call) or denied (with the reason).',
        inputSchema: { requestId: z.string().min(1).max(100) },
        annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      },
      async ({ requestId }) => {
        if (!desk) return text(NOT_YET, true);
        const r = await desk.status({ id: developer.id }, requestId);
        return text(`${r.message} (request ${r.id}, ${r.state})`);
      },
    );
    return server;
  }
}
