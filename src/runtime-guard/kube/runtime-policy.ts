/**
 * The RuntimePolicy custom resource (deploy/base/runtime-policy-crd.yaml) and the four observation policies the
 * service keeps (spec "Observation item"): one monitor-mode policy per family except `other` (dns, network,
 * open, exec), covering every namespace except `kube-system` and `kube-public`. The network one matches
 * every destination and has no allow list, so in-cluster traffic is reported too. `open` and `exec` need
 * nodes booted with BPF-LSM. Pure data; the controller (policy-controller.ts) writes it.
 *
 * The resource is cluster-scoped: a policy covers pods of many namespaces through its namespace selector
 * (as Tetragon's TracingPolicy and Cilium's clusterwide policies do), so it belongs to no namespace.
 */
import { isDeepStrictEqual } from 'node:util';

export const RUNTIME_POLICY = {
  group: 'runtime.reins.dev',
  version: 'v1',
  plural: 'runtimepolicies',
  singular: 'runtimepolicy',
  kind: 'RuntimePolicy',
  scope: 'Cluster',
} as const;

export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY_VALUE = 'reins';
export const FAMILY_LABEL = `${RUNTIME_POLICY.group}/family`;
/** The namespaces the observation policies leave out (spec "Observation item"). */
export const EXCLUDED_NAMESPACES = ['kube-system', 'kube-public'] as const;

export type PolicyFamily = 'dns' | 'network' | 'open' | 'exec';
export const POLICY_FAMILIES: readonly PolicyFamily[] = ['dns', 'network', 'open', 'exec'];

/**
 * What a rule matches: DNS question names (globs, `*` = any), IPv4 destinations (CIDRs, optional ports),
 * file or binary paths (prefixes). In `monitor` mode every match is reported and nothing is blocked; in
 * `enforce` mode a match not covered by `allow` is denied.
 */
export interface RuntimePolicyRule {
  names?: string[];
  cidrs?: string[];
  ports?: number[];
  paths?: string[];
}

export interface RuntimePolicySpec {
  mode: 'monitor' | 'enforce';
  family: PolicyFamily;
  /** Whether the family needs nodes booted with BPF-LSM (`open`, `exec`). */
  requiresBpfLsm: boolean;
  /** Namespaces covered: a label selector on the Namespace (empty = all), minus `excludeNamespaces`. */
  namespaceSelector: {
    matchLabels?: Record<string, string>;
    matchExpressions?: Array<{ key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }>;
    excludeNamespaces?: string[];
  };
  match: RuntimePolicyRule[];
  /** Exceptions to `match`; absent means none. */
  allow?: RuntimePolicyRule[];
}

export interface RuntimePolicyObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    labels: Record<string, string>;
    annotations?: Record<string, string>;
    resourceVersion?: string;
    [key: string]: unknown;
  };
  spec: RuntimePolicySpec;
}

const MATCH: Record<PolicyFamily, RuntimePolicyRule> = {
  dns: { names: ['*'] },
  // Deny-all: every IPv4 destination, in-cluster ones included (the sensor observes IPv4 only).
  network: { cidrs: ['0.0.0.0/0'] },
  open: { paths: ['/'] },
  exec: { paths: ['/'] },
};

const DESCRIPTION: Record<PolicyFamily, string> = {
  dns: 'Names resolved (DNS): every question asked by a pod, reported, never blocked.',
  network: 'Destinations reached (network): every outbound IPv4 connection, in-cluster included, reported, never blocked.',
  open: 'Paths opened (file): every file opened, reported, never blocked. Needs nodes booted with BPF-LSM.',
  exec: 'Binaries executed (exec): every binary executed, reported, never blocked. Needs nodes booted with BPF-LSM.',
};

export function policyName(family: PolicyFamily): string {
  return `reins-observe-${family}`;
}

export function desiredRuntimePolicy(family: PolicyFamily): RuntimePolicyObject {
  return {
    apiVersion: `${RUNTIME_POLICY.group}/${RUNTIME_POLICY.version}`,
    kind: RUNTIME_POLICY.kind,
    metadata: {
      name: policyName(family),
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [FAMILY_LABEL]: family },
      annotations: { [`${RUNTIME_POLICY.group}/description`]: DESCRIPTION[family] },
    },
    spec: {
      mode: 'monitor',
      family,
      requiresBpfLsm: family === 'open' || family === 'exec',
      namespaceSelector: { excludeNamespaces: [...EXCLUDED_NAMESPACES] },
      match: [MATCH[family]],
    },
  };
}

/** The four policies the leader keeps, in the spec's family order. */
export function desiredRuntimePolicies(): RuntimePolicyObject[] {
  return POLICY_FAMILIES.map(desiredRuntimePolicy);
}

/** Whether a stored policy differs from what it should be: its spec, or one of the labels the service sets. */
export function hasDrifted(actual: { metadata?: { labels?: Record<string, string> }; spec?: unknown }, desired: RuntimePolicyObject): boolean {
  if (!isDeepStrictEqual(actual.spec, desired.spec)) return true;
  const labels = actual.metadata?.labels ?? {};
  return Object.entries(desired.metadata.labels).some(([k, v]) => labels[k] !== v);
}
