/**
 * The cluster facts the reconciliation engine reads (`ClusterFacts`, types.ts), kept current by one
 * reflector (list + watch) per resource: pods, ReplicaSets, Jobs, Services, EndpointSlices, nodes, and the workload
 * objects (Deployments, StatefulSets, DaemonSets, CronJobs). ServiceCIDRs (networking.k8s.io/v1) are read too when
 * the API server serves them, as a refinement outside `complete` and the freshness (a cluster before 1.33 has none).
 *
 * - `facts()` is called per request: the arrays are rebuilt only for resources that changed since the last
 *   call, and the service's own pods (`selfPods`) only when pods, EndpointSlices, ReplicaSets or Jobs did.
 * - `fetchedAtUnix` is the oldest of the resources' last confirmations (a list, a watch event, a bookmark,
 *   a watch the server ended cleanly): the snapshot as a whole matched the API server then.
 * - `complete` is false while a resource has not listed yet and after a list or watch failed, until its next
 *   successful list. `facts()` is null until every resource listed once.
 * - Self pods, current and previous: the pods behind the self Service's EndpointSlices, and every pod of
 *   their (confirmed) owning workload. A self pod that goes away is remembered with its IP for
 *   `selfPodMemoryMs` (25 h: longer than the widest window, 24 h), so findings of a previous pod stay dropped.
 *   The memory is this process's: a replica started after a pod went away does not know it.
 */
import {
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  DiscoveryV1Api,
  NetworkingV1Api,
  type KubeConfig,
} from '@kubernetes/client-node';
import type {
  ClusterFacts,
  ContainerFact,
  ControllerFact,
  EndpointSliceFact,
  NodeFact,
  OwnerReference,
  PodFact,
  SelfPodFact,
  ServiceFact,
  WorkloadFact,
} from '../types.js';
import { buildOwnerIndex, resolveWorkload, type OwnerIndex } from '../workload.js';
import { makeApi, unixSeconds } from './client.js';
import { Reflector, type ListPage, type ObjectMeta } from './reflector.js';
import { sensorMetricsPort } from './sensor-discovery.js';
import { SELF_POD_MEMORY_MS } from '../self-pod-history.js';

// ---- Loose shapes of the objects: typed list items and raw watch events have the same field names.

interface Meta {
  name?: string;
  namespace?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  ownerReferences?: Array<{ kind?: string; name?: string; controller?: boolean }>;
}
interface ContainerLike {
  name?: string;
  image?: string;
  restartPolicy?: string;
  ports?: Array<{ name?: string; containerPort?: number }>;
}
export interface PodLike extends ObjectMeta {
  metadata?: Meta;
  spec?: { nodeName?: string; containers?: ContainerLike[]; initContainers?: ContainerLike[] };
  status?: { podIP?: string; podIPs?: Array<{ ip?: string }>; phase?: string };
}
interface ControllerLike extends ObjectMeta {
  metadata?: Meta;
}
interface ServiceLike extends ObjectMeta {
  metadata?: Meta;
  spec?: { clusterIP?: string; clusterIPs?: string[] };
}
interface EndpointSliceLike extends ObjectMeta {
  metadata?: Meta;
  endpoints?: Array<{ addresses?: string[]; targetRef?: { kind?: string; name?: string; namespace?: string } }>;
}
interface ServiceCidrLike extends ObjectMeta {
  metadata?: Meta;
  spec?: { cidrs?: string[] };
}
interface NodeLike extends ObjectMeta {
  metadata?: Meta;
  spec?: { podCIDR?: string; podCIDRs?: string[] };
  status?: { addresses?: Array<{ address?: string }> };
}

/** A pod as the cache holds it: its fact, plus what sensor discovery reads. */
export interface PodRecord {
  fact: PodFact;
  phase: string;
  /** The metrics port of a sensor pod (`app.kubernetes.io/name=reins-sensor`), null for any other pod. */
  sensorPort: number | null;
}

interface ServiceRecord {
  fact: ServiceFact;
  clusterDns: boolean;
}

interface SliceRecord {
  fact: EndpointSliceFact | null;
}

// ---- Transforms (pure; exported for unit tests)

function owners(meta: Meta | undefined): OwnerReference[] {
  return (meta?.ownerReferences ?? []).map((ref) => ({
    kind: ref.kind ?? '',
    name: ref.name ?? '',
    ...(ref.controller !== undefined ? { controller: ref.controller } : {}),
  }));
}

function containers(list: ContainerLike[] | undefined): ContainerFact[] {
  return (list ?? []).map((c) => ({ name: c.name ?? '', image: c.image ?? '' }));
}

export function podRecord(pod: PodLike): PodRecord {
  const ip = pod.status?.podIP ?? '';
  const ips = (pod.status?.podIPs ?? []).map((p) => p.ip ?? '').filter((a) => a !== '');
  const sidecars = (pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always');
  const fact: PodFact = {
    namespace: pod.metadata?.namespace ?? '',
    name: pod.metadata?.name ?? '',
    ip,
    ...(ips.length > 1 ? { ips } : {}),
    node: pod.spec?.nodeName ?? '',
    containers: containers(pod.spec?.containers),
    ...(sidecars.length > 0 ? { sidecarInitContainers: containers(sidecars) } : {}),
    ownerReferences: owners(pod.metadata),
  };
  return { fact, phase: pod.status?.phase ?? '', sensorPort: sensorMetricsPort(pod) };
}

export function controllerFact(object: ControllerLike): ControllerFact {
  return { namespace: object.metadata?.namespace ?? '', name: object.metadata?.name ?? '', ownerReferences: owners(object.metadata) };
}

/** A Deployment, StatefulSet, DaemonSet or CronJob: only that it exists matters (its row). */
export function workloadFact(kind: string): (object: ControllerLike) => WorkloadFact {
  return (object) => ({ namespace: object.metadata?.namespace ?? '', kind, name: object.metadata?.name ?? '' });
}

/** A ServiceCIDR's ranges (`spec.cidrs`, one per IP family). */
export function serviceCidrs(object: ServiceCidrLike): string[] {
  return (object.spec?.cidrs ?? []).filter((c) => typeof c === 'string' && c !== '');
}

/** Services of the cluster DNS: `k8s-app=kube-dns` in kube-system (CoreDNS under any Service name). */
function isClusterDnsService(meta: Meta | undefined): boolean {
  return meta?.namespace === 'kube-system' && meta.labels?.['k8s-app'] === 'kube-dns';
}

function serviceRecord(svc: ServiceLike): ServiceRecord {
  const ips = svc.spec?.clusterIPs && svc.spec.clusterIPs.length > 0 ? svc.spec.clusterIPs : svc.spec?.clusterIP ? [svc.spec.clusterIP] : [];
  return {
    fact: {
      namespace: svc.metadata?.namespace ?? '',
      name: svc.metadata?.name ?? '',
      clusterIPs: ips.filter((ip) => ip !== '' && ip !== 'None'),
    },
    clusterDns: isClusterDnsService(svc.metadata),
  };
}

export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** A slice without the `kubernetes.io/service-name` label backs no Service and is left out. */
function sliceRecord(slice: EndpointSliceLike): SliceRecord {
  const serviceName = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
  if (!serviceName) return { fact: null };
  return {
    fact: {
      namespace: slice.metadata?.namespace ?? '',
      serviceName,
      endpoints: (slice.endpoints ?? []).map((e) => ({
        addresses: e.addresses ?? [],
        ...(e.targetRef?.kind && e.targetRef.name
          ? { targetRef: { kind: e.targetRef.kind, name: e.targetRef.name, ...(e.targetRef.namespace ? { namespace: e.targetRef.namespace } : {}) } }
          : {}),
      })),
    },
  };
}

function nodeFact(node: NodeLike): NodeFact {
  return {
    name: node.metadata?.name ?? '',
    addresses: (node.status?.addresses ?? []).map((a) => a.address ?? '').filter((a) => a !== ''),
    podCIDRs: node.spec?.podCIDRs && node.spec.podCIDRs.length > 0 ? node.spec.podCIDRs : node.spec?.podCIDR ? [node.spec.podCIDR] : [],
  };
}

/** `namespace/name` → parts, null when malformed or empty. */
export function parseSelfService(value: string): { namespace: string; name: string } | null {
  const slash = value.indexOf('/');
  if (slash <= 0 || slash === value.length - 1) return null;
  return { namespace: value.slice(0, slash), name: value.slice(slash + 1) };
}

// ---- Self pods (pure over facts; exported for unit tests)

/**
 * The service's current pods: those behind its own Service's EndpointSlices, and every pod whose confirmed
 * workload is one of theirs (a new replica not yet ready, so not yet an endpoint). Also returns those
 * workload keys, so a deleted pod can be recognised without a full recomputation.
 */
export function currentSelfPods(
  self: { namespace: string; name: string },
  pods: Iterable<PodFact>,
  slices: Iterable<EndpointSliceFact>,
  ownerIndex: OwnerIndex,
): { pods: Map<string, SelfPodFact>; workloadKeys: Set<string> } {
  const behindService = new Set<string>();
  for (const slice of slices) {
    if (slice.namespace !== self.namespace || slice.serviceName !== self.name) continue;
    for (const endpoint of slice.endpoints) {
      if (endpoint.targetRef?.kind === 'Pod') behindService.add(`${endpoint.targetRef.namespace ?? slice.namespace}/${endpoint.targetRef.name}`);
    }
  }
  const inNamespace: PodFact[] = [];
  for (const pod of pods) if (pod.namespace === self.namespace) inNamespace.push(pod);
  const workloadKeys = new Set<string>();
  for (const pod of inNamespace) {
    if (!behindService.has(`${pod.namespace}/${pod.name}`)) continue;
    const workload = resolveWorkload(pod, ownerIndex);
    if (workload.attributionConfirmed) workloadKeys.add(workload.workloadKey);
  }
  const result = new Map<string, SelfPodFact>();
  for (const pod of inNamespace) {
    const key = `${pod.namespace}/${pod.name}`;
    if (behindService.has(key) || workloadKeys.has(resolveWorkload(pod, ownerIndex).workloadKey)) {
      result.set(key, { namespace: pod.namespace, name: pod.name, ip: pod.ip });
    }
  }
  return { pods: result, workloadKeys };
}

// ---- resolv.conf (in a pod: the cluster domain and the node's extra search domains)

export interface ResolvConf {
  nameservers: string[];
  search: string[];
}

export function parseResolvConf(text: string): ResolvConf {
  const nameservers: string[] = [];
  let search: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    const [keyword, ...rest] = line.split(/\s+/);
    if (keyword === 'nameserver' && rest[0]) nameservers.push(rest[0]);
    // The last `search` (or `domain`) line wins, as in the resolver.
    if ((keyword === 'search' || keyword === 'domain') && rest.length > 0) search = rest.map((d) => d.toLowerCase().replace(/\.$/, ''));
  }
  return { nameservers, search };
}

/**
 * A pod's search list is `<ns>.svc.<domain> svc.<domain> <domain>` followed by the node's own domains: the
 * `svc.` entry names the cluster domain; what follows the cluster entries is the node's.
 */
export function clusterDnsSettings(search: readonly string[]): { clusterDomain?: string; searchDomains: string[] } {
  const svc = search.find((d) => d.startsWith('svc.'));
  if (!svc) return { searchDomains: [] };
  const clusterDomain = svc.slice('svc.'.length);
  const searchDomains = search.filter((d) => d !== clusterDomain && !d.endsWith(`.svc.${clusterDomain}`) && d !== svc);
  return { clusterDomain, searchDomains };
}

// ---- The cache

export interface ClusterFactsOptions {
  kc: KubeConfig;
  /** `runtimeGuard.selfService` (`namespace/name`). */
  selfService: string;
  /** Addresses of the API server known besides Service `default/kubernetes` (the configured server, discovery). */
  apiServerAddresses: string[];
  /** Cluster DNS addresses known besides the kube-dns Services (a pod's own nameservers). */
  clusterDnsAddresses: string[];
  clusterDomain?: string;
  searchDomains?: string[];
  onError(err: Error): void;
  requestTimeoutMs?: number;
  watchTimeoutSeconds?: number;
  watchGraceMs?: number;
  retryMinMs?: number;
  retryMaxMs?: number;
  selfPodMemoryMs?: number;
  /** How long after a 404 the ServiceCIDRs are listed again (a cluster upgraded to 1.33 starts serving them). */
  serviceCidrRetryMs?: number;
  now?: () => number;
}

/** A cluster that does not serve ServiceCIDRs is asked again this often. */
export const SERVICE_CIDR_RETRY_MS = 5 * 60 * 1000;

/**
 * A value rebuilt only when the version it was built from changed. A rebuilt array holding the same elements as the
 * last one (a pod's phase changed, not its fact) is the last one: the engine's memo compares the arrays by identity.
 */
class Memo<T> {
  private version: number | string | undefined;
  private value: T | undefined;
  get(version: number | string, build: () => T): T {
    if (this.version !== version || this.value === undefined) {
      const built = build();
      if (!(Array.isArray(built) && Array.isArray(this.value) && sameElements(built, this.value))) this.value = built;
      this.version = version;
    }
    return this.value;
  }
}

function sameElements(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export class ClusterFactsCache {
  private readonly pods: Reflector<PodLike, PodRecord>;
  private readonly replicaSets: Reflector<ControllerLike, ControllerFact>;
  private readonly jobs: Reflector<ControllerLike, ControllerFact>;
  private readonly services: Reflector<ServiceLike, ServiceRecord>;
  private readonly slices: Reflector<EndpointSliceLike, SliceRecord>;
  private readonly nodes: Reflector<NodeLike, NodeFact>;
  private readonly workloadObjects: Array<Reflector<ControllerLike, WorkloadFact>>;
  /** Optional (see the file comment): not in `all`. */
  private readonly serviceCidrReflector: Reflector<ServiceCidrLike, string[]>;
  private readonly all: Array<Reflector<never, unknown>>;
  /** Last confirmation per resource name. */
  private readonly freshAt = new Map<string, number>();
  private readonly stop$ = new AbortController();
  private readonly self: { namespace: string; name: string } | null;
  private readonly now: () => number;
  private readonly memoryMs: number;

  private readonly podsMemo = new Memo<PodFact[]>();
  private readonly replicaSetsMemo = new Memo<ControllerFact[]>();
  private readonly jobsMemo = new Memo<ControllerFact[]>();
  private readonly servicesMemo = new Memo<{ services: ServiceFact[]; dnsKeys: Set<string>; dnsIps: string[] }>();
  private readonly slicesMemo = new Memo<EndpointSliceFact[]>();
  private readonly nodesMemo = new Memo<NodeFact[]>();
  private readonly workloadsMemo = new Memo<WorkloadFact[]>();
  private readonly serviceCidrsMemo = new Memo<string[]>();
  private readonly ownersMemo = new Memo<OwnerIndex>();
  private selfVersion = '';
  private currentSelf = new Map<string, SelfPodFact>();
  private selfWorkloadKeys = new Set<string>();
  private readonly previousSelf = new Map<string, SelfPodFact & { goneAtMs: number }>();
  private selfRefresh: NodeJS.Timeout | undefined;

  constructor(private readonly o: ClusterFactsOptions) {
    this.now = o.now ?? Date.now;
    this.memoryMs = o.selfPodMemoryMs ?? SELF_POD_MEMORY_MS;
    this.self = parseSelfService(o.selfService);
    const timeout = o.requestTimeoutMs ?? 30_000;
    const signal = this.stop$.signal;
    const core = makeApi(o.kc, CoreV1Api, signal, timeout);
    const apps = makeApi(o.kc, AppsV1Api, signal, timeout);
    const batch = makeApi(o.kc, BatchV1Api, signal, timeout);
    const discovery = makeApi(o.kc, DiscoveryV1Api, signal, timeout);
    const networking = makeApi(o.kc, NetworkingV1Api, signal, timeout);
    const reflector = <O extends ObjectMeta, F>(
      name: string,
      path: string,
      listPage: (cont: string | undefined, limit: number) => Promise<ListPage<O>>,
      transform: (o: O) => F,
      onDelete?: (key: string, fact: F) => void,
      notServedRetryMs?: number,
    ): Reflector<O, F> =>
      new Reflector<O, F>({
        kc: o.kc,
        name,
        path,
        listPage,
        transform,
        onChange: () => this.scheduleSelfRefresh(),
        onFresh: (at) => this.freshAt.set(name, at),
        onError: (err) => o.onError(err),
        ...(onDelete ? { onDelete } : {}),
        ...(notServedRetryMs !== undefined ? { notServedRetryMs } : {}),
        watchTimeoutSeconds: o.watchTimeoutSeconds ?? 60,
        watchGraceMs: o.watchGraceMs ?? 30_000,
        retryMinMs: o.retryMinMs ?? 1000,
        retryMaxMs: o.retryMaxMs ?? 30_000,
        now: this.now,
      });
    // The typed list calls return model objects; the reflector reads the same fields a raw watch event has.
    const page = (cont: string | undefined, limit: number) => ({ limit, ...(cont ? { _continue: cont } : {}) });
    this.pods = reflector<PodLike, PodRecord>(
      'pods',
      '/api/v1/pods',
      (c, l) => core.listPodForAllNamespaces(page(c, l)) as Promise<ListPage<PodLike>>,
      podRecord,
      (_key, record) => this.podGone(record.fact),
    );
    this.replicaSets = reflector('replicasets', '/apis/apps/v1/replicasets', (c, l) => apps.listReplicaSetForAllNamespaces(page(c, l)) as Promise<ListPage<ControllerLike>>, controllerFact);
    this.jobs = reflector('jobs', '/apis/batch/v1/jobs', (c, l) => batch.listJobForAllNamespaces(page(c, l)) as Promise<ListPage<ControllerLike>>, controllerFact);
    this.services = reflector('services', '/api/v1/services', (c, l) => core.listServiceForAllNamespaces(page(c, l)) as Promise<ListPage<ServiceLike>>, serviceRecord);
    this.slices = reflector(
      'endpointslices',
      '/apis/discovery.k8s.io/v1/endpointslices',
      (c, l) => discovery.listEndpointSliceForAllNamespaces(page(c, l)) as Promise<ListPage<EndpointSliceLike>>,
      sliceRecord,
    );
    this.nodes = reflector('nodes', '/api/v1/nodes', (c, l) => core.listNode(page(c, l)) as Promise<ListPage<NodeLike>>, nodeFact);
    this.workloadObjects = [
      reflector('deployments', '/apis/apps/v1/deployments', (c, l) => apps.listDeploymentForAllNamespaces(page(c, l)) as Promise<ListPage<ControllerLike>>, workloadFact('Deployment')),
      reflector('statefulsets', '/apis/apps/v1/statefulsets', (c, l) => apps.listStatefulSetForAllNamespaces(page(c, l)) as Promise<ListPage<ControllerLike>>, workloadFact('StatefulSet')),
      reflector('daemonsets', '/apis/apps/v1/daemonsets', (c, l) => apps.listDaemonSetForAllNamespaces(page(c, l)) as Promise<ListPage<ControllerLike>>, workloadFact('DaemonSet')),
      reflector('cronjobs', '/apis/batch/v1/cronjobs', (c, l) => batch.listCronJobForAllNamespaces(page(c, l)) as Promise<ListPage<ControllerLike>>, workloadFact('CronJob')),
    ];
    this.serviceCidrReflector = reflector(
      'servicecidrs',
      '/apis/networking.k8s.io/v1/servicecidrs',
      (c, l) => networking.listServiceCIDR(page(c, l)) as Promise<ListPage<ServiceCidrLike>>,
      serviceCidrs,
      undefined,
      o.serviceCidrRetryMs ?? SERVICE_CIDR_RETRY_MS,
    );
    this.all = [this.pods, this.replicaSets, this.jobs, this.services, this.slices, this.nodes, ...this.workloadObjects] as unknown as Array<
      Reflector<never, unknown>
    >;
  }

  start(): void {
    for (const r of this.all) r.start();
    this.serviceCidrReflector.start();
  }

  /** Resolves once every resource listed (or on stop). */
  async whenSynced(): Promise<void> {
    await Promise.all(this.all.map((r) => r.whenSynced()));
  }

  async stop(): Promise<void> {
    this.stop$.abort();
    clearTimeout(this.selfRefresh);
    await Promise.all([...this.all, this.serviceCidrReflector].map((r) => r.stop()));
  }

  /**
   * Self pods are tracked even when nobody reads the facts: a replica that comes and goes between two
   * requests must still be remembered. Coalesced, so a busy cluster recomputes at most once a second.
   */
  private scheduleSelfRefresh(): void {
    if (!this.self || this.selfRefresh || this.stop$.signal.aborted) return;
    this.selfRefresh = setTimeout(() => {
      this.selfRefresh = undefined;
      this.facts();
    }, 1000);
    this.selfRefresh.unref();
  }

  facts(): ClusterFacts | null {
    if (!this.all.every((r) => r.synced)) return null;
    const pods = this.podsMemo.get(this.pods.version, () => [...this.pods.items.values()].map((r) => r.fact));
    const replicaSets = this.replicaSetsMemo.get(this.replicaSets.version, () => [...this.replicaSets.items.values()]);
    const jobs = this.jobsMemo.get(this.jobs.version, () => [...this.jobs.items.values()]);
    const services = this.servicesMemo.get(this.services.version, () => {
      const list = [...this.services.items.values()];
      const dns = list.filter((r) => r.clusterDns);
      return {
        services: list.map((r) => r.fact),
        dnsKeys: new Set(dns.map((r) => `${r.fact.namespace}/${r.fact.name}`)),
        dnsIps: dns.flatMap((r) => r.fact.clusterIPs),
      };
    });
    const slices = this.slicesMemo.get(this.slices.version, () => [...this.slices.items.values()].flatMap((r) => (r.fact ? [r.fact] : [])));
    const nodes = this.nodesMemo.get(this.nodes.version, () => [...this.nodes.items.values()]);
    const workloads = this.workloadsMemo.get(this.workloadObjects.map((r) => r.version).join('/'), () => this.workloadObjects.flatMap((r) => [...r.items.values()]));
    // Absent until the ServiceCIDRs listed (or when none is served): the engine then derives the range from ClusterIPs.
    const cidrs = this.serviceCidrReflector.synced
      ? this.serviceCidrsMemo.get(this.serviceCidrReflector.version, () => [...new Set([...this.serviceCidrReflector.items.values()].flat())].sort())
      : [];
    this.refreshSelf(pods, slices);
    const dnsEndpoints = slices
      .filter((s) => services.dnsKeys.has(`${s.namespace}/${s.serviceName}`))
      .flatMap((s) => s.endpoints.flatMap((e) => e.addresses));
    const oldestConfirmation = Math.min(
      ...['pods', 'replicasets', 'jobs', 'services', 'endpointslices', 'nodes', 'deployments', 'statefulsets', 'daemonsets', 'cronjobs'].map(
        (n) => this.freshAt.get(n) ?? 0,
      ),
    );
    return {
      fetchedAtUnix: unixSeconds(oldestConfirmation),
      complete: this.all.every((r) => r.healthy),
      ...(this.o.clusterDomain ? { clusterDomain: this.o.clusterDomain } : {}),
      pods,
      replicaSets,
      jobs,
      workloads,
      services: services.services,
      endpointSlices: slices,
      nodes,
      apiServerAddresses: this.o.apiServerAddresses,
      clusterDnsAddresses: [...new Set([...this.o.clusterDnsAddresses, ...services.dnsIps, ...dnsEndpoints])],
      selfService: this.self,
      selfPods: this.selfPods(),
      ...(cidrs.length > 0 ? { serviceCIDRs: cidrs } : {}),
      ...(this.o.searchDomains && this.o.searchDomains.length > 0 ? { searchDomains: this.o.searchDomains } : {}),
    };
  }

  /** Pods as the cache holds them (sensor discovery reads these). */
  podRecords(): Iterable<PodRecord> {
    return this.pods.items.values();
  }

  private ownerIndex(): OwnerIndex {
    return this.ownersMemo.get(`${this.replicaSets.version}/${this.jobs.version}`, () =>
      buildOwnerIndex({ replicaSets: [...this.replicaSets.items.values()], jobs: [...this.jobs.items.values()] }),
    );
  }

  private refreshSelf(pods: PodFact[], slices: EndpointSliceFact[]): void {
    if (!this.self) return;
    const version = `${this.pods.version}/${this.slices.version}/${this.replicaSets.version}/${this.jobs.version}`;
    if (version === this.selfVersion) return;
    this.selfVersion = version;
    const { pods: current, workloadKeys } = currentSelfPods(this.self, pods, slices, this.ownerIndex());
    const now = this.now();
    // A pod that stopped being one of the service's own (without being deleted) is a previous pod too.
    for (const [key, pod] of this.currentSelf) if (!current.has(key)) this.previousSelf.set(key, { ...pod, goneAtMs: now });
    for (const key of current.keys()) this.previousSelf.delete(key);
    this.currentSelf = current;
    this.selfWorkloadKeys = workloadKeys;
  }

  /**
   * A pod deleted from the cluster: remembered at once when it was one of the service's own, or of their
   * workload, even if no snapshot was built while it lived.
   */
  private podGone(pod: PodFact): void {
    if (!this.self || pod.namespace !== this.self.namespace) return;
    const key = `${pod.namespace}/${pod.name}`;
    const last = this.currentSelf.get(key);
    if (!last && !this.selfWorkloadKeys.has(resolveWorkload(pod, this.ownerIndex()).workloadKey)) return;
    this.previousSelf.set(key, { namespace: pod.namespace, name: pod.name, ip: pod.ip || last?.ip || '', goneAtMs: this.now() });
    this.currentSelf.delete(key);
  }

  private selfPods(): SelfPodFact[] {
    const now = this.now();
    for (const [key, pod] of this.previousSelf) if (now - pod.goneAtMs > this.memoryMs) this.previousSelf.delete(key);
    const out: SelfPodFact[] = [...this.currentSelf.values()];
    for (const [key, pod] of this.previousSelf) {
      if (!this.currentSelf.has(key)) out.push({ namespace: pod.namespace, name: pod.name, ip: pod.ip, goneAtUnix: Math.floor(pod.goneAtMs / 1000) });
    }
    return out;
  }
}
