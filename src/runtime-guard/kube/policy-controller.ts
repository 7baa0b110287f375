/**
 * Keeps exactly the four observation RuntimePolicies (runtime-policy.ts) in the cluster: creates missing ones,
 * replaces drifted ones, deletes any other policy labelled `app.kubernetes.io/managed-by=reins`. It writes only
 * on the leader and only while the CRD is served, and checks leadership again before every write, so a
 * replica that lost the Lease mid-round stops writing. A policy of the same name that Reins does not manage
 * is left alone and reported. Runs every `intervalMs`, and at once when `trigger()`ed (leadership gained,
 * the CRD appeared).
 */
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { describeKubeError, httpStatusOf, makeApi } from './client.js';
import {
  desiredRuntimePolicies,
  hasDrifted,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  RUNTIME_POLICY,
  type RuntimePolicyObject,
} from './runtime-policy.js';

export interface PolicyControllerOptions {
  kc: KubeConfig;
  isLeader(): boolean;
  crdServed(): boolean;
  intervalMs?: number;
  requestTimeoutMs?: number;
  onError(err: Error): void;
  /** After every round that ran (for tests and logs). */
  onRound?(result: ReconcileRound): void;
}

export interface ReconcileRound {
  created: string[];
  replaced: string[];
  deleted: string[];
}

interface StoredPolicy {
  metadata?: { name?: string; resourceVersion?: string; labels?: Record<string, string>; [key: string]: unknown };
  spec?: unknown;
}

export class RuntimePolicyController {
  private readonly api: CustomObjectsApi;
  private readonly stop$ = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private readonly reportedForeign = new Set<string>();

  constructor(private readonly o: PolicyControllerOptions) {
    this.api = makeApi(o.kc, CustomObjectsApi, this.stop$.signal, o.requestTimeoutMs ?? 10_000);
  }

  start(): void {
    this.trigger();
  }

  /** Runs a round now (or right after the one in progress). */
  trigger(): void {
    if (this.stop$.signal.aborted) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = this.round().finally(() => {
      this.running = undefined;
      if (this.stop$.signal.aborted) return;
      if (this.again) {
        this.again = false;
        this.trigger();
        return;
      }
      this.timer = setTimeout(() => this.trigger(), this.o.intervalMs ?? 60_000);
      this.timer.unref();
    });
  }

  async stop(): Promise<void> {
    this.stop$.abort();
    clearTimeout(this.timer);
    await this.running;
  }

  private get mayWrite(): boolean {
    return !this.stop$.signal.aborted && this.o.isLeader() && this.o.crdServed();
  }

  private async round(): Promise<void> {
    if (!this.mayWrite) return;
    try {
      const result = await this.reconcile();
      if (result) this.o.onRound?.(result);
    } catch (err) {
      if (!this.stop$.signal.aborted) this.o.onError(new Error(`keeping the RuntimePolicies failed: ${describeKubeError(err)}`));
    }
  }

  private async reconcile(): Promise<ReconcileRound | null> {
    const { group, version, plural } = RUNTIME_POLICY;
    const list = (await this.api.listClusterCustomObject({
      group,
      version,
      plural,
      labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`,
    })) as { items?: StoredPolicy[] };
    const owned = new Map<string, StoredPolicy>();
    for (const item of list.items ?? []) if (item.metadata?.name) owned.set(item.metadata.name, item);
    const result: ReconcileRound = { created: [], replaced: [], deleted: [] };
    const desired = desiredRuntimePolicies();

    for (const policy of desired) {
      const name = policy.metadata.name;
      const actual = owned.get(name);
      if (!this.mayWrite) return null;
      if (!actual) {
        if (await this.create(policy)) result.created.push(name);
      } else if (hasDrifted(actual, policy)) {
        if (await this.replace(policy, actual)) result.replaced.push(name);
      }
    }
    const wanted = new Set(desired.map((p) => p.metadata.name));
    for (const name of owned.keys()) {
      if (wanted.has(name)) continue;
      if (!this.mayWrite) return null;
      try {
        await this.api.deleteClusterCustomObject({ group, version, plural, name });
        result.deleted.push(name);
      } catch (err) {
        if (httpStatusOf(err) !== 404) throw err;
      }
    }
    return result;
  }

  private async create(policy: RuntimePolicyObject): Promise<boolean> {
    const { group, version, plural } = RUNTIME_POLICY;
    try {
      await this.api.createClusterCustomObject({ group, version, plural, body: policy });
      return true;
    } catch (err) {
      if (httpStatusOf(err) !== 409) throw err;
      // Not in the list of ours, yet the name is taken: someone else's policy. Leave it; say so once.
      const name = policy.metadata.name;
      if (!this.reportedForeign.has(name)) {
        this.reportedForeign.add(name);
        this.o.onError(new Error(`RuntimePolicy ${name} exists without the label ${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}; Reins leaves it alone`));
      }
      return false;
    }
  }

  private async replace(policy: RuntimePolicyObject, actual: StoredPolicy): Promise<boolean> {
    const { group, version, plural } = RUNTIME_POLICY;
    const body: RuntimePolicyObject = {
      ...policy,
      metadata: {
        ...actual.metadata,
        ...policy.metadata,
        labels: { ...(actual.metadata?.labels ?? {}), ...policy.metadata.labels },
        annotations: { ...((actual.metadata?.annotations as Record<string, string> | undefined) ?? {}), ...(policy.metadata.annotations ?? {}) },
        ...(actual.metadata?.resourceVersion ? { resourceVersion: actual.metadata.resourceVersion } : {}),
      },
    };
    try {
      await this.api.replaceClusterCustomObject({ group, version, plural, name: policy.metadata.name, body });
      return true;
    } catch (err) {
      // Changed or deleted since the list: the next round sees the new state.
      if (httpStatusOf(err) === 409 || httpStatusOf(err) === 404) return false;
      throw err;
    }
  }
}
