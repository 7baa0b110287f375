/**
 * Aggregation and delivery (spec Limits: "Sensor report flush: about 10 seconds", "Sensor results per report per
 * node: 500. Later findings are discarded permanently", "Node status flush: 30 seconds").
 *
 * - Identical observations within a flush window are one item: `count` adds up, `observedAt` is the last.
 * - A window holds at most 500 distinct items; a new item that does not fit is discarded and never sent later. It
 *   is still recorded (the counter Reins scrapes), so Reins shows the loss as lag.
 * - Each flush closes the window into a report, queued for sending. Sending retries with backoff while Reins is
 *   unreachable; the queue holds a bounded number of reports, and when it is full the oldest is given up (its items
 *   lost, counted): memory stays bounded however long Reins is away.
 * - The node status goes out every 30 s on its own, not queued: only the newest one matters.
 */
import type { Observation } from '../runtime-guard/types.js';
import type { SensorMetrics } from './metrics.js';

export const MAX_ITEMS_PER_REPORT = 500;
/**
 * Keys of discarded items remembered per window, so that a repeat is not counted as another item. Bounded: past it
 * (a window with more than 50,000 distinct items, far beyond what one node reports) each repeat counts again, which
 * overstates the lag rather than hide it.
 */
const MAX_DISCARDED_KEYS = 50_000;

export interface NodeStatus {
  node: string;
  sensorAlive: boolean;
  bpfLsm: 'available' | 'unavailable' | 'unknown';
  reason: string;
}

export interface ReporterOptions {
  /** Reins' base URL, e.g. `http://reins.reins.svc:8080`. */
  url: string;
  token: string;
  node: string;
  metrics: SensorMetrics;
  /** The node status as of now (read fresh for each send). */
  status: () => Promise<NodeStatus>;
  flushMs?: number;
  statusMs?: number;
  /** Reports kept while Reins is unreachable (default 30: five minutes at the default flush). */
  maxQueuedReports?: number;
  retryMinMs?: number;
  retryMaxMs?: number;
  requestTimeoutMs?: number;
  log?: (message: string) => void;
  nowMs?: () => number;
}

interface Report {
  node: string;
  sentAtUnix: number;
  observations: Observation[];
}

type SendResult = 'ok' | 'retry' | 'refused';

export class Reporter {
  private window = new Map<string, Observation>();
  private discarded = new Set<string>();
  private readonly queue: Report[] = [];
  private readonly o: Required<Omit<ReporterOptions, 'status' | 'metrics' | 'log' | 'nowMs'>>;
  private readonly metrics: SensorMetrics;
  private readonly log: (message: string) => void;
  private readonly nowMs: () => number;
  private flushTimer: NodeJS.Timeout | null = null;
  private statusTimer: NodeJS.Timeout | null = null;
  private statusInFlight: Promise<boolean> | null = null;
  private pumping: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  /** Ends the back-off wait at once: the node status just got through, so Reins is reachable again. */
  private retryNow: (() => void) | null = null;
  private stopped = false;
  private failing = false;
  private statusFailing = false;

  constructor(private readonly options: ReporterOptions) {
    this.o = {
      url: options.url.replace(/\/+$/, ''),
      token: options.token,
      node: options.node,
      flushMs: options.flushMs ?? 10_000,
      statusMs: options.statusMs ?? 30_000,
      maxQueuedReports: options.maxQueuedReports ?? 30,
      retryMinMs: options.retryMinMs ?? 500,
      retryMaxMs: options.retryMaxMs ?? 30_000,
      requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
    };
    this.metrics = options.metrics;
    this.log = options.log ?? (() => {});
    this.nowMs = options.nowMs ?? Date.now;
  }

  /** One observation into the current window. */
  record(o: Observation): void {
    const key = `${o.family}\u0001${o.rule}\u0001${o.behavior}\u0001${o.subject}\u0001${o.destIP}\u0001${o.destName}\u0001${o.podName}\u0001${o.podIP}\u0001${o.namespace}\u0001${o.result}\u0001${o.mode}`;
    const seen = this.window.get(key);
    if (seen) {
      seen.count += o.count;
      if (o.observedAt > seen.observedAt) seen.observedAt = o.observedAt;
      return;
    }
    if (this.window.size >= MAX_ITEMS_PER_REPORT) {
      // A repeat of an item already discarded in this window is the same item: recorded and lost once.
      if (this.discarded.has(key)) return;
      if (this.discarded.size < MAX_DISCARDED_KEYS) this.discarded.add(key);
      this.metrics.observationsRecorded += 1;
      this.metrics.observationsLost['report-full'] += 1;
      return;
    }
    this.metrics.observationsRecorded += 1;
    this.window.set(key, { ...o });
  }

  get windowSize(): number {
    return this.window.size;
  }

  get queuedReports(): number {
    return this.queue.length;
  }

  /** Closes the window into a report and wakes the sender. */
  flush(): void {
    if (this.window.size === 0) return;
    this.discarded = new Set();
    const observations = [...this.window.values()];
    this.window = new Map();
    if (this.queue.length >= this.o.maxQueuedReports) {
      const given = this.queue.shift()!;
      this.metrics.observationsLost['send-backlog'] += given.observations.length;
      this.log(`send backlog full (${this.o.maxQueuedReports} reports): the oldest report (${given.observations.length} items) is given up`);
    }
    this.queue.push({ node: this.o.node, sentAtUnix: 0, observations });
    this.kick();
  }

  start(): void {
    this.flushTimer = setInterval(() => this.flush(), this.o.flushMs);
    this.statusTimer = setInterval(() => void this.sendPeriodicStatus(), this.o.statusMs);
    void this.sendPeriodicStatus();
  }

  /** One periodic status at a time: a slow Reins does not pile them up, and none is still on its way at the last. */
  private sendPeriodicStatus(): Promise<boolean> {
    return (this.statusInFlight ??= this.sendStatus().finally(() => (this.statusInFlight = null)));
  }

  /**
   * The last status (a stopping sensor's `sensorAlive: false`): the periodic ones end first, so that none sent just
   * before it can reach Reins after it and leave the node shown alive.
   */
  async sendFinalStatus(override?: Partial<NodeStatus>): Promise<boolean> {
    if (this.statusTimer) clearInterval(this.statusTimer);
    this.statusTimer = null;
    await this.statusInFlight;
    return this.sendStatus(override);
  }

  /** Flushes and waits until every queued report was delivered or given up, or `timeoutMs` passed. True when empty. */
  async drain(timeoutMs: number): Promise<boolean> {
    this.flush();
    const deadline = this.nowMs() + timeoutMs;
    while (this.queue.length > 0 && this.nowMs() < deadline && !this.stopped) {
      this.kick();
      await sleep(Math.min(50, Math.max(1, deadline - this.nowMs())));
    }
    return this.queue.length === 0;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.flushTimer) clearInterval(this.flushTimer);
    if (this.statusTimer) clearInterval(this.statusTimer);
    this.wake?.();
    await this.pumping;
  }

  /** Posts the node status now (`override` replaces fields); failures are counted and the next tick tries again. */
  async sendStatus(override?: Partial<NodeStatus>): Promise<boolean> {
    let status: NodeStatus;
    try {
      status = { ...(await this.options.status()), ...override };
    } catch (err) {
      status = { node: this.o.node, sensorAlive: true, bpfLsm: 'unknown', reason: `status unavailable: ${String(err)}`, ...override };
    }
    const result = await this.post('/api/v1/runtime/sensor/status', status);
    if (result === 'ok') {
      this.metrics.statusSent += 1;
      if (this.statusFailing) this.log('node status delivered again');
      this.statusFailing = false;
      // Reports waiting out a back-off (up to 30 s) go now: after an outage the backlog is delivered within one
      // status interval of Reins' return, not one back-off later.
      this.retryNow?.();
      return true;
    }
    this.metrics.statusFailed += 1;
    this.statusFailing = true;
    return false;
  }

  private kick(): void {
    if (this.wake) {
      this.wake();
      return;
    }
    if (!this.pumping && !this.stopped) this.pumping = this.pump().finally(() => (this.pumping = null));
  }

  /** Sends the queue head first, one at a time, backing off while Reins is unreachable. */
  private async pump(): Promise<void> {
    let backoff = this.o.retryMinMs;
    while (this.queue.length > 0 && !this.stopped) {
      const report = this.queue[0]!;
      report.sentAtUnix = Math.floor(this.nowMs() / 1000);
      const result = await this.post('/api/v1/runtime/sensor/reports', report);
      if (result === 'ok' || result === 'refused') {
        if (this.queue[0] === report) this.queue.shift();
        if (result === 'ok') {
          this.metrics.reportsSent += 1;
          if (this.failing) this.log('reports delivered again');
          this.failing = false;
        } else {
          this.metrics.reportsFailed += 1;
          this.metrics.observationsLost.refused += report.observations.length;
        }
        backoff = this.o.retryMinMs;
        continue;
      }
      this.metrics.reportsFailed += 1;
      this.failing = true;
      // Full jitter: replicas of a DaemonSet must not all come back at the same instant.
      const wait = Math.floor(backoff / 2 + Math.random() * (backoff / 2));
      backoff = Math.min(this.o.retryMaxMs, backoff * 2);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        this.wake = () => {
          // A flush while waiting only adds to the queue; the wait goes on unless the sensor stops.
          if (this.stopped) {
            clearTimeout(timer);
            resolve();
          }
        };
        this.retryNow = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
      this.retryNow = null;
    }
  }

  private async post(path: string, body: unknown): Promise<SendResult> {
    try {
      const res = await fetch(this.o.url + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.o.token}` },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.o.requestTimeoutMs),
      });
      const text = await res.text();
      if (res.ok) return 'ok';
      // A refusal Reins will repeat (bad token, bad field, too large, ingest off) is not retried: it would only
      // hold the queue. Overload and unavailability are.
      const retryable = res.status === 408 || res.status === 429 || res.status >= 500;
      this.log(`${path}: HTTP ${res.status} ${text.slice(0, 300)}${retryable ? ' (will retry)' : ' (not retried)'}`);
      return retryable ? 'retry' : 'refused';
    } catch (err) {
      if (!this.failing && !this.statusFailing) this.log(`${path}: Reins unreachable at ${this.o.url} (${describe(err)}); retrying with backoff`);
      return 'retry';
    }
  }
}

function describe(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
