/**
 * Observation policies: the sensor observes what the RuntimePolicies (`runtime.reins.dev/v1`, cluster-scoped) Reins
 * keeps ask for (deploy/README.md "The RuntimePolicy CRD"): one monitor-mode policy per family, covering every
 * namespace except the excluded ones. A family whose policy is absent is not observed. The policies are listed, then
 * watched from the list's resourceVersion: a change (added, modified, deleted) re-lists them at once, so a policy
 * applies within a second. The watch only says "something changed"; the list is the truth, so a missed or
 * out-of-order event cannot leave a wrong plan. A periodic re-list (every 30 s) stays as the safety net for a watch
 * that is down; a watch that ends is re-opened (at once after a server-side timeout, with back-off after an error).
 *
 * What is honoured: `spec.family`, `spec.mode` (monitor only: the sensor never blocks; an enforce-mode policy is
 * left to an enforcing engine and noted in the status), `spec.namespaceSelector`: its label selector on the
 * Namespace (`matchLabels`, `matchExpressions`; empty = every namespace) and `excludeNamespaces`. The Namespaces'
 * labels are listed with the policies, only while some policy's selector needs them; `spec.match`, the events a
 * monitor policy reports (match-rules.ts; Reins' own four match everything). `allow` is enforce mode's.
 */
import { CoreV1Api, CustomObjectsApi, KubeConfig, Watch } from '@kubernetes/client-node';
import type { ObservationFamily } from '../runtime-guard/types.js';
import { selectsEverything, type LabelSelector } from './label-selector.js';
import { compileMatch, type MatchRules } from './match-rules.js';

export type PolicyFamily = Exclude<ObservationFamily, 'other'>;
const FAMILIES: readonly PolicyFamily[] = ['dns', 'network', 'open', 'exec'];

export interface FamilyPlan {
  /** The policy's name: the observation item's `rule`. */
  rule: string;
  excludedNamespaces: string[];
  /** The namespaces covered, by their labels; empty (no labels, no expressions) = every namespace. */
  namespaceSelector: LabelSelector;
  /** The events reported (`spec.match`); null = every event (Reins' own policies). */
  match: MatchRules | null;
}

export interface ObservationPlan {
  families: Map<PolicyFamily, FamilyPlan>;
  /** Policies not followed, and why (for the node status). */
  notes: string[];
  /** Every Namespace's labels, listed when some family's selector needs them; null otherwise. */
  namespaceLabels: ReadonlyMap<string, Readonly<Record<string, string>>> | null;
}

interface PolicyObject {
  metadata?: { name?: string };
  spec?: { family?: string; mode?: string; namespaceSelector?: { excludeNamespaces?: unknown; matchLabels?: unknown; matchExpressions?: unknown }; match?: unknown };
}

const OPERATORS = new Set(['In', 'NotIn', 'Exists', 'DoesNotExist']);

/** The selector as the policy writes it; a malformed part is a note, and the policy is not followed (never "everything"). */
function selectorOf(raw: NonNullable<PolicyObject['spec']>['namespaceSelector']): LabelSelector | string {
  const matchLabels: Record<string, string> = {};
  const labels = raw?.matchLabels;
  if (labels !== undefined) {
    if (!labels || typeof labels !== 'object' || Array.isArray(labels)) return 'namespaceSelector.matchLabels is not a map';
    for (const [k, v] of Object.entries(labels)) {
      if (typeof v !== 'string') return `namespaceSelector.matchLabels.${k} is not a string`;
      matchLabels[k] = v;
    }
  }
  const matchExpressions: LabelSelector['matchExpressions'] = [];
  const expressions = raw?.matchExpressions;
  if (expressions !== undefined) {
    if (!Array.isArray(expressions)) return 'namespaceSelector.matchExpressions is not a list';
    for (const [i, e] of expressions.entries()) {
      const x = e as { key?: unknown; operator?: unknown; values?: unknown };
      if (typeof x?.key !== 'string' || typeof x.operator !== 'string' || !OPERATORS.has(x.operator)) return `namespaceSelector.matchExpressions[${i}] needs a key and an operator In, NotIn, Exists or DoesNotExist`;
      const values = Array.isArray(x.values) ? x.values.filter((v): v is string => typeof v === 'string') : [];
      matchExpressions.push({ key: x.key, operator: x.operator as LabelSelector['matchExpressions'][number]['operator'], values });
    }
  }
  return { matchLabels, matchExpressions };
}

/** The plan from the listed policies: per family, the first monitor-mode policy by name. */
export function planFromPolicies(items: readonly PolicyObject[], namespaceLabels: ObservationPlan['namespaceLabels'] = null): ObservationPlan {
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
    const selector = selectorOf(p.spec?.namespaceSelector);
    if (typeof selector === 'string') {
      notes.push(`RuntimePolicy ${name}: ${selector}; not followed`);
      continue;
    }
    const match = compileMatch(family, p.spec?.match);
    if (typeof match === 'string') {
      notes.push(`RuntimePolicy ${name}: ${match}; not followed`);
      continue;
    }
    const excluded = p.spec?.namespaceSelector?.excludeNamespaces;
    families.set(family, { rule: name, excludedNamespaces: Array.isArray(excluded) ? excluded.filter((n): n is string => typeof n === 'string') : [], namespaceSelector: selector, match });
  }
  return { families, notes, namespaceLabels };
}

/** Whether some family's selector needs the Namespaces' labels. */
export function needsNamespaceLabels(plan: Pick<ObservationPlan, 'families'>): boolean {
  return [...plan.families.values()].some((f) => !selectsEverything(f.namespaceSelector));
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

/** The RuntimePolicies' collection, as the watch asks for it. */
const POLICIES_PATH = '/apis/runtime.reins.dev/v1/runtimepolicies';
/** A change seen by the watch is re-listed after this pause, so that a burst of changes costs one list. */
const CHANGE_DEBOUNCE_MS = 100;
const WATCH_RETRY_MIN_MS = 1_000;
const WATCH_RETRY_MAX_MS = 30_000;
/** The watch's server-side timeout: it ends normally then and is re-opened after a fresh list. */
const WATCH_TIMEOUT_SECONDS = 300;

export class PolicyWatcher {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private last = '';
  private polling = false;
  private pollAgain = false;
  /** The list's resourceVersion: the watch starts after it. */
  private resourceVersion: string | undefined;
  private watch: AbortController | null = null;
  private watchOpening = false;
  private watchRetryMs = WATCH_RETRY_MIN_MS;
  private watchRetryTimer: NodeJS.Timeout | null = null;
  private changeTimer: NodeJS.Timeout | null = null;
  /** Watch events seen (for tests and the log: how changes arrived). */
  watchEvents = 0;

  /** The Namespaces' labels last listed (kept when a list fails, as the plan is). */
  private labels: Map<string, Record<string, string>> | null = null;

  constructor(
    private readonly api: CustomObjectsApi,
    private readonly core: CoreV1Api,
    private readonly o: PolicyWatcherOptions,
    private readonly kc: KubeConfig | null = null,
  ) {}

  static create(o: PolicyWatcherOptions): PolicyWatcher | null {
    const kc = kubeConfigFrom(o.env);
    return kc ? new PolicyWatcher(kc.makeApiClient(CustomObjectsApi), kc.makeApiClient(CoreV1Api), o, kc) : null;
  }

  /** Every Namespace's labels (the sensor's ClusterRole lists namespaces). */
  private async listNamespaceLabels(): Promise<Map<string, Record<string, string>>> {
    const list = await this.core.listNamespace();
    return new Map(list.items.map((ns) => [ns.metadata?.name ?? '', { ...(ns.metadata?.labels ?? {}) }]));
  }

  async start(): Promise<void> {
    await this.poll();
  }

  /** Lists the policies (one list at a time: a change during a list lists again right after). */
  private async poll(): Promise<void> {
    if (this.stopped) return;
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    this.polling = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    let listed = false;
    try {
      const list = (await this.api.listClusterCustomObject({ group: 'runtime.reins.dev', version: 'v1', plural: 'runtimepolicies' })) as {
        items?: PolicyObject[];
        metadata?: { resourceVersion?: string };
      };
      this.resourceVersion = list.metadata?.resourceVersion || undefined;
      listed = true;
      let plan = planFromPolicies(list.items ?? []);
      if (needsNamespaceLabels(plan)) {
        try {
          this.labels = await this.listNamespaceLabels();
        } catch (err) {
          if (!this.labels) throw err;
          // Keep the labels last listed, as the plan is kept when the policies cannot be read.
        }
        plan = planFromPolicies(list.items ?? [], this.labels);
      }
      // What the plan was made from (its match rules are functions): the policies followed and the labels.
      const key = JSON.stringify([(list.items ?? []).map((p) => [p.metadata?.name, p.spec]), plan.notes, plan.namespaceLabels ? [...plan.namespaceLabels] : null]);
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
    this.polling = false;
    if (this.stopped) return;
    if (listed) this.openWatch();
    if (this.pollAgain) {
      this.pollAgain = false;
      void this.poll();
      return;
    }
    this.timer = setTimeout(() => void this.poll(), this.o.intervalMs);
  }

  /** A change seen: list again shortly (a burst of changes is one list). */
  private changed(): void {
    if (this.stopped || this.changeTimer) return;
    this.changeTimer = setTimeout(() => {
      this.changeTimer = null;
      void this.poll();
    }, CHANGE_DEBOUNCE_MS);
  }

  /** Opens the watch from the last list's resourceVersion, unless one is open or waiting to be re-opened. */
  private openWatch(): void {
    if (!this.kc || this.stopped || this.watch || this.watchOpening || this.watchRetryTimer) return;
    this.watchOpening = true;
    const openedAt = Date.now();
    let ended = false;
    const end = (err: unknown) => {
      if (ended) return;
      ended = true;
      this.watch = null;
      this.watchOpening = false;
      if (this.stopped) return;
      // Ended by the server after a while (its timeout): re-list and re-open now. Refused or broken at once
      // (RBAC, API server down, 410 Gone): the periodic list keeps the plan; the watch is retried with back-off.
      const healthy = !err && Date.now() - openedAt > 5_000;
      const wait = healthy ? 0 : this.watchRetryMs;
      this.watchRetryMs = healthy ? WATCH_RETRY_MIN_MS : Math.min(WATCH_RETRY_MAX_MS, this.watchRetryMs * 2);
      this.watchRetryTimer = setTimeout(() => {
        this.watchRetryTimer = null;
        void this.poll();
      }, wait);
    };
    new Watch(this.kc)
      .watch(
        POLICIES_PATH,
        { resourceVersion: this.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: WATCH_TIMEOUT_SECONDS },
        (phase) => {
          if (phase === 'ADDED' || phase === 'MODIFIED' || phase === 'DELETED') {
            this.watchEvents += 1;
            this.watchRetryMs = WATCH_RETRY_MIN_MS;
            this.changed();
          } else if (phase === 'ERROR') {
            // An ERROR event (410 Gone from the watch cache) ends the stream; re-list then.
            this.changed();
          }
        },
        (err) => end(err),
      )
      .then((controller) => {
        this.watchOpening = false;
        if (ended || this.stopped) controller.abort();
        else this.watch = controller;
      })
      .catch((err: unknown) => end(err ?? new Error('watch failed')));
  }

  stop(): void {
    this.stopped = true;
    for (const t of [this.timer, this.changeTimer, this.watchRetryTimer]) if (t) clearTimeout(t);
    this.watch?.abort();
    this.watch = null;
  }
}
