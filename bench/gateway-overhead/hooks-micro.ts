/**
 * The governance share of an LLM call, alone: Reins' LLM hooks (authenticate, decide, completed: the credential,
 * tier, the bench's 16 policies and the 4 built-in ones, model access, rate limits, budget, the two audit events'
 * making, telemetry and metrics) called in a loop in this process, with no sockets and no JSON parsing, on a replica
 * from a given dist/ (in-memory PGlite) set up as the main bench sets Reins up (reins-setup.ts). The audit writer
 * is a stub that counts and keeps nothing, so the store does no work. Batches of calls are timed and the fastest
 * batch is the figure: the minimum is what the code costs when nothing else takes the CPU, which makes two builds
 * comparable on a machine whose speed moves by 30% between minutes (the gateway bench's CPU ratios cannot resolve a
 * change of a few µs there).
 *
 *   node --import tsx bench/gateway-overhead/hooks-micro.ts [--dist DIR] [--batches N] [--calls N] [--step NAME]
 *
 * --dist: the dist/ directory to load (default this checkout's; `npx tsc -p tsconfig.build.json` first).
 * --step: time one hook alone as well (authenticate, decide or completed), the others run untimed around it.
 * The same replica's hooks are what app.ts gives the gateway: this file makes them as app.ts does (LlmGovernance over
 * the replica's tiers, policies, credentials, grants, rules and prices, with call telemetry on a metrics registry).
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { COMPLETION_BODY, REQUEST_BODY, UPSTREAM_KEY } from './payloads.js';
import { setUpReins } from './reins-setup.js';

const { values: args } = parseArgs({
  options: {
    dist: { type: 'string', default: fileURLToPath(new URL('../../dist/', import.meta.url)) },
    batches: { type: 'string', default: '40' },
    calls: { type: 'string', default: '2000' },
    step: { type: 'string' },
  },
});
const STEPS = ['authenticate', 'decide', 'completed'] as const;
type Step = (typeof STEPS)[number];
if (args.step !== undefined && !STEPS.includes(args.step as Step)) throw new Error(`--step: one of ${STEPS.join(', ')}, got "${args.step}"`);
const dist = `file://${resolve(args.dist!)}/`;
const batches = Number(args.batches);
const calls = Number(args.calls);
if (!Number.isInteger(batches) || batches < 4) throw new Error('--batches: a whole number from 4');
if (!Number.isInteger(calls) || calls < 1) throw new Error('--calls: a whole number from 1');

const { loadConfig } = (await import(`${dist}config/config.js`)) as typeof import('../../src/config/config.js');
const { startReplica } = (await import(`${dist}app/server.js`)) as typeof import('../../src/app/server.js');
const { LlmGovernance, policyRoute } = (await import(`${dist}governance/llm-governance.js`)) as typeof import('../../src/governance/llm-governance.js');
const { CallTelemetry, ModelLabels } = (await import(`${dist}governance/call-telemetry.js`)) as typeof import('../../src/governance/call-telemetry.js');
const { registerGatewayMetrics } = (await import(`${dist}app/metrics.js`)) as typeof import('../../src/app/metrics.js');
const { Registry } = await import('prom-client');
type Caller = import('../../src/governance/caller.js').GovernedCaller;
type Call = import('../../src/planes/llm/types.js').LlmCall<Caller>;

// setUpReins proves the gateway end to end (five calls, their audit events): it needs an upstream to answer them.
const upstream = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(COMPLETION_BODY));
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

const admin = randomBytes(24).toString('hex');
const config = loadConfig(
  { HOST: '127.0.0.1', PORT: '0', REINS_DATA_DIR: 'memory', REINS_BOOTSTRAP_ADMIN_TOKEN: admin, LOG_LEVEL: 'warn' },
  `providers:\n  openai: { baseUrl: "${upstreamUrl}", apiKey: "${UPSTREAM_KEY}" }\n`,
);
const replica = await startReplica(config);
const setup = await setUpReins(replica.url, admin, { allowPartial: false });
const agentKey = setup.target.headers.authorization!.slice('Bearer '.length);

let events = 0;
const audit = {
  pending: 0,
  ready: () => undefined,
  enqueue: () => void events++,
} as unknown as import('../../src/audit/audit-writer.js').AuditWriter;
const gw = replica.gateway;
const metrics = registerGatewayMetrics(new Registry(), () => 0);
// As app.ts makes the gateway's hooks (the failed-credential throttle and token-use touch are the route's, not these).
const hooks = new LlmGovernance({
  tiers: replica.tiers,
  policies: gw.policies,
  credentials: gw.credentials,
  audit,
  grants: gw.grants,
  onTokenUse: () => undefined,
  onCompleted: metrics.completed,
  telemetry: new CallTelemetry({ metrics, tracer: null, models: new ModelLabels(gw.prices), llmRoute: (provider, route) => policyRoute(provider as never, route) }),
  held: gw.held,
  db: replica.db,
  rules: gw.rules,
  prices: gw.prices,
  upstreamPrices: gw.upstreamPrices,
});

const headers = { authorization: `Bearer ${agentKey}`, 'content-type': 'application/json', host: '127.0.0.1' };
const body = JSON.parse(REQUEST_BODY) as { model: string; max_tokens: number };
const usage = { inputTokens: 20, outputTokens: 10 };

/** One call's hooks, as routes.ts calls them; `timed` is the step whose time is added to `spent` (ns). */
function callOnce(timed: Step | undefined, spent: { ns: bigint }): void | Promise<void> {
  let t = timed === 'authenticate' ? process.hrtime.bigint() : 0n;
  const caller = hooks.authenticate({ secret: agentKey, provider: 'openai', upstream: 'openai', headers });
  if (caller instanceof Promise) throw new Error('the credential was not cached: authenticate read the store');
  if (caller === null) throw new Error('the agent key was not accepted');
  if (timed === 'authenticate') spent.ns += process.hrtime.bigint() - t;
  const call: Call = { caller, provider: 'openai', upstream: 'openai', route: '/v1/chat/completions', body, bodyBytes: REQUEST_BODY.length, metered: true, model: body.model, stream: false, maxTokens: body.max_tokens };
  t = timed === 'decide' ? process.hrtime.bigint() : 0n;
  const decision = hooks.decide(call, {});
  if (decision instanceof Promise) return decision.then((d) => finish(call, d.outcome, timed, spent));
  if (timed === 'decide') spent.ns += process.hrtime.bigint() - t;
  finish(call, decision.outcome, timed, spent);
}

function finish(call: Call, outcome: string, timed: Step | undefined, spent: { ns: bigint }): void {
  if (outcome !== 'allow') throw new Error(`the bench call was refused (${outcome})`);
  const t = timed === 'completed' ? process.hrtime.bigint() : 0n;
  hooks.completed(call, { status: 200, end: 'forwarded', usage, responseModel: 'gpt-4o-mini-2024-07-18', durationMs: 0.3 });
  if (timed === 'completed') spent.ns += process.hrtime.bigint() - t;
}

let awaited = 0;
async function measure(timed: Step | undefined): Promise<{ best: number; median: number }> {
  const perCall: number[] = [];
  for (let b = 0; b < batches; b++) {
    const spent = { ns: 0n };
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) {
      const r = callOnce(timed, spent);
      if (r instanceof Promise) {
        awaited++;
        await r;
      }
    }
    const ns = timed === undefined ? process.hrtime.bigint() - t0 : spent.ns;
    perCall.push(Number(ns) / 1000 / calls);
    // Let the replica's timers (the audit flush, snapshots) run between batches, as the event loop would.
    await new Promise((r) => setImmediate(r));
  }
  // The first quarter of the batches warms the JIT up and is left out.
  const kept = perCall.slice(Math.floor(batches / 4)).sort((a, b) => a - b);
  return { best: kept[0]!, median: kept[Math.floor(kept.length / 2)]! };
}

try {
  const whole = await measure(undefined);
  process.stdout.write(`llm call hooks (authenticate, decide, completed): ${whole.best.toFixed(2)} µs per call at best, median ${whole.median.toFixed(2)} µs (${args.dist})\n`);
  if (args.step !== undefined) {
    const one = await measure(args.step as Step);
    process.stdout.write(`  ${args.step} alone: ${one.best.toFixed(2)} µs per call at best, median ${one.median.toFixed(2)} µs\n`);
  }
  const expected = (args.step === undefined ? 1 : 2) * 2 * batches * calls;
  if (events !== expected) throw new Error(`${events} audit events for ${expected / 2} calls (two a call: decision and end)`);
  if (awaited > 0) process.stdout.write(`  note: decide answered with a promise on ${awaited} calls (a step read the store)\n`);
} finally {
  await replica.close();
  upstream.close();
}
process.exit(0);
