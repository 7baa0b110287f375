/**
 * From the rounds of a run to the figures the issue asks for: added latency against the direct upstream of the
 * same round, throughput against the bare proxy, the targets with pass or fail, and the Markdown and console tables.
 */
import type { Diagnosis } from './diagnostics.js';
import { type LatencySummary, type LoadResult, summarize as summarizeSamples } from './load.js';

export const SCENARIOS = ['sequential', 'paced', 'max'] as const;
export type Scenario = (typeof SCENARIOS)[number];

export interface RoundResult extends LoadResult {
  round: number;
  /** CPU the target's own process spent during the job (warm-up included), ms; null for the direct upstream. */
  targetCpuMs: number | null;
  /** CPU the fake upstream spent during the job, ms. */
  upstreamCpuMs: number;
  /** CPU the other, idle gateways spent during the job, ms: background work that competed with the measured one. */
  idleGatewaysCpuMs: number;
  /** Completions the fake upstream served during the job. */
  upstreamServed: number;
  /** Hypervisor steal during the job, ms over both cores. */
  stealMs: number;
  /**
   * CPU the PostgreSQL server's processes spent during the job, ms (null: no local server readable in /proc). The
   * other gateways are frozen meanwhile, so on a quiet server it is the measured target's: its audit writes.
   */
  storeCpuMs?: number | null;
  /** --diagnose: event-loop stalls and GC pauses inside the target during the job (warm-up included). */
  diagnosis?: Diagnosis;
}

export interface TargetRecord {
  name: string;
  label: string;
  measured: boolean;
  /** Why it was not measured. */
  reason?: string;
  caveats: string[];
  notes: string[];
  rounds: Record<Scenario, RoundResult[]>;
}

/**
 * A latency scenario: percentiles over every answer of every round pooled (the headline: a short round that holds
 * a rare pause weighs as much as it should, no more), "added" as this target's pooled figure minus the direct
 * upstream's, and each round's own p50 and p99 to show how steady they were.
 */
export interface LatencyFigures {
  pooled: LatencySummary;
  addedP50: number | null;
  addedP99: number | null;
  roundP50s: number[];
  roundP99s: number[];
}

/** One round's throughput and CPU figures, for ratios taken within a round (`pairedRatio`). */
export interface RoundFigures {
  round: number;
  rps: number | null;
  cpuUsPerRequest: number | null;
  cpuUsPerRequestPaced: number | null;
  /** The round's p99 at the paced rate less the direct upstream's p99 of the same round, ms. */
  addedP99Paced?: number | null;
}

export interface TargetSummary {
  name: string;
  label: string;
  sequential: LatencyFigures | null;
  paced: (LatencyFigures & { achievedRps: number }) | null;
  max: { rps: number; vsBare: number | null; p50: number; p99: number } | null;
  /** Target process CPU per answered request in the max-throughput job, µs. */
  cpuUsPerRequest: number | null;
  /**
   * The same at the paced rate, µs: every target at the same load. A process's CPU per request falls as its load
   * rises (more calls share each wake-up and system call), so at their own maxima a slower gateway is compared at a
   * lower load than the bare proxy; at the paced rate both serve the same calls per second.
   */
  cpuUsPerRequestPaced: number | null;
  /** PostgreSQL's CPU per answered request during the max-throughput job, µs (null where not measured). */
  storeCpuUsPerRequest: number | null;
  byRound: RoundFigures[];
}

export interface Check {
  target: string;
  limit: string;
  value: string;
  /** null: not measured, or (`notJudged`) measured but no verdict can be drawn from it. */
  pass: boolean | null;
  notJudged?: true;
}

/** How a check's result reads in the reports. */
export function verdictOf(c: Check): string {
  if (c.pass === null) return c.notJudged ? 'not judged' : 'not measured';
  return c.pass ? 'pass' : '**fail**';
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * A ratio of two targets' figures taken round by round, then the median of the rounds' ratios. Both figures of a
 * round were measured within the same minute; the machine's speed moves more than that between rounds (the bare
 * proxy's CPU per request was 134, 145 and 183 µs in the three rounds of one run), so a ratio of two medians would
 * set figures from different minutes against each other. Null without a round both measured.
 */
export function pairedRatio(a: RoundFigures[], b: RoundFigures[], pick: (r: RoundFigures) => number | null): { median: number; rounds: number[] } | null {
  const rounds: number[] = [];
  for (const ra of a) {
    const rb = b.find((r) => r.round === ra.round);
    const x = pick(ra);
    const y = rb ? pick(rb) : null;
    if (x !== null && y !== null && y > 0) rounds.push(x / y);
  }
  return rounds.length === 0 ? null : { median: median(rounds), rounds };
}

/** Every round's samples of one target and scenario, pooled (run.ts keeps them out of the JSON). */
export type Pooled = Map<string, Partial<Record<Scenario, number[]>>>;

function latencyFigures(rounds: RoundResult[], samples: number[] | undefined, direct: LatencySummary | null): LatencyFigures | null {
  const pooled = samples ? summarizeSamples(samples) : null;
  if (rounds.length === 0 || !pooled) return null;
  return {
    pooled,
    addedP50: direct ? pooled.p50 - direct.p50 : null,
    addedP99: direct ? pooled.p99 - direct.p99 : null,
    roundP50s: rounds.map((r) => r.latency?.p50 ?? Number.NaN),
    roundP99s: rounds.map((r) => r.latency?.p99 ?? Number.NaN),
  };
}

export function summarize(records: TargetRecord[], pooled: Pooled): TargetSummary[] {
  const direct = records.find((r) => r.name === 'direct' && r.measured);
  const directSeq = direct ? summarizeSamples(pooled.get('direct')?.sequential ?? []) : null;
  const directPaced = direct ? summarizeSamples(pooled.get('direct')?.paced ?? []) : null;
  const answered = (r: RoundResult) => r.ok + r.warmupOk;
  const cpuPer = (r: RoundResult) => (r.targetCpuMs !== null && answered(r) > 0 ? (r.targetCpuMs * 1000) / answered(r) : null);
  const storeCpuPer = (r: RoundResult) => (r.storeCpuMs !== undefined && r.storeCpuMs !== null && answered(r) > 0 ? (r.storeCpuMs * 1000) / answered(r) : null);
  const medianOf = (values: (number | null)[]) => {
    const known = values.filter((v): v is number => v !== null);
    return known.length > 0 ? median(known) : null;
  };
  const directPacedP99 = (round: number) => direct?.rounds.paced.find((r) => r.round === round)?.latency?.p99 ?? null;
  const summaries = records
    .filter((r) => r.measured)
    .map((rec): TargetSummary => {
      const isDirect = rec.name === 'direct';
      const max = rec.rounds.max;
      const paced = latencyFigures(rec.rounds.paced, pooled.get(rec.name)?.paced, isDirect ? null : directPaced);
      const rounds = new Set([...max, ...rec.rounds.paced].map((r) => r.round));
      const byRound = [...rounds].sort((x, y) => x - y).map((round) => {
        const m = max.find((r) => r.round === round);
        const p = rec.rounds.paced.find((r) => r.round === round);
        const p99 = p?.latency?.p99 ?? null;
        const directP99 = isDirect ? null : directPacedP99(round);
        return {
          round,
          rps: m ? m.rps : null,
          cpuUsPerRequest: m ? cpuPer(m) : null,
          cpuUsPerRequestPaced: p ? cpuPer(p) : null,
          addedP99Paced: p99 !== null && directP99 !== null ? p99 - directP99 : null,
        };
      });
      return {
        name: rec.name,
        label: rec.label,
        sequential: latencyFigures(rec.rounds.sequential, pooled.get(rec.name)?.sequential, isDirect ? null : directSeq),
        paced: paced ? { ...paced, achievedRps: median(rec.rounds.paced.map((r) => r.rps)) } : null,
        max:
          max.length === 0
            ? null
            : {
                rps: median(max.map((r) => r.rps)),
                vsBare: null,
                p50: median(max.map((r) => r.latency?.p50 ?? Number.NaN)),
                p99: median(max.map((r) => r.latency?.p99 ?? Number.NaN)),
              },
        cpuUsPerRequest: medianOf(max.map(cpuPer)),
        cpuUsPerRequestPaced: medianOf(rec.rounds.paced.map(cpuPer)),
        storeCpuUsPerRequest: medianOf(max.map(storeCpuPer)),
        byRound,
      };
    });
  const bare = summaries.find((s) => s.name === 'bare');
  for (const s of summaries) if (s.max && bare) s.max.vsBare = pairedRatio(s.byRound, bare.byRound, (r) => r.rps)?.median ?? null;
  return summaries;
}

const ms = (v: number | null | undefined) => (v === null || v === undefined || Number.isNaN(v) ? '-' : v.toFixed(3));
const int = (v: number | null | undefined) => (v === null || v === undefined ? '-' : Math.round(v).toLocaleString('en-US'));
const pct = (v: number | null | undefined) => (v === null || v === undefined ? '-' : `${(v * 100).toFixed(0)}%`);

/**
 * The issue's targets, all relative to the bare proxy measured in the same run: on a shared 2-core machine the
 * hop floor itself moves by 10x between runs (bare's added p99 at 1,000/s was 1.6 ms in one run, 16 ms in
 * another), so an absolute limit would pass or fail with the machine's mood, not with Reins.
 */
export interface Limits {
  /** Added p50, sequential: at most bare's added p50 plus this, ms. */
  addedSeqP50OverBareMs: number;
  /** Added p99 at the paced rate: at most this many times bare's added p99. */
  addedPacedP99VsBare: number;
  /** Max throughput: at least this share of bare's, per store. */
  throughputVsBare: { reins: number; 'reins-pg': number };
  /** CPU per request in the max-throughput job: at most this many times bare's. */
  cpuVsBare: number;
}

export const LIMITS: Limits = { addedSeqP50OverBareMs: 0.05, addedPacedP99VsBare: 2, throughputVsBare: { reins: 0.8, 'reins-pg': 0.9 }, cpuVsBare: 1.15 };

function ratioChecks(checks: Check[], reins: TargetSummary, ref: TargetSummary | undefined, whose: string, rate: number, directPacedP99: number | undefined): void {
  const against = (limit: string, r: number | null | undefined, b: number | null | undefined, pass: (r: number, b: number) => boolean, show: (r: number, b: number) => string) => {
    const known = r !== null && r !== undefined && b !== null && b !== undefined;
    checks.push({ target: reins.name, limit, value: known ? show(r, b) : 'not measured', pass: known ? pass(r, b) : null });
  };
  against(
    `added p50, sequential <= ${whose} + ${LIMITS.addedSeqP50OverBareMs} ms`,
    reins.sequential?.addedP50,
    ref?.sequential?.addedP50,
    (r, b) => r <= b + LIMITS.addedSeqP50OverBareMs,
    (r, b) => `${ms(r)} vs ${ms(b)} (${r >= b ? '+' : ''}${ms(r - b)} ms)`,
  );
  // The added p99 is judged as the throughput and CPU are: each round's added p99 (its p99 less the direct
  // upstream's of the same round) against the reference's of the same round, then the median of those ratios. A
  // stall of the machine in one round (seen: a round of one target with answers 0.9 s late) decides a pooled p99 on
  // its own; the pooled figures are shown beside the verdict. A round whose reference added p99 is zero or below
  // (the direct upstream's own p99 as high as the reference's) cannot be judged and is left out; when no round can
  // be judged, neither can the run.
  const p99Limit = `added p99 at ${rate} requests/s <= ${LIMITS.addedPacedP99VsBare}x ${whose}`;
  const refAddedP99 = ref?.paced?.addedP99;
  const p99Ratio = ref ? pairedRatio(reins.byRound, ref.byRound, (x) => x.addedP99Paced ?? null) : null;
  // A pooled reference at or below zero has no ratio to show (its rounds' ratios may still judge the run).
  const pooledText = (r: number, b: number) => `${ms(r)} vs ${ms(b)} pooled${b > 0 ? ` (${(r / b).toFixed(2)}x)` : ''}`;
  if (p99Ratio === null && reins.paced?.addedP99 != null && refAddedP99 != null && refAddedP99 <= 0) {
    checks.push({
      target: reins.name,
      limit: p99Limit,
      value: `${ms(reins.paced.addedP99)} vs ${ms(refAddedP99)}: the direct upstream's own p99 (${ms(directPacedP99)} ms) was as high as ${whose} p99, so this run cannot judge it`,
      pass: null,
      notJudged: true,
    });
  } else {
    const r = reins.paced?.addedP99;
    const b = refAddedP99;
    const known = p99Ratio !== null && r != null && b != null;
    const judged = reins.byRound.filter((x) => x.addedP99Paced != null).length;
    const leftOut = known && p99Ratio.rounds.length < judged ? ` (${judged - p99Ratio.rounds.length} round(s) left out: ${whose} added p99 at or below zero)` : '';
    checks.push({
      target: reins.name,
      limit: p99Limit,
      value: known
        ? `${pooledText(r, b)}; ${p99Ratio.median.toFixed(2)}x, the median of the rounds' (${p99Ratio.rounds.map((x) => `${x.toFixed(2)}x`).join(', ')})${leftOut}`
        : 'not measured',
      pass: known ? p99Ratio.median <= LIMITS.addedPacedP99VsBare : null,
    });
  }
  const share = LIMITS.throughputVsBare[reins.name as keyof Limits['throughputVsBare']] ?? LIMITS.throughputVsBare['reins-pg'];
  const paired = (limit: string, pick: (r: RoundFigures) => number | null, r: number | null | undefined, b: number | null | undefined, pass: (ratio: number) => boolean, show: (r: number, b: number) => string, ratioText: (x: number) => string) => {
    const ratio = ref ? pairedRatio(reins.byRound, ref.byRound, pick) : null;
    const known = ratio !== null && r !== null && r !== undefined && b !== null && b !== undefined;
    checks.push({
      target: reins.name,
      limit,
      value: known ? `${show(r, b)}; ${ratioText(ratio.median)}, the median of the rounds' (${ratio.rounds.map(ratioText).join(', ')})` : 'not measured',
      pass: known ? pass(ratio.median) : null,
    });
  };
  const times = (x: number) => `${x.toFixed(2)}x`;
  paired(`max throughput >= ${pct(share)} of ${whose}`, (x) => x.rps, reins.max?.rps, ref?.max?.rps, (x) => x >= share, (r, b) => `${int(r)} vs ${int(b)}`, pct);
  paired(`CPU per request <= ${LIMITS.cpuVsBare}x ${whose}`, (x) => x.cpuUsPerRequest, reins.cpuUsPerRequest, ref?.cpuUsPerRequest, (x) => x <= LIMITS.cpuVsBare, (r, b) => `${int(r)} vs ${int(b)} µs`, times);
  paired(
    `CPU per request at ${rate} requests/s (the same load) <= ${LIMITS.cpuVsBare}x ${whose}`,
    (x) => x.cpuUsPerRequestPaced,
    reins.cpuUsPerRequestPaced,
    ref?.cpuUsPerRequestPaced,
    (x) => x <= LIMITS.cpuVsBare,
    (r, b) => `${int(r)} vs ${int(b)} µs`,
    times,
  );
}

/** How far each governed floor alone is from the bare proxy: why the targets against bare are out of reach. */
export function floorWhy(summaries: TargetSummary[]): string[] {
  const bare = summaries.find((s) => s.name === 'bare');
  if (!bare?.cpuUsPerRequest || !bare.max) return [];
  const times = (x: { median: number } | null) => (x ? `${x.median.toFixed(2)}x` : '-');
  return summaries
    .filter((s) => s.name.startsWith('floor') && s.cpuUsPerRequest && s.max)
    .map(
      (f) =>
        `${f.label}: CPU per request ${int(f.cpuUsPerRequest)} vs ${int(bare.cpuUsPerRequest)} µs (${times(pairedRatio(f.byRound, bare.byRound, (r) => r.cpuUsPerRequest))} bare's), ` +
        (f.cpuUsPerRequestPaced && bare.cpuUsPerRequestPaced
          ? `at the paced rate ${int(f.cpuUsPerRequestPaced)} vs ${int(bare.cpuUsPerRequestPaced)} µs (${times(pairedRatio(f.byRound, bare.byRound, (r) => r.cpuUsPerRequestPaced))}), `
          : '') +
        `max throughput ${pct(f.max!.vsBare)} of bare's, added p50 sequential ${ms(f.sequential?.addedP50)} vs ${ms(bare.sequential?.addedP50)} ms` +
        (f.storeCpuUsPerRequest !== null ? `; PostgreSQL's own CPU ${int(f.storeCpuUsPerRequest)} µs per request at the maximum` : ''),
    );
}

/**
 * The floors each Reins variant is held against (same store): the governed floor, its audit rows in a table with a
 * primary key only, and the search floor, its rows in Reins' audit table with the audit search's indexes.
 */
export const FLOORS_OF: Record<string, string[]> = { reins: ['floor-pglite', 'floor-pglite-search'], 'reins-pg': ['floor', 'floor-search'] };

/**
 * The issue's targets, for each Reins variant measured; `pass: null` when a figure it needs is missing. The four
 * ratio targets are checked against the bare proxy, as the issue words them, and restated against each floor of the
 * same store measured (governed-floor.ts): the least any gateway that governs and audits each call can do, and the
 * least one whose audit log is searchable can do; `floorWhy` says how far each floor alone is from the bare proxy.
 */
export function checkTargets(summaries: TargetSummary[], rate: number): Check[] {
  const portkey = summaries.find((s) => s.name === 'portkey');
  const bare = summaries.find((s) => s.name === 'bare');
  const checks: Check[] = [];
  for (const reins of summaries.filter((s) => s.name.startsWith('reins'))) {
    const directP99 = summaries.find((s) => s.name === 'direct')?.paced?.pooled.p99;
    ratioChecks(checks, reins, bare, "bare's", rate, directP99);
    for (const name of FLOORS_OF[reins.name] ?? []) {
      const floor = summaries.find((s) => s.name === name);
      // The governed floor's lines read "not measured" when it was left out; the search floor's are left out with it.
      if (floor || !name.endsWith('-search')) ratioChecks(checks, reins, floor, `the ${floor?.label ?? 'governed floor'}'s`, rate, directP99);
    }
    const vsPortkey = (label: string, r: number | null | undefined, p: number | null | undefined, lowerIsBetter: boolean, show: (v: number | null | undefined) => string) => {
      const known = r !== null && r !== undefined && p !== null && p !== undefined;
      checks.push({
        target: reins.name,
        limit: `${label} ${lowerIsBetter ? 'below' : 'above'} Portkey's`,
        value: `${show(r)} vs ${show(p)}`,
        pass: known ? (lowerIsBetter ? r < p : r > p) : null,
      });
    };
    vsPortkey('added p50, sequential,', reins.sequential?.addedP50, portkey?.sequential?.addedP50, true, ms);
    vsPortkey('added p99, sequential,', reins.sequential?.addedP99, portkey?.sequential?.addedP99, true, ms);
    vsPortkey(`added p50 at ${rate}/s`, reins.paced?.addedP50, portkey?.paced?.addedP50, true, ms);
    vsPortkey(`added p99 at ${rate}/s`, reins.paced?.addedP99, portkey?.paced?.addedP99, true, ms);
    vsPortkey('max throughput', reins.max?.rps, portkey?.max?.rps, false, int);
  }
  return checks;
}

const HEADER = [
  'target',
  'seq p50',
  'seq p99',
  'added seq p50',
  'added seq p99',
  '@rate p50',
  '@rate p99',
  'added @rate p50',
  'added @rate p99',
  'max req/s',
  'vs bare',
  'CPU µs/req',
  'CPU µs/req @rate',
  'PostgreSQL CPU µs/req',
];

function row(s: TargetSummary): string[] {
  return [
    s.label,
    ms(s.sequential?.pooled.p50),
    ms(s.sequential?.pooled.p99),
    ms(s.sequential?.addedP50),
    ms(s.sequential?.addedP99),
    ms(s.paced?.pooled.p50),
    ms(s.paced?.pooled.p99),
    ms(s.paced?.addedP50),
    ms(s.paced?.addedP99),
    int(s.max?.rps),
    pct(s.max?.vsBare),
    int(s.cpuUsPerRequest),
    int(s.cpuUsPerRequestPaced),
    int(s.storeCpuUsPerRequest),
  ];
}

export function markdownTable(summaries: TargetSummary[], rate: number): string {
  const header = HEADER.map((h) => h.replace('@rate', `@${rate}/s`));
  const lines = [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`];
  for (const s of summaries) lines.push(`| ${row(s).join(' | ')} |`);
  return lines.join('\n');
}

export function consoleTable(summaries: TargetSummary[], rate: number): string {
  const rows = [HEADER.map((h) => h.replace('@rate', `@${rate}`)), ...summaries.map(row)];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')).join('\n');
}

export function checksText(checks: Check[]): string[] {
  return checks.map((c) => `${c.pass === null ? (c.notJudged ? 'n/j ' : 'n/a ') : c.pass ? 'PASS' : 'FAIL'}  ${c.target}: ${c.limit}: ${c.value}`);
}

/** --diagnose: per target and scenario, the median over rounds of what the target's process saw. */
export function diagnosisLines(records: TargetRecord[]): string[] {
  const lines: string[] = [];
  for (const rec of records) {
    for (const scenario of SCENARIOS) {
      const ds = rec.rounds[scenario].map((r) => r.diagnosis).filter((d): d is Diagnosis => d !== undefined);
      if (ds.length === 0) continue;
      const m = (f: (d: Diagnosis) => number) => median(ds.map(f));
      const major = m((d) => d.gcByKind.major?.maxMs ?? 0);
      lines.push(
        `${rec.name} ${scenario}: event loop busy ${(m((d) => d.loopUtilization) * 100).toFixed(0)}%, ` +
          `lag p99 ${m((d) => d.loopDelayP99).toFixed(1)} ms, max ${m((d) => d.loopDelayMax).toFixed(1)} ms; ` +
          `GC ${m((d) => d.gcPauses).toFixed(0)} pauses, ${m((d) => d.gcPauseTotalMs).toFixed(0)} ms in all, longest ${m((d) => d.gcPauseMaxMs).toFixed(1)} ms` +
          ` (longest major ${major.toFixed(1)} ms)`,
      );
    }
  }
  return lines;
}
