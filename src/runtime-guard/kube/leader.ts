/**
 * One replica leads the runtime guard's write tasks (RuntimePolicy upkeep) through a
 * `coordination.k8s.io/v1` Lease. The standard client has no leader-election helper; this follows
 * client-go's Lease lock:
 *
 * - Every `renewMs` each replica reads the Lease. It takes it when it is missing (create), released (empty
 *   holder), its own, or expired; otherwise it follows.
 * - Expiry is judged on this replica's clock: the Lease is expired when its record (holder, renewTime) has
 *   not changed for `leaseDurationSeconds` since this replica first saw it so. Comparing the holder's
 *   `renewTime` with the local clock would trust two clocks to agree.
 * - Every write carries the resourceVersion that was read, so two replicas racing for an expired Lease
 *   get one winner: the loser's update (or create) answers 409.
 * - The leader steps down by itself when it could not renew for two thirds of the lease duration, before
 *   any follower can consider the Lease expired; `isLeader()` checks that on every call.
 * - `stop()` releases the Lease (empty holder) so a follower takes over at its next poll.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import { describeKubeError, httpStatusOf, makeApi } from './client.js';

export const LEASE_NAME = 'reins-runtime-guard';

export interface LeaderLeaseOptions {
  kc: KubeConfig;
  namespace: string;
  name?: string;
  /** Default: HOSTNAME (or the host name) plus a random suffix, unique per process. */
  identity?: string;
  leaseDurationSeconds?: number;
  renewMs?: number;
  onError(err: Error): void;
  onChange?(leader: boolean): void;
  now?: () => number;
}

export function leaseIdentity(env: Readonly<Record<string, string | undefined>> = process.env): string {
  return `${env.HOSTNAME || hostname()}-${randomBytes(4).toString('hex')}`;
}

function timeOf(value: unknown): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const ms = new Date(value as string | Date).getTime();
  return Number.isNaN(ms) ? undefined : ms;
}

export class LeaderLease {
  readonly identity: string;
  private readonly name: string;
  private readonly durationMs: number;
  private readonly renewMs: number;
  private readonly now: () => number;
  private readonly api: CoordinationV1Api;
  private readonly stop$ = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private tick: Promise<void> | undefined;
  private leading = false;
  private lastRenewMs = 0;
  /** The last Lease record seen, and when (local clock) it was first seen as it is. */
  private observed: { record: string; atMs: number } | null = null;

  constructor(private readonly o: LeaderLeaseOptions) {
    this.identity = o.identity ?? leaseIdentity();
    this.name = o.name ?? LEASE_NAME;
    this.durationMs = (o.leaseDurationSeconds ?? 15) * 1000;
    this.renewMs = o.renewMs ?? 5000;
    this.now = o.now ?? Date.now;
    // A request may not outlive the renew deadline, or a hung call would keep a stale leader.
    this.api = makeApi(o.kc, CoordinationV1Api, this.stop$.signal, Math.max(500, Math.floor((this.durationMs * 2) / 3)));
  }

  start(): void {
    if (this.tick || this.stop$.signal.aborted) return;
    const loop = async (): Promise<void> => {
      await this.attempt();
      if (this.stop$.signal.aborted) return;
      this.timer = setTimeout(() => {
        this.tick = loop();
      }, this.renewMs);
      this.timer.unref();
    };
    this.tick = loop();
  }

  isLeader(): boolean {
    return this.leading && this.now() - this.lastRenewMs < this.renewDeadlineMs();
  }

  async stop(): Promise<void> {
    this.stop$.abort();
    clearTimeout(this.timer);
    await this.tick;
    const wasLeader = this.leading;
    this.setLeading(false);
    if (wasLeader) await this.release();
  }

  private renewDeadlineMs(): number {
    return (this.durationMs * 2) / 3;
  }

  private setLeading(leading: boolean): void {
    if (leading === this.leading) return;
    this.leading = leading;
    this.o.onChange?.(leading);
  }

  /** One round: read the Lease, then create, renew, take over, or follow. */
  private async attempt(): Promise<void> {
    // The renew counts from before the request: a slow answer must not stretch the leadership past what the
    // write on the server supports.
    const startedMs = this.now();
    try {
      const acquired = await this.tryAcquireOrRenew();
      if (acquired) this.lastRenewMs = startedMs;
      this.setLeading(acquired);
    } catch (err) {
      if (this.stop$.signal.aborted) return;
      this.o.onError(new Error(`the runtime guard's Lease ${this.o.namespace}/${this.name} could not be renewed: ${describeKubeError(err)}`));
      // Still the leader until the renew deadline passes (isLeader() checks it); then step down for good.
      if (this.leading && this.now() - this.lastRenewMs >= this.renewDeadlineMs()) this.setLeading(false);
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const micro = new V1MicroTime(this.now());
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name: this.name, namespace: this.o.namespace });
    } catch (err) {
      if (httpStatusOf(err) !== 404) throw err;
      try {
        await this.api.createNamespacedLease({
          namespace: this.o.namespace,
          body: {
            metadata: { name: this.name, namespace: this.o.namespace },
            spec: {
              holderIdentity: this.identity,
              leaseDurationSeconds: this.durationMs / 1000,
              acquireTime: micro,
              renewTime: micro,
              leaseTransitions: 0,
            },
          },
        });
        return true;
      } catch (createErr) {
        // Another replica created it first.
        if (httpStatusOf(createErr) === 409) return false;
        throw createErr;
      }
    }

    // Seen after the answer arrived: a write that landed during the read is never dated before it happened.
    const seenMs = this.now();
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const record = `${holder}|${String(spec.renewTime ?? '')}|${lease.metadata?.resourceVersion ?? ''}`;
    if (!this.observed || this.observed.record !== record) this.observed = { record, atMs: seenMs };
    const durationMs = (spec.leaseDurationSeconds ?? this.durationMs / 1000) * 1000;
    const expired = seenMs >= this.observed.atMs + durationMs;
    const mine = holder === this.identity;
    if (holder !== '' && !mine && !expired) return false;

    const body: V1Lease = {
      ...lease,
      spec: {
        ...spec,
        holderIdentity: this.identity,
        leaseDurationSeconds: this.durationMs / 1000,
        renewTime: micro,
        acquireTime: mine && timeOf(spec.acquireTime) !== undefined ? spec.acquireTime : micro,
        leaseTransitions: mine ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
      },
    };
    try {
      const updated = await this.api.replaceNamespacedLease({ name: this.name, namespace: this.o.namespace, body });
      const s = updated.spec ?? {};
      this.observed = { record: `${s.holderIdentity ?? ''}|${String(s.renewTime ?? '')}|${updated.metadata?.resourceVersion ?? ''}`, atMs: this.now() };
      return true;
    } catch (err) {
      // Someone else wrote the Lease since it was read: they won this round.
      if (httpStatusOf(err) === 409) return false;
      throw err;
    }
  }

  /**
   * An empty holder lets a follower take over at its next poll instead of after the lease duration. A release
   * slower than that duration gains nothing, so it gets no longer (a stalled API server cannot hold stop()).
   */
  private async release(): Promise<void> {
    const api = makeApi(this.o.kc, CoordinationV1Api, new AbortController().signal, Math.min(5000, this.durationMs));
    try {
      const lease = await api.readNamespacedLease({ name: this.name, namespace: this.o.namespace });
      if (lease.spec?.holderIdentity !== this.identity) return;
      await api.replaceNamespacedLease({
        name: this.name,
        namespace: this.o.namespace,
        body: { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: new V1MicroTime(this.now()) } },
      });
    } catch (err) {
      this.o.onError(new Error(`the runtime guard's Lease ${this.o.namespace}/${this.name} could not be released: ${describeKubeError(err)}`));
    }
  }
}
