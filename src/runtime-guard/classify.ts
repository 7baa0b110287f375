/**
 * Deterministic classification of what a pod reached: an address (against the cluster facts) or a name
 * (against the cluster's naming rules and the provider catalogue). Built once per facts snapshot (`classifierFor`),
 * with every answer memoised per distinct name, address and pod.
 */
import { coveringIpv4Cidr, inIpv4Ranges, isImds, isIpLiteral, isNodeOrLinkLocal, NODELOCAL_DNS_ADDRESS, parseIpv4Cidr, unattributedName } from './addresses.js';
import { matchCatalogue, normalizeHostname } from './provider-catalogue.js';
import { INFERRED_FROM_POD_NAME, type ClusterFacts, type FindingKind, type PodFact, type SuppressReason, type WorkloadFact } from './types.js';
import { buildOwnerIndex, controllerOf, inferWorkloadFromName, podLevelWorkload, resolveWorkload, type OwnerIndex, type WorkloadRef } from './workload.js';

export const DEFAULT_CLUSTER_DOMAIN = 'cluster.local';

/** What a name or an address is, when it is a finding at all. */
export interface FindingClass {
  kind: FindingKind;
  /** '' when the destination is not suppressed (kinds `provider` and `imds`). */
  suppressReason: SuppressReason | '';
}

/** Namespaces whose workloads get a row only with evidence: the cluster's own machinery. */
export function isSystemNamespace(namespace: string): boolean {
  return namespace === 'kube-system' || namespace === 'kube-public';
}

/** A name that is neither an AI provider nor infrastructure the spec lists: not a finding. */
export const NOT_A_FINDING = null;
export type NameClass = FindingClass | typeof NOT_A_FINDING;

export interface AddressClass {
  /** Identity from cluster facts (rung R2), when the API server knows the address. */
  factsName: string | undefined;
  /** The class the address alone gives; undefined for an external address, which its name decides. */
  cls: FindingClass | undefined;
  /**
   * An external address that a Service's EndpointSlice lists (a Service without a selector pointing outside the
   * cluster): the Service's DNS name, used as destName when nothing else names the address. It never makes the
   * address internal.
   */
  serviceName?: string;
}

interface AddressFact {
  name: string;
  reason: SuppressReason;
  priority: number;
}

/** When one address plays several roles, the most specific reason wins (lowest number). */
const ADDRESS_PRIORITY: Partial<Record<SuppressReason, number>> = {
  'service-gateway': 0,
  coredns: 1,
  'cluster-apiserver': 2,
  'node-or-link-local': 3,
  'in-cluster': 4,
};

export interface FactsIndex {
  clusterDomain: string;
  owners: OwnerIndex;
  podsByName: ReadonlyMap<string, ReadonlyMap<string, PodFact>>;
  /** null when two pods share the address (host-network pods). */
  podsByIp: ReadonlyMap<string, PodFact | null>;
  addresses: ReadonlyMap<string, AddressFact>;
  /** External addresses listed by a Service's EndpointSlice -> the Service's DNS name (see `AddressClass.serviceName`). */
  externalEndpoints: ReadonlyMap<string, string>;
  /** `<svc>.<ns>` of every Service. */
  serviceNames: ReadonlySet<string>;
  selfServiceNames: ReadonlySet<string>;
  selfPodNames: ReadonlySet<string>;
  selfPodIps: ReadonlySet<string>;
  selfWorkloadKeys: ReadonlySet<string>;
  /** `<ns>/<pod>` -> the workload remembered for a pod seen earlier (`ClusterFacts.podOwners`). */
  podOwners: ReadonlyMap<string, WorkloadRef>;
  searchDomains: readonly string[];
  /** The workload objects of the facts (`ClusterFacts.workloads`). */
  workloads: readonly WorkloadFact[];
  /** The Service CIDRs the cluster's ranges use: the facts' `serviceCIDRs`, else the one derived from the ClusterIPs. */
  serviceCidrs: readonly string[];
}

/**
 * The Service range when the API does not expose it (no ServiceCIDR objects: before Kubernetes 1.33, or not readable):
 * the narrowest IPv4 prefix holding every ClusterIP, when it is no wider than kube-apiserver allows a Service range
 * (/12). Every ClusterIP lies in the Service range, so this lies inside it; Services of a second range (a cluster
 * that has several) make the prefix too wide, and then nothing is derived.
 */
export function derivedServiceCidr(facts: Pick<ClusterFacts, 'services'>): string | null {
  return coveringIpv4Cidr(facts.services.flatMap((svc) => svc.clusterIPs));
}

/**
 * The workload of the pod an observation names: through its live owner chain when the facts list the pod and the
 * chain holds; else as remembered when it lived (`podOwners`); else, for a pod missing from the facts, inferred from
 * Kubernetes' naming (unconfirmed, noted); else the pod itself.
 */
export function resolvePodWorkload(pod: PodFact | undefined, namespace: string, name: string, index: FactsIndex): WorkloadRef {
  if (pod) {
    const ref = resolveWorkload(pod, index.owners);
    if (ref.attributionConfirmed || pod.ownerReferences.length === 0) return ref;
    // The chain broke (its ReplicaSet or Job is gone): the owner remembered while it held.
    return index.podOwners.get(nsKey(namespace, name)) ?? ref;
  }
  return index.podOwners.get(nsKey(namespace, name)) ?? inferWorkloadFromName(namespace, name, index.owners) ?? podLevelWorkload(namespace, name);
}

/** Whether a pod with this workload is one of the service's own (dropped): a confirmed or inferred owner of theirs. */
export function isSelfWorkload(ref: WorkloadRef, index: FactsIndex): boolean {
  return (ref.attributionConfirmed || ref.attributionNote === INFERRED_FROM_POD_NAME) && index.selfWorkloadKeys.has(ref.workloadKey);
}

function nsKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

function serviceNameForms(service: string, namespace: string, clusterDomain: string): string[] {
  return [`${service}.${namespace}`, `${service}.${namespace}.svc`, `${service}.${namespace}.svc.${clusterDomain}`];
}

export function buildFactsIndex(facts: ClusterFacts): FactsIndex {
  const clusterDomain = normalizeHostname(facts.clusterDomain ?? DEFAULT_CLUSTER_DOMAIN) || DEFAULT_CLUSTER_DOMAIN;
  const serviceDns = (service: string, namespace: string): string => `${service}.${namespace}.svc.${clusterDomain}`;
  const addresses = new Map<string, AddressFact>();
  const add = (ip: string, name: string, reason: SuppressReason): void => {
    if (ip === '' || ip === 'None') return;
    const priority = ADDRESS_PRIORITY[reason] ?? 9;
    const known = addresses.get(ip);
    if (!known || priority < known.priority) addresses.set(ip, { name, reason, priority });
  };
  const self = facts.selfService;
  const isSelf = (namespace: string, service: string): boolean => self !== null && self.namespace === namespace && self.name === service;
  const serviceReason = (namespace: string, service: string): SuppressReason => {
    if (isSelf(namespace, service)) return 'service-gateway';
    if (namespace === 'kube-system' && service === 'kube-dns') return 'coredns';
    if (namespace === 'default' && service === 'kubernetes') return 'cluster-apiserver';
    return 'in-cluster';
  };

  // The cluster's own ranges: every pod IP, every ClusterIP, every node address, and the pod and Service CIDRs
  // when the API exposes them. An EndpointSlice address outside them is not in-cluster whatever the Service says.
  const clusterAddresses = new Set<string>();
  for (const pod of facts.pods) {
    if (pod.ip !== '') clusterAddresses.add(pod.ip);
    for (const ip of pod.ips ?? []) clusterAddresses.add(ip);
  }
  for (const svc of facts.services) for (const ip of svc.clusterIPs) clusterAddresses.add(ip);
  for (const node of facts.nodes) for (const ip of node.addresses) clusterAddresses.add(ip);
  const serviceCidrs: string[] = facts.serviceCIDRs && facts.serviceCIDRs.length > 0 ? [...facts.serviceCIDRs] : [];
  if (serviceCidrs.length === 0) {
    const derived = derivedServiceCidr(facts);
    if (derived !== null) serviceCidrs.push(derived);
  }
  const clusterRanges: Array<[number, number]> = [];
  for (const cidr of [...facts.nodes.flatMap((n) => n.podCIDRs ?? []), ...serviceCidrs]) {
    const range = parseIpv4Cidr(cidr);
    if (range) clusterRanges.push(range);
  }
  const inClusterRanges = (ip: string): boolean => clusterAddresses.has(ip) || inIpv4Ranges(ip, clusterRanges);
  const externalEndpoints = new Map<string, string>();

  // Services whose EndpointSlices list an address outside the cluster's ranges (a Service without a selector
  // pointing at a public address). Their ClusterIPs are fronts for those addresses: with kube-proxy (iptables or
  // IPVS) the sensor sees the connection to the ClusterIP, which is translated to the external endpoint after it.
  // Such a ClusterIP is classified like the external endpoint itself, never `in-cluster`.
  const externallyBacked = new Set<string>();
  for (const slice of facts.endpointSlices) {
    if (serviceReason(slice.namespace, slice.serviceName) !== 'in-cluster') continue;
    for (const endpoint of slice.endpoints) {
      for (const ip of endpoint.addresses) {
        if (ip !== '' && !isImds(ip) && !isNodeOrLinkLocal(ip) && !inClusterRanges(ip)) externallyBacked.add(nsKey(slice.namespace, slice.serviceName));
      }
    }
  }
  const serviceNames = new Set<string>();
  for (const svc of facts.services) {
    serviceNames.add(`${svc.name}.${svc.namespace}`);
    const external = externallyBacked.has(nsKey(svc.namespace, svc.name));
    for (const ip of svc.clusterIPs) {
      if (external) externalEndpoints.set(ip, serviceDns(svc.name, svc.namespace));
      else add(ip, serviceDns(svc.name, svc.namespace), serviceReason(svc.namespace, svc.name));
    }
  }
  const selfPodNames = new Set<string>();
  for (const slice of facts.endpointSlices) {
    const reason = serviceReason(slice.namespace, slice.serviceName);
    // `default/kubernetes` lists the control plane's own addresses (managed control planes sit outside the node
    // ranges) and only the API server writes it; every other Service's endpoints count only inside the cluster's ranges.
    const apiServer = reason === 'cluster-apiserver';
    for (const endpoint of slice.endpoints) {
      for (const ip of endpoint.addresses) {
        if (ip === '' || isImds(ip) || isNodeOrLinkLocal(ip)) continue;
        if (apiServer || inClusterRanges(ip)) add(ip, serviceDns(slice.serviceName, slice.namespace), reason);
        else if (!externalEndpoints.has(ip)) externalEndpoints.set(ip, serviceDns(slice.serviceName, slice.namespace));
      }
      // The pods behind the service's own Service are its current pods.
      if (reason === 'service-gateway' && endpoint.targetRef?.kind === 'Pod') {
        selfPodNames.add(nsKey(endpoint.targetRef.namespace ?? slice.namespace, endpoint.targetRef.name));
      }
    }
  }
  for (const ip of facts.apiServerAddresses) add(ip, serviceDns('kubernetes', 'default'), 'cluster-apiserver');
  // Cluster DNS addresses come from Services labelled as cluster DNS, their endpoints and resolv.conf: one outside the
  // cluster's ranges (an endpoint pointing at a public address, say) is classified by its address like any other.
  // NodeLocal DNSCache and other link-local or loopback addresses are the node's own.
  for (const ip of facts.clusterDnsAddresses) {
    if (isNodeOrLinkLocal(ip) || inClusterRanges(ip)) add(ip, serviceDns('kube-dns', 'kube-system'), 'coredns');
  }
  for (const node of facts.nodes) for (const ip of node.addresses) add(ip, `node:${node.name}`, 'node-or-link-local');

  const podsByName = new Map<string, Map<string, PodFact>>();
  const podsByIp = new Map<string, PodFact | null>();
  for (const pod of facts.pods) {
    let inNamespace = podsByName.get(pod.namespace);
    if (!inNamespace) podsByName.set(pod.namespace, (inNamespace = new Map()));
    inNamespace.set(pod.name, pod);
    const ips = new Set([pod.ip, ...(pod.ips ?? [])]);
    for (const ip of ips) {
      if (ip === '') continue;
      podsByIp.set(ip, podsByIp.has(ip) ? null : pod);
      add(ip, `pod:${pod.namespace}/${pod.name}`, 'in-cluster');
    }
  }

  const selfPodIps = new Set<string>();
  for (const pod of facts.selfPods) {
    selfPodNames.add(nsKey(pod.namespace, pod.name));
    if (pod.ip !== '') selfPodIps.add(pod.ip);
  }
  const owners = buildOwnerIndex(facts);
  const selfWorkloadKeys = new Set<string>();
  for (const key of selfPodNames) {
    const slash = key.indexOf('/');
    const pod = podsByName.get(key.slice(0, slash))?.get(key.slice(slash + 1));
    if (!pod) continue;
    const workload = resolveWorkload(pod, owners);
    // Only a confirmed owner widens the drop to sibling pods; a pod-level key is the pod itself.
    if (workload.attributionConfirmed) selfWorkloadKeys.add(workload.workloadKey);
  }

  const podOwners = new Map<string, WorkloadRef>();
  for (const p of facts.podOwners ?? []) {
    const key = nsKey(p.namespace, p.name);
    if (podOwners.has(key) || p.kind === '' || p.workload === '') continue;
    podOwners.set(key, {
      workloadKey: `${p.namespace}/${p.kind}/${p.workload}`,
      namespace: p.namespace,
      kind: p.kind,
      name: p.workload,
      attributionConfirmed: p.kind !== 'Pod',
      attributionNote: '',
    });
  }

  const selfServiceNames = new Set(self ? serviceNameForms(self.name, self.namespace, clusterDomain) : []);
  const searchDomains = (facts.searchDomains ?? []).map(normalizeHostname).filter((d) => d !== '');
  return {
    clusterDomain,
    owners,
    podsByName,
    podsByIp,
    addresses,
    externalEndpoints,
    serviceNames,
    selfServiceNames,
    selfPodNames,
    selfPodIps,
    selfWorkloadKeys,
    podOwners,
    searchDomains,
    workloads: facts.workloads ?? [],
    serviceCidrs,
  };
}

const IMDS_NAMES: ReadonlySet<string> = new Set(['metadata.google.internal', 'metadata', 'instance-data', 'instance-data.ec2.internal']);

const INTERNAL: (reason: SuppressReason) => FindingClass = (reason) => ({ kind: 'internal', suppressReason: reason });

/** Classifies one address; the name (if any) decides external addresses. */
export function classifyAddress(ip: string, index: FactsIndex): AddressClass {
  // IMDS first: a metadata request is never suppressed, whatever else the address might look like.
  if (isImds(ip)) return { factsName: undefined, cls: { kind: 'imds', suppressReason: '' } };
  const known = index.addresses.get(ip);
  if (known) {
    let reason = known.reason;
    if (reason === 'in-cluster' && matchCatalogue(known.name, index.clusterDomain)?.suppressReason === 'sidecar-control-plane') {
      reason = 'sidecar-control-plane';
    }
    return { factsName: known.name, cls: INTERNAL(reason) };
  }
  if (ip === NODELOCAL_DNS_ADDRESS) return { factsName: undefined, cls: INTERNAL('coredns') };
  if (isNodeOrLinkLocal(ip)) return { factsName: undefined, cls: INTERNAL('node-or-link-local') };
  const serviceName = index.externalEndpoints.get(ip);
  return serviceName === undefined ? { factsName: undefined, cls: undefined } : { factsName: undefined, cls: undefined, serviceName };
}

/** True for an address nothing but its name can classify: outside the cluster facts and not special. */
export function isExternalAddress(ip: string, index: FactsIndex): boolean {
  return classifyAddress(ip, index).cls === undefined;
}

function endsWithDomain(name: string, domain: string): boolean {
  return name === domain || name.endsWith(`.${domain}`);
}

const NON_PUBLIC_LAST_LABELS: ReadonlySet<string> = new Set(['local', 'internal', 'arpa', 'svc', 'localhost', 'localdomain', 'lan', 'home']);

/** A name that could be asked of public DNS: dotted, not an IP, not under a private suffix. */
export function isPublicLookingName(name: string, index: FactsIndex): boolean {
  if (!name.includes('.') || isIpLiteral(name)) return false;
  const last = name.slice(name.lastIndexOf('.') + 1);
  if (NON_PUBLIC_LAST_LABELS.has(last)) return false;
  if (endsWithDomain(name, index.clusterDomain)) return false;
  return !name.split('.').some((label) => label === '');
}

/**
 * The class of a name on its own, before search-domain folding. `name` is normalized.
 * Order: reverse DNS, IMDS, loopback names, the service's own Service, API server, cluster DNS,
 * catalogue, in-cluster; anything else is not a finding.
 */
export function classifyName(name: string, index: FactsIndex): NameClass {
  if (name === '' || isIpLiteral(name)) return NOT_A_FINDING;
  if (endsWithDomain(name, 'in-addr.arpa') || endsWithDomain(name, 'ip6.arpa')) return INTERNAL('reverse-dns');
  if (IMDS_NAMES.has(name)) return { kind: 'imds', suppressReason: '' };
  if (endsWithDomain(name, 'localhost')) return INTERNAL('node-or-link-local');
  if (index.selfServiceNames.has(name)) return INTERNAL('service-gateway');
  const domain = index.clusterDomain;
  if (serviceNameForms('kubernetes', 'default', domain).includes(name)) return INTERNAL('cluster-apiserver');
  if (serviceNameForms('kube-dns', 'kube-system', domain).includes(name)) return INTERNAL('coredns');
  const catalogued = matchCatalogue(name, domain);
  if (catalogued) return { kind: catalogued.kind, suppressReason: catalogued.suppressReason };
  if (!name.includes('.') || endsWithDomain(name, domain) || name.endsWith('.svc')) return INTERNAL('in-cluster');
  if (index.serviceNames.has(name)) return INTERNAL('in-cluster');
  return NOT_A_FINDING;
}

/** True when a search suffix could have produced `suffix` (the part after the real name). */
function isSearchSuffix(suffix: string, index: FactsIndex): boolean {
  const domain = index.clusterDomain;
  if (suffix === domain || suffix === `svc.${domain}`) return true;
  const nsSvc = `.svc.${domain}`;
  if (suffix.endsWith(nsSvc) && !suffix.slice(0, -nsSvc.length).includes('.')) return true;
  const labels = suffix.split('.');
  // Cloud resolver search domains: ec2.internal, <region>.compute.internal, c.<project>.internal, google.internal.
  if (labels[labels.length - 1] === 'internal' && labels.length <= 3) return true;
  if (endsWithDomain(suffix, 'internal.cloudapp.net') && labels.length <= 5) return true;
  return index.searchDomains.includes(suffix);
}

/**
 * The real names a name could be a search-domain expansion of, most likely first (the shortest real
 * name, i.e. the longest search suffix). Empty when the name cannot be an expansion.
 */
export function expansionCandidates(name: string, index: FactsIndex): string[] {
  const labels = name.split('.');
  const out: string[] = [];
  // The real name needs at least two labels to be public-looking.
  for (let cut = 2; cut < labels.length; cut++) {
    const suffix = labels.slice(cut).join('.');
    if (!isSearchSuffix(suffix, index)) continue;
    const real = labels.slice(0, cut).join('.');
    if (isPublicLookingName(real, index)) out.push(real);
  }
  return out;
}

// ---- Memos per facts snapshot: what the engine asks of a name, an address or a pod, answered once. ----

/** A search-domain expansion's class (shared: the engine never mutates a class). */
const SEARCH_DOMAIN_EXPANSION: FindingClass = INTERNAL('search-domain-expansion');

/** What a DNS question or a sensor name folds onto: itself, or the real name of a search-domain expansion. */
export interface Folded {
  destName: string;
  cls: NameClass;
  variant: boolean;
}

/** One real name a name could be the expansion of, already filtered to external (catalogued or unknown) ones. */
interface Fold {
  real: string;
  /** The real name is not catalogued: it counts only when the workload also asked it as is. */
  needsBare: boolean;
  result: Folded;
}

/** Everything the engine reads about one name, from its raw form as the sensor reported it. */
export interface NameInfo {
  /** Normalized: lower case, trailing dots removed. */
  name: string;
  cls: NameClass;
  /** When several names answered one address: 0 provider, 1 another finding, 2 not a finding (lowest wins). */
  rank: number;
  /** The name unfolded; search-domain folds, most likely first (computed on first use). */
  plain: Folded;
  folds: readonly Fold[] | undefined;
  publicLooking: boolean | undefined;
}

/** An address's class plus what the engine derives from it. */
export interface AddressInfo extends AddressClass {
  /** Outside the cluster facts and not special: only a name can classify it. */
  external: boolean;
  /** `ip:<address> (unattributed)` (rung R6), or the Service's name for an external endpoint address (rung R2). */
  unattributed: string;
  unattributedRung: 'R2' | 'R6';
}

/** The names a workload asked as is, computed when a fold first needs them. */
export interface AskedNames {
  bareNames(): ReadonlySet<string>;
}

/** A pod's workload, or null for the service's own pods (their observations are dropped). */
export type PodRef = WorkloadRef | null;

/**
 * A pod as the classifier knows it: its workload, a number of its own (0, 1, … per snapshot) and its workload's
 * number (-1 for the service's own pods), so that the engine indexes arrays instead of building maps per answer.
 */
export interface PodEntry {
  ref: PodRef;
  id: number;
  workload: number;
}

/** Memo entries kept per snapshot before they are dropped (names are what sensors report: unbounded in principle). */
const MAX_MEMO_ENTRIES = 500_000;

/**
 * The facts index with memos of every classification derived from it, per distinct name, address and pod. Valid
 * for one facts snapshot: `classifierFor` hands out a new one when the facts change.
 */
export class Classifier {
  private rawNames = new Map<string, NameInfo>();
  private names = new Map<string, NameInfo>();
  private readonly addressInfo = new Map<string, AddressInfo>();
  /** Namespace -> pod name (or `ip:<podIP>` for a pod without a name) -> its workload. */
  private readonly pods = new Map<string, Map<string, PodEntry>>();
  private podCount = 0;
  private workloadList: readonly WorkloadRef[] | undefined;
  private workloadListIds: readonly number[] = [];
  /** `workloadKey` -> its number (see `PodEntry.workload`). */
  private workloadIds = new Map<string, number>();
  /** Workload ref -> its lower-cased `<namespace>/<name>` (the governed calls' join key). */
  private joinIds = new Map<WorkloadRef, string>();

  constructor(readonly index: FactsIndex) {}

  /**
   * Every workload of the cluster facts that gets a row with or without evidence (spec "rows: One row per
   * workload"): each pod's workload (Deployment, StatefulSet, DaemonSet, CronJob, Job, or the pod itself), then the
   * Deployments and CronJobs known only through a ReplicaSet or Job of theirs (scaled to zero, between runs), bare
   * Jobs and ReplicaSets, and every Deployment, StatefulSet, DaemonSet and CronJob object (`ClusterFacts.workloads`,
   * pods or not). Not kube-system or kube-public, not the service's own. In facts order; computed once per
   * snapshot.
   */
  clusterWorkloads(): readonly WorkloadRef[] {
    if (this.workloadList !== undefined) return this.workloadList;
    const index = this.index;
    const seen = new Set<string>();
    const out: WorkloadRef[] = [];
    const push = (ref: WorkloadRef | null): void => {
      if (ref === null || seen.has(ref.workloadKey)) return;
      seen.add(ref.workloadKey);
      if (isSystemNamespace(ref.namespace) || index.selfWorkloadKeys.has(ref.workloadKey)) return;
      out.push(ref);
    };
    for (const inNamespace of index.podsByName.values()) {
      for (const pod of inNamespace.values()) {
        if (isSystemNamespace(pod.namespace)) continue;
        push(this.pod(pod.namespace, pod.name, pod.ip, pod.name).ref);
      }
    }
    for (const [kind, controllers] of [
      ['ReplicaSet', index.owners.replicaSets],
      ['Job', index.owners.jobs],
    ] as const) {
      for (const controller of controllers.values()) {
        if (isSystemNamespace(controller.namespace)) continue;
        const owner = controllerOf(controller.ownerReferences);
        const ownerKind = owner && owner.name !== '' ? owner.kind : kind;
        const ownerName = owner && owner.name !== '' ? owner.name : controller.name;
        push({
          workloadKey: `${controller.namespace}/${ownerKind}/${ownerName}`,
          namespace: controller.namespace,
          kind: ownerKind,
          name: ownerName,
          attributionConfirmed: true,
          attributionNote: '',
        });
      }
    }
    // The workload objects themselves: a StatefulSet or DaemonSet with no pod, a CronJob that never ran, a
    // Deployment without a ReplicaSet.
    for (const workload of index.workloads) {
      push({
        workloadKey: `${workload.namespace}/${workload.kind}/${workload.name}`,
        namespace: workload.namespace,
        kind: workload.kind,
        name: workload.name,
        attributionConfirmed: true,
        attributionNote: '',
      });
    }
    this.workloadListIds = out.map((ref) => this.workloadId(ref.workloadKey));
    return (this.workloadList = out);
  }

  /**
   * A classifier for `index`, the facts of a later snapshot, that keeps what this one memoised wherever the new facts
   * answer the same: in a real cluster some pod is added or deleted every few seconds, and a classifier rebuilt from
   * nothing made every answer after it a cold one (every pod resolved, every row rebuilt: seconds at 20,000
   * workloads). Names are kept whole when everything a name's class reads is unchanged (the cluster domain, the search
   * domains, the Services' names and the service's own); else null (start afresh). Every memoised address and pod is
   * asked again of the new facts: an unchanged answer keeps its object, so a row that read it stays valid (its pods'
   * refs are compared by identity); an address whose class changed is added to `changed`, and rows that read it are
   * rebuilt (RowMemo). Pods and workloads keep their numbers.
   */
  successor(index: FactsIndex, changed: Set<string>, ownersUnchanged: boolean): Classifier | null {
    if (!sameNaming(this.index, index)) return null;
    // What a pod's workload reads besides its own fact: its owners (ReplicaSets, Jobs, the pods' remembered owners)
    // and the service's own pods. When those are the same, a pod whose fact is the same object (the informers keep
    // an unchanged pod's) resolves the same: only the pods added, changed or deleted are asked again.
    const sameOwnership =
      ownersUnchanged &&
      sameSet(this.index.selfPodNames, index.selfPodNames) &&
      sameSet(this.index.selfPodIps, index.selfPodIps) &&
      sameSet(this.index.selfWorkloadKeys, index.selfWorkloadKeys);
    const next = new Classifier(index);
    next.rawNames = this.rawNames;
    next.names = this.names;
    for (const [ip, info] of this.addressInfo) {
      const fresh = next.address(ip);
      if (sameAddress(info, fresh)) next.addressInfo.set(ip, info);
      else changed.add(ip);
    }
    next.workloadIds = new Map(this.workloadIds);
    next.joinIds = this.joinIds;
    next.podCount = this.podCount;
    for (const [namespace, byKey] of this.pods) {
      const into = new Map<string, PodEntry>();
      next.pods.set(namespace, into);
      for (const [podKey, entry] of byKey) {
        // The key is the pod's name, or `ip:<podIP>` for a pod the sensor did not name (a name has no colon).
        const nameless = podKey.startsWith('ip:');
        const podName = nameless ? '' : podKey;
        const podIP = nameless ? podKey.slice(3) : '';
        if (sameOwnership && this.factOf(namespace, podName, podIP) === next.factOf(namespace, podName, podIP)) {
          into.set(podKey, entry);
          continue;
        }
        const ref = next.resolvePod(namespace, podName, podIP);
        into.set(podKey, sameRef(ref, entry.ref) ? entry : { ref, id: entry.id, workload: ref === null ? -1 : next.workloadId(ref.workloadKey) });
      }
    }
    return next;
  }

  /** Drops the memos when they grew past their bound (between two reconciliations). */
  trim(): void {
    if (this.rawNames.size + this.names.size + this.addressInfo.size + this.podCount <= MAX_MEMO_ENTRIES) return;
    this.rawNames.clear();
    this.names.clear();
    this.addressInfo.clear();
    this.pods.clear();
    this.podCount = 0;
    this.joinIds.clear();
    this.workloadIds.clear();
    this.workloadList = undefined;
  }

  /** The numbers of `clusterWorkloads()`, in its order. */
  clusterWorkloadIds(): readonly number[] {
    if (this.workloadList === undefined) this.clusterWorkloads();
    return this.workloadListIds;
  }

  /** A workload's number (0, 1, … per snapshot); `workloadsNumbered` bounds them. */
  workloadId(workloadKey: string): number {
    let id = this.workloadIds.get(workloadKey);
    if (id === undefined) this.workloadIds.set(workloadKey, (id = this.workloadIds.size));
    return id;
  }

  /** The workload's governed-call join key (see `joinIdentityId`), once per ref. */
  joinId(ref: WorkloadRef): string {
    let id = this.joinIds.get(ref);
    if (id === undefined) this.joinIds.set(ref, (id = `${ref.namespace}/${ref.name}`.toLowerCase()));
    return id;
  }

  /** How many pods `pod()` has numbered: every `PodEntry.id` is below it. */
  get podsNumbered(): number {
    return this.podCount;
  }

  /** A name as the sensor reported it (any case, trailing dots). */
  raw(raw: string): NameInfo {
    let info = this.rawNames.get(raw);
    if (info === undefined) this.rawNames.set(raw, (info = this.normalized(normalizeHostname(raw))));
    return info;
  }

  /** A normalized name. */
  normalized(name: string): NameInfo {
    let info = this.names.get(name);
    if (info === undefined) {
      const cls = classifyName(name, this.index);
      info = {
        name,
        cls,
        rank: cls === NOT_A_FINDING ? 2 : cls.kind === 'provider' ? 0 : 1,
        plain: { destName: name, cls, variant: false },
        folds: undefined,
        publicLooking: undefined,
      };
      this.names.set(name, info);
    }
    return info;
  }

  isPublicLooking(info: NameInfo): boolean {
    return (info.publicLooking ??= isPublicLookingName(info.name, this.index));
  }

  /** The real names `info` could be an expansion of that fold it, most likely first (see `fold`). */
  folds(info: NameInfo): readonly Fold[] {
    if (info.folds !== undefined) return info.folds;
    const folds: Fold[] = [];
    for (const real of expansionCandidates(info.name, this.index)) {
      const realClass = this.normalized(real).cls;
      // Only an external real name can have been expanded; `<svc>.<ns>.svc.<domain>` is a lookup of its own.
      if (realClass !== NOT_A_FINDING && realClass.kind !== 'provider' && realClass.kind !== 'infra') continue;
      folds.push(
        realClass === NOT_A_FINDING
          ? // The expansion of a name that is not a finding is noise of that name: not a finding either.
            { real, needsBare: true, result: { destName: real, cls: NOT_A_FINDING, variant: true } }
          : { real, needsBare: false, result: { destName: real, cls: SEARCH_DOMAIN_EXPANSION, variant: true } },
      );
    }
    return (info.folds = folds);
  }

  /**
   * The class a DNS question gets once search-domain expansions are folded onto their real name: a catalogued real
   * name is recognised outright, any other one only when the workload also asked it as is (asked only then).
   */
  fold(info: NameInfo, workload: AskedNames): Folded {
    const folds = info.folds ?? this.folds(info);
    for (let i = 0; i < folds.length; i++) {
      const fold = folds[i]!;
      if (fold.needsBare && !workload.bareNames().has(fold.real)) continue;
      return fold.result;
    }
    return info.plain;
  }

  address(ip: string): AddressInfo {
    let info = this.addressInfo.get(ip);
    if (info === undefined) {
      const { factsName, cls, serviceName } = classifyAddress(ip, this.index);
      info = { factsName, cls, external: ip !== '' && cls === undefined, unattributed: serviceName ?? unattributedName(ip),
        unattributedRung: serviceName === undefined ? 'R6' : 'R2',
      };
      this.addressInfo.set(ip, info);
    }
    return info;
  }

  /**
   * The workload of the pod an observation came from, null for the service's own pods: pods in `selfPods`, pods
   * behind its own EndpointSlices, and any pod whose confirmed workload is one of theirs. A pod without a name is
   * matched by `podIP`, and only then, since addresses are reused.
   */
  pod(namespace: string, podName: string, podIP: string, podKey: string): PodEntry {
    let inNamespace = this.pods.get(namespace);
    if (!inNamespace) this.pods.set(namespace, (inNamespace = new Map()));
    let entry = inNamespace.get(podKey);
    if (entry === undefined) {
      const ref = this.resolvePod(namespace, podName, podIP);
      entry = { ref, id: this.podCount, workload: ref === null ? -1 : this.workloadId(ref.workloadKey) };
      inNamespace.set(podKey, entry);
      this.podCount += 1;
    }
    return entry;
  }

  /** The facts' pod an observation names: by name, else (no name) by address; null when two pods share the address. */
  private factOf(namespace: string, podName: string, podIP: string): PodFact | null | undefined {
    return podName !== '' ? this.index.podsByName.get(namespace)?.get(podName) : this.index.podsByIp.get(podIP);
  }

  private resolvePod(namespace: string, podName: string, podIP: string): PodRef {
    const index = this.index;
    const pod = this.factOf(namespace, podName, podIP) ?? undefined;
    const name = pod?.name ?? (podName !== '' ? podName : podIP);
    if (index.selfPodNames.has(nsKey(namespace, name))) return null;
    if (podName === '' && !pod && index.selfPodIps.has(podIP)) return null;
    const ref = resolvePodWorkload(pod, namespace, name, index);
    return isSelfWorkload(ref, index) ? null : ref;
  }
}

/** Whether everything a name's class reads (`classifyName`, `expansionCandidates`) is the same in both indexes. */
function sameNaming(a: FactsIndex, b: FactsIndex): boolean {
  return (
    a.clusterDomain === b.clusterDomain &&
    a.searchDomains.length === b.searchDomains.length &&
    a.searchDomains.every((d, i) => d === b.searchDomains[i]) &&
    sameSet(a.selfServiceNames, b.selfServiceNames) &&
    sameSet(a.serviceNames, b.serviceNames)
  );
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a === b) return true;
  if (a.size !== b.size) return false;
  for (const value of a) if (!b.has(value)) return false;
  return true;
}

function sameAddress(a: AddressInfo, b: AddressInfo): boolean {
  return (
    a.factsName === b.factsName &&
    a.cls?.kind === b.cls?.kind &&
    a.cls?.suppressReason === b.cls?.suppressReason &&
    a.external === b.external &&
    a.unattributed === b.unattributed &&
    a.unattributedRung === b.unattributedRung
  );
}

function sameRef(a: PodRef, b: PodRef): boolean {
  if (a === null || b === null) return a === b;
  return (
    a.workloadKey === b.workloadKey &&
    a.namespace === b.namespace &&
    a.kind === b.kind &&
    a.name === b.name &&
    a.attributionConfirmed === b.attributionConfirmed &&
    a.attributionNote === b.attributionNote
  );
}

/** The facts a Classifier was built from: the large arrays by identity, the small ones and scalars by value. */
export interface FactsKey {
  pods: readonly unknown[];
  podsLength: number;
  replicaSets: readonly unknown[];
  replicaSetsLength: number;
  jobs: readonly unknown[];
  jobsLength: number;
  workloads: readonly unknown[] | undefined;
  workloadsLength: number;
  services: readonly unknown[];
  servicesLength: number;
  endpointSlices: readonly unknown[];
  endpointSlicesLength: number;
  nodes: readonly unknown[];
  nodesLength: number;
  /** Kept by identity while unchanged (pod-owner-history.ts). */
  podOwners: readonly unknown[] | undefined;
  podOwnersLength: number;
  /** The rest, which `facts()` builds anew per call, compared by value. */
  small: string;
}

function smallFactsKey(facts: ClusterFacts): string {
  return JSON.stringify([
    facts.clusterDomain ?? null,
    facts.apiServerAddresses,
    facts.clusterDnsAddresses,
    facts.selfService,
    facts.selfPods.map((p) => [p.namespace, p.name, p.ip]),
    facts.searchDomains ?? null,
    facts.serviceCIDRs ?? null,
  ]);
}

export function factsKey(facts: ClusterFacts): FactsKey {
  return {
    pods: facts.pods,
    podsLength: facts.pods.length,
    replicaSets: facts.replicaSets,
    replicaSetsLength: facts.replicaSets.length,
    jobs: facts.jobs,
    jobsLength: facts.jobs.length,
    workloads: facts.workloads,
    workloadsLength: facts.workloads?.length ?? 0,
    services: facts.services,
    servicesLength: facts.services.length,
    endpointSlices: facts.endpointSlices,
    endpointSlicesLength: facts.endpointSlices.length,
    nodes: facts.nodes,
    nodesLength: facts.nodes.length,
    podOwners: facts.podOwners,
    podOwnersLength: facts.podOwners?.length ?? 0,
    small: smallFactsKey(facts),
  };
}

export function sameFacts(a: FactsKey, b: FactsKey): boolean {
  return (
    a.pods === b.pods &&
    a.podsLength === b.podsLength &&
    sameOwners(a, b) &&
    a.workloads === b.workloads &&
    a.workloadsLength === b.workloadsLength &&
    a.services === b.services &&
    a.servicesLength === b.servicesLength &&
    a.endpointSlices === b.endpointSlices &&
    a.endpointSlicesLength === b.endpointSlicesLength &&
    a.nodes === b.nodes &&
    a.nodesLength === b.nodesLength &&
    a.small === b.small
  );
}

/** Whether the facts that give a pod its owner are the same arrays: ReplicaSets, Jobs, remembered owners (`Classifier.successor`). */
export function sameOwners(a: FactsKey, b: FactsKey): boolean {
  return (
    a.replicaSets === b.replicaSets &&
    a.replicaSetsLength === b.replicaSetsLength &&
    a.jobs === b.jobs &&
    a.jobsLength === b.jobsLength &&
    a.podOwners === b.podOwners &&
    a.podOwnersLength === b.podOwnersLength
  );
}

let lastClassifier: { key: FactsKey; classifier: Classifier } | null = null;

/**
 * The Classifier of a facts snapshot, kept while the snapshot stays the same, for callers without a RowMemo (the
 * observations route, tests); the answer path's RowMemo keeps its own and carries it over when the facts change. The informer cache (kube/cluster-facts.ts)
 * hands out a new `ClusterFacts` per request but keeps each resource's array while that resource does not change, so
 * the large arrays are compared by identity (the engine treats them as immutable: a changed resource is a new
 * array) and the few small fields by value. One entry: a replica reconciles against one cluster.
 */
export function classifierFor(facts: ClusterFacts): Classifier {
  const key = factsKey(facts);
  if (lastClassifier && sameFacts(lastClassifier.key, key)) {
    lastClassifier.classifier.trim();
    return lastClassifier.classifier;
  }
  const classifier = new Classifier(buildFactsIndex(facts));
  lastClassifier = { key, classifier };
  return classifier;
}
