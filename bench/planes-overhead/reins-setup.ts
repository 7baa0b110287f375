/**
 * Puts a fresh Reins replica into the bench's state through its API, as an admin would: agent `bench/agent` at
 * tier T3 with an agent key. Then opens the MCP session through Reins and the direct one, and counts audit events.
 */
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { BENCH_AGENT } from '../gateway-overhead/reins-setup.js';
import { TOOL_KEY, type McpTarget, toolAnswer, toolCallBody } from './payloads.js';

async function call(base: string, admin: string, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${admin}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, text: await res.text() };
}

function expect(what: string, r: { status: number; text: string }, ok: number[]): void {
  if (!ok.includes(r.status)) throw new Error(`${what} answered ${r.status}: ${r.text.slice(0, 300)}`);
}

/** Creates the T3 agent and mints its key; returns the key. */
export async function setUpAgent(base: string, admin: string): Promise<string> {
  expect('POST /api/v1/identities', await call(base, admin, 'POST', '/api/v1/identities', { id: BENCH_AGENT, kind: 'agent' }), [200, 201]);
  expect(
    'PUT /api/v1/identities/autonomy-tier',
    await call(base, admin, 'PUT', `/api/v1/identities/autonomy-tier?id=${encodeURIComponent(BENCH_AGENT)}`, { tier: 'T3' }),
    [200],
  );
  const minted = await call(base, admin, 'POST', '/api/v1/tokens', { identityId: BENCH_AGENT, name: 'bench' });
  expect('POST /api/v1/tokens', minted, [200, 201]);
  return (JSON.parse(minted.text) as { token: string }).token;
}

const ACCEPT = 'application/json, text/event-stream';

/**
 * initialize + notifications/initialized on `url` (with `auth` headers), then three `tools/call`s that must come
 * back as the tool's own result. Returns the target the generator measures: the session's headers included.
 */
export async function openMcpSession(url: string, auth: Record<string, string>): Promise<McpTarget> {
  const init = await fetch(url, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json', accept: ACCEPT },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'planes-overhead', version: '1.0.0' } },
    }),
  });
  const initText = await init.text();
  const session = init.headers.get('mcp-session-id');
  if (init.status !== 200 || !session) throw new Error(`initialize on ${url} answered ${init.status} without a session: ${initText.slice(0, 300)}`);
  const headers = { ...auth, accept: ACCEPT, 'mcp-session-id': session, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION };
  const initialized = await fetch(url, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  await initialized.text();
  if (initialized.status !== 202) throw new Error(`notifications/initialized on ${url} answered ${initialized.status}`);
  for (let i = 0; i < 3; i++) {
    const res = await fetch(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: toolCallBody(1) });
    const text = await res.text();
    let answer: { result?: { content?: { text?: string }[]; isError?: boolean } } = {};
    try {
      answer = JSON.parse(text) as typeof answer;
    } catch {
      // reported below
    }
    if (res.status !== 200 || answer.result?.isError || answer.result?.content?.[0]?.text !== toolAnswer(TOOL_KEY)) {
      throw new Error(`tools/call on ${url} did not return the tool's result: ${res.status} ${text.slice(0, 300)}`);
    }
  }
  return { url, headers };
}

/**
 * Calls of `type` the bench agent made between two instants, by their decision events (one per call; the end events,
 * `…_end`, are not counted), in windows of at most 500 events (see gateway-overhead).
 */
export async function countAuditEvents(base: string, admin: string, type: 'mcp' | 'egress', from: Date, to: Date): Promise<number | null> {
  const count = async (a: number, b: number): Promise<number | null> => {
    const query = `type=${type}&action=${type === 'mcp' ? 'mcp.tool_call' : 'egress.connect'}&identity=${encodeURIComponent(BENCH_AGENT)}&limit=500&since=${new Date(a).toISOString()}&until=${new Date(b).toISOString()}`;
    const r = await call(base, admin, 'GET', `/api/v1/audit-events?${query}`);
    if (r.status !== 200) return null;
    const body = JSON.parse(r.text) as { items: unknown[]; nextCursor: string | null };
    if (body.nextCursor === null) return body.items.length;
    if (b - a <= 1) return null;
    const mid = Math.floor((a + b) / 2);
    const left = await count(a, mid);
    const right = await count(mid, b);
    return left === null || right === null ? null : left + right;
  };
  return count(from.getTime(), to.getTime() + 1);
}
