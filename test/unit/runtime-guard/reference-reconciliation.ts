/**
 * The reconciliation engine as it was before its performance work (bench/reconciliation/engine-profile.ts), kept
 * unchanged as the reference the optimised engine is compared with (reconciliation.reference.property.test.ts).
 * Not used by the service. A change to the engine's rules must be made here too (or this file and its test retired
 * once the optimised engine has its own history).
 *
 * The reconciliation engine: per workload, the distinct AI provider destinations the kernel saw it reach
 * (connections and DNS resolutions from the node sensor), next to what the gateway governed. A pure
 * function over plain data; the README in this folder states every rule and why.
 */
import { isIpv6, normalizeHost } from '../../../src/runtime-guard/addresses.js';
import {
  buildFactsIndex,
  classifyAddress,
  classifyName,
  expansionCandidates,
  isPublicLookingName,
  isSelfWorkload,
  NOT_A_FINDING,
  resolvePodWorkload,
  type AddressClass,
  type FactsIndex,
  type FindingClass,
  type NameClass,
} from '../../../src/runtime-guard/classify.js';
import { normalizeHostname } from '../../../src/runtime-guard/provider-catalogue.js';
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
} from '../../../src/runtime-guard/types.js';
import { controllerOf, podLevelWorkload, resolveWorkload, type WorkloadRef } from '../../../src/runtime-guard/workload.js';

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

export function unattributedName(ip: string): string {
  return `ip:${ip} (unattributed)`;
}

// ---- Pass 1: observations aggregated per pod. ----

interface DnsAggregate {
  /** The name as asked. */
  raw: string;
  /** The answers are addresses of the service's own Service (keyed apart from the others). */
  gatewayAnswer: boolean;
  count: number;
  /** The last behavior added: most repeats are skipped with one comparison. */
  lastBehavior: string;
  behaviors: Set<string>;
  lastAnswer: string;
  /** First addresses of the pod's own answers. */
  answers: Set<string>;
}

interface NetworkAggregate {
  ip: string;
  sensorName: string;
  count: number;
  lastBehavior: string;
  behaviors: Set<string>;
}

interface PodBucket {
  dns: Map<string, DnsAggregate>;
  network: Map<string, NetworkAggregate>;
}

interface WorkloadBucket {
  ref: WorkloadRef;
  pods: PodBucket[];
}

/** Self pods map to null: their observations are dropped before anything is counted. */
type PodSlot = PodBucket | null;

// ---- Pass 2: destinations per workload. ----

interface DestinationAggregate {
  key: string;
  destName: string;
  rung: Rung;
  cls: FindingClass;
  connections: number;
  resolutions: number;
  behaviors: Set<string>;
  addressCounts: Map<string, number>;
}

interface GovernedIndex {
  /** Lower-cased identity id to its calls in the window. */
  byIdentity: Map<string, { total: number; egressHosts: Map<string, number> }>;
}

function eventCount(raw: number): number {
  return Number.isFinite(raw) && raw >= 1 ? Math.floor(raw) : 1;
}

function addBehavior(agg: { lastBehavior: string; behaviors: Set<string> }, behavior: string): void {
  if (behavior === agg.lastBehavior || behavior === '') return;
  agg.behaviors.add(behavior);
  agg.lastBehavior = behavior;
}

function factsUsable(facts: ClusterFacts | null, nowUnix: number): boolean {
  return facts !== null && facts.complete && nowUnix - facts.fetchedAtUnix <= CLUSTER_FACTS_MAX_AGE_SECONDS;
}

function indexGovernedCalls(calls: readonly GovernedCall[], start: number, end: number): GovernedIndex {
  const byIdentity = new Map<string, { total: number; egressHosts: Map<string, number> }>();
  for (const call of calls) {
    if (call.atUnix < start || call.atUnix > end || !call.identityId) continue;
    const id = call.identityId.toLowerCase();
    let entry = byIdentity.get(id);
    if (!entry) byIdentity.set(id, (entry = { total: 0, egressHosts: new Map() }));
    // A caller may pass calls already summed per (type, identity, host): the store aggregates them in SQL.
    const calls = call.count === undefined ? 1 : eventCount(call.count);
    entry.total += calls;
    if (call.type === 'egress' && call.host) {
      const host = normalizeHost(call.host);
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

class Reconciler {
  private readonly index: FactsIndex;
  private readonly nameCache = new Map<string, string>();
  private readonly classCache = new Map<string, NameClass>();
  private readonly candidateCache = new Map<string, string[]>();
  private readonly addressCache = new Map<string, AddressClass>();
  private readonly pods = new Map<string, Map<string, PodSlot>>();
  private readonly workloads = new Map<string, WorkloadBucket>();

  constructor(facts: ClusterFacts) {
    this.index = buildFactsIndex(facts);
  }

  normalize(raw: string): string {
    let name = this.nameCache.get(raw);
    if (name === undefined) this.nameCache.set(raw, (name = normalizeHostname(raw)));
    return name;
  }

  nameClass(name: string): NameClass {
    let cls = this.classCache.get(name);
    if (cls === undefined) this.classCache.set(name, (cls = classifyName(name, this.index)));
    return cls;
  }

  candidates(name: string): string[] {
    let out = this.candidateCache.get(name);
    if (out === undefined) this.candidateCache.set(name, (out = expansionCandidates(name, this.index)));
    return out;
  }

  private resolvePod(namespace: string, podName: string, podIP: string): PodSlot {
    const index = this.index;
    const pod = podName !== '' ? index.podsByName.get(namespace)?.get(podName) : (index.podsByIp.get(podIP) ?? undefined);
    const name = pod?.name ?? (podName !== '' ? podName : podIP);
    if (index.selfPodNames.has(`${namespace}/${name}`)) return null;
    if (podName === '' && !pod && index.selfPodIps.has(podIP)) return null;
    const ref = resolvePodWorkload(pod, namespace, name, index);
    if (isSelfWorkload(ref, index)) return null;
    let workload = this.workloads.get(ref.workloadKey);
    if (!workload) this.workloads.set(ref.workloadKey, (workload = { ref, pods: [] }));
    // A confirmed attribution outranks an unconfirmed one (an inferred owner), whatever the order.
    else if (ref.attributionConfirmed && !workload.ref.attributionConfirmed) workload.ref = ref;
    const bucket: PodBucket = { dns: new Map(), network: new Map() };
    workload.pods.push(bucket);
    return bucket;
  }

  /**
   * Every workload of the facts gets a row, evidence or not: each pod's (through the same resolution as an observed
   * pod), then the owners of ReplicaSets and Jobs; not kube-system or kube-public, not the service's own.
   */
  addClusterWorkloads(facts: ClusterFacts): void {
    const system = (ns: string): boolean => ns === 'kube-system' || ns === 'kube-public';
    const done = new Set<string>();
    const add = (ref: WorkloadRef): void => {
      if (done.has(ref.workloadKey)) return;
      done.add(ref.workloadKey);
      if (system(ref.namespace) || this.index.selfWorkloadKeys.has(ref.workloadKey)) return;
      const known = this.workloads.get(ref.workloadKey);
      if (!known) this.workloads.set(ref.workloadKey, { ref, pods: [] });
      else if (ref.attributionConfirmed && !known.ref.attributionConfirmed) known.ref = ref;
    };
    // The facts' pods in the index's order (one entry per namespace and name, the last one listed).
    for (const inNamespace of this.index.podsByName.values()) {
      for (const pod of inNamespace.values()) {
        if (system(pod.namespace)) continue;
        if (this.index.selfPodNames.has(`${pod.namespace}/${pod.name}`)) continue;
        const ref = resolvePodWorkload(pod, pod.namespace, pod.name, this.index);
        if (isSelfWorkload(ref, this.index)) continue;
        add(ref);
      }
    }
    for (const [kind, list] of [['ReplicaSet', facts.replicaSets], ['Job', facts.jobs]] as const) {
      const last = new Map<string, (typeof list)[number]>();
      for (const c of list) last.set(`${c.namespace}/${c.name}`, c);
      for (const c of last.values()) {
        if (system(c.namespace)) continue;
        const owner = controllerOf(c.ownerReferences);
        const named = owner !== undefined && owner.name !== '';
        const ownerKind = named ? owner.kind : kind;
        const ownerName = named ? owner.name : c.name;
        add({ workloadKey: `${c.namespace}/${ownerKind}/${ownerName}`, namespace: c.namespace, kind: ownerKind, name: ownerName, attributionConfirmed: true, attributionNote: '' });
      }
    }
  }

  /** Pass 1: one map lookup chain per observation; everything else works on the aggregates. */
  ingest(observations: readonly Observation[], start: number, end: number): void {
    for (const o of observations) {
      const family = o.family;
      if (family !== 'dns' && family !== 'network') continue;
      if (!(o.observedAt >= start && o.observedAt <= end)) continue;
      // Spec "Limits": IPv6 yields no row; a DNS answer whose first address is IPv6 gives no destIP.
      if (family === 'network' && isIpv6(o.destIP)) continue;
      const destIP = isIpv6(o.destIP) ? '' : o.destIP;
      let inNamespace = this.pods.get(o.namespace);
      if (!inNamespace) this.pods.set(o.namespace, (inNamespace = new Map()));
      const podKey = o.podName !== '' ? o.podName : `ip:${o.podIP}`;
      let slot = inNamespace.get(podKey);
      if (slot === undefined) inNamespace.set(podKey, (slot = this.resolvePod(o.namespace, o.podName, o.podIP)));
      if (slot === null) continue;
      const count = eventCount(o.count);
      if (family === 'dns') {
        const gatewayAnswer = destIP !== '' && this.addressClass(destIP).cls?.suppressReason === 'service-gateway';
        const key = gatewayAnswer ? `gw\u0000${o.destName}` : o.destName;
        let agg = slot.dns.get(key);
        if (!agg) {
          agg = { raw: o.destName, gatewayAnswer, count: 0, lastBehavior: '', behaviors: new Set(), lastAnswer: '', answers: new Set() };
          slot.dns.set(key, agg);
        }
        agg.count += count;
        addBehavior(agg, o.behavior);
        if (destIP !== '' && destIP !== agg.lastAnswer) {
          agg.answers.add(destIP);
          agg.lastAnswer = destIP;
        }
      } else {
        if (o.destIP === '' && o.destName === '') continue;
        const key = o.destName === '' ? o.destIP : `${o.destIP}\u0000${o.destName}`;
        let agg = slot.network.get(key);
        if (!agg) slot.network.set(key, (agg = { ip: o.destIP, sensorName: o.destName, count: 0, lastBehavior: '', behaviors: new Set() }));
        agg.count += count;
        addBehavior(agg, o.behavior);
      }
    }
  }

  addressClass(ip: string): AddressClass {
    let cls = this.addressCache.get(ip);
    if (cls === undefined) this.addressCache.set(ip, (cls = classifyAddress(ip, this.index)));
    return cls;
  }

  private isExternal(ip: string): boolean {
    return ip !== '' && this.addressClass(ip).cls === undefined;
  }

  /** The egress-NAT auto-detect (see the constants above); returns the prose details when it fires. */
  detectEgressNat(): string | null {
    const answered = new Set<string>();
    const connected = new Set<string>();
    const resolvedNames = new Set<string>();
    for (const workload of this.workloads.values()) {
      for (const pod of workload.pods) {
        let external = false;
        for (const agg of pod.network.values()) {
          if (this.isExternal(agg.ip)) {
            connected.add(agg.ip);
            external = true;
          }
        }
        for (const agg of pod.dns.values()) {
          for (const ip of agg.answers) answered.add(ip);
          if (!external) continue;
          const name = this.normalize(agg.raw);
          const cls = this.nameClass(name);
          if (cls !== NOT_A_FINDING && cls.kind !== 'provider' && cls.kind !== 'infra') continue;
          if (!isPublicLookingName(name, this.index)) continue;
          for (const ip of agg.answers) {
            if (this.isExternal(ip)) {
              resolvedNames.add(name);
              break;
            }
          }
        }
      }
    }
    if (connected.size === 0 || connected.size > EGRESS_NAT_MAX_TRANSLATED_ADDRESSES) return null;
    if (resolvedNames.size < EGRESS_NAT_MIN_RESOLVED_NAMES) return null;
    for (const ip of connected) if (answered.has(ip)) return null;
    const addresses = [...connected].sort().join(', ');
    return `pods resolved ${resolvedNames.size} distinct external names, yet every external connection went to ${addresses}, which no DNS answer gave`;
  }

  /** The class a DNS question gets once search-domain expansions are folded onto their real name. */
  private foldedClass(name: string, bare: ReadonlySet<string>): { destName: string; cls: NameClass; variant: boolean } {
    for (const real of this.candidates(name)) {
      const realClass = this.nameClass(real);
      // Only an external real name can have been expanded; `<svc>.<ns>.svc.<domain>` is a lookup of its own.
      if (realClass !== NOT_A_FINDING && realClass.kind !== 'provider' && realClass.kind !== 'infra') continue;
      // A catalogued name is recognised outright; any other one only when the workload also asked it as is.
      if (realClass === NOT_A_FINDING && !bare.has(real)) continue;
      // The expansion of a name that is not a finding is noise of that name: not a finding either.
      if (realClass === NOT_A_FINDING) return { destName: real, cls: NOT_A_FINDING, variant: true };
      return { destName: real, cls: { kind: 'internal', suppressReason: 'search-domain-expansion' }, variant: true };
    }
    return { destName: name, cls: this.nameClass(name), variant: false };
  }

  buildRows(governed: GovernedIndex, egressPlaneEnabled: boolean, windowReason: WindowSuppressReason | null): ReconciliationRow[] {
    const rows: ReconciliationRow[] = [];
    for (const workload of this.workloads.values()) {
      rows.push(this.buildRow(workload, governed, egressPlaneEnabled, windowReason));
    }
    rows.sort(
      (a, b) =>
        b.bypassedDestinations - a.bypassedDestinations || b.m - a.m || (a.workloadKey < b.workloadKey ? -1 : a.workloadKey > b.workloadKey ? 1 : 0),
    );
    return rows;
  }

  private buildRow(
    workload: WorkloadBucket,
    governed: GovernedIndex,
    egressPlaneEnabled: boolean,
    windowReason: WindowSuppressReason | null,
  ): ReconciliationRow {
    const destinations = new Map<string, DestinationAggregate>();
    const record = (
      key: string,
      destName: string,
      rung: Rung,
      cls: FindingClass,
      connections: number,
      resolutions: number,
      behaviors: ReadonlySet<string>,
      ip: string,
    ): void => {
      let dest = destinations.get(key);
      if (!dest) {
        dest = { key, destName, rung, cls, connections: 0, resolutions: 0, behaviors: new Set(), addressCounts: new Map() };
        destinations.set(key, dest);
      } else if (RUNG_CONFIDENCE[rung] > RUNG_CONFIDENCE[dest.rung] || (rung === dest.rung && classOutranks(cls, dest.cls))) {
        // Resolution only upgrades: the most confident identity seen in the window decides.
        dest.rung = rung;
        dest.cls = cls;
      }
      dest.connections += connections;
      dest.resolutions += resolutions;
      for (const behavior of behaviors) dest.behaviors.add(behavior);
      if (ip !== '' && connections > 0) dest.addressCounts.set(ip, (dest.addressCounts.get(ip) ?? 0) + connections);
    };

    const bare = new Set<string>();
    for (const pod of workload.pods) for (const agg of pod.dns.values()) bare.add(this.normalize(agg.raw));

    // Address -> the name a DNS answer gave it: the pod's own answers first, then any pod of the same
    // workload, so that a replica reusing an address it resolved before the window (DNS caching) does not
    // turn one destination into two.
    const podAnswers = workload.pods.map((pod) => this.answerNames(pod, bare));
    const workloadAnswers = new Map<string, string>();
    for (const answers of podAnswers) {
      for (const [ip, name] of answers) {
        const current = workloadAnswers.get(ip);
        if (current === undefined || this.preferName(name, current)) workloadAnswers.set(ip, name);
      }
    }

    for (const [podIndex, pod] of workload.pods.entries()) {
      const answerNames = podAnswers[podIndex]!;
      for (const agg of pod.dns.values()) {
        const name = this.normalize(agg.raw);
        if (name === '') continue;
        const folded = this.foldedClass(name, bare);
        if (folded.cls === NOT_A_FINDING) continue;
        const key = folded.variant ? `variant\u0000${folded.destName}` : `name\u0000${folded.destName}`;
        // A provider name answered with the service's own Service: the governed shape.
        const gateway = agg.gatewayAnswer && !folded.variant && (folded.cls.kind === 'provider' || folded.cls.kind === 'infra');
        const cls: FindingClass = gateway ? { kind: 'internal', suppressReason: 'service-gateway' } : folded.cls;
        record(key, folded.destName, 'R0', cls, 0, agg.count, agg.behaviors, '');
      }

      for (const agg of pod.network.values()) {
        const address: AddressClass = agg.ip === '' ? { factsName: undefined, cls: undefined } : this.addressClass(agg.ip);
        let destName: string;
        let rung: Rung;
        let cls: FindingClass;
        if (address.factsName !== undefined && address.cls) {
          destName = address.factsName;
          rung = 'R2';
          cls = address.cls;
        } else {
          const sensorName = this.normalize(agg.sensorName);
          let name = sensorName !== '' ? sensorName : (answerNames.get(agg.ip) ?? workloadAnswers.get(agg.ip));
          let nameClass = name === undefined ? NOT_A_FINDING : this.nameClass(name);
          // A special address (IMDS, link-local, NodeLocal DNS) keeps its own class, and takes a name only
          // when the name is of the same kind: a provider name answered for 169.254.169.254 must not turn
          // a metadata request into a counted finding, nor hide one.
          if (address.cls && (nameClass === NOT_A_FINDING || nameClass.kind !== address.cls.kind)) {
            name = undefined;
            nameClass = NOT_A_FINDING;
          }
          if (name !== undefined) {
            destName = name;
            rung = 'R0';
            if (address.cls) cls = address.cls;
            else if (nameClass === NOT_A_FINDING) continue;
            // An external address stays external whatever an in-cluster name answered it.
            else if (nameClass.kind === 'internal' && agg.ip !== '') cls = { kind: 'provider', suppressReason: '' };
            else cls = nameClass;
          } else {
            if (agg.ip === '') continue;
            destName = address.serviceName ?? unattributedName(agg.ip);
            rung = address.serviceName !== undefined ? 'R2' : 'R6';
            // No identity: an external address is still a real, counted finding.
            cls = address.cls ?? { kind: 'provider', suppressReason: '' };
          }
        }
        if (windowReason !== null && cls.kind !== 'imds') {
          // A thinner window, not a cleaner one: connection evidence stays listed, suppressed, apart from
          // the DNS evidence of the same name, which the stand-down does not touch.
          record(`window\u0000${destName}`, destName, rung, { kind: cls.kind, suppressReason: windowReason }, agg.count, 0, agg.behaviors, agg.ip);
        } else {
          record(`name\u0000${destName}`, destName, rung, cls, agg.count, 0, agg.behaviors, agg.ip);
        }
      }
    }

    const ref = workload.ref;
    const joined = governed.byIdentity.get(joinIdentityId(ref.namespace, ref.name));
    const out: Destination[] = [];
    let bypassedDestinations = 0;
    let m = 0;
    let unsuppressed = 0;
    let unsuppressedConnectionBacked = 0;
    const sortKeys = new Map<Destination, DestinationAggregate>();
    for (const dest of destinations.values()) {
      const destIP = pickAddress(dest.addressCounts);
      const suppressed = dest.cls.suppressReason !== '';
      let governedCalls = 0;
      if (egressPlaneEnabled && joined) {
        governedCalls = (joined.egressHosts.get(dest.destName) ?? 0) + (destIP !== '' ? (joined.egressHosts.get(destIP) ?? 0) : 0);
      }
      const destination: Destination = {
        destName: dest.destName,
        destIP,
        source: dest.connections > 0 ? 'network' : 'dns',
        behaviors: [...dest.behaviors].sort(),
        count: dest.connections > 0 ? dest.connections : dest.resolutions,
        governedCalls,
        rung: dest.rung,
        confidence: RUNG_CONFIDENCE[dest.rung],
        kind: dest.cls.kind,
        suppressed,
        suppressReason: dest.cls.suppressReason,
      };
      if (!suppressed) {
        unsuppressed += 1;
        if (dest.connections > 0) unsuppressedConnectionBacked += 1;
        if (dest.cls.kind === 'provider') {
          bypassedDestinations += 1;
          m += dest.connections + dest.resolutions;
        }
      }
      out.push(destination);
      sortKeys.set(destination, dest);
    }
    out.sort((a, b) => compareDestinations(a, b, sortKeys.get(a)!, sortKeys.get(b)!));

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

  /** The pod's own answers: address -> answered name. Expansions and reverse lookups name nothing. */
  private answerNames(pod: PodBucket, bare: ReadonlySet<string>): Map<string, string> {
    const answers = new Map<string, string>();
    for (const agg of pod.dns.values()) {
      if (agg.answers.size === 0) continue;
      const name = this.normalize(agg.raw);
      if (name === '') continue;
      const folded = this.foldedClass(name, bare);
      if (folded.variant || folded.cls?.suppressReason === 'reverse-dns') continue;
      for (const ip of agg.answers) {
        const current = answers.get(ip);
        if (current === undefined || this.preferName(name, current)) answers.set(ip, name);
      }
    }
    return answers;
  }

  /** Several names answered the same address: a provider name wins (it is the one that must not be missed). */
  private preferName(candidate: string, current: string): boolean {
    const rank = (name: string): number => {
      const cls = this.nameClass(name);
      return cls === NOT_A_FINDING ? 2 : cls.kind === 'provider' ? 0 : 1;
    };
    const byRank = rank(candidate) - rank(current);
    return byRank !== 0 ? byRank < 0 : candidate < current;
  }
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

function destinationGroup(d: Destination): number {
  if (!d.suppressed) return d.kind === 'provider' ? 0 : 1;
  return d.kind === 'provider' ? 2 : d.kind === 'infra' ? 3 : 4;
}

/**
 * Counted findings first, then IMDS, then suppressed entries (providers suppressed by a window
 * stand-down, infrastructure, internal); within a group connection-backed before DNS-only, then the
 * busiest, then by name.
 */
function compareDestinations(a: Destination, b: Destination, aggA: DestinationAggregate, aggB: DestinationAggregate): number {
  const byGroup = destinationGroup(a) - destinationGroup(b);
  if (byGroup !== 0) return byGroup;
  const bySource = (a.source === 'network' ? 0 : 1) - (b.source === 'network' ? 0 : 1);
  if (bySource !== 0) return bySource;
  const byEvents = aggB.connections + aggB.resolutions - (aggA.connections + aggA.resolutions);
  if (byEvents !== 0) return byEvents;
  return aggA.key < aggB.key ? -1 : aggA.key > aggB.key ? 1 : 0;
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

/** The reconciliation of one window. Pure: the same input gives the same output, whatever the order of events. */
export function reconcile(input: ReconcileInput): ReconciliationResult {
  const { windowStartUnix, windowEndUnix } = input.window;
  const usable = factsUsable(input.facts, input.nowUnix);
  const reconciler = new Reconciler(input.facts ?? emptyClusterFacts());
  reconciler.ingest(input.observations, windowStartUnix, windowEndUnix);
  reconciler.addClusterWorkloads(input.facts ?? emptyClusterFacts());

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
  const rows = reconciler.buildRows(governed, input.egressPlaneEnabled, windowReason);
  return {
    windowStartUnix,
    windowEndUnix,
    rows,
    networkDetectorDisabled: windowReason !== null,
    disabledReason: windowReason === null ? '' : describeStandDown(windowReason, input.facts, input.nowUnix, natDetail),
  };
}
