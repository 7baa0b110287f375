/**
 * The runtime guard's store side on one replica: whether it answers (enablement), sensor ingest, the three
 * read-only answers (status, reconciliation, observations), and the background work behind them (the index
 * tail, the lag scrape on the leader, the retention sweep). The cluster is read only through `RuntimeCluster`.
 */
import { performance } from 'node:perf_hooks';
import type { Config } from '../config/config.js';
import { AppError } from '../shared/errors.js';
import type { Db } from '../store/db.js';
import { buildFactsIndex, classifierFor, factsKey, resolvePodWorkload, sameFacts, type FactsKey } from './classify.js';
import type { CapabilityState, ClusterEnvironment, RbacGap, RuntimeCluster } from './cluster.js';
import { decideEnablement, DISABLED_REASONS, shouldStartCluster, type Enablement } from './enablement.js';
import { GovernedCallFeed } from './governed-calls.js';
import { checkReport, cleanReport, cleanStatus, storableAsSent, storeReport, type SensorReport } from './ingest.js';
import { IngestLagScraper, NEVER_SCRAPED, readIngestLag, type IngestLag } from './ingest-lag.js';
import { deleteNodeStatusesBefore, fleetBpfLsm, nodeViews, readNodeStatuses, upsertNodeStatus, type NodeStatusReport, type NodeView } from './node-status.js';
import { ObservationFeed, RETENTION_SECONDS, sweepObservations } from './observation-store.js';
import { groupObservations, type ObservationGroup } from './observations.js';
import { emptyClusterFacts, reconcile, RowMemo } from './reconciliation.js';
import type { ClusterFacts, ReconciliationResult } from './types.js';
import { resolveWindow } from './window.js';
import { warmUpAnswerPath } from './warm-up.js';
import { SelfPodHistory } from './self-pod-history.js';
import { PodOwnerHistory } from './pod-owner-history.js';
import { MAX_ITEMS_PER_FAMILY } from './contract.js';

export interface StatusPayload {
  enabled: boolean;
  reason: string;
  crd: CapabilityState;
  crdReason: string;
  bpfLsm: CapabilityState;
  bpfLsmReason: string;
  nodes: NodeView[];
  rbacGaps: RbacGap[];
  ingestLag: IngestLag;
  probedAtUnix: number;
}

export interface ReconciliationPayload extends ReconciliationResult {
  enabled: boolean;
  reason: string;
  ingestLag: IngestLag;
}

/** A family of the observations answer: the engine's grouping, capped per family (newest first). */
export interface ObservationsGroup extends ObservationGroup {
  /** Items of the family in the window, before the cap. */
  totalItems: number;
  truncated: boolean;
}

export interface ObservationsPayload {
  enabled: boolean;
  reason: string;
  workloadKey: string;
  windowStartUnix: number;
  windowEndUnix: number;
  groups: ObservationsGroup[];
}

/** How soon the indexes read again after a background read that found new rows (at most `tailEveryMs`). */
export const BUSY_TAIL_MS = 200;

/**
 * While answers are being asked of this replica (one in the last hour), the classifier of the answer's next facts is
 * built in the background when the cluster facts change, at most this often: the first answer after a change (or
 * after start) then finds every pod resolved and the cluster's workloads listed. About 0.3 s of CPU at 20,000
 * workloads from nothing, tens of ms carried over from the last facts (RowMemo.classifierFor).
 */
export const PREPARE_EVERY_MS = 10_000;
export const PREPARE_WHILE_ASKED_MS = 3_600_000;

/** Items per family in one observations answer; the newest are kept (the contract documents it). */
export { MAX_ITEMS_PER_FAMILY } from './contract.js';

export interface StartClusterInput {
  environment: ClusterEnvironment;
  selfService: string;
  metricsTargets: string[];
  onError: (err: Error) => void;
}

export interface RuntimeGuardOptions {
  /** Starts the cluster side; default: the Kubernetes client (kube/runtime-cluster.ts). Tests pass their own. */
  startCluster?: (input: StartClusterInput) => Promise<RuntimeCluster>;
  /** Unix milliseconds; default Date.now. */
  nowMs?: () => number;
  /** How often the indexes read new rows between answers (default 1 s), so that an answer has little to read first. */
  tailEveryMs?: number;
  /** How often the answer's classifier may be prepared in the background (PREPARE_EVERY_MS). */
  prepareEveryMs?: number;
  /** How often old observations and node statuses are swept (default 10 min). */
  sweepEveryMs?: number;
  onError: (err: Error, what: string) => void;
}

async function startKubernetesCluster(input: StartClusterInput): Promise<RuntimeCluster> {
  // Loaded only when the runtime guard starts its cluster side: the client is large.
  const { startRuntimeCluster } = await import('./kube/runtime-cluster.js');
  return startRuntimeCluster(input);
}

/** `<namespace>/<kind>/<name>`, each part non-empty; null when malformed. */
export function parseWorkloadKey(key: string): { namespace: string; kind: string; name: string } | null {
  const parts = key.split('/');
  if (parts.length !== 3) return null;
  const [namespace, kind, name] = parts as [string, string, string];
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(namespace)) return null;
  if (!/^[A-Za-z][A-Za-z0-9]{0,62}$/.test(kind)) return null;
  if (name === '' || name.length > 253 || /[\s\u0000-\u001f]/.test(name)) return null;
  return { namespace, kind, name };
}

/** The disabled status: states unknown (never clean), lists empty, lag never scraped. */
function emptyStatus(reason: string): StatusPayload {
  return {
    enabled: false,
    reason,
    crd: 'unknown',
    crdReason: '',
    bpfLsm: 'unknown',
    bpfLsmReason: '',
    nodes: [],
    rbacGaps: [],
    ingestLag: NEVER_SCRAPED,
    probedAtUnix: 0,
  };
}

export class RuntimeGuard {
  private readonly feed: ObservationFeed | null = null;
  private readonly calls: GovernedCallFeed | null = null;
  private readonly selfPods: SelfPodHistory | null = null;
  private readonly podOwners: PodOwnerHistory | null = null;
  /** The last answers' rows, reused for the workloads whose input did not change (the feed's index is the one source). */
  private readonly rowMemo = new RowMemo();
  /** When this replica was last asked an answer (0: never); see PREPARE_WHILE_ASKED_MS. */
  private lastAskedMs = 0;
  /** The key of the live facts the answer's classifier was last prepared from (prepareAnswer). */
  private preparedFrom: FactsKey | null = null;
  private readonly scraper: IngestLagScraper | null = null;
  private readonly timers: NodeJS.Timeout[] = [];
  private sweeping: Promise<void> | null = null;
  private stopped = false;
  private stopBusyTail: () => void = () => {};
  private readonly nowMs: () => number;

  private constructor(
    private readonly config: Config,
    private readonly db: Db,
    readonly enablement: Enablement,
    private readonly cluster: RuntimeCluster | null,
    private readonly options: RuntimeGuardOptions,
  ) {
    this.nowMs = options.nowMs ?? Date.now;
    const onError = (what: string) => (err: Error) => options.onError(err, what);
    if (enablement.enabled && cluster) {
      this.feed = new ObservationFeed(db, { nowMs: this.nowMs });
      this.calls = new GovernedCallFeed(db, { nowMs: this.nowMs });
      this.selfPods = new SelfPodHistory(db, this.nowMs);
      this.podOwners = new PodOwnerHistory(db, this.nowMs);
      const podOwners = this.podOwners;
      const feed = this.feed;
      const calls = this.calls;
      const selfPods = this.selfPods;
      const tailEveryMs = options.tailEveryMs ?? 1000;
      // While rows keep arriving (sensors flushing, a burst), read again soon after a read that found some: an answer
      // then has at most that fraction of a second of rows left to read itself. Idle, once per `tailEveryMs`.
      const busyTailMs = Math.min(BUSY_TAIL_MS, tailEveryMs);
      let again: NodeJS.Timeout | null = null;
      const tail = (): void => {
        const before = feed.index.size + calls.index.size;
        const known = cluster.facts()?.selfPods;
        if (known && known.length > 0) selfPods.remember(known).catch(onError("runtime guard: remembering the service's own pods"));
        podOwners.tick(cluster.facts()).catch(onError("runtime guard: remembering the pods' owners"));
        Promise.all([
          feed.catchUp().catch(onError('runtime guard: reading new observations')),
          calls.catchUp().catch(onError('runtime guard: reading new audit events')),
        ]).then(() => {
          if (again || this.stopped || feed.index.size + calls.index.size === before) return;
          again = setTimeout(() => {
            again = null;
            tail();
          }, busyTailMs);
          again.unref();
        });
      };
      tail();
      this.every(tailEveryMs, tail);
      this.every(options.prepareEveryMs ?? PREPARE_EVERY_MS, () => {
        this.prepareAnswer().catch(onError("runtime guard: preparing the answer's classifier"));
      });
      this.stopBusyTail = () => {
        if (again) clearTimeout(again);
      };
      this.scraper = new IngestLagScraper(db, cluster, {
        intervalMs: config.runtimeGuard.sensor.scrapeIntervalSeconds * 1000,
        nowMs: this.nowMs,
        onError: onError('runtime guard: ingest lag scrape'),
      });
      this.scraper.start();
      // Right after start, off the start-up path: the answer path compiled and optimised before the first request.
      const warmUp = setTimeout(() => {
        try {
          warmUpAnswerPath();
        } catch (err) {
          onError('runtime guard: warming up the reconciliation')(err as Error);
        }
      }, 0);
      warmUp.unref();
      this.timers.push(warmUp);
    }
    if (this.acceptsIngest) {
      const sweep = (): void => {
        this.sweeping ??= this.sweep()
          .catch(onError('runtime guard: retention sweep'))
          .finally(() => {
            this.sweeping = null;
          });
      };
      this.every(options.sweepEveryMs ?? 600_000, sweep);
      sweep();
    }
  }

  static async start(config: Config, db: Db, options: RuntimeGuardOptions): Promise<RuntimeGuard> {
    const rg = config.runtimeGuard;
    let environment: ClusterEnvironment | null = null;
    // A SaaS tenant is decided before the environment is even looked at, and without either variable there is no
    // cluster to find: the Kubernetes client (tens of MB of heap) is then never loaded.
    if (config.deployment !== 'saas' && (rg.clusterEnv.KUBERNETES_SERVICE_HOST || rg.clusterEnv.KUBECONFIG)) {
      const { detectClusterEnvironment } = await import('./kube/environment.js');
      environment = detectClusterEnvironment(rg.clusterEnv);
    }
    const input = { deployment: config.deployment, environment, configured: rg.configured, enabled: rg.enabled };
    let cluster: RuntimeCluster | null = null;
    if (shouldStartCluster(input) && environment) {
      const startCluster = options.startCluster ?? startKubernetesCluster;
      try {
        cluster = await startCluster({
          environment,
          selfService: rg.selfService,
          metricsTargets: rg.sensor.metricsTargets,
          onError: (err) => options.onError(err, 'runtime guard: cluster'),
        });
      } catch (err) {
        options.onError(err as Error, 'runtime guard: the cluster side did not start; this replica reports the runtime guard inactive');
      }
    }
    const enablement = decideEnablement({ ...input, clusterStarted: shouldStartCluster(input) ? cluster !== null : null });
    return new RuntimeGuard(config, db, enablement, cluster, options);
  }

  /**
   * Sensor reports are stored whenever the runtime guard is on for the deployment, even on a replica whose own
   * cluster side did not start: the store is shared, and a replica that does answer will read them. With the
   * runtime guard off (not configured, disabled, SaaS, no cluster) nothing would ever read them: refused.
   */
  get acceptsIngest(): boolean {
    return this.enablement.enabled || this.enablement.reason === DISABLED_REASONS.inactive;
  }

  /** The facts an answer reconciles against: the informers' snapshot, the service's own pods as every replica saw them, the pods' remembered owners. */
  private answerFacts(liveFacts: ClusterFacts, selfPods: ClusterFacts['selfPods']): ClusterFacts {
    // Not `{ ...liveFacts, selfPods }`: the classifier's memo keeps the large arrays by identity, and Object.assign
    // keeps them (and the object's fast shape).
    return Object.assign({}, liveFacts, { selfPods, podOwners: this.podOwners?.current() ?? [] });
  }

  /** See PREPARE_EVERY_MS. The same facts an answer would build; nothing is answered or kept but the memo's classifier. */
  private async prepareAnswer(): Promise<void> {
    if (!this.cluster || !this.selfPods || this.lastAskedMs === 0 || this.nowMs() - this.lastAskedMs > PREPARE_WHILE_ASKED_MS) return;
    const liveFacts = this.cluster.facts();
    if (!liveFacts) return;
    // The informers keep a resource's array while it is unchanged: nothing to prepare (and no store read) until the
    // facts' key moves (the live self pods stand in for the merged ones, which need the read).
    const key = factsKey(this.answerFacts(liveFacts, liveFacts.selfPods));
    if (this.preparedFrom !== null && sameFacts(this.preparedFrom, key)) return;
    const selfPods = await this.selfPods.merged(liveFacts.selfPods);
    if (this.stopped) return;
    this.rowMemo.prepare(this.answerFacts(liveFacts, selfPods));
    this.preparedFrom = key;
  }

  private every(ms: number, fn: () => void): void {
    const timer = setInterval(fn, ms);
    timer.unref();
    this.timers.push(timer);
  }

  private nowUnix(): number {
    return Math.floor(this.nowMs() / 1000);
  }

  private refuseIngestWhenOff(): void {
    if (this.acceptsIngest) return;
    const reason = (this.enablement as { reason: string }).reason;
    throw new AppError('conflict', `the runtime guard is off (${reason}): sensor data is not accepted`);
  }

  /** `json`, when given, is the UTF-8 the report was parsed from: stored as it is when it can be (storableAsSent). */
  async ingestReport(report: SensorReport, json?: Buffer): Promise<number> {
    this.refuseIngestWhenOff();
    const asSent = json !== undefined && storableAsSent(json);
    // Text with nothing to clean is stored as sent; the checks read the same values either way.
    if (!asSent) cleanReport(report);
    checkReport(report);
    return storeReport(this.db, report, asSent ? json : undefined);
  }

  async ingestStatus(status: NodeStatusReport): Promise<void> {
    this.refuseIngestWhenOff();
    await upsertNodeStatus(this.db, cleanStatus(status), this.nowUnix());
  }

  async status(): Promise<StatusPayload> {
    if (!this.enablement.enabled || !this.cluster) return emptyStatus(this.disabledReason());
    const nowUnix = this.nowUnix();
    const capability = this.cluster.capability();
    const facts = this.cluster.facts();
    const [statuses, ingestLag] = await Promise.all([readNodeStatuses(this.db), readIngestLag(this.db)]);
    const nodes = nodeViews(statuses, facts?.complete ? facts.nodes.map((n) => n.name) : null, nowUnix);
    return {
      enabled: true,
      reason: '',
      crd: capability.crd,
      crdReason: capability.crdReason,
      ...fleetBpfLsm(nodes),
      nodes,
      rbacGaps: capability.rbacGaps,
      ingestLag,
      probedAtUnix: capability.probedAtUnix,
    };
  }

  /** `timings`, when given, receives the milliseconds of each step (the route sends them as Server-Timing). */
  async reconciliation(windowRaw: string | undefined, timings?: Record<string, number>): Promise<ReconciliationPayload> {
    const nowUnix = this.nowUnix();
    const window = resolveWindow(nowUnix, windowRaw);
    if (!this.enablement.enabled || !this.cluster || !this.feed || !this.calls || !this.selfPods) {
      return { enabled: false, reason: this.disabledReason(), ...window, rows: [], networkDetectorDisabled: false, disabledReason: '', ingestLag: NEVER_SCRAPED };
    }
    const liveFacts = this.cluster.facts();
    let t = performance.now();
    const lap = (name: string): void => {
      const now = performance.now();
      if (timings) timings[name] = now - t;
      t = now;
    };
    const timed = async <T>(name: string, work: Promise<T>): Promise<T> => {
      const start = performance.now();
      const value = await work;
      if (timings) timings[name] = performance.now() - start;
      return value;
    };
    // In parallel: new observations and new audit events into the indexes, the last lag scrape, the service's own
    // pods as every replica saw them (a previous pod this replica never saw is still the service's).
    const [, , ingestLag, selfPods] = await Promise.all([
      timed('index', this.feed.catchUp()),
      timed('calls', this.calls.catchUp()),
      readIngestLag(this.db),
      this.selfPods.merged(liveFacts?.selfPods ?? []),
    ]);
    this.lastAskedMs = this.nowMs();
    const facts = liveFacts ? this.answerFacts(liveFacts, selfPods) : null;
    t = performance.now();
    // The index's aggregate is rewritten by its next call: it goes to the engine in this same synchronous step.
    const observations = this.feed.index.aggregate(window);
    const governedCalls = this.calls.index.aggregate(window);
    lap('aggregate');
    const result = reconcile({ observations, facts, governedCalls, window, egressPlaneEnabled: this.config.egress !== null, nowUnix }, this.rowMemo);
    lap('engine');
    return { enabled: true, reason: '', ...result, ingestLag };
  }

  /** `key` already parsed by the route (a malformed key is a 400 there, once the runtime guard is known to answer). */
  async observations(workloadKey: string, windowRaw: string | undefined): Promise<ObservationsPayload> {
    const window = resolveWindow(this.nowUnix(), windowRaw);
    if (!this.enablement.enabled || !this.cluster || !this.feed) {
      return { enabled: false, reason: this.disabledReason(), workloadKey, ...window, groups: [] };
    }
    const key = parseWorkloadKey(workloadKey);
    if (!key) {
      throw new AppError('invalid_request', 'key: must be <namespace>/<kind>/<name>, percent-encoded as one path segment (eng%2FDeployment%2Fagent)', {
        field: 'key',
      });
    }
    await this.feed.catchUp();
    // Pod to workload exactly as the engine does it: controller owner references through the cluster facts,
    // else the pod itself (attribution unconfirmed).
    const liveFacts = this.cluster.facts();
    const facts = liveFacts ? Object.assign({}, liveFacts, { podOwners: this.podOwners?.current() ?? [] }) : null;
    const index = facts ? classifierFor(facts).index : buildFactsIndex(emptyClusterFacts());
    const items = this.feed.index.select(window, (t) => {
      if (t.namespace !== key.namespace) return false;
      const pod = t.podName !== '' ? index.podsByName.get(t.namespace)?.get(t.podName) : (index.podsByIp.get(t.podIP) ?? undefined);
      const ref = resolvePodWorkload(pod, t.namespace, pod?.name ?? (t.podName !== '' ? t.podName : t.podIP), index);
      return ref.workloadKey === workloadKey;
    });
    // Nothing of the workload in the window (or no such workload): no groups, as in the disabled shape.
    if (items.length === 0) return { enabled: true, reason: '', workloadKey, ...window, groups: [] };
    const groups = groupObservations(items).map((group) => ({
      ...group,
      totalItems: group.items.length,
      truncated: group.items.length > MAX_ITEMS_PER_FAMILY,
      items: group.items.slice(0, MAX_ITEMS_PER_FAMILY),
    }));
    return { enabled: true, reason: '', workloadKey, ...window, groups };
  }

  /** One lag scrape now when this replica leads (it also scrapes on its interval); a follower does nothing. */
  async scrapeNow(): Promise<void> {
    if (this.cluster?.isLeader()) await this.scraper?.scrapeOnce();
  }

  private disabledReason(): string {
    return this.enablement.enabled ? DISABLED_REASONS.inactive : this.enablement.reason;
  }

  private async sweep(): Promise<void> {
    const nowUnix = this.nowUnix();
    await sweepObservations(this.db, nowUnix - RETENTION_SECONDS);
    await deleteNodeStatusesBefore(this.db, nowUnix - 24 * 3600);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearInterval(timer);
    this.stopBusyTail();
    await this.scraper?.stop();
    await this.feed?.settle();
    await this.calls?.settle();
    await this.sweeping;
    await this.cluster?.stop();
  }
}
