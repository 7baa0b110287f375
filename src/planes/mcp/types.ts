/**
 * The MCP gateway's contract with the rest of Reins: what a governed tool call looks like, and the hooks the
 * policy engine, audit writer and identity layer fill in. The proxy knows nothing of identities, policies or
 * storage; it asks these hooks.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { FailedAuthGate } from '../../shared/failed-auth.js';

/** An upstream MCP server as configured (`mcpServers` in the config file); served at `/mcp/{name}`. */
export interface McpServerConfig {
  name: string;
  /** The upstream's streamable HTTP endpoint, e.g. `https://mcp.example.com/mcp`. */
  url: string;
  /** Sent to the upstream on every request (its Authorization, for example); the client's never is. */
  headers: Record<string, string>;
}

/** What `authenticate` is given: the Reins token from `Authorization: Bearer`, and the request's headers
 * (for `X-Reins-Session` / `X-Reins-Agent`). */
export interface McpCredential {
  secret: string;
  headers: IncomingHttpHeaders;
}

/** MCP tool annotations, resolved: a hint the server did not declare has MCP's default value. */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/**
 * Where a call's annotations come from. `listed`: the upstream's `tools/list` named the tool (hints it left
 * out take MCP's defaults); `unlisted`: the upstream's `tools/list` did not name it, or could not be read,
 * so all four are MCP's defaults (the cautious reading: may write, may destroy, reaches outside).
 */
export type AnnotationSource = 'listed' | 'unlisted';

export type JsonRpcId = string | number;

export interface McpToolCall<C> {
  caller: C;
  /** The configured server's name (the `{server}` of `/mcp/{server}`). */
  server: string;
  /** `params.name` of the `tools/call`. */
  tool: string;
  /** `params.arguments` as sent; `{}` when the call has none. */
  arguments: Record<string, unknown>;
  annotations: ToolAnnotations;
  annotationSource: AnnotationSource;
  /** The JSON-RPC id of the `tools/call` request. */
  requestId: JsonRpcId;
  /** The client's `Mcp-Session-Id`; null without one (the stateless revision has none). */
  sessionId: string | null;
}

export type McpDecision =
  /** `upstreamHeaders`: added to the forwarded POST, replacing the client's: Reins' trace context (`traceparent`). */
  | { outcome: 'allow'; upstreamHeaders?: Readonly<Record<string, string>> }
  /** `message` is what the model sees as the tool's (error) result: which policy, why, what to do. */
  | { outcome: 'deny'; message: string };

/**
 * How a decided tool call ended. `forwarded`: the upstream's answer went to the client (or its HTTP answer
 * ended without one, see `answered`); `refused`: `decide` denied it and Reins answered itself;
 * `upstream_unreachable`: no answer from the upstream (the client got 502), or its answer broke off;
 * `client_aborted`: the client went away before the call's answer reached it;
 * `gateway_error`: a hook failed on the request holding the call, and nothing was forwarded.
 */
export type McpCallEnd = 'forwarded' | 'refused' | 'upstream_unreachable' | 'client_aborted' | 'gateway_error';

export interface McpCallResult {
  /** The HTTP status of the answer the client got for the request holding the call. */
  status: number;
  end: McpCallEnd;
  durationMs: number;
  /** Whether the tool's answer was an error: a result with `isError: true`, or a JSON-RPC error. Absent when
   * the proxy saw no answer for the call (the upstream closed the stream without one, or answered on another). */
  isError?: boolean;
  /** The JSON-RPC error the upstream answered instead of a result, if it did. */
  error?: { code: number; message: string };
}

/** An approve policy parked the call: it waits for a person (spec "Held call"). */
export interface McpHold {
  entryId: string;
  policyName: string;
  policyMessage: string;
  expiresAt: Date;
  /**
   * The call stops waiting without being run (answered "held, call again after approval", or cancelled by its
   * client): a release that then finds no call waiting lets the identical call's retry through, once.
   */
  leave?(): void;
}

/** What `decide` tells the proxy while it decides. */
export interface McpDecideEvents {
  /** The call is parked for a person; the proxy keeps the client's connection alive until `decide` settles. */
  onHeld?(hold: McpHold): void;
}

export interface McpHooks<C> {
  /** The caller a Reins token belongs to, or null when it is unknown, revoked or expired. */
  authenticate(credential: McpCredential): Promise<C | null>;
  /** Asked for every `tools/call` before anything of it reaches the upstream. */
  decide(call: McpToolCall<C>, events?: McpDecideEvents): Promise<McpDecision>;
  /** Called exactly once per decided call. Must not throw. */
  completed(call: McpToolCall<C>, result: McpCallResult): void;
  /**
   * When given, tools it answers true for are removed from `tools/list` results on their way to the client.
   * Hiding is a courtesy to the model, not enforcement: a hidden tool that is called anyway goes to `decide`.
   */
  hideTool?(caller: C, server: string, tool: string, annotations: ToolAnnotations): boolean;
}

export interface McpGatewayDeps<C> {
  servers: readonly McpServerConfig[];
  hooks: McpHooks<C>;
  /** How often a held call's stream carries a progress notification or a keep-alive comment (default 10 s). */
  heldKeepAliveMs?: number;
  /** When a held call without a progress token is answered "held, call again after approval" (default 45 s). */
  heldAnswerMs?: number;
  /** Failed Reins keys counted per client address; past the limit, 429 with a JSON-RPC error. */
  failedAuth?: FailedAuthGate;
  /** Browser origins allowed besides loopback ones (`gateway.mcpAllowedOrigins`; '*' any): shared/mcp-origin.ts. */
  allowedOrigins?: readonly string[];
}

export interface McpGatewayLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}
