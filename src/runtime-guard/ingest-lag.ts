/**
 * Ingest lag (spec "ingestLag"): observation items the sensors recorded that are not stored. The leader scrapes
 * each sensor's `reins_sensor_observations_recorded_total{node="<node>"}` (Prometheus text, items not their
 * `count`), compares it with the items stored for that node, and writes the result to the shared store, so every
 * replica answers the same figure.
 *
 * A sensor that restarts starts its counter again from 0. When a node's counter is lower than at the previous
 * scrape, the node is re-baselined: from then on its stored items count from the moment the restart was seen,
 * and its lag restarts at 0 (what the new sensor recorded before that moment is taken as stored).
 */
import type { Queryable } from '../store/db.js';
import type { RuntimeCluster } from './cluster.js';
import { NODE_STATUS_MAX_AGE_SECONDS, readNodeStatuses } from './node-status.js';
import { readStoredItems } from './observation-store.js';

export const RECORDED_COUNTER = 'reins_sensor_observations_recorded_total';

/** An item of `ingestLag.perNode`. */
export interface NodeLag {
  node: string;
  /** The sensor's counter of items recorded. */
  recorded: number;
  /** Items stored for the node (since its sensor's last restart, when one was seen). */
  stored: number;
  /** max(0, recorded − stored). */
  lag: number;
}

export interface IngestLag {
  lag: number;
  perNode: NodeLag[];
  /** 0 = never scraped, which means unknown. */
  scrapedAtUnix: number;
  /** '' when both sides were read; otherwise what could not be, and the lag is untrustworthy. */
  scrapeError: string;
}

/** What the store keeps per node between scrapes. */
export interface NodeCounterState extends NodeLag {
  storedTotal: number;
  /** Subtracted from storedTotal: the stored total when a restart was seen, minus what the new sensor had recorded. */
  offset: number;
  /** When the node's counter was last read. */
  seenAtUnix: number;
}

export const NEVER_SCRAPED: IngestLag = { lag: 0, perNode: [], scrapedAtUnix: 0, scrapeError: '' };

/** Node states kept this long after their counter was last read (a node that is gone). */
const FORGET_NODE_AFTER_SECONDS = 24 * 3600;

// ---- Prometheus text ----

function parseLabels(text: string): Map<string, string> {
  const labels = new Map<string, string>();
  const label = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?/y;
  while (label.lastIndex < text.length) {
    const m = label.exec(text);
    if (!m) throw new Error(`bad label set {${text}}`);
    labels.set(m[1]!, m[2]!.replace(/\\(["\\n])/g, (_s, c: string) => (c === 'n' ? '\n' : c)));
  }
  return labels;
}

/**
 * The counter's value per `node` label from a Prometheus text exposition, summed over any other labels. A target
 * without the counter yields no nodes (a sensor that recorded nothing yet may not expose it). Throws on a
 * malformed sample of the counter.
 */
export function parseRecordedCounters(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line.startsWith(RECORDED_COUNTER)) continue;
    const rest = line.slice(RECORDED_COUNTER.length);
    let labels = new Map<string, string>();
    let valuePart: string;
    if (rest.startsWith('{')) {
      const close = rest.lastIndexOf('}');
      if (close < 0) throw new Error(`unterminated labels in "${line}"`);
      labels = parseLabels(rest.slice(1, close));
      valuePart = rest.slice(close + 1);
    } else if (rest.startsWith(' ') || rest.startsWith('\t')) {
      valuePart = rest;
    } else {
      continue; // another metric sharing the prefix
    }
    const value = Number(valuePart.trim().split(/\s+/)[0]);
    if (!Number.isFinite(value) || value < 0) throw new Error(`bad value in "${line}"`);
    const node = labels.get('node');
    if (node === undefined || node === '') throw new Error(`sample without a node label: "${line}"`);
    out.set(node, (out.get(node) ?? 0) + value);
  }
  return out;
}

// ---- The comparison ----

/**
 * Per node read this round: its lag against the stored items, re-baselined when the counter went down. Nodes
 * not read this round keep their state (so a later restart is still recognised) but are not in `perNode`.
 */
export function compareCounters(
  previous: readonly NodeCounterState[],
  recorded: ReadonlyMap<string, number>,
  storedTotals: ReadonlyMap<string, number>,
  nowUnix: number,
): { states: NodeCounterState[]; perNode: NodeLag[]; lag: number } {
  const before = new Map(previous.map((s) => [s.node, s]));
  const states: NodeCounterState[] = [];
  const perNode: NodeLag[] = [];
  for (const [node, count] of [...recorded].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const prev = before.get(node);
    const storedTotal = storedTotals.get(node) ?? 0;
    let offset = prev?.offset ?? 0;
    // The counter went down: the sensor restarted. Its lag restarts at 0 from now.
    if (prev && count < prev.recorded) offset = storedTotal - count;
    const stored = storedTotal - offset;
    const lag = Math.max(0, count - stored);
    perNode.push({ node, recorded: count, stored, lag });
    states.push({ node, recorded: count, stored, lag, storedTotal, offset, seenAtUnix: nowUnix });
    before.delete(node);
  }
  for (const state of before.values()) {
    if (nowUnix - state.seenAtUnix <= FORGET_NODE_AFTER_SECONDS) states.push(state);
  }
  return { states, perNode, lag: perNode.reduce((sum, n) => sum + n.lag, 0) };
}

// ---- Store ----

interface LagRow {
  scraped_at_unix: string;
  lag: string;
  per_node: NodeLag[];
  nodes: NodeCounterState[];
  scrape_error: string;
}

async function readLagRow(q: Queryable): Promise<LagRow | null> {
  const r = await q.query<LagRow>('SELECT scraped_at_unix, lag, per_node, nodes, scrape_error FROM runtime_ingest_lag WHERE id = 1');
  return r.rows[0] ?? null;
}

/** The last scrape's figure; when the store cannot be read, a figure that says so. */
export async function readIngestLag(q: Queryable): Promise<IngestLag> {
  let row: LagRow | null;
  try {
    row = await readLagRow(q);
  } catch (err) {
    return { ...NEVER_SCRAPED, scrapeError: `the last scrape could not be read from the store: ${(err as Error).message}` };
  }
  if (!row) return NEVER_SCRAPED;
  return { lag: Number(row.lag), perNode: row.per_node, scrapedAtUnix: Number(row.scraped_at_unix), scrapeError: row.scrape_error };
}

async function writeLagRow(q: Queryable, figure: IngestLag, nodes: NodeCounterState[]): Promise<void> {
  await q.query(
    `INSERT INTO runtime_ingest_lag (id, scraped_at_unix, lag, per_node, nodes, scrape_error) VALUES (1, $1, $2, $3::jsonb, $4::jsonb, $5)
     ON CONFLICT (id) DO UPDATE SET scraped_at_unix = excluded.scraped_at_unix, lag = excluded.lag, per_node = excluded.per_node,
       nodes = excluded.nodes, scrape_error = excluded.scrape_error`,
    [figure.scrapedAtUnix, figure.lag, JSON.stringify(figure.perNode), JSON.stringify(nodes), figure.scrapeError],
  );
}

// ---- The scraper ----

export interface IngestLagScraperOptions {
  intervalMs: number;
  nowMs: () => number;
  onError: (err: Error) => void;
  /** Per target. */
  timeoutMs?: number;
}

/** On the leader only, every `intervalMs`: read every sensor target, compare, store. */
export class IngestLagScraper {
  private timer: NodeJS.Timeout | null = null;
  private round: Promise<void> | null = null;

  constructor(
    private readonly db: Queryable,
    private readonly cluster: RuntimeCluster,
    private readonly options: IngestLagScraperOptions,
  ) {}

  start(): void {
    const tick = (): void => {
      if (!this.cluster.isLeader()) return;
      this.scrapeOnce().catch((err: Error) => this.options.onError(err));
    };
    this.timer = setInterval(tick, this.options.intervalMs);
    this.timer.unref();
    tick();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.round?.catch(() => {});
  }

  /** One round (one at a time): scrape, compare, store. */
  scrapeOnce(): Promise<void> {
    this.round ??= this.scrape().finally(() => {
      this.round = null;
    });
    return this.round;
  }

  private async fetchTarget(url: string): Promise<Map<string, number>> {
    const res = await fetch(url, { signal: AbortSignal.timeout(this.options.timeoutMs ?? 5000), headers: { accept: 'text/plain' } });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
    return parseRecordedCounters(text);
  }

  private async scrape(): Promise<void> {
    const nowUnix = Math.floor(this.options.nowMs() / 1000);
    const errors: string[] = [];
    const targets = this.cluster.sensorMetricsTargets();
    if (targets.length === 0) {
      errors.push('no sensor metrics targets: set runtimeGuard.sensor.metricsTargets or run sensor pods labelled app.kubernetes.io/name=reins-sensor');
    }
    const recorded = new Map<string, number>();
    let read = 0;
    const results = await Promise.allSettled(targets.map((url) => this.fetchTarget(url)));
    for (const [i, result] of results.entries()) {
      if (result.status === 'rejected') {
        const err = result.reason as Error;
        errors.push(`sensor metrics ${targets[i]} could not be read: ${err.name === 'TimeoutError' ? 'timed out' : err.message}`);
        continue;
      }
      read += 1;
      for (const [node, value] of result.value) recorded.set(node, (recorded.get(node) ?? 0) + value);
    }

    const previous = await readLagRow(this.db);
    let storedTotals: Map<string, number>;
    try {
      storedTotals = await readStoredItems(this.db);
      // A sensor that reports status but whose counter no target showed: that node's side was not read.
      const statuses = await readNodeStatuses(this.db);
      const missing = statuses
        .filter((s) => s.sensorAlive && nowUnix - s.reportedAtUnix <= NODE_STATUS_MAX_AGE_SECONDS && !recorded.has(s.node))
        .map((s) => s.node)
        .sort();
      if (missing.length > 0 && read > 0) errors.push(`no ${RECORDED_COUNTER} for running sensor node(s) ${missing.join(', ')}`);
    } catch (err) {
      storedTotals = new Map();
      errors.push(`the stored item counts could not be read: ${(err as Error).message}`);
    }
    const { states, perNode, lag } = compareCounters(previous?.nodes ?? [], recorded, storedTotals, nowUnix);
    // Nothing read: the time of the last successful read stays, and the figure of this round (0) is flagged.
    const scrapedAtUnix = read > 0 ? nowUnix : Number(previous?.scraped_at_unix ?? 0);
    await writeLagRow(this.db, { scrapedAtUnix, lag, perNode, scrapeError: errors.join('; ') }, states);
  }
}
