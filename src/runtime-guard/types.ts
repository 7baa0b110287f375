/**
 * Plain data of the runtime guard's reconciliation engine: what goes in (sensor observations, cluster
 * facts, governed calls) and what comes out (the reconciliation rows of the spec, field for field).
 */
import type { GovernedCallType } from '../shared/governed-call.js';

export type ObservationFamily = 'dns' | 'network' | 'open' | 'exec' | 'other';

/** One ingest item (docs/api.md, "Runtime sensor ingest"): an observation item plus `podIP` and `family`. */
export interface Observation {
  rule: string;
  behavior: string;
  subject: string;
  /** dns: first address of the pod's own answer, '' when none. network: the address connected to. */
  destIP: string;
  /** dns: the name as the pod asked it (search-domain variants included). network: '' unless the sensor knew a name. */
  destName: string;
  /** Identical events aggregated within one report. */
  count: number;
  node: string;
  podName: string;
  podIP: string;
  namespace: string;
  result: string;
  mode: string;
  /** Unix seconds, the last of the aggregated events. */
  observedAt: number;
  family: ObservationFamily;
}

/** The observation item as the `/observations` endpoint shows it (spec "Observation item"). */
export type ObservationItem = Omit<Observation, 'podIP' | 'family'>;

// ---- Cluster facts: shaped after the Kubernetes objects so an informer can copy fields across. ----

export interface OwnerReference {
  kind: string;
  name: string;
  /** `ownerReferences[].controller`; the controlling owner is the one that counts. */
  controller?: boolean;
}

export interface ContainerFact {
  name: string;
  image: string;
}

export interface PodFact {
  namespace: string;
  name: string;
  /** `status.podIP`; '' while unassigned. */
  ip: string;
  /** `status.podIPs`, when there are several. */
  ips?: string[];
  node: string;
  containers: ContainerFact[];
  /** Init containers with `restartPolicy: Always` (native sidecars) only. */
  sidecarInitContainers?: ContainerFact[];
  ownerReferences: OwnerReference[];
}

/** A ReplicaSet or a Job: only its owners matter, so that owner chains resolve. */
export interface ControllerFact {
  namespace: string;
  name: string;
  ownerReferences: OwnerReference[];
}

/**
 * A workload object itself (Deployment, StatefulSet, DaemonSet, CronJob): known even with no pod, ReplicaSet or Job
 * (scaled to zero, a CronJob between runs), so its row is there evidence or not.
 */
export interface WorkloadFact {
  namespace: string;
  /** `Deployment`, `StatefulSet`, `DaemonSet` or `CronJob`. */
  kind: string;
  name: string;
}

export interface ServiceFact {
  namespace: string;
  name: string;
  /** `spec.clusterIPs`; `None` (headless) and '' are ignored. */
  clusterIPs: string[];
}

export interface EndpointFact {
  addresses: string[];
  targetRef?: { kind: string; name: string; namespace?: string };
}

export interface EndpointSliceFact {
  namespace: string;
  /** The `kubernetes.io/service-name` label. */
  serviceName: string;
  endpoints: EndpointFact[];
}

export interface NodeFact {
  name: string;
  /** `status.addresses[].address` of every type. */
  addresses: string[];
  /** `spec.podCIDRs` (or `spec.podCIDR`), when the cluster allocates pod ranges per node: part of the cluster's own ranges. */
  podCIDRs?: string[];
}

export interface SelfPodFact {
  namespace: string;
  name: string;
  ip: string;
  /** A previous pod: when it went (or stopped being one of the service's own). Absent for a current pod. */
  goneAtUnix?: number;
}

/** A pod's workload as remembered (see `ClusterFacts.podOwners`). */
export interface PodOwnerFact {
  namespace: string;
  /** The pod's name. */
  name: string;
  /** The workload's kind and name (`Deployment`/`agent`). */
  kind: string;
  workload: string;
}

export interface ClusterFacts {
  /** When the snapshot was last known to match the API server (last successful list or watch event). */
  fetchedAtUnix: number;
  /** False while any informer has not synced, or after a list failed. */
  complete: boolean;
  /** Defaults to `cluster.local`. */
  clusterDomain?: string;
  pods: PodFact[];
  replicaSets: ControllerFact[];
  jobs: ControllerFact[];
  /** Deployments, StatefulSets, DaemonSets and CronJobs: each gets a row, with or without pods. Optional. */
  workloads?: WorkloadFact[];
  services: ServiceFact[];
  endpointSlices: EndpointSliceFact[];
  nodes: NodeFact[];
  /**
   * Extra API server addresses. The engine already takes Service `default/kubernetes` and its
   * EndpointSlice addresses from `services` and `endpointSlices`.
   */
  apiServerAddresses: string[];
  /**
   * Extra cluster DNS addresses. The engine already takes Service `kube-system/kube-dns` (and its
   * endpoints) and the NodeLocal DNSCache address 169.254.20.10.
   */
  clusterDnsAddresses: string[];
  /** The service's own Service (`runtimeGuard.selfService`), null when unknown. */
  selfService: { namespace: string; name: string } | null;
  /** Pods known to belong to the service's own workload, current and previous. */
  selfPods: SelfPodFact[];
  /**
   * The Service CIDRs, when known (`networking.k8s.io/v1` ServiceCIDR objects, `spec.cidrs`): part of the cluster's
   * own ranges. Absent or empty: the engine derives one from the ClusterIPs (classify.ts `derivedServiceCidr`).
   */
  serviceCIDRs?: string[];
  /**
   * The workload of every pod seen within the memory (24 h and more), as resolved through its owner chain while it
   * lived, kept in the shared store by every replica: a pod deleted with its ReplicaSet after a rollout still
   * attributes to its Deployment. Optional; a pod in `pods` resolves through its live chain first.
   */
  podOwners?: PodOwnerFact[];
  /** Node resolver search domains beyond the cluster ones (e.g. a corporate domain), optional. */
  searchDomains?: string[];
}

/** An audit event of a governed call, as far as the engine needs it. */
export interface GovernedCall {
  type: GovernedCallType;
  /** Agent or developer identity id `<namespace>/<name>`. */
  identityId?: string;
  /** Egress only: the destination host. */
  host?: string;
  atUnix: number;
  /** Identical calls (same type, identity and host) this item stands for; 1 when absent. */
  count?: number;
}

// ---- Output: the spec's field names exactly. ----

export type FindingKind = 'provider' | 'infra' | 'imds' | 'internal';

export type SuppressReason =
  | 'coredns'
  | 'cluster-apiserver'
  | 'in-cluster'
  | 'node-or-link-local'
  | 'service-gateway'
  | 'reverse-dns'
  | 'search-domain-expansion'
  | 'sidecar-control-plane'
  | 'package-registry'
  | 'egress-nat-detector-disabled'
  | 'cluster-facts-unavailable';

/** Reasons that stand the network detector down for a whole window. */
export type WindowSuppressReason = Extract<SuppressReason, 'egress-nat-detector-disabled' | 'cluster-facts-unavailable'>;

/** Identity ladder rungs the engine produces; R1, R3, R4 and R5 are reserved. */
export type Rung = 'R0' | 'R2' | 'R6';

export interface Destination {
  destName: string;
  destIP: string;
  source: 'network' | 'dns';
  behaviors: string[];
  count: number;
  governedCalls: number;
  rung: Rung;
  confidence: number;
  kind: FindingKind;
  suppressed: boolean;
  /** '' when not suppressed. */
  suppressReason: SuppressReason | '';
}

export const POD_LEVEL_MULTI_CONTAINER = 'pod-level (multi-container)';
/** The pod was gone from the facts and never remembered: its owner was inferred from Kubernetes' pod naming. */
export const INFERRED_FROM_POD_NAME = 'owner inferred from pod name';

export interface ReconciliationRow {
  workloadKey: string;
  namespace: string;
  kind: string;
  name: string;
  bypassedDestinations: number;
  m: number;
  n: number;
  dnsOnly: boolean;
  joinMethod: 'name-based';
  attributionConfirmed: boolean;
  /** `pod-level (multi-container)`, `owner inferred from pod name`, or ''. */
  attributionNote: typeof POD_LEVEL_MULTI_CONTAINER | typeof INFERRED_FROM_POD_NAME | '';
  destinations: Destination[];
}

export interface ReconciliationWindow {
  windowStartUnix: number;
  windowEndUnix: number;
}

/** The payload minus `enabled`, `reason` and `ingestLag`, which the caller adds. */
export interface ReconciliationResult extends ReconciliationWindow {
  rows: ReconciliationRow[];
  networkDetectorDisabled: boolean;
  /** Prose; '' when the detector did not stand down. */
  disabledReason: string;
}

export interface ReconcileInput {
  observations: readonly Observation[];
  /** null when the cluster facts could not be read at all. */
  facts: ClusterFacts | null;
  governedCalls: readonly GovernedCall[];
  window: ReconciliationWindow;
  egressPlaneEnabled: boolean;
  nowUnix: number;
}
