/**
 * The seam between the runtime guard's Kubernetes side (cluster facts, capability probe, leader lease,
 * RuntimePolicy upkeep, sensor discovery; `kube/`) and its store side (sensor ingest, ingest lag, the
 * three read-only endpoints). The store side reads the cluster only through `RuntimeCluster`.
 */
import type { ClusterFacts } from './types.js';

/** Spec "Capability state": `unknown` is neither clean nor absent. */
export type CapabilityState = 'available' | 'unavailable' | 'unknown';

/** A permission the service account lacks, from the start-up SelfSubjectAccessReviews (spec `rbacGaps[]`). */
export interface RbacGap {
  group: string;
  resource: string;
  verb: string;
  namespace: string;
}

/** What the Kubernetes side knows of the cluster's capabilities (the node part comes from sensor status). */
export interface ClusterCapability {
  /** Whether the RuntimePolicy CRD is served; `unknown` until a probe completed. */
  crd: CapabilityState;
  crdReason: string;
  rbacGaps: RbacGap[];
  /** When the capability probe last ran; 0 = never (unknown, not clean). */
  probedAtUnix: number;
}

/** How this process reaches a cluster, or null when it does not run in (or against) one. */
export interface ClusterEnvironment {
  /** `in-cluster`: a pod's service account; `kubeconfig`: the file `KUBECONFIG` names. */
  kind: 'in-cluster' | 'kubeconfig';
  /** The kubeconfig path for `kubeconfig`. */
  kubeconfigPath?: string;
}

export interface RuntimeCluster {
  /**
   * The cluster facts as of now (the informers' snapshot), null before the first complete list.
   * `fetchedAtUnix` is stamped on every successful list, watch event or bookmark; `complete` is false
   * while an informer is not synced or after a list failed.
   */
  facts(): ClusterFacts | null;
  capability(): ClusterCapability;
  /** Sensor metrics URLs: `runtimeGuard.sensor.metricsTargets` when set, else the discovered sensor pods. */
  sensorMetricsTargets(): string[];
  /** Whether this replica holds the runtime guard's Lease (it runs the controller's write tasks). */
  isLeader(): boolean;
  stop(): Promise<void>;
}
