/**
 * Puts a fresh Reins replica into the benchmark's state through its control-plane API, as an admin would:
 * an agent at T3 with a key, sixteen policies on top of the four built-in ones, and then proof that the gateway
 * answers the benchmark request and writes an audit event for every call.
 */
import { COMPLETION_BODY, REQUEST_BODY, type Target, looksLikeTheCompletion } from './payloads.js';
import { BENCH_POLICIES } from './policies.js';

export const BENCH_AGENT = 'bench/agent';

/** Why Reins cannot be measured (yet): the run reports it and goes on with the other targets. */
export class ReinsNotReady extends Error {
  override name = 'ReinsNotReady';
}

export interface ReinsSetup {
  target: Target;
  /** Enabled policies that apply to LLM calls, as the server lists them (null when it has no list route). */
  llmPolicies: number | null;
  /** Problems that make the figures not count; empty when Reins runs as the issue asks. */
  caveats: string[];
  /** Things worth knowing that do not change the figures. */
  notes: string[];
}

async function call(base: string, admin: string, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${admin}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, text: await res.text() };
}

function expect(what: string, r: { status: number; text: string }, ok: number[]): void {
  if (!ok.includes(r.status)) throw new ReinsNotReady(`${what} answered ${r.status}: ${r.text.slice(0, 300)}`);
}

export async function setUpReins(base: string, admin: string, options: { allowPartial: boolean }): Promise<ReinsSetup> {
  const caveats: string[] = [];
  const notes: string[] = [];
  const problem = (message: string) => {
    if (!options.allowPartial) throw new ReinsNotReady(message);
    caveats.push(message);
  };

  expect('POST /api/v1/identities', await call(base, admin, 'POST', '/api/v1/identities', { id: BENCH_AGENT, kind: 'agent' }), [200, 201]);
  expect(
    'PUT /api/v1/identities/autonomy-tier',
    await call(base, admin, 'PUT', `/api/v1/identities/autonomy-tier?id=${encodeURIComponent(BENCH_AGENT)}`, { tier: 'T3' }),
    [200],
  );
  const minted = await call(base, admin, 'POST', '/api/v1/tokens', { identityId: BENCH_AGENT, name: 'bench' });
  expect('POST /api/v1/tokens', minted, [200, 201]);
  const agentKey = (JSON.parse(minted.text) as { token: string }).token;

  for (const policy of BENCH_POLICIES) {
    const r = await call(base, admin, 'POST', '/api/v1/policies', policy);
    if (r.status === 404) {
      problem('POST /api/v1/policies answers 404: the policy API is not there yet, so Reins would run without the 16 bench policies');
      break;
    }
    expect(`POST /api/v1/policies (${policy.name})`, r, [200, 201]);
  }
  const llmPolicies = await countLlmPolicies(base, admin);
  if (llmPolicies !== null && llmPolicies < 17) {
    problem(`only ${llmPolicies} enabled policies apply to llm (expected 17: 16 bench policies and autonomy-model-ceiling)`);
  }

  const target: Target = { name: 'reins', url: `${base}/llm/openai/v1/chat/completions`, headers: { authorization: `Bearer ${agentKey}` } };
  const calls = 5;
  for (let i = 0; i < calls; i++) {
    const res = await fetch(target.url, { method: 'POST', headers: { ...target.headers, 'content-type': 'application/json' }, body: REQUEST_BODY });
    const text = await res.text();
    if (res.status === 404) {
      throw new ReinsNotReady(`POST /llm/openai/v1/chat/completions answers 404: the LLM gateway is not wired into the app yet (${text.slice(0, 200)})`);
    }
    const wrong = looksLikeTheCompletion(res.status, text);
    if (wrong) throw new ReinsNotReady(`the gateway call does not return the upstream's completion: ${wrong}`);
    if (i === 0 && text !== COMPLETION_BODY) notes.push('the completion body came back changed, not byte for byte');
  }

  const audited = await countAuditEvents(base, admin);
  if (audited === null) problem('GET /api/v1/audit-events is not there: cannot prove every call writes an audit event');
  else if (audited < calls) problem(`${calls} gateway calls left ${audited} llm audit events for ${BENCH_AGENT}: audit is not on for every call`);

  return { target, llmPolicies, caveats, notes };
}

async function countLlmPolicies(base: string, admin: string): Promise<number | null> {
  const r = await call(base, admin, 'GET', '/api/v1/policies');
  if (r.status !== 200) return null;
  const body = JSON.parse(r.text) as { items?: { enabled?: boolean; appliesTo?: string[] }[] } | { enabled?: boolean; appliesTo?: string[] }[];
  const items = Array.isArray(body) ? body : (body.items ?? []);
  return items.filter((p) => p.enabled !== false && (p.appliesTo ?? []).includes('llm')).length;
}

/**
 * Every LLM call of the bench agent between two instants, by its decision event (`llm.request`; its end event,
 * `llm.request_end`, is not counted), or null without the audit route. It counts by time windows small enough to fit one page (a window with more than 500 events is split in two) instead of
 * following `nextCursor`: the list orders by the text form of the id, so its cursor pages skip events.
 */
export async function countAllAuditEvents(base: string, admin: string, from: Date, to: Date): Promise<number | null> {
  const count = async (a: number, b: number): Promise<number | null> => {
    const query = `type=llm&action=llm.request&identity=${encodeURIComponent(BENCH_AGENT)}&limit=500&since=${new Date(a).toISOString()}&until=${new Date(b).toISOString()}`;
    const r = await call(base, admin, 'GET', `/api/v1/audit-events?${query}`);
    if (r.status !== 200) return null;
    const body = JSON.parse(r.text) as { items: unknown[]; nextCursor: string | null };
    if (body.nextCursor === null) return body.items.length;
    if (b - a <= 1) return null; // more than 500 events in one millisecond: cannot count this way
    const mid = Math.floor((a + b) / 2);
    const left = await count(a, mid);
    const right = await count(mid, b);
    return left === null || right === null ? null : left + right;
  };
  return count(from.getTime(), to.getTime() + 1);
}

/**
 * Waits until Reins' gauge of audit events waiting to be written (`reins_audit_queue_events` on /metrics) reads 0;
 * returns what it last read (0 once drained), or null when the gauge could not be read.
 */
export async function auditQueueDrained(base: string, timeoutMs: number): Promise<number | null> {
  let queued: number | null = null;
  for (const until = Date.now() + timeoutMs; ; ) {
    const r = await fetch(`${base}/metrics`);
    const m = /^reins_audit_queue_events (\S+)$/m.exec(await r.text());
    queued = m ? Number(m[1]) : null;
    if (queued === null || queued === 0 || Date.now() > until) return queued;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** LLM audit events of the bench agent; audit writes may trail the answer by a moment, so it asks a few times. */
export async function countAuditEvents(base: string, admin: string, atLeast = 5): Promise<number | null> {
  let count = 0;
  for (let attempt = 0; attempt < 10; attempt++) {
    const r = await call(base, admin, 'GET', `/api/v1/audit-events?type=llm&action=llm.request&identity=${encodeURIComponent(BENCH_AGENT)}&limit=500`);
    if (r.status === 404) return null;
    if (r.status !== 200) throw new ReinsNotReady(`GET /api/v1/audit-events answered ${r.status}: ${r.text.slice(0, 200)}`);
    count = (JSON.parse(r.text) as { items: unknown[] }).items.length;
    if (count >= atLeast) return count;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return count;
}
