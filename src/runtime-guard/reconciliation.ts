/**
 * The reconciliation engine: per workload, the distinct AI provider destinations the kernel saw it reach
 * (connections and DNS resolutions from the node sensor), next to what the gateway governed. A pure
 * function over plain data; the README in this folder states every rule and why.
 */
import { isIpv6, normalizeHost } from './addresses.js';
import {
  buildFactsIndex,
  Classifier,
  classifierFor,
  factsKey,
  NOT_A_FINDING,
  sameFacts,
  sameOwners,
  type AddressInfo,
  type AskedNames,
  type FactsKey,
  type FindingClass,
  type NameInfo,
} from './classify.js';
import type {
  ClusterFacts,
  Destination,
  GovernedCall,
  Observation,
  ReconcileInput,
  ReconciliationResult,
  ReconciliationRow,
  Rung,
  WindowSuppressReason,
} from './types.js';
import type { WorkloadRef } from './workload.js';

export { groupObservations } from './observations.js';

/**
 * Cluster facts older than this stand the network detector down: pod and Service addresses get reused,
 * so stale facts would both miss in-cluster peers (false findings) and misname external ones. Two
 * minutes, the spec's own freshness window for node status; an informer stamps `fetchedAtUnix` on every
 * successful list, watch event or bookmark, so a healthy one stays well inside it.
 */
export const CLUSTER_FACTS_MAX_AGE_SECONDS = 120;

/**
 * Egress-NAT auto-detect. When the network layer sees translated addresses, the pods' DNS answers name
 * real provider addresses while every connection goes to one or two gateway addresses that no answer
 * ever gave. The detector fires, for the whole window and the whole cluster, when:
 * - pods that made external connections resolved at least EGRESS_NAT_MIN_RESOLVED_NAMES distinct
 *   public names to external addresses, and
 * - all external connections in the cluster went to at most EGRESS_NAT_MAX_TRANSLATED_ADDRESSES
 *   distinct addresses, none of which appears in any DNS answer of the window.
 * Cluster-wide on purpose: one pod cannot make it fire while other workloads reach answered addresses,
 * so a workload cannot hide its own connections by imitating NAT. DNS findings stay counted either way.
 */
export const EGRESS_NAT_MIN_RESOLVED_NAMES = 5;
export const EGRESS_NAT_MAX_TRANSLATED_ADDRESSES = 2;

export const RUNG_CONFIDENCE: Readonly<Record<Rung, number>> = { R0: 0.95, R2: 0.98, R6: 0 };

// ---- Pass 1: observations grouped per pod. ----

/**
 * A pod's observations in the window, as handed in (no per-pod aggregate: every rule below sums counts and
 * unites sets, so recording each observation gives what recording their sums would). Names and addresses are
 * classified where they are read, through the classifier's memos: those maps are small (distinct names and
 * addresses), while arrays parallel to these would be allocated anew per pod and per answer.
 */
interface PodBucket {
  /**
   * The pod's `dns` and `network` observations as two lists threaded through the input by index (`Reconciler.next`,
   * -1 ends a list): one typed array per answer instead of two growing arrays per pod.
   */
  dnsHead: number;
  dnsTail: number;
  networkHead: number;
  networkTail: number;
  /** The pod made a connection to an external address (egress-NAT detection). */
  external: boolean;
}

interface WorkloadBucket {
  ref: WorkloadRef;
  pods: PodBucket[];
}

// ---- Pass 2: destinations per workload. ----

/** Destination identities: a name, a search-domain variant's real name, a connection suppressed by a stand-down. */
const KEY_NAME = 0;
const KEY_VARIANT = 1;
const KEY_WINDOW = 2;
type KeyKind = typeof KEY_NAME | typeof KEY_VARIANT | typeof KEY_WINDOW;

interface DestinationAggregate {
  /** With destName, the identity; ordered as the prefixes `name` < `variant` < `window` of the identity's key. */
  keyKind: KeyKind;
  destName: string;
  rung: Rung;
  cls: FindingClass;
  connections: number;
  resolutions: number;
  /** Behaviors are a set, nearly always of one value: the first inline ('' for none), a Set (of all of them) once a second arrives. */
  behaviorFirst: string;
  behaviorMore: Set<string> | null;
  /** Connections per address: the first address inline, a Map once there is a second. */
  firstAddress: string;
  firstAddressCount: number;
  addressCounts: Map<string, number> | null;
  /** Filled when the row is assembled. */
  destIP: string;
  group: number;
}

interface GovernedIndex {
  /** Lower-cased identity id to its calls in the window. */
  byIdentity: Map<string, { total: number; egressHosts: Map<string, number> }>;
}

function eventCount(raw: number): number {
  return Number.isFinite(raw) && raw >= 1 ? Math.floor(raw) : 1;
}

function factsUsable(facts: ClusterFacts | null, nowUnix: number): boolean {
  return facts !== null && facts.complete && nowUnix - facts.fetchedAtUnix <= CLUSTER_FACTS_MAX_AGE_SECONDS;
}

/**
 * Identity ids lower-cased and egress hosts normalized, memoised across calls (a day of calls has a few thousand
 * distinct ones); dropped whole when they outgrow their bound.
 */
const lowerCased = new Map<string, string>();
const normalizedHosts = new Map<string, string>();
const MAX_CALL_MEMO = 100_000;

function memo(map: Map<string, string>, raw: string, compute: (raw: string) => string): string {
  let value = map.get(raw);
  if (value === undefined) {
    if (map.size >= MAX_CALL_MEMO) map.clear();
    map.set(raw, (value = compute(raw)));
  }
  return value;
}

const toLower = (s: string): string => s.toLowerCase();

function indexGovernedCalls(calls: readonly GovernedCall[], start: number, end: number): GovernedIndex {
  const byIdentity = new Map<string, { total: number; egressHosts: Map<string, number> }>();
  for (const call of calls) {
    if (call.atUnix < start || call.atUnix > end || !call.identityId) continue;
    const id = memo(lowerCased, call.identityId, toLower);
    let entry = byIdentity.get(id);
    if (!entry) byIdentity.set(id, (entry = { total: 0, egressHosts: new Map() }));
    // A caller may pass calls already summed per (type, identity, host): the store aggregates them in SQL.
    const calls = call.count === undefined ? 1 : eventCount(call.count);
    entry.total += calls;
    if (call.type === 'egress' && call.host) {
      const host = memo(normalizedHosts, call.host, normalizeHost);
      entry.egressHosts.set(host, (entry.egressHosts.get(host) ?? 0) + calls);
    }
  }
  return { byIdentity };
}

/**
 * The name-based join: a governed call belongs to the workload whose namespace and name equal the
 * call's identity id `<namespace>/<name>` (compared case-insensitively). A heuristic, never a binding.
 */
export function joinIdentityId(namespace: string, name: string): string {
  return `${namespace}/${name}`.toLowerCase();
}

/** A class with the stand-down's reason, one object per (kind, reason). */
const windowClasses = new Map<string, FindingClass>();
function windowClass(kind: FindingClass['kind'], reason: WindowSuppressReason): FindingClass {
  const key = `${kind}\u0000${reason}`;
  let cls = windowClasses.get(key);
  if (cls === undefined) windowClasses.set(key, (cls = { kind, suppressReason: reason }));
  return cls;
}

/** An unknown external address with no name: still a real, counted finding. */
const UNNAMED_EXTERNAL: FindingClass = { kind: 'provider', suppressReason: '' };
const NO_ADDRESS: AddressInfo = { factsName: undefined, cls: undefined, external: false, unattributed: '', unattributedRung: 'R6' };

/** DNS evidence whose answer is an address of the service's own Service: the governed shape (spec "service-gateway"). */
const SERVICE_GATEWAY: FindingClass = { kind: 'internal', suppressReason: 'service-gateway' };

/**
 * The rows of earlier answers, handed out again for the workloads whose input did not change. A workload's row reads
 * only its pods' observations (in order, with their counts), its ref, its governed calls, and what is the same for
 * every row: the classifier (one per facts snapshot), the egress plane's presence and the window's stand-down. Its
 * observations come from an ObservationIndex, whose slot objects keep every field but `count` and `observedAt` for
 * their life (the engine reads observedAt only to keep a row in the window), so "the same objects with the same
 * counts" is the same input. Between two answers a second apart a day's window changes the sums of a few slots, so
 * nearly every row is reused: at 20,000 workloads the engine then costs its first pass and these comparisons.
 *
 * The memo keeps its own classifier (`classifierFor`). When the facts change (a pod added or deleted, which a large
 * cluster does every few seconds) the next one is the previous one carried over (`Classifier.successor`): rows stay
 * valid unless their pods' workloads changed (their refs and observations are compared as always) or they read an
 * address whose class changed, and those are rebuilt. A change to what names are classified by (the Services' names,
 * the cluster domain, the search domains) starts afresh.
 *
 * Rows handed out are shared with later answers: nobody may change them (the routes only serialize them).
 * Observations a caller builds afresh for every call never match (a new object is a new input).
 */
export class RowMemo {
  /** The classifier the rows were built with (or carried over to), and the answer's settings they were built for. */
  private classifier: Classifier | null = null;
  private egressPlaneEnabled = false;
  private windowReason: WindowSuppressReason | null = null;
  /** The classifier of the last facts handed to `classifierFor`, and those facts. */
  private latest: Classifier | null = null;
  private latestKey: FactsKey | null = null;
  /** Addresses whose class changed since the rows were last checked (classifiers carried over in between). */
  private changed = new Set<string>();
  /** Set when a classifier was started afresh since the rows were built: they are all dropped. */
  private restarted = false;
  /** By the classifier's workload number. */
  readonly entries: Array<MemoEntry | undefined> = [];
  /** Per entry, the answer that last checked it (`answers`), so entries no answer checked can be dropped. */
  private readonly checkedAt: number[] = [];
  private answers = 0;

  /** The classifier for `facts`: the last one while they are the same, else the last one carried over, else a new one. */
  classifierFor(facts: ClusterFacts): Classifier {
    const key = factsKey(facts);
    if (this.latest !== null && this.latestKey !== null && sameFacts(this.latestKey, key)) {
      this.latest.trim();
      return this.latest;
    }
    const index = buildFactsIndex(facts);
    const before = this.latestKey;
    const ownersUnchanged = before !== null && sameOwners(before, key);
    let next = this.latest?.successor(index, this.changed, ownersUnchanged) ?? null;
    if (next === null) {
      next = new Classifier(index);
      this.restarted = true;
    }
    this.latest = next;
    this.latestKey = key;
    return next;
  }

  /** Builds the classifier for `facts` ahead of an answer (off the request path): its pods resolved, the workloads listed. */
  prepare(facts: ClusterFacts): void {
    this.classifierFor(facts).clusterWorkloads();
  }

  /**
   * Before an answer's rows: forgets every row when anything all rows read has changed. Returns the addresses whose
   * class changed since the rows were built (rows reading one are rebuilt), null when none did.
   */
  begin(classifier: Classifier, egressPlaneEnabled: boolean, windowReason: WindowSuppressReason | null): ReadonlySet<string> | null {
    this.answers += 1;
    const carried = classifier === this.latest && !this.restarted;
    if (classifier === this.classifier && egressPlaneEnabled === this.egressPlaneEnabled && windowReason === this.windowReason) return null;
    if (carried && this.classifier !== null && egressPlaneEnabled === this.egressPlaneEnabled && windowReason === this.windowReason) {
      this.classifier = classifier;
      return this.changed.size > 0 ? this.changed : null;
    }
    this.classifier = classifier;
    this.egressPlaneEnabled = egressPlaneEnabled;
    this.windowReason = windowReason;
    this.entries.length = 0;
    this.checkedAt.length = 0;
    this.changed.clear();
    this.restarted = false;
    return null;
  }

  /** A row checked by this answer (reused or rebuilt). */
  checked(workload: number): void {
    this.checkedAt[workload] = this.answers;
  }

  /**
   * After an answer's rows. When addresses had changed, the rows no answer checked against them (workloads without
   * observations in this window) are dropped; the changes are then accounted for.
   */
  end(changed: ReadonlySet<string> | null): void {
    if (changed === null) return;
    for (let w = 0; w < this.entries.length; w++) {
      if (this.entries[w] !== undefined && this.checkedAt[w] !== this.answers) this.entries[w] = undefined;
    }
    this.changed.clear();
  }
}

interface MemoEntry {
  ref: WorkloadRef;
  /** Per pod: POD_MARK, then its DNS observations and counts, NETWORK_MARK, its network observations and counts. */
  signature: unknown[];
  governedTotal: number;
  /** The identity's egress calls per host, flattened: host, count, host, count. */
  governedHosts: Array<string | number>;
  row: ReconciliationRow;
}

const POD_MARK = Symbol('pod');
const NETWORK_MARK = Symbol('network');

function sameGoverned(entry: MemoEntry, joined: { total: number; egressHosts: Map<string, number> } | undefined): boolean {
  if (joined === undefined) return entry.governedTotal === -1;
  if (entry.governedTotal !== joined.total || entry.governedHosts.length !== joined.egressHosts.size * 2) return false;
  let k = 0;
  for (const [host, count] of joined.egressHosts) {
    if (entry.governedHosts[k] !== host || entry.governedHosts[k + 1] !== count) return false;
    k += 2;
  }
  return true;
}

class Reconciler implements AskedNames {
  /** The input, and the lists threaded through it (see `PodBucket`). */
  private observations: readonly Observation[] = [];
  private next = new Int32Array(0);
  /** DNS observations whose answer is IPv6: they give no destIP (spec "Limits"). */
  private noAnswer: Set<number> | null = null;

  /** A DNS observation's answer: its destIP, '' when it has none or it is IPv6. */
  private answerOf(i: number): string {
    return this.noAnswer !== null && this.noAnswer.has(i) ? '' : this.observations[i]!.destIP;
  }

  /** Per pod (by `PodEntry.id`): its observations, null for the service's own pods, undefined before its first one. */
  private readonly buckets: Array<PodBucket | null | undefined> = [];
  /** Per workload (by the classifier's number): its pods' observations; holes for workloads without a row. */
  private readonly workloads: Array<WorkloadBucket | undefined> = [];
  /** External addresses connected to, cluster-wide (egress-NAT detection). */
  private readonly connected = new Set<string>();
  // The workload being assembled (pass 2): its destinations and, when a fold needs it, the names it asked as is.
  private current: WorkloadBucket | null = null;
  private bare: Set<string> | null = null;
  private readonly names = new Map<string, DestinationAggregate>();
  private readonly variants = new Map<string, DestinationAggregate>();
  private readonly windowed = new Map<string, DestinationAggregate>();
  /** Per pod of the current workload (by index), its DNS answers; all of them merged (see `answeredName`). */
  private readonly podAnswers: Array<Map<string, NameInfo> | undefined> = [];
  private workloadAnswers: Map<string, NameInfo> | undefined = undefined;
  /** The current workload's aggregates in creation order, and the pool they come from (`used` of it taken). */
  private readonly aggregates: DestinationAggregate[] = [];
  private readonly pool: DestinationAggregate[] = [];
  private used = 0;

  constructor(private readonly c: Classifier) {}

  // The last observation's pod: observations usually come pod by pod (ObservationIndex.aggregate), so most find
  // their pod with three string comparisons.
  private lastNamespace = '';
  private lastPodName = '';
  private lastPodIP = '';
  private lastBucket: PodBucket | null | undefined = undefined;

  private podBucket(namespace: string, podName: string, podIP: string): PodBucket | null {
    if (this.lastBucket !== undefined && namespace === this.lastNamespace && podName === this.lastPodName && podIP === this.lastPodIP) {
      return this.lastBucket;
    }
    const bucket = this.findPodBucket(namespace, podName, podIP);
    this.lastNamespace = namespace;
    this.lastPodName = podName;
    this.lastPodIP = podIP;
    this.lastBucket = bucket;
    return bucket;
  }

  private findPodBucket(namespace: string, podName: string, podIP: string): PodBucket | null {
    const entry = this.c.pod(namespace, podName, podIP, podName !== '' ? podName : `ip:${podIP}`);
    let bucket = this.buckets[entry.id];
    if (bucket === undefined) {
      const ref = entry.ref;
      bucket = null;
      if (ref !== null) {
        let workload = this.workloads[entry.workload];
        if (workload === undefined) this.workloads[entry.workload] = workload = { ref, pods: [] };
        // A confirmed attribution outranks an unconfirmed one (an inferred owner), whatever the order.
        else if (ref.attributionConfirmed && !workload.ref.attributionConfirmed) workload.ref = ref;
        bucket = { dnsHead: -1, dnsTail: -1, networkHead: -1, networkTail: -1, external: false };
        workload.pods.push(bucket);
      }
      this.buckets[entry.id] = bucket;
    }
    return bucket;
  }

  /** Pass 1: each observation in the window to its pod, its name or address classified (memoised lookups). */
  ingest(observations: readonly Observation[], start: number, end: number): void {
    const c = this.c;
    this.observations = observations;
    const next = (this.next = new Int32Array(observations.length));
    for (let i = 0; i < observations.length; i++) {
      const o = observations[i]!;
      const family = o.family;
      if (family !== 'dns' && family !== 'network') continue;
      if (!(o.observedAt >= start && o.observedAt <= end)) continue;
      // Spec "Limits" (address family): IPv6 traffic yields no row and no marker. A connection to an IPv6 address
      // is dropped before it can make a row; a DNS answer whose first address is IPv6 gives no destIP.
      const v6 = isIpv6(o.destIP);
      if (v6 && family === 'network') continue;
      // The pod first: its workload gets a row for any observation, even one that names nothing.
      const pod = this.podBucket(o.namespace, o.podName, o.podIP);
      if (pod === null) continue;
      next[i] = -1;
      if (family === 'dns') {
        if (v6) (this.noAnswer ??= new Set()).add(i);
        if (pod.dnsTail === -1) pod.dnsHead = i;
        else next[pod.dnsTail] = i;
        pod.dnsTail = i;
      } else {
        const ip = o.destIP;
        if (ip === '' && o.destName === '') continue;
        const address = ip === '' ? NO_ADDRESS : c.address(ip);
        if (pod.networkTail === -1) pod.networkHead = i;
        else next[pod.networkTail] = i;
        pod.networkTail = i;
        if (address.external) {
          this.connected.add(ip);
          pod.external = true;
        }
      }
    }
  }

  /** The egress-NAT auto-detect (see the constants above); returns the prose details when it fires. */
  detectEgressNat(): string | null {
    const connected = this.connected;
    // Decided by the connections alone in the common case: the rest of the test is asked only when they look like NAT.
    if (connected.size === 0 || connected.size > EGRESS_NAT_MAX_TRANSLATED_ADDRESSES) return null;
    const answered = new Set<string>();
    const resolvedNames = new Set<string>();
    for (const workload of this.workloads) {
      if (workload === undefined) continue;
      for (const pod of workload.pods) {
        for (let i = pod.dnsHead; i !== -1; i = this.next[i]!) {
          const ip = this.answerOf(i);
          if (ip === '') continue;
          answered.add(ip);
          if (!pod.external) continue;
          const info = this.c.raw(this.observations[i]!.destName);
          const cls = info.cls;
          if (cls !== NOT_A_FINDING && cls.kind !== 'provider' && cls.kind !== 'infra') continue;
          if (!this.c.isPublicLooking(info)) continue;
          if (this.c.address(ip).external) resolvedNames.add(info.name);
        }
      }
    }
    if (resolvedNames.size < EGRESS_NAT_MIN_RESOLVED_NAMES) return null;
    for (const ip of connected) if (answered.has(ip)) return null;
    const addresses = [...connected].sort().join(', ');
    return `pods resolved ${resolvedNames.size} distinct external names, yet every external connection went to ${addresses}, which no DNS answer gave`;
  }

  /** Every workload of the cluster facts gets a row, evidence or not (after the observed ones: those keep their ref). */
  addClusterWorkloads(): void {
    const refs = this.c.clusterWorkloads();
    const ids = this.c.clusterWorkloadIds();
    for (let i = 0; i < refs.length; i++) {
      const ref = refs[i]!;
      const known = this.workloads[ids[i]!];
      if (known === undefined) this.workloads[ids[i]!] = { ref, pods: [] };
      else if (ref.attributionConfirmed && !known.ref.attributionConfirmed) known.ref = ref;
    }
  }

  buildRows(governed: GovernedIndex, egressPlaneEnabled: boolean, windowReason: WindowSuppressReason | null, memo: RowMemo | null): ReconciliationRow[] {
    const rows: ReconciliationRow[] = [];
    const changed = memo === null ? null : memo.begin(this.c, egressPlaneEnabled, windowReason);
    for (let w = 0; w < this.workloads.length; w++) {
      const workload = this.workloads[w];
      if (workload === undefined) continue;
      const joined = governed.byIdentity.get(this.c.joinId(workload.ref));
      if (workload.pods.length === 0) {
        rows.push(quietRow(workload.ref, joined));
        continue;
      }
      if (memo === null) {
        rows.push(this.buildRow(workload, governed, egressPlaneEnabled, windowReason));
        continue;
      }
      memo.checked(w);
      const entry = memo.entries[w];
      if (
        entry !== undefined &&
        entry.ref === workload.ref &&
        sameGoverned(entry, joined) &&
        this.sameObservations(workload, entry.signature) &&
        (changed === null || !this.readsAny(workload, changed))
      ) {
        rows.push(entry.row);
        continue;
      }
      const row = this.buildRow(workload, governed, egressPlaneEnabled, windowReason);
      const governedHosts: Array<string | number> = [];
      if (joined !== undefined) for (const [host, count] of joined.egressHosts) governedHosts.push(host, count);
      memo.entries[w] = { ref: workload.ref, signature: this.signatureOf(workload), governedTotal: joined?.total ?? -1, governedHosts, row };
      rows.push(row);
    }
    memo?.end(changed);
    rows.sort(
      (a, b) =>
        b.bypassedDestinations - a.bypassedDestinations || b.m - a.m || (a.workloadKey < b.workloadKey ? -1 : a.workloadKey > b.workloadKey ? 1 : 0),
    );
    return rows;
  }

  /** Whether any observation of the workload reads one of `addresses` (a connection's destination, a DNS answer). */
  private readsAny(workload: WorkloadBucket, addresses: ReadonlySet<string>): boolean {
    const { observations, next } = this;
    for (const pod of workload.pods) {
      for (let i = pod.dnsHead; i !== -1; i = next[i]!) if (addresses.has(observations[i]!.destIP)) return true;
      for (let i = pod.networkHead; i !== -1; i = next[i]!) if (addresses.has(observations[i]!.destIP)) return true;
    }
    return false;
  }

  /** The workload's observations as RowMemo compares them. */
  private signatureOf(workload: WorkloadBucket): unknown[] {
    const { observations, next } = this;
    const signature: unknown[] = [];
    for (const pod of workload.pods) {
      signature.push(POD_MARK);
      for (let i = pod.dnsHead; i !== -1; i = next[i]!) signature.push(observations[i], observations[i]!.count);
      signature.push(NETWORK_MARK);
      for (let i = pod.networkHead; i !== -1; i = next[i]!) signature.push(observations[i], observations[i]!.count);
    }
    return signature;
  }

  /** Whether the workload's observations are those of `signature` (signatureOf), without building a new one. */
  private sameObservations(workload: WorkloadBucket, signature: unknown[]): boolean {
    const { observations, next } = this;
    let k = 0;
    for (const pod of workload.pods) {
      if (signature[k++] !== POD_MARK) return false;
      for (let i = pod.dnsHead; i !== -1; i = next[i]!) {
        const o = observations[i]!;
        if (signature[k] !== o || signature[k + 1] !== o.count) return false;
        k += 2;
      }
      if (signature[k++] !== NETWORK_MARK) return false;
      for (let i = pod.networkHead; i !== -1; i = next[i]!) {
        const o = observations[i]!;
        if (signature[k] !== o || signature[k + 1] !== o.count) return false;
        k += 2;
      }
    }
    return k === signature.length;
  }

  /**
   * The names the current workload asked as is (normalized DNS questions of all its pods). A method, not a closure
   * per reconciliation: the optimised `fold` keeps calling one target.
   */
  bareNames(): ReadonlySet<string> {
    if (this.bare === null) {
      this.bare = new Set<string>();
      for (const pod of this.current!.pods) {
        for (let i = pod.dnsHead; i !== -1; i = this.next[i]!) this.bare.add(this.c.raw(this.observations[i]!.destName).name);
      }
    }
    return this.bare;
  }

  /**
   * The aggregate of one destination identity of the current workload. Aggregates live only while their workload's
   * row is built, so they come from a pool reused from workload to workload (with the three maps): a large answer
   * would otherwise allocate several objects per destination that the collector must trace and free.
   */
  private record(keyKind: KeyKind, destName: string, rung: Rung, cls: FindingClass, connections: number, resolutions: number, behavior: string, ip: string): void {
    const map = keyKind === KEY_NAME ? this.names : keyKind === KEY_VARIANT ? this.variants : this.windowed;
    let dest = map.get(destName);
    if (dest === undefined) {
      if (this.used < this.pool.length) dest = this.pool[this.used]!;
      else this.pool.push((dest = newAggregate()));
      this.used += 1;
      dest.keyKind = keyKind;
      dest.destName = destName;
      dest.rung = rung;
      dest.cls = cls;
      dest.connections = 0;
      dest.resolutions = 0;
      dest.behaviorFirst = '';
      dest.behaviorMore = null;
      dest.firstAddress = '';
      dest.firstAddressCount = 0;
      dest.addressCounts = null;
      dest.destIP = '';
      dest.group = 0;
      map.set(destName, dest);
      this.aggregates.push(dest);
    } else if (rung !== dest.rung || cls !== dest.cls) {
      if (RUNG_CONFIDENCE[rung] > RUNG_CONFIDENCE[dest.rung] || (rung === dest.rung && classOutranks(cls, dest.cls))) {
        // Resolution only upgrades: the most confident identity seen in the window decides.
        dest.rung = rung;
        dest.cls = cls;
      }
    }
    dest.connections += connections;
    dest.resolutions += resolutions;
    if (behavior !== '' && behavior !== dest.behaviorFirst) {
      if (dest.behaviorFirst === '') dest.behaviorFirst = behavior;
      else (dest.behaviorMore ??= new Set([dest.behaviorFirst])).add(behavior);
    }
    if (ip !== '' && connections > 0) {
      if (dest.addressCounts !== null) dest.addressCounts.set(ip, (dest.addressCounts.get(ip) ?? 0) + connections);
      else if (dest.firstAddress === '' || dest.firstAddress === ip) {
        dest.firstAddress = ip;
        dest.firstAddressCount += connections;
      } else {
        dest.addressCounts = new Map([
          [dest.firstAddress, dest.firstAddressCount],
          [ip, connections],
        ]);
      }
    }
  }

  private buildRow(
    workload: WorkloadBucket,
    governed: GovernedIndex,
    egressPlaneEnabled: boolean,
    windowReason: WindowSuppressReason | null,
  ): ReconciliationRow {
    this.current = workload;
    this.bare = null;
    this.releaseAggregates();
    const c = this.c;

    const pods = workload.pods;
    const observations = this.observations;
    const next = this.next;
    this.podAnswers.length = 0;
    this.workloadAnswers = undefined;

    for (let podIndex = 0; podIndex < pods.length; podIndex++) {
      const pod = pods[podIndex]!;
      for (let i = pod.dnsHead; i !== -1; i = next[i]!) {
        const o = observations[i]!;
        const info = c.raw(o.destName);
        if (info.name === '') continue;
        const folded = c.fold(info, this);
        if (folded.cls === NOT_A_FINDING) continue;
        let cls = folded.cls;
        // A provider (or infrastructure) name answered with an address of the service's own Service: the team
        // rewrote the name to the gateway, the governed shape (spec: "by IP or resolved name").
        if (!folded.variant && (cls.kind === 'provider' || cls.kind === 'infra')) {
          const answer = this.answerOf(i);
          if (answer !== '' && c.address(answer).cls?.suppressReason === 'service-gateway') cls = SERVICE_GATEWAY;
        }
        this.record(folded.variant ? KEY_VARIANT : KEY_NAME, folded.destName, 'R0', cls, 0, eventCount(o.count), o.behavior, '');
      }

      for (let i = pod.networkHead; i !== -1; i = next[i]!) {
        const o = observations[i]!;
        const ip = o.destIP;
        const address = ip === '' ? NO_ADDRESS : c.address(ip);
        let destName: string;
        let rung: Rung;
        let cls: FindingClass;
        if (address.factsName !== undefined && address.cls) {
          destName = address.factsName;
          rung = 'R2';
          cls = address.cls;
        } else {
          const sensorName = c.raw(o.destName);
          let name: NameInfo | undefined = sensorName.name !== '' ? sensorName : this.answeredName(podIndex, ip);
          let nameClass = name === undefined ? NOT_A_FINDING : name.cls;
          // A special address (IMDS, link-local, NodeLocal DNS) keeps its own class, and takes a name only
          // when the name is of the same kind: a provider name answered for 169.254.169.254 must not turn
          // a metadata request into a counted finding, nor hide one.
          if (address.cls && (nameClass === NOT_A_FINDING || nameClass.kind !== address.cls.kind)) {
            name = undefined;
            nameClass = NOT_A_FINDING;
          }
          if (name !== undefined) {
            destName = name.name;
            rung = 'R0';
            if (address.cls) cls = address.cls;
            else if (nameClass === NOT_A_FINDING) continue;
            // `in-cluster` means in-cluster addresses: an external address stays external whatever an in-cluster
            // name (a headless or ExternalName Service, say) answered it, so it is classified by the address.
            else if (nameClass.kind === 'internal' && ip !== '') cls = UNNAMED_EXTERNAL;
            else cls = nameClass;
          } else {
            if (ip === '') continue;
            destName = address.unattributed;
            rung = address.unattributedRung;
            // No identity: an external address is still a real, counted finding.
            cls = address.cls ?? UNNAMED_EXTERNAL;
          }
        }
        if (windowReason !== null && cls.kind !== 'imds') {
          // A thinner window, not a cleaner one: connection evidence stays listed, suppressed, apart from
          // the DNS evidence of the same name, which the stand-down does not touch.
          this.record(KEY_WINDOW, destName, rung, windowClass(cls.kind, windowReason), eventCount(o.count), 0, o.behavior, ip);
        } else {
          this.record(KEY_NAME, destName, rung, cls, eventCount(o.count), 0, o.behavior, ip);
        }
      }
    }

    const ref = workload.ref;
    const joined = governed.byIdentity.get(c.joinId(ref));
    const aggregates = this.aggregates;
    let bypassedDestinations = 0;
    let m = 0;
    let unsuppressed = 0;
    let unsuppressedConnectionBacked = 0;
    for (const dest of aggregates) {
      dest.destIP = dest.addressCounts !== null ? pickAddress(dest.addressCounts) : dest.firstAddress;
      dest.group = destinationGroup(dest.cls);
      if (dest.cls.suppressReason === '') {
        unsuppressed += 1;
        if (dest.connections > 0) unsuppressedConnectionBacked += 1;
        if (dest.cls.kind === 'provider') {
          bypassedDestinations += 1;
          m += dest.connections + dest.resolutions;
        }
      }
    }
    if (aggregates.length > 1) aggregates.sort(compareDestinations);
    const out: Destination[] = new Array(aggregates.length);
    for (let i = 0; i < aggregates.length; i++) {
      const dest = aggregates[i]!;
      const destIP = dest.destIP;
      let governedCalls = 0;
      if (egressPlaneEnabled && joined) {
        governedCalls = (joined.egressHosts.get(dest.destName) ?? 0) + (destIP !== '' ? (joined.egressHosts.get(destIP) ?? 0) : 0);
      }
      out[i] = {
        destName: dest.destName,
        destIP,
        source: dest.connections > 0 ? 'network' : 'dns',
        behaviors: dest.behaviorMore !== null ? [...dest.behaviorMore].sort() : behaviorList(dest.behaviorFirst),
        count: dest.connections > 0 ? dest.connections : dest.resolutions,
        governedCalls,
        rung: dest.rung,
        confidence: RUNG_CONFIDENCE[dest.rung],
        kind: dest.cls.kind,
        suppressed: dest.cls.suppressReason !== '',
        suppressReason: dest.cls.suppressReason,
      };
    }
    this.current = null;
    this.bare = null;
    this.releaseAggregates();

    return {
      workloadKey: ref.workloadKey,
      namespace: ref.namespace,
      kind: ref.kind,
      name: ref.name,
      bypassedDestinations,
      m,
      n: joined?.total ?? 0,
      dnsOnly: unsuppressed > 0 && unsuppressedConnectionBacked === 0,
      joinMethod: 'name-based',
      attributionConfirmed: ref.attributionConfirmed,
      attributionNote: ref.attributionNote,
      destinations: out,
    };
  }

  /** The aggregates go back to the pool (their objects are reset when taken again). */
  private releaseAggregates(): void {
    if (this.aggregates.length === 0) return;
    // Only the maps in use: clearing a Map allocates it a new table, even an empty one.
    if (this.names.size > 0) this.names.clear();
    if (this.variants.size > 0) this.variants.clear();
    if (this.windowed.size > 0) this.windowed.clear();
    this.aggregates.length = 0;
    this.used = 0;
  }

  /**
   * The name a DNS answer gave this address: the pod's own answers first, then any pod of the same workload, so that
   * a replica reusing an address it resolved before the window (DNS caching) does not turn one destination into two.
   * Each map is built when a connection first needs it (most connections are named by the facts or the sensor).
   */
  private answeredName(podIndex: number, ip: string): NameInfo | undefined {
    const pods = this.current!.pods;
    const own = (this.podAnswers[podIndex] ??= this.answerNames(pods[podIndex]!));
    const found = own.get(ip);
    if (found !== undefined || pods.length === 1) return found;
    if (this.workloadAnswers === undefined) {
      const merged = new Map<string, NameInfo>();
      for (let i = 0; i < pods.length; i++) {
        const answers = (this.podAnswers[i] ??= this.answerNames(pods[i]!));
        for (const [address, name] of answers) {
          const current = merged.get(address);
          if (current === undefined || preferName(name, current)) merged.set(address, name);
        }
      }
      this.workloadAnswers = merged;
    }
    return this.workloadAnswers.get(ip);
  }

  /** The pod's own answers: address -> answered name. Expansions and reverse lookups name nothing. */
  private answerNames(pod: PodBucket): Map<string, NameInfo> {
    const answers = new Map<string, NameInfo>();
    for (let i = pod.dnsHead; i !== -1; i = this.next[i]!) {
      const ip = this.answerOf(i);
      if (ip === '') continue;
      const info = this.c.raw(this.observations[i]!.destName);
      if (info.name === '') continue;
      const current = answers.get(ip);
      if (current === info) continue;
      const folded = this.c.fold(info, this);
      if (folded.variant || folded.cls?.suppressReason === 'reverse-dns') continue;
      if (current === undefined || preferName(info, current)) answers.set(ip, info);
    }
    return answers;
  }
}

/**
 * Nearly every destination has one behavior: its list is one frozen array per value, shared by every destination that
 * has it (a large answer would otherwise allocate hundreds of thousands of equal one-element arrays). Frozen, so a
 * caller cannot change one destination's list through another's. Bounded like the other memos.
 */
const behaviorLists = new Map<string, string[]>();
const NO_BEHAVIORS: string[] = Object.freeze([]) as unknown as string[];

function behaviorList(behavior: string): string[] {
  if (behavior === '') return NO_BEHAVIORS;
  let list = behaviorLists.get(behavior);
  if (list === undefined) {
    if (behaviorLists.size >= MAX_CALL_MEMO) behaviorLists.clear();
    behaviorLists.set(behavior, (list = Object.freeze([behavior]) as unknown as string[]));
  }
  return list;
}

function newAggregate(): DestinationAggregate {
  return {
    keyKind: KEY_NAME,
    destName: '',
    rung: 'R6',
    cls: UNNAMED_EXTERNAL,
    connections: 0,
    resolutions: 0,
    behaviorFirst: '',
    behaviorMore: null,
    firstAddress: '',
    firstAddressCount: 0,
    addressCounts: null,
    destIP: '',
    group: 0,
  };
}

/** A workload without evidence in the window (spec rule 3: most rows of a healthy cluster look like this). */
function quietRow(ref: WorkloadRef, joined: { total: number } | undefined): ReconciliationRow {
  return {
    workloadKey: ref.workloadKey,
    namespace: ref.namespace,
    kind: ref.kind,
    name: ref.name,
    bypassedDestinations: 0,
    m: 0,
    n: joined?.total ?? 0,
    dnsOnly: false,
    joinMethod: 'name-based',
    attributionConfirmed: ref.attributionConfirmed,
    attributionNote: ref.attributionNote,
    destinations: [],
  };
}

/** Several names answered the same address: a provider name wins (it is the one that must not be missed), then the smallest. */
function preferName(candidate: NameInfo, current: NameInfo): boolean {
  const byRank = candidate.rank - current.rank;
  return byRank !== 0 ? byRank < 0 : candidate.name < current.name;
}

const KIND_ORDER: Readonly<Record<FindingClass['kind'], number>> = { provider: 0, imds: 1, infra: 2, internal: 3 };

/**
 * Two classes for one identity at the same rung (an address answered for a provider name but itself
 * link-local, say): unsuppressed first, then by kind and reason, so the outcome never depends on order.
 */
function classOutranks(a: FindingClass, b: FindingClass): boolean {
  const aSuppressed = a.suppressReason !== '' ? 1 : 0;
  const bSuppressed = b.suppressReason !== '' ? 1 : 0;
  if (aSuppressed !== bSuppressed) return aSuppressed < bSuppressed;
  if (a.kind !== b.kind) return KIND_ORDER[a.kind] < KIND_ORDER[b.kind];
  return a.suppressReason < b.suppressReason;
}

/** The address most connections went to; ties to the smallest. '' when there was no connection. */
function pickAddress(counts: ReadonlyMap<string, number>): string {
  let best = '';
  let bestCount = 0;
  for (const [ip, count] of counts) {
    if (count > bestCount || (count === bestCount && ip < best)) {
      best = ip;
      bestCount = count;
    }
  }
  return best;
}

function destinationGroup(cls: FindingClass): number {
  if (cls.suppressReason === '') return cls.kind === 'provider' ? 0 : 1;
  return cls.kind === 'provider' ? 2 : cls.kind === 'infra' ? 3 : 4;
}

/**
 * Counted findings first, then IMDS, then suppressed entries (providers suppressed by a window
 * stand-down, infrastructure, internal); within a group connection-backed before DNS-only, then the
 * busiest, then by identity (its kind, then its name).
 */
function compareDestinations(a: DestinationAggregate, b: DestinationAggregate): number {
  const byGroup = a.group - b.group;
  if (byGroup !== 0) return byGroup;
  const bySource = (a.connections > 0 ? 0 : 1) - (b.connections > 0 ? 0 : 1);
  if (bySource !== 0) return bySource;
  const byEvents = b.connections + b.resolutions - (a.connections + a.resolutions);
  if (byEvents !== 0) return byEvents;
  if (a.keyKind !== b.keyKind) return a.keyKind - b.keyKind;
  return a.destName < b.destName ? -1 : a.destName > b.destName ? 1 : 0;
}

function describeStandDown(reason: WindowSuppressReason, facts: ClusterFacts | null, nowUnix: number, natDetail: string): string {
  const tail =
    'Connection evidence is listed but suppressed; DNS-based findings are unaffected. The window is thinner, not cleaner: do not read the count alone.';
  if (reason === 'egress-nat-detector-disabled') {
    return `The network detector stood down for this window because egress NAT was detected: ${natDetail}. Connection addresses do not identify destinations behind NAT. ${tail}`;
  }
  const why =
    facts === null
      ? 'no cluster facts could be read from the Kubernetes API'
      : !facts.complete
        ? 'the cluster facts from the Kubernetes API are incomplete'
        : `the cluster facts from the Kubernetes API are stale (last confirmed ${Math.max(0, nowUnix - facts.fetchedAtUnix)} s ago, limit ${CLUSTER_FACTS_MAX_AGE_SECONDS} s)`;
  return `The network detector stood down for this window because ${why}, so connection addresses cannot be told apart from in-cluster ones. ${tail}`;
}

/** A snapshot with nothing in it, unusable for the network detector (`complete: false`). */
export function emptyClusterFacts(): ClusterFacts {
  return {
    fetchedAtUnix: 0,
    complete: false,
    pods: [],
    replicaSets: [],
    jobs: [],
    services: [],
    endpointSlices: [],
    nodes: [],
    apiServerAddresses: [],
    clusterDnsAddresses: [],
    selfService: null,
    selfPods: [],
  };
}

/** Facts for `facts: null`: one snapshot, so that its classifier is kept too. */
const NO_FACTS: ClusterFacts = emptyClusterFacts();

/**
 * The reconciliation of one window. Pure: the same input gives the same output, whatever the order of events.
 * `rowMemo`, for a caller whose observations come from one ObservationIndex, reuses the rows of earlier answers
 * whose input is unchanged (see RowMemo); the rows returned may then be shared with later answers.
 */
export function reconcile(input: ReconcileInput, rowMemo: RowMemo | null = null): ReconciliationResult {
  const { windowStartUnix, windowEndUnix } = input.window;
  const usable = factsUsable(input.facts, input.nowUnix);
  const facts = input.facts ?? NO_FACTS;
  const reconciler = new Reconciler(rowMemo !== null ? rowMemo.classifierFor(facts) : classifierFor(facts));
  reconciler.ingest(input.observations, windowStartUnix, windowEndUnix);
  reconciler.addClusterWorkloads();

  let windowReason: WindowSuppressReason | null = null;
  let natDetail = '';
  if (!usable) {
    windowReason = 'cluster-facts-unavailable';
  } else {
    const nat = reconciler.detectEgressNat();
    if (nat !== null) {
      windowReason = 'egress-nat-detector-disabled';
      natDetail = nat;
    }
  }

  const governed = indexGovernedCalls(input.governedCalls, windowStartUnix, windowEndUnix);
  const rows = reconciler.buildRows(governed, input.egressPlaneEnabled, windowReason, rowMemo);
  return {
    windowStartUnix,
    windowEndUnix,
    rows,
    networkDetectorDisabled: windowReason !== null,
    disabledReason: windowReason === null ? '' : describeStandDown(windowReason, input.facts, input.nowUnix, natDetail),
  };
}
