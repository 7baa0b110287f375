/**
 * Engine event → observation item (docs/api.md, "Runtime sensor ingest"). The engine is Inspektor Gadget: one JSON object
 * per line from `ig run <gadget> -o json`. Today's shape (v0.55.1, the release the sensor is built against) nests the
 * process as `proc.{comm,pid}` and spells protocols `"proto":"TCP"`; the 2024 image gadgets (v0.33.0) had flat
 * `comm`/`pid` and `"proto":6`. Both are read (test/fixtures/ig/README.md names the sources).
 * Anything else (a truncated line, a log line, an unknown event, a missing field) is skipped and counted, never fatal.
 *
 * Imports only the ingest wire types from the server, type-only: the sensor is a separate program.
 */
import type { Observation, ObservationFamily } from '../runtime-guard/types.js';
import { selectorMatches, selectsEverything, type LabelSelector } from './label-selector.js';
import type { MatchRules } from './match-rules.js';

export const GADGETS = ['trace_dns', 'trace_tcp', 'trace_open', 'trace_exec'] as const;
export type Gadget = (typeof GADGETS)[number];

export const FAMILY_OF: Record<Gadget, ObservationFamily> = { trace_dns: 'dns', trace_tcp: 'network', trace_open: 'open', trace_exec: 'exec' };
const BEHAVIOR: Record<Gadget, string> = { trace_dns: 'dns-query', trace_tcp: 'tcp-connect', trace_open: 'file-open', trace_exec: 'process-exec' };

/** The observation policy each family is observed under (the four RuntimePolicies Reins keeps, deploy/README.md). */
export const ruleOf = (family: ObservationFamily): string => `reins-observe-${family}`;

/**
 * Why an event yields no observation. `ipv6`: the sensor observes IPv4 only before its 1.0 (spec Limits), counted
 * apart. `no-pod`: no Kubernetes enrichment (a host process outside any pod): nothing to attribute it to.
 * `namespace-excluded`: kube-system and kube-public are outside the observation policies. `not-observed`: a
 * known event that is not evidence (a TCP accept or close; a DNS packet in which the pod is the server).
 * `no-match`: outside the `match` rules of the family's observation policy.
 */
export const DROP_CAUSES = ['bad-json', 'unknown-event', 'missing-fields', 'ipv6', 'no-pod', 'namespace-excluded', 'not-observed', 'no-match'] as const;
export type DropCause = (typeof DROP_CAUSES)[number];

export interface AdapterSink {
  observe(o: Observation): void;
  drop(cause: DropCause): void;
}

export interface AdapterOptions {
  /** The sensor's node (NODE_NAME); every observation carries it, so a report covers one node. */
  node: string;
  sink: AdapterSink;
  /** Namespaces the observation policies leave out (spec "Observation item"). */
  excludedNamespaces?: readonly string[];
  /** How long a DNS question waits for its answer before it is reported without an address. */
  dnsAnswerWaitMs?: number;
  /** Unanswered DNS questions kept at most; beyond, the oldest is reported without an address at once. */
  maxPendingQuestions?: number;
  nowMs?: () => number;
}

type Json = Record<string, unknown>;

interface PendingQuestion {
  observation: Observation;
  sinceMs: number;
}

export class EventAdapter {
  private readonly node: string;
  private readonly sink: AdapterSink;
  private readonly excluded: Set<string>;
  private readonly waitMs: number;
  private readonly maxPending: number;
  private readonly nowMs: () => number;
  /** Per family, from the observation policies: the rule name and whether a namespace is covered (memoised per namespace). */
  private plan: Map<ObservationFamily, { rule: string; covers: (namespace: string) => boolean; match: MatchRules | null }> | null = null;
  /** DNS questions seen, waiting for the pod's own answer; insertion order = age. */
  private readonly pending = new Map<string, PendingQuestion>();

  constructor(options: AdapterOptions) {
    this.node = options.node;
    this.sink = options.sink;
    this.excluded = new Set(options.excludedNamespaces ?? ['kube-system', 'kube-public']);
    this.waitMs = options.dnsAnswerWaitMs ?? 5_000;
    this.maxPending = options.maxPendingQuestions ?? 10_000;
    this.nowMs = options.nowMs ?? Date.now;
  }

  /**
   * Follows the observation policies: each family's rule name, excluded namespaces and namespace label selector
   * (null: the defaults). `namespaceLabels` are the Namespaces' labels; a namespace not among them (created since
   * they were listed) is matched as a namespace without labels until the next list.
   */
  configure(
    plan: ReadonlyMap<ObservationFamily, { rule: string; excludedNamespaces: readonly string[]; namespaceSelector?: LabelSelector; match?: MatchRules | null }> | null,
    namespaceLabels: ReadonlyMap<string, Readonly<Record<string, string>>> | null = null,
  ): void {
    this.plan = plan
      ? new Map(
          [...plan].map(([f, p]) => {
            const excluded = new Set(p.excludedNamespaces);
            const selector = p.namespaceSelector && !selectsEverything(p.namespaceSelector) ? p.namespaceSelector : null;
            const memo = new Map<string, boolean>();
            const covers = (namespace: string): boolean => {
              let covered = memo.get(namespace);
              if (covered === undefined) {
                covered = !excluded.has(namespace) && (selector === null || selectorMatches(selector, namespaceLabels?.get(namespace) ?? {}));
                // Bounded: a node sees a limited set of namespaces, but a cluster may have many.
                if (memo.size >= 10_000) memo.clear();
                memo.set(namespace, covered);
              }
              return covered;
            };
            return [f, { rule: p.rule, covers, match: p.match ?? null }];
          }),
        )
      : null;
  }

  /** One line of engine output. */
  line(gadget: Gadget, text: string): void {
    const trimmed = text.trim();
    if (trimmed === '') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      this.sink.drop('bad-json');
      return;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      this.sink.drop('unknown-event');
      return;
    }
    this.event(gadget, parsed as Json);
  }

  event(gadget: Gadget, e: Json): void {
    switch (gadget) {
      case 'trace_dns':
        return this.dns(e);
      case 'trace_tcp':
        return this.tcp(e);
      case 'trace_open':
        return this.fileOrExec(e, 'trace_open');
      case 'trace_exec':
        return this.fileOrExec(e, 'trace_exec');
    }
  }

  /** DNS questions older than the wait (all of them with `all`, at the end of a replay) reported without an address. */
  expire(all = false): void {
    const cutoff = this.nowMs() - this.waitMs;
    for (const [key, q] of this.pending) {
      if (!all && q.sinceMs > cutoff) break;
      this.pending.delete(key);
      this.sink.observe(q.observation);
    }
  }

  get pendingQuestions(): number {
    return this.pending.size;
  }

  // ---- families ----

  private dns(e: Json): void {
    const qr = str(e.qr) ?? (typeof e.qr_raw === 'boolean' ? (e.qr_raw ? 'R' : 'Q') : undefined);
    const rawName = str(e.name);
    const src = obj(e.src);
    const dst = obj(e.dst);
    if ((qr !== 'Q' && qr !== 'R') || rawName === undefined || rawName === '') return this.sink.drop(qr === undefined && rawName === undefined ? 'unknown-event' : 'missing-fields');
    if (isV6(src) || isV6(dst) || str(e.qtype) === 'AAAA' || e.qtype_raw === 28) return this.sink.drop('ipv6');
    // The pod's own question leaves it (OUTGOING) and its own answer comes in (HOST); the other way round the pod
    // is the server answering someone else.
    const pkt = str(e.pkt_type);
    if (pkt !== undefined && ((qr === 'Q' && pkt === 'HOST') || (qr === 'R' && pkt === 'OUTGOING'))) return this.sink.drop('not-observed');
    const podSide = qr === 'Q' ? src : dst;
    const base = this.base(e, 'trace_dns', str(podSide?.addr) ?? '');
    if (typeof base === 'string') return this.sink.drop(base);
    // The name as the pod asked it: search-domain variants are separate questions, each its own observation.
    // Only the root label's dot of the wire form goes.
    base.destName = rawName.endsWith('.') && rawName.length > 1 ? rawName.slice(0, -1) : rawName;
    if (!this.matches('dns', base.destName, '', null)) return this.sink.drop('no-match');
    const key = `${str(e.netns_id) ?? num(e.netns_id) ?? base.podName}\u0001${str(e.id) ?? num(e.id) ?? ''}\u0001${rawName}\u0001${str(e.qtype) ?? num(e.qtype_raw) ?? ''}`;
    if (qr === 'Q') {
      this.pending.delete(key);
      this.pending.set(key, { observation: base, sinceMs: this.nowMs() });
      if (this.pending.size > this.maxPending) this.expireOldest();
      return;
    }
    const question = this.pending.get(key);
    if (question) this.pending.delete(key);
    const answered = question ? { ...question.observation, observedAt: base.observedAt } : base;
    answered.destIP = firstIPv4(e.addresses);
    this.sink.observe(answered);
  }

  private tcp(e: Json): void {
    const type = str(e.type);
    if (type === undefined) return this.sink.drop('unknown-event');
    if (type !== 'connect') return this.sink.drop('not-observed');
    const src = obj(e.src);
    const dst = obj(e.dst);
    if (isV6(src) || isV6(dst)) return this.sink.drop('ipv6');
    const destIP = str(dst?.addr);
    if (!destIP) return this.sink.drop('missing-fields');
    const base = this.base(e, 'trace_tcp', str(src?.addr) ?? '');
    if (typeof base === 'string') return this.sink.drop(base);
    if (!this.matches('network', '', destIP, num(dst?.port) ?? null)) return this.sink.drop('no-match');
    base.destIP = destIP;
    const error = str(e.error);
    if (error) base.result = error;
    this.sink.observe(base);
  }

  private fileOrExec(e: Json, gadget: 'trace_open' | 'trace_exec'): void {
    const target = gadget === 'trace_open' ? str(e.fname) : (str(e.exepath) || str(e.args)?.split(' ')[0]);
    if (!target) return this.sink.drop(e.fname === undefined && e.exepath === undefined && e.args === undefined ? 'unknown-event' : 'missing-fields');
    const base = this.base(e, gadget, '');
    if (typeof base === 'string') return this.sink.drop(base);
    if (!this.matches(base.family, target, '', null)) return this.sink.drop('no-match');
    if (gadget === 'trace_open') {
      base.destName = target;
    } else {
      // The binary executed is the process that acts from now on; the command line is what it was asked.
      base.subject = target;
      base.destName = (str(e.args) ?? target).slice(0, 1024);
    }
    const error = str(e.error);
    if (error) base.result = error;
    this.sink.observe(base);
  }

  /** Whether the family's policy reports this event (its `match` rules; no rules = every event). */
  private matches(family: ObservationFamily, name: string, destIP: string, port: number | null): boolean {
    const match = this.plan?.get(family)?.match;
    return !match || match({ name, destIP, port });
  }

  // ---- common fields ----

  /** The observation's common fields, or why there is none. */
  private base(e: Json, gadget: Gadget, podAddress: string): Observation | DropCause {
    const k8s = obj(e.k8s);
    // Flat 2024 shape and older builtin gadgets: `namespace`/`pod` at the top or `k8s.pod`.
    const namespace = str(k8s?.namespace) || str(e.namespace) || '';
    const podName = str(k8s?.podName) || str(k8s?.pod) || str(e.pod) || '';
    if (namespace === '' || podName === '') return 'no-pod';
    const family = FAMILY_OF[gadget];
    const policy = this.plan?.get(family);
    if (policy ? !policy.covers(namespace) : this.excluded.has(namespace)) return 'namespace-excluded';
    // A host-network pod's address is the node's: naming the pod is right, its address would mislead.
    const hostNetwork = k8s?.hostnetwork === true || k8s?.hostNetwork === true;
    const proc = obj(e.proc);
    const subject = (str(e.exepath) || str(proc?.comm) || str(e.comm) || '').slice(0, 4096);
    return {
      rule: policy?.rule ?? ruleOf(family),
      behavior: BEHAVIOR[gadget],
      subject,
      destIP: '',
      destName: '',
      count: 1,
      node: this.node,
      podName,
      podIP: hostNetwork || podAddress.includes(':') ? '' : podAddress,
      namespace,
      result: 'allowed',
      mode: 'monitor',
      observedAt: this.observedAt(e),
      family,
    };
  }

  /**
   * The event's own time, Unix seconds: `timestamp` is RFC 3339 with nanoseconds (with the host's offset under plain
   * `ig`) in 2024 and today; a number (nanoseconds, milliseconds or seconds) is read too, and `timestamp_raw` when
   * `timestamp` is missing; now when neither is there.
   */
  private observedAt(e: Json): number {
    const t = e.timestamp ?? e.timestamp_raw;
    if (typeof t === 'string') {
      const ms = Date.parse(t);
      if (Number.isFinite(ms)) return Math.floor(ms / 1000);
    } else if (typeof t === 'number' && Number.isFinite(t) && t > 0) {
      // Nanoseconds, else milliseconds, else seconds.
      return Math.floor(t > 1e17 ? t / 1e9 : t > 1e11 ? t / 1e3 : t);
    }
    return Math.floor(this.nowMs() / 1000);
  }

  private expireOldest(): void {
    const first = this.pending.entries().next();
    if (first.done) return;
    this.pending.delete(first.value[0]);
    this.sink.observe(first.value[1].observation);
  }
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
function num(v: unknown): number | undefined {
  return typeof v === 'number' ? v : undefined;
}
function obj(v: unknown): Json | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined;
}

function isV6(endpoint: Json | undefined): boolean {
  if (!endpoint) return false;
  if (endpoint.version === 6) return true;
  const addr = endpoint.addr;
  return typeof addr === 'string' && addr.includes(':');
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/**
 * The first IPv4 address of an answer: IG prints `addresses` as one comma-separated string (v0.33.0 and v0.55.1
 * alike); a list is read too, for a converter that splits it.
 */
export function firstIPv4(addresses: unknown): string {
  const list = typeof addresses === 'string' ? addresses.split(',') : Array.isArray(addresses) ? addresses : [];
  for (const a of list) {
    if (typeof a !== 'string') continue;
    const t = a.trim();
    if (IPV4.test(t)) return t;
  }
  return '';
}

export function isGadget(s: string): s is Gadget {
  return (GADGETS as readonly string[]).includes(s);
}
