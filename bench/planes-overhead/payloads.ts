/** The fixed requests and answers of bench/planes-overhead, shared by the servers, the generator and the runner. */
import { fileURLToPath } from 'node:url';

export const TLS_DIR = fileURLToPath(new URL('../../test/fixtures/tls', import.meta.url));

/** The MCP server's name in Reins' config: the gateway serves it at /mcp/<name>. */
export const MCP_SERVER_NAME = 'bench';
export const TOOL_NAME = 'lookup';
export const TOOL_KEY = 'bench-key-0001';

export function toolAnswer(key: string): string {
  return `value of ${key}`;
}

/** The measured `tools/call`, one fixed body. `id` varies only between concurrent connections. */
export function toolCallBody(id: number): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: TOOL_NAME, arguments: { key: TOOL_KEY } } });
}

/** What the HTTPS origin answers to `GET /small`. */
export const ORIGIN_BODY = JSON.stringify({ ok: true, service: 'bench-origin', items: [1, 2, 3] });

/** One MCP target: the endpoint, and the headers of every tools/call on the session it opened once. */
export interface McpTarget {
  url: string;
  headers: Record<string, string>;
}

/** One egress target: the origin, reached directly (proxy null) or through Reins' CONNECT. */
export interface EgressTarget {
  origin: { host: string; port: number };
  proxy: { host: string; port: number; authorization: string } | null;
}
