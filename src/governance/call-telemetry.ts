/**
 * What operators see of a governed call besides its audit record: Prometheus metrics (Reins' own latency, the
 * upstream's, held calls, tokens and cost), the W3C trace context, and, when an OTLP endpoint is configured, one
 * OpenTelemetry span per call with the GenAI semantic conventions and Reins' decision (docs/observability.md).
 *
 * The pipeline calls it at four points: start (the call enters governance), decided (allowed or refused), the
 * hold's start and end, and ended (the audit record's end, audit-record.ts). Without a tracer nothing here
 * allocates beyond a number or two per call; the metrics are prom-client children found by a string key.
 *
 * Tracing: with a tracer, Reins' span is the child of the caller's `traceparent` (or the root of a new trace when
 * the caller sent none) and the upstream gets Reins' span as its parent. Without one, Reins is not a hop of the
 * trace: the caller's `traceparent` goes upstream unchanged (MCP and egress forward it, the LLM plane forwards every
 * header) and Reins starts no trace of its own, since nobody would record it.
 */
import { createTraceState, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Tracer } from '@opentelemetry/api';
import type { PriceTable } from '../budgets/prices.js';
import { globMatches } from '../budgets/prices.js';
import type { CallContext, CallTelemetryHooks } from './call-context.js';
import { formatTraceparent } from './trace-context.js';

export type { CallTrace } from './call-context.js';

type EndResult = Parameters<CallTelemetryHooks['ended']>[1];

/** The metrics a call ends in (app/metrics.ts registers them). */
export interface CallMetrics {
  governance(plane: string, provider: string, seconds: number): void;
  upstream(plane: string, provider: string, seconds: number): void;
  held(plane: string, outcome: string, seconds: number): void;
  parked(plane: string, delta: number): void;
  tokens(provider: string, model: string, type: 'input' | 'output' | 'cache_read' | 'cache_write', count: number): void;
  cost(provider: string, model: string, usd: number): void;
}

interface LlmFacts {
  provider: string;
  route: string;
  model: string | null;
  maxTokens: number | null;
}
interface McpFacts {
  server: string;
  tool: string;
}
interface EgressFacts {
  host: string;
  port: number;
  scheme: string;
  method: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyContext = CallContext<any, any>;

/**
 * The `model` label's values: a model id the price list knows (a built-in list price or a `prices` override, matched
 * by its glob), at most `perProvider` distinct ids per provider on this replica; anything else is `other`. Model
 * ids come from clients, so an unbounded label would let one client grow every scrape without limit.
 */
export class ModelLabels {
  private readonly labels = new Map<string, string>();
  private readonly known = new Map<string, number>();

  constructor(
    private readonly prices: PriceTable | null,
    private readonly perProvider = 100,
  ) {}

  label(provider: string, model: string | null): string {
    if (model === null || model === '') return 'none';
    const key = `${provider}\u0000${model}`;
    const found = this.labels.get(key);
    if (found !== undefined) return found;
    const listed = this.prices?.entries.some((e) => (e.provider === null || e.provider === provider) && globMatches(e.pattern, model)) ?? false;
    const count = this.known.get(provider) ?? 0;
    const label = listed && count < this.perProvider && model.length <= 200 ? model : 'other';
    if (label !== 'other') this.known.set(provider, count + 1);
    // Misses are remembered too, up to a bound: a client cycling through made-up ids is answered from the scan.
    if (label !== 'other' || this.labels.size < 10_000) this.labels.set(key, label);
    return label;
  }
}

/** `gen_ai.system` (and `gen_ai.provider.name`) of a provider: the semantic conventions' names. */
const GEN_AI_SYSTEM: Record<string, string> = { openai: 'openai', anthropic: 'anthropic', bedrock: 'aws.bedrock' };

/** `gen_ai.operation.name` of an LLM route (as policies name it: `chat/completions`, `messages`, `converse`). */
export function genAiOperation(route: string): string {
  if (route === 'chat/completions' || route === 'messages' || route.startsWith('responses') || route.startsWith('converse') || route.startsWith('invoke')) return 'chat';
  if (route === 'completions') return 'text_completion';
  if (route === 'embeddings') return 'embeddings';
  return route;
}

export class CallTelemetry implements CallTelemetryHooks {
  private readonly tracer: Tracer | null;

  constructor(
    private readonly options: {
      metrics?: CallMetrics;
      tracer?: Tracer | null;
      models?: ModelLabels;
      /** The LLM route as policies name it (llm-governance.ts policyRoute). */
      llmRoute?: (provider: string, route: string) => string;
    } = {},
  ) {
    this.tracer = options.tracer ?? null;
  }

  /** The call enters governance: its clock starts, and its trace (and span, when exporting). */
  start(ctx: AnyContext): void {
    ctx.startedAt = performance.now();
    const incoming = ctx.caller.trace;
    const tracer = this.tracer;
    if (tracer === null) {
      if (incoming) ctx.trace = { traceId: incoming.traceId, spanId: null, parentSpanId: incoming.spanId };
      return;
    }
    const parent = incoming
      ? trace.setSpanContext(ROOT_CONTEXT, {
          traceId: incoming.traceId,
          spanId: incoming.spanId,
          traceFlags: incoming.flags & 1,
          isRemote: true,
          ...(incoming.state ? { traceState: createTraceState(incoming.state) } : {}),
        })
      : ROOT_CONTEXT;
    const span = tracer.startSpan(this.spanName(ctx), { kind: SpanKind.CLIENT, attributes: this.startAttributes(ctx) }, parent);
    const sc = span.spanContext();
    ctx.span = span;
    ctx.trace = { traceId: sc.traceId, spanId: sc.spanId, parentSpanId: incoming?.spanId ?? null };
  }

  /** The headers that make Reins' span the upstream call's parent; undefined when Reins exports no span. */
  upstreamHeaders(ctx: AnyContext): Record<string, string> | undefined {
    const span = ctx.span;
    if (span === null) return undefined;
    const sc = span.spanContext();
    const headers: Record<string, string> = { traceparent: formatTraceparent(sc.traceId, sc.spanId, sc.traceFlags) };
    const state = ctx.caller.trace?.state;
    if (state) headers.tracestate = state;
    return headers;
  }

  /** Allowed or refused: Reins' own time, the hold's wait left out. */
  decided(ctx: AnyContext): void {
    if (ctx.startedAt === 0 || ctx.decidedAt !== 0) return;
    ctx.decidedAt = performance.now();
    this.options.metrics?.governance(ctx.plane.type, providerLabel(ctx), Math.max(0, ctx.decidedAt - ctx.startedAt - ctx.heldMs) / 1000);
  }

  /** The call is parked for a person: the held-calls gauge counts it until `holdEnded`. */
  holdStarted(ctx: AnyContext): number {
    this.options.metrics?.parked(ctx.plane.type, 1);
    return performance.now();
  }

  holdEnded(ctx: AnyContext, since: number, outcome: string): void {
    ctx.heldMs = performance.now() - since;
    const metrics = this.options.metrics;
    if (!metrics) return;
    metrics.parked(ctx.plane.type, -1);
    metrics.held(ctx.plane.type, outcome, ctx.heldMs / 1000);
  }

  /** The call is over (its audit record's end, `data` the event's data): upstream time, tokens, cost, the span. */
  ended(ctx: AnyContext, result: EndResult, outcome: string, data: Record<string, unknown>): void {
    const now = performance.now();
    const metrics = this.options.metrics;
    const llm = ctx.plane.type === 'llm' ? (ctx.call as LlmFacts) : null;
    const usage = data.usage as { inputTokens?: number; outputTokens?: number; cacheReadTokens?: number; cacheWriteTokens?: number } | null | undefined;
    const cost = typeof data.costUsd === 'number' ? data.costUsd : null;
    if (metrics) {
      if (ctx.decidedAt !== 0 && ctx.refusal === null && outcome !== 'refused') {
        metrics.upstream(ctx.plane.type, providerLabel(ctx), (now - ctx.decidedAt) / 1000);
      }
      if (llm && (usage || cost !== null)) {
        const model = this.options.models?.label(llm.provider, llm.model) ?? 'other';
        if (usage) {
          metrics.tokens(llm.provider, model, 'input', usage.inputTokens ?? 0);
          metrics.tokens(llm.provider, model, 'output', usage.outputTokens ?? 0);
          metrics.tokens(llm.provider, model, 'cache_read', usage.cacheReadTokens ?? 0);
          metrics.tokens(llm.provider, model, 'cache_write', usage.cacheWriteTokens ?? 0);
        }
        if (cost !== null) metrics.cost(llm.provider, model, cost);
      }
    }
    const span = ctx.span;
    if (span === null) return;
    ctx.span = null;
    const a: Attributes = {
      'reins.call_id': (data.callId as string | undefined) ?? ctx.callId ?? '',
      'reins.decision': ctx.decision?.outcome ?? (ctx.refusal ? 'deny' : 'allow'),
      'reins.tier': ctx.tier,
      'reins.outcome': outcome,
      'reins.end': result.end,
      'http.response.status_code': result.status,
    };
    const policy = ctx.decision?.decidingPolicy?.name;
    if (policy) a['reins.policy'] = policy;
    if (ctx.decision && ctx.decision.matched.length > 0) a['reins.policies.matched'] = ctx.decision.matched.map((m) => m.name);
    const refusal = ctx.refusal?.reason ?? (result.end === 'address_denied' ? 'address_denied' : null);
    if (refusal) a['reins.refusal.reason'] = refusal;
    if (ctx.held) {
      a['reins.held.entry_id'] = ctx.held.entryId;
      a['reins.held.outcome'] = ctx.held.outcome;
      a['reins.held_ms'] = Math.round(ctx.heldMs);
    }
    if (usage) {
      // The conventions' input tokens include the cached ones; Reins' usage counts them apart (priced apart).
      a['gen_ai.usage.input_tokens'] = (usage.inputTokens ?? 0) + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0);
      a['gen_ai.usage.output_tokens'] = usage.outputTokens ?? 0;
      if (usage.cacheReadTokens) a['gen_ai.usage.cache_read.input_tokens'] = usage.cacheReadTokens;
      if (usage.cacheWriteTokens) a['gen_ai.usage.cache_creation.input_tokens'] = usage.cacheWriteTokens;
    }
    if (result.responseModel) a['gen_ai.response.model'] = result.responseModel;
    if (cost !== null) a['reins.cost_usd'] = cost;
    span.setAttributes(a);
    if (outcome === 'error') span.setStatus({ code: SpanStatusCode.ERROR, message: result.end === 'upstream_unreachable' ? 'upstream unreachable' : `status ${result.status}` });
    if (outcome === 'error') span.setAttribute('error.type', result.end === 'upstream_unreachable' ? 'upstream_unreachable' : String(result.status));
    span.end();
  }

  private spanName(ctx: AnyContext): string {
    switch (ctx.plane.type) {
      case 'llm': {
        const c = ctx.call as LlmFacts;
        const op = genAiOperation(this.route(c));
        return c.model ? `${op} ${c.model}` : op;
      }
      case 'mcp':
        return `execute_tool ${(ctx.call as McpFacts).tool}`;
      default:
        return (ctx.call as EgressFacts).method;
    }
  }

  private route(c: LlmFacts): string {
    return this.options.llmRoute ? this.options.llmRoute(c.provider, c.route) : c.route.replace(/^\/v1\//, '').split('?')[0]!;
  }

  private startAttributes(ctx: AnyContext): Attributes {
    const caller = ctx.caller;
    const a: Attributes = { 'reins.plane': ctx.plane.type };
    if (caller.agentId !== '') a['reins.agent.id'] = caller.agentId;
    if (caller.developer) a['reins.developer.id'] = caller.developer.id;
    switch (ctx.plane.type) {
      case 'llm': {
        const c = ctx.call as LlmFacts;
        const system = GEN_AI_SYSTEM[c.provider] ?? c.provider;
        const route = this.route(c);
        a['gen_ai.system'] = system;
        a['gen_ai.provider.name'] = system;
        a['gen_ai.operation.name'] = genAiOperation(route);
        a['reins.llm.route'] = route;
        if (c.model) a['gen_ai.request.model'] = c.model;
        if (c.maxTokens !== null) a['gen_ai.request.max_tokens'] = c.maxTokens;
        break;
      }
      case 'mcp': {
        const c = ctx.call as McpFacts;
        a['gen_ai.operation.name'] = 'execute_tool';
        a['gen_ai.tool.name'] = c.tool;
        a['mcp.method.name'] = 'tools/call';
        a['reins.mcp.server'] = c.server;
        break;
      }
      default: {
        const c = ctx.call as EgressFacts;
        a['http.request.method'] = c.method;
        a['server.address'] = c.host;
        a['server.port'] = c.port;
        a['url.scheme'] = c.scheme;
      }
    }
    return a;
  }
}

/** The `provider` label: the LLM provider, the MCP server's name, nothing for egress (a host is not a bounded label). */
function providerLabel(ctx: AnyContext): string {
  switch (ctx.plane.type) {
    case 'llm':
      return (ctx.call as LlmFacts).provider;
    case 'mcp':
      return (ctx.call as McpFacts).server;
    default:
      return '';
  }
}
