/**
 * From a pod to the workload a reconciliation row is about, following controller ownerReferences only.
 * When the chain cannot be followed the row falls back to the pod itself and says so
 * (`attributionConfirmed: false`); names are never parsed to guess an owner.
 */
import type { ClusterFacts, ContainerFact, ControllerFact, OwnerReference, PodFact } from './types.js';
import { INFERRED_FROM_POD_NAME, POD_LEVEL_MULTI_CONTAINER } from './types.js';

export interface WorkloadRef {
  /** `<namespace>/<kind>/<name>`. */
  workloadKey: string;
  namespace: string;
  kind: string;
  name: string;
  attributionConfirmed: boolean;
  attributionNote: typeof POD_LEVEL_MULTI_CONTAINER | typeof INFERRED_FROM_POD_NAME | '';
}

/** Owner lookups for ReplicaSets and Jobs, built once per facts snapshot. */
export interface OwnerIndex {
  replicaSets: ReadonlyMap<string, ControllerFact>;
  jobs: ReadonlyMap<string, ControllerFact>;
  /** `<ns>/<name>` of every CronJob that owns a known Job. */
  cronJobs: ReadonlySet<string>;
}

/**
 * Mesh and telemetry sidecars whose egress cannot be told apart from the application's: by container
 * name, or by image repository (the part before the tag, compared on its last path segments).
 */
export const SIDECAR_CONTAINER_NAMES: ReadonlySet<string> = new Set([
  'istio-proxy',
  'linkerd-proxy',
  'envoy',
  'envoy-sidecar',
  'consul-dataplane',
  'consul-connect-envoy-sidecar',
  'kuma-sidecar',
  'daprd',
  'otel-collector',
  'otc-container',
  'opentelemetry-collector',
  'datadog-agent',
  'datadog-agent-injected',
  'vault-agent',
  'vault-agent-init',
  'cloud-sql-proxy',
  'cloudsql-proxy',
  'aws-xray-daemon',
  'xray-daemon',
]);

export const SIDECAR_IMAGE_REPOSITORIES: readonly string[] = [
  'istio/proxyv2',
  'linkerd/proxy',
  'envoyproxy/envoy',
  'hashicorp/consul-dataplane',
  'kumahq/kuma-dp',
  'daprio/daprd',
  'opentelemetry-collector',
  'opentelemetry-collector-contrib',
  'otel/opentelemetry-collector',
  'otel/opentelemetry-collector-contrib',
  'datadog/agent',
  'datadoghq/agent',
  'cloud-sql-connectors/cloud-sql-proxy',
  'amazon/aws-xray-daemon',
];

function imageRepository(image: string): string {
  const withoutDigest = image.split('@')[0] ?? '';
  const lastSlash = withoutDigest.lastIndexOf('/');
  const lastColon = withoutDigest.lastIndexOf(':');
  // A colon after the last slash is a tag; one before it is a registry port.
  const repository = lastColon > lastSlash ? withoutDigest.slice(0, lastColon) : withoutDigest;
  return repository.toLowerCase();
}

export function isKnownSidecar(container: ContainerFact): boolean {
  if (SIDECAR_CONTAINER_NAMES.has(container.name.toLowerCase())) return true;
  const repository = imageRepository(container.image);
  return SIDECAR_IMAGE_REPOSITORIES.some((known) => repository === known || repository.endsWith(`/${known}`));
}

/** A known sidecar next to at least one other container: its egress and the application's share the pod. */
export function hasKnownSidecar(pod: PodFact): boolean {
  const all = [...pod.containers, ...(pod.sidecarInitContainers ?? [])];
  return all.length >= 2 && all.some(isKnownSidecar);
}

function nsKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function buildOwnerIndex(facts: Pick<ClusterFacts, 'replicaSets' | 'jobs'>): OwnerIndex {
  const replicaSets = new Map<string, ControllerFact>();
  for (const rs of facts.replicaSets) replicaSets.set(nsKey(rs.namespace, rs.name), rs);
  const jobs = new Map<string, ControllerFact>();
  const cronJobs = new Set<string>();
  for (const job of facts.jobs) {
    jobs.set(nsKey(job.namespace, job.name), job);
    const owner = controllerOf(job.ownerReferences);
    if (owner?.kind === 'CronJob' && owner.name !== '') cronJobs.add(nsKey(job.namespace, owner.name));
  }
  return { replicaSets, jobs, cronJobs };
}

/** The controlling owner: the reference marked `controller`, else the only reference there is. */
export function controllerOf(refs: readonly OwnerReference[]): OwnerReference | undefined {
  return refs.find((ref) => ref.controller === true) ?? (refs.length === 1 ? refs[0] : undefined);
}

function workloadRef(namespace: string, kind: string, name: string, attributionConfirmed: boolean, sidecar: boolean): WorkloadRef {
  return {
    workloadKey: `${namespace}/${kind}/${name}`,
    namespace,
    kind,
    name,
    attributionConfirmed,
    attributionNote: sidecar ? POD_LEVEL_MULTI_CONTAINER : '',
  };
}

/**
 * The owner of a pod missing from the facts, from Kubernetes' naming: `<replicaset>-<5 chars>` of a known ReplicaSet,
 * `<job>-<5 chars>` of a known Job (each then through its own controller), `<cronjob>-<digits>-<5 chars>` of a CronJob
 * known through another of its Jobs. Unconfirmed, and the note says it was inferred. null when nothing matches.
 */
export function inferWorkloadFromName(namespace: string, podName: string, owners: OwnerIndex): WorkloadRef | null {
  const suffix = /^(.+)-[a-z0-9]{5}$/.exec(podName);
  if (!suffix) return null;
  const base = suffix[1]!;
  const inferred = (kind: string, name: string): WorkloadRef => ({ ...workloadRef(namespace, kind, name, false, false), attributionNote: INFERRED_FROM_POD_NAME });
  for (const [kind, index] of [
    ['ReplicaSet', owners.replicaSets],
    ['Job', owners.jobs],
  ] as const) {
    const parent = index.get(nsKey(namespace, base));
    if (!parent) continue;
    const owner = controllerOf(parent.ownerReferences);
    return owner && owner.name !== '' ? inferred(owner.kind, owner.name) : inferred(kind, base);
  }
  const scheduled = /^(.+)-\d+$/.exec(base);
  if (scheduled && owners.cronJobs.has(nsKey(namespace, scheduled[1]!))) return inferred('CronJob', scheduled[1]!);
  return null;
}

/** The pod itself, attribution unconfirmed. */
export function podLevelWorkload(namespace: string, podName: string, sidecar = false): WorkloadRef {
  return workloadRef(namespace, 'Pod', podName, false, sidecar);
}

/**
 * Deployment (through its ReplicaSet), CronJob (through its Job), StatefulSet, DaemonSet, Job, or any other
 * controller as named by the reference. A bare pod, a mirror pod (owner `Node`), or a ReplicaSet or Job
 * missing from the facts gives the pod level.
 */
export function resolveWorkload(pod: PodFact, owners: OwnerIndex): WorkloadRef {
  const sidecar = hasKnownSidecar(pod);
  const podLevel = (): WorkloadRef => podLevelWorkload(pod.namespace, pod.name, sidecar);
  const owner = controllerOf(pod.ownerReferences);
  if (!owner || owner.kind === 'Node' || owner.name === '') return podLevel();

  if (owner.kind === 'ReplicaSet' || owner.kind === 'Job') {
    const index = owner.kind === 'ReplicaSet' ? owners.replicaSets : owners.jobs;
    const parent = index.get(nsKey(pod.namespace, owner.name));
    if (!parent) return podLevel();
    const grandOwner = controllerOf(parent.ownerReferences);
    if (!grandOwner || grandOwner.name === '') return workloadRef(pod.namespace, owner.kind, owner.name, true, sidecar);
    return workloadRef(pod.namespace, grandOwner.kind, grandOwner.name, true, sidecar);
  }
  return workloadRef(pod.namespace, owner.kind, owner.name, true, sidecar);
}
