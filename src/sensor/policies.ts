/**
 * Observation policies: the sensor observes what the RuntimePolicies (`runtime.reins.dev/v1`, cluster-scoped) Reins
 * keeps ask for (deploy/README.md "The RuntimePolicy CRD"): one monitor-mode policy per family, covering every
 * namespace except the excluded ones. A family whose policy is absent is not observed. The policies are re-listed
 * periodically (four small objects: a list every 30 s costs the API server nothing and needs no watch state).
 *
 * What is honoured: `spec.family`, `spec.mode` (monitor only: the sensor never blocks; an enforce-mode policy is
 * left to an enforcing engine and noted in the status), `spec.namespaceSelector.excludeNamespaces`. Not yet: label
 * selectors on namespaces and the `match`/`allow` rules (the monitor policies Reins keeps match everything).
 */
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import type { ObservationFamily } from '../runtime-guard/types.js';

export type PolicyFamily = Exclude<ObservationFamily, 'other'>;
const FAMILIES: readonly PolicyFamily[] = ['dns', 'network', 'open', 'exec'];

export interface FamilyPlan {
  /** The policy's name: the observation item's `rule`. */
  rule: string;
  excludedNamespaces: string[];
}

export interface ObservationPlan {
  families: Map<PolicyFamily, FamilyPlan>;
  /** Policies not followed, and why (for the node status). */
  notes: string[];
}

interface PolicyObject {
  metadata?: { name?: string };
  spec?: { family?: string; mode?: string; namespaceSelector?: { excludeNamespaces?: unknown } };
}

/** The plan from the listed policies: per family, the first monitor-mode policy by name. */
export function planFromPolicies(items: readonly PolicyObject[]): ObservationPlan {
  const families = new Map<PolicyFamily, FamilyPlan>();
  const notes: string[] = [];
  const sorted = [...items].sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
  for (const p of sorted) {
    const name = p.metadata?.name ?? '';
    const family = p.spec?.family as PolicyFamily | undefined;
    if (!name || !family || !FAMILIES.includes(family)) continue;
    if (p.spec?.mode !== 'monitor') {
      notes.push(`RuntimePolicy ${name}: mode ${p.spec?.mode ?? '(none)'} is not followed (this sensor only monitors)`);
      continue;
    }
    if (families.has(family)) continue;
    const excluded = p.spec?.namespaceSelector?.excludeNamespaces;
    families.set(family, { rule: name, excludedNamespaces: Array.isArray(excluded) ? excluded.filter((n): n is string => typeof n === 'string') : [] });
  }
  return { families, notes };
}

export interface PolicyWatcherOptions {
  env: NodeJS.ProcessEnv;
  intervalMs: number;
  onPlan: (plan: ObservationPlan) => void;
  /** Why the policies cannot be read (null once they can), for the node status. */
  onTrouble: (trouble: string | null) => void;
}

/** The client configuration as a pod or a developer has it: in-cluster service account, else KUBECONFIG. */
export function kubeConfigFrom(env: NodeJS.ProcessEnv): KubeConfig | null {
  const kc = new KubeConfig();
  if (env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else if (env.KUBECONFIG) kc.loadFromFile(env.KUBECONFIG);
  else return null;
  return kc.getCurrentCluster() ? kc : null;
}

export class PolicyWatcher {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private last = '';

  constructor(
    private readonly api: CustomObjectsApi,
    private readonly o: PolicyWatcherOptions,
  ) {}

  static create(o: PolicyWatcherOptions): PolicyWatcher | null {
    const kc = kubeConfigFrom(o.env);
    return kc ? new PolicyWatcher(kc.makeApiClient(CustomObjectsApi), o) : null;
  }

  async start(): Promise<void> {
    await this.poll();
  }

  private async poll(): Promise<void> {
    if (this.stopped) return;
    try {
      const list = (await this.api.listClusterCustomObject({ group: 'runtime.reins.dev', version: 'v1', plural: 'runtimepolicies' })) as { items?: PolicyObject[] };
      const plan = planFromPolicies(list.items ?? []);
      const key = JSON.stringify([[...plan.families.entries()], plan.notes]);
      this.o.onTrouble(null);
      if (key !== this.last) {
        this.last = key;
        this.o.onPlan(plan);
      }
    } catch (err) {
      // Keep the last plan: an API server restart must not switch observation off.
      const code = (err as { code?: number }).code;
      this.o.onTrouble(`cannot list RuntimePolicies (runtime.reins.dev/v1)${code ? `: HTTP ${code}` : `: ${(err as Error).message}`}; keeping the last plan`);
    }
    if (!this.stopped) this.timer = setTimeout(() => void this.poll(), this.o.intervalMs);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
