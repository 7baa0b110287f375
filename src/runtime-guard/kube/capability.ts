/**
 * The Kubernetes half of the spec's capability snapshot: whether the RuntimePolicy CRD is served, and which
 * permissions the service account lacks.
 *
 * - `crd`: discovery of the CRD's group/version. `available` when its resource list names the plural;
 *   `unavailable` only on positive evidence (the API server answers 404 for the group/version, or lists it
 *   without the resource); `unknown` when discovery itself failed, and before the first probe. Re-probed every
 *   `intervalMs` (the spec's 5 minutes).
 * - `rbacGaps`: one SelfSubjectAccessReview per permission the runtime guard uses (`requiredPermissions`),
 *   at start (the spec's "startup self-subject access review"). A review that could not be made is retried
 *   with the next probe; it is never reported as a gap, since nothing was established.
 * - `probedAtUnix`: when a probe last completed; 0 until then (unknown, not clean).
 */
import { AuthorizationV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { CapabilityState, ClusterCapability, RbacGap } from '../cluster.js';
import { describeKubeError, httpStatusOf, makeApi, unixSeconds } from './client.js';
import { RUNTIME_POLICY } from './runtime-policy.js';

export const CAPABILITY_PROBE_INTERVAL_MS = 5 * 60 * 1000;
/** How soon a probe pass whose access reviews were not all answered is tried again. */
const UNANSWERED_RETRY_MS = 5_000;

export type Permission = RbacGap;

/**
 * Every permission the runtime guard uses, in the order a reader of `rbacGaps` expects: the cluster facts'
 * list and watch (pods also serve sensor discovery; the workload objects give every workload its row; ServiceCIDRs
 * the Service range, on clusters that serve them), the Lease in the service's own namespace, and the
 * RuntimePolicy objects (cluster-scoped). deploy/README.md's ClusterRole and Role grant exactly these.
 */
export function requiredPermissions(leaseNamespace: string): Permission[] {
  const watched: Array<[string, string]> = [
    ['', 'pods'],
    ['', 'services'],
    ['discovery.k8s.io', 'endpointslices'],
    ['', 'nodes'],
    ['apps', 'replicasets'],
    ['batch', 'jobs'],
    ['apps', 'deployments'],
    ['apps', 'statefulsets'],
    ['apps', 'daemonsets'],
    ['batch', 'cronjobs'],
    ['networking.k8s.io', 'servicecidrs'],
  ];
  return [
    ...watched.flatMap(([group, resource]) => ['list', 'watch'].map((verb) => ({ group, resource, verb, namespace: '' }))),
    ...['get', 'create', 'update'].map((verb) => ({ group: 'coordination.k8s.io', resource: 'leases', verb, namespace: leaseNamespace })),
    ...['list', 'create', 'update', 'delete'].map((verb) => ({ group: RUNTIME_POLICY.group, resource: RUNTIME_POLICY.plural, verb, namespace: '' })),
  ];
}

export interface CapabilityProbeOptions {
  kc: KubeConfig;
  /** The namespace of the Lease (the self Service's). */
  leaseNamespace: string;
  intervalMs?: number;
  requestTimeoutMs?: number;
  onError(err: Error): void;
  /** After every completed probe (the controller reacts to the CRD appearing). */
  onProbe?(capability: ClusterCapability): void;
  now?: () => number;
}

export class CapabilityProbe {
  private state: ClusterCapability = { crd: 'unknown', crdReason: 'the capability probe has not completed yet', rbacGaps: [], probedAtUnix: 0 };
  /** Null until every review of the startup pass was answered. */
  private gaps: RbacGap[] | null = null;
  private readonly stop$ = new AbortController();
  private readonly custom: CustomObjectsApi;
  private readonly authorization: AuthorizationV1Api;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly o: CapabilityProbeOptions) {
    this.now = o.now ?? Date.now;
    const timeout = o.requestTimeoutMs ?? 10_000;
    this.custom = makeApi(o.kc, CustomObjectsApi, this.stop$.signal, timeout);
    this.authorization = makeApi(o.kc, AuthorizationV1Api, this.stop$.signal, timeout);
  }

  capability(): ClusterCapability {
    return { ...this.state, rbacGaps: this.state.rbacGaps.map((g) => ({ ...g })) };
  }

  start(): void {
    if (this.running || this.stop$.signal.aborted) return;
    const loop = async (): Promise<void> => {
      await this.probe();
      if (this.stop$.signal.aborted) return;
      // A pass whose access reviews were not all answered (an API server slow or briefly away) is retried soon:
      // until then rbacGaps is empty for want of answers, not because nothing is missing.
      const interval = this.o.intervalMs ?? CAPABILITY_PROBE_INTERVAL_MS;
      this.timer = setTimeout(
        () => {
          this.running = loop();
        },
        this.gaps === null ? Math.min(interval, UNANSWERED_RETRY_MS) : interval,
      );
      this.timer.unref();
    };
    this.running = loop();
  }

  async stop(): Promise<void> {
    this.stop$.abort();
    clearTimeout(this.timer);
    await this.running;
  }

  /** One probe: CRD discovery, and the access reviews until they were all answered once. */
  async probe(): Promise<ClusterCapability> {
    const [crd, gaps] = await Promise.all([this.probeCrd(), this.gaps ? Promise.resolve(this.gaps) : this.reviewAccess()]);
    if (this.stop$.signal.aborted) return this.capability();
    if (gaps) this.gaps = gaps;
    this.state = { crd: crd.state, crdReason: crd.reason, rbacGaps: this.gaps ?? [], probedAtUnix: unixSeconds(this.now()) };
    this.o.onProbe?.(this.capability());
    return this.capability();
  }

  private async probeCrd(): Promise<{ state: CapabilityState; reason: string }> {
    const gv = `${RUNTIME_POLICY.group}/${RUNTIME_POLICY.version}`;
    try {
      const list = await this.custom.getAPIResources({ group: RUNTIME_POLICY.group, version: RUNTIME_POLICY.version });
      if ((list.resources ?? []).some((r) => r.name === RUNTIME_POLICY.plural)) {
        return { state: 'available', reason: `the RuntimePolicy CRD is served (${RUNTIME_POLICY.plural}.${gv})` };
      }
      return { state: 'unavailable', reason: `the API server serves ${gv} but not ${RUNTIME_POLICY.plural}: the RuntimePolicy CRD is not installed` };
    } catch (err) {
      if (httpStatusOf(err) === 404) {
        return { state: 'unavailable', reason: `the API server does not serve ${gv}: the RuntimePolicy CRD is not installed (deploy/base/runtime-policy-crd.yaml)` };
      }
      if (!this.stop$.signal.aborted) this.o.onError(new Error(`RuntimePolicy CRD discovery failed: ${describeKubeError(err)}`));
      return { state: 'unknown', reason: `API discovery failed: ${describeKubeError(err)}` };
    }
  }

  /** Null when any review could not be made (retried at the next probe). */
  private async reviewAccess(): Promise<RbacGap[] | null> {
    const permissions = requiredPermissions(this.o.leaseNamespace);
    const answers = await Promise.all(
      permissions.map(async (p) => {
        try {
          const review = await this.authorization.createSelfSubjectAccessReview({
            body: {
              apiVersion: 'authorization.k8s.io/v1',
              kind: 'SelfSubjectAccessReview',
              spec: { resourceAttributes: { group: p.group, resource: p.resource, verb: p.verb, namespace: p.namespace } },
            },
          });
          return review.status?.allowed === true ? 'allowed' : 'denied';
        } catch (err) {
          if (!this.stop$.signal.aborted) this.o.onError(new Error(`the access review of ${p.verb} ${p.resource} failed: ${describeKubeError(err)}`));
          return 'failed';
        }
      }),
    );
    if (answers.includes('failed')) return null;
    return permissions.filter((_, i) => answers[i] === 'denied');
  }
}
