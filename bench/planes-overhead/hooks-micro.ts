/**
 * The governance share of an MCP tool call and of an egress tunnel, alone: Reins' hooks for the two planes
 * (authenticate, decide, completed: credential, tier, policies, the audit event's making) called in a loop in
 * this process, with no sockets, against a replica from a given dist/ (in-memory PGlite, the built-in policies,
 * the bench's T3 agent and its key). The audit writer is a stub that keeps nothing, so the store does no work.
 * Batches of calls are timed and the fastest batch is the figure: the minimum is what the code costs when
 * nothing else takes the CPU, which makes two builds comparable on a busy machine.
 *
 *   node --import tsx bench/planes-overhead/hooks-micro.ts [--dist DIR] [--batches N] [--calls N]
 *
 * --dist: the dist/ directory to load (default this checkout's; build it first). Prints one line per plane.
 */
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { MCP_SERVER_NAME, TOOL_KEY, TOOL_NAME } from './payloads.js';
import { setUpAgent } from './reins-setup.js';

const { values: args } = parseArgs({
  options: {
    dist: { type: 'string', default: fileURLToPath(new URL('../../dist/', import.meta.url)) },
    batches: { type: 'string', default: '40' },
    calls: { type: 'string', default: '2000' },
  },
});
const dist = `file://${resolve(args.dist!)}/`;
const batches = Number(args.batches);
const calls = Number(args.calls);

const { loadConfig } = (await import(`${dist}config/config.js`)) as typeof import('../../src/config/config.js');
const { startReplica } = (await import(`${dist}app/server.js`)) as typeof import('../../src/app/server.js');
const { PlaneGovernance, EgressGovernance, McpGovernance } = (await import(`${dist}governance/plane-governance.js`)) as typeof import('../../src/governance/plane-governance.js');
type Caller = import('../../src/governance/caller.js').GovernedCaller;

const admin = randomBytes(24).toString('hex');
const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', REINS_DATA_DIR: 'memory', REINS_BOOTSTRAP_ADMIN_TOKEN: admin, LOG_LEVEL: 'warn' }, '');
const replica = await startReplica(config);
const agentKey = await setUpAgent(replica.url, admin);

// Decision events only: since every call is also audited when it ends (an `…_end` event), a build from before that
// writes one event per call and a newer one two; the calls are the decisions (or single events) either way.
let events = 0;
const audit = {
  ready: () => undefined,
  enqueue: (e: { action: string }) => void (e.action.endsWith('_end') ? undefined : events++),
} as unknown as import('../../src/audit/audit-writer.js').AuditWriter;
const plane = new PlaneGovernance({
  tiers: replica.tiers,
  policies: replica.gateway.policies,
  credentials: replica.gateway.credentials,
  audit,
  grants: replica.gateway.grants,
});
const egress = new EgressGovernance(plane);
const mcp = new McpGovernance(plane);
const headers = { 'proxy-authorization': `Basic ${Buffer.from(`agent:${agentKey}`).toString('base64')}`, host: '127.0.0.1:443' };
const mcpHeaders = { authorization: `Bearer ${agentKey}`, 'content-type': 'application/json', 'mcp-session-id': 'bench-session' };
const annotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

const settle = <T>(v: T | Promise<T>): T | Promise<T> => v;

/** One egress tunnel's hooks, as the proxy calls them. */
async function tunnelOnce(): Promise<void> {
  let caller = settle(egress.authenticate({ secret: agentKey, headers }));
  if (caller instanceof Promise) caller = await caller;
  if (caller === null) throw new Error('the agent key was not accepted');
  const request = { caller: caller as Caller, host: '127.0.0.1', port: 443, scheme: 'https' as const, method: 'CONNECT' };
  let decision = settle(egress.decide(request));
  if (decision instanceof Promise) decision = await decision;
  if (decision.outcome !== 'allow') throw new Error(`refused: ${decision.message}`);
  egress.completed(request, { status: 200, end: 'forwarded', bytesUp: 600, bytesDown: 3000, durationMs: 2.5 });
}

/** One tools/call's hooks, as the MCP proxy calls them. */
async function toolCallOnce(): Promise<void> {
  const caller = await mcp.authenticate({ secret: agentKey, headers: mcpHeaders });
  if (caller === null) throw new Error('the agent key was not accepted');
  const call = {
    caller,
    server: MCP_SERVER_NAME,
    tool: TOOL_NAME,
    arguments: { key: TOOL_KEY },
    annotations: { ...annotations },
    annotationSource: 'listed' as const,
    requestId: 1,
    sessionId: 'bench-session',
  };
  const decision = await mcp.decide(call);
  if (decision.outcome !== 'allow') throw new Error(`refused: ${decision.message}`);
  mcp.completed(call, { status: 200, end: 'forwarded', durationMs: 0.4, isError: false });
}

async function measure(name: string, once: () => Promise<void>): Promise<void> {
  const perCall: number[] = [];
  for (let b = 0; b < batches; b++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) await once();
    perCall.push(Number(process.hrtime.bigint() - t0) / 1000 / calls);
  }
  // The first quarter of the batches warms the JIT up and is left out.
  const kept = perCall.slice(Math.floor(batches / 4)).sort((a, b) => a - b);
  process.stdout.write(`${name}: ${kept[0]!.toFixed(2)} µs per call at best, median ${kept[Math.floor(kept.length / 2)]!.toFixed(2)} µs (${args.dist})\n`);
}

try {
  await measure('egress tunnel hooks', tunnelOnce);
  await measure('mcp tools/call hooks', toolCallOnce);
  if (events !== 2 * batches * calls) throw new Error(`${events} audit events for ${2 * batches * calls} calls`);
} finally {
  await replica.close();
}
process.exit(0);
