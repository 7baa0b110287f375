/**
 * bench/gateway-overhead's report: the throughput and CPU ratios are taken round by round (both figures of a round
 * were measured within a minute) and the median of those ratios is what the targets check.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkTargets, pairedRatio, type RoundResult, summarize, type TargetRecord, verdictOf } from '../../../bench/gateway-overhead/report.js';
import { cpuSpentBetween } from '../../../bench/gateway-overhead/processes.js';

function round(round: number, rps: number, cpuMs: number, storeCpuMs: number | null = null): RoundResult {
  return {
    round,
    ok: rps,
    warmupOk: 0,
    failed: 0,
    seconds: 1,
    rps,
    latency: { count: rps, p50: 1, p90: 1, p99: 1, max: 1, mean: 1 },
    targetCpuMs: cpuMs,
    upstreamCpuMs: 0,
    idleGatewaysCpuMs: 0,
    upstreamServed: rps,
    stealMs: 0,
    storeCpuMs,
  } as unknown as RoundResult;
}

function record(name: string, max: RoundResult[]): TargetRecord {
  return { name, label: name, measured: true, caveats: [], notes: [], rounds: { sequential: [], paced: [], max } };
}

test('pairedRatio: each round against the same round of the other, then the median', () => {
  const a = [1, 2, 3].map((r, i) => ({ round: r, rps: [50, 80, 60][i]!, cpuUsPerRequest: null, cpuUsPerRequestPaced: null }));
  const b = [1, 2, 3].map((r, i) => ({ round: r, rps: [100, 100, 200][i]!, cpuUsPerRequest: null, cpuUsPerRequestPaced: null }));
  assert.deepEqual(pairedRatio(a, b, (x) => x.rps), { median: 0.5, rounds: [0.5, 0.8, 0.3] });
  // A round only one of them has, or a figure missing, is left out; none in common: null.
  assert.deepEqual(pairedRatio(a, b.slice(0, 1), (x) => x.rps), { median: 0.5, rounds: [0.5] });
  assert.equal(pairedRatio(a, [], (x) => x.rps), null);
});

test("the throughput and CPU targets check the median of the rounds' ratios, not the ratio of the medians", () => {
  // The max-throughput rounds of the run recorded 2026-11-28 06:47 UTC: requests/s and CPU µs per request.
  const at = (rps: number[], cpu: number[], store: number | null = null) =>
    rps.map((n, i) => round(i, n, (cpu[i]! * n) / 1000, store === null ? null : (store * n) / 1000));
  const bare = record('bare', at([6_506, 7_798, 6_682], [145, 134, 183]));
  const reins = record('reins-pg', at([3_840, 5_374, 4_363], [227, 163, 206], 40));
  const summaries = summarize([bare, reins], new Map());
  const r = summaries.find((s) => s.name === 'reins-pg')!;
  assert.equal(r.cpuUsPerRequest?.toFixed(0), '206');
  assert.equal(r.storeCpuUsPerRequest?.toFixed(1), '40.0');
  assert.equal(r.max?.vsBare?.toFixed(2), '0.65');
  const checks = checkTargets(summaries, 1000).filter((c) => c.target === 'reins-pg');
  const throughput = checks.find((c) => c.limit.startsWith('max throughput >= 90% of bare'))!;
  assert.equal(throughput.pass, false);
  assert.match(throughput.value, /^4,363 vs 6,682; 65%, the median of the rounds' \(59%, 69%, 65%\)$/);
  // 206 / 145 would be 1.42x; the rounds' own ratios are 1.57x, 1.22x and 1.13x.
  const cpu = checks.find((c) => c.limit.startsWith('CPU per request <= 1.15x bare'))!;
  assert.equal(cpu.pass, false);
  assert.match(cpu.value, /^206 vs 145 µs; 1\.22x, the median of the rounds' \(1\.57x, 1\.22x, 1\.13x\)$/);
});

test('the ratio targets are restated against each floor of the same store that was measured', () => {
  const at = (rps: number, cpu: number) => [round(1, rps, (cpu * rps) / 1000)];
  const targets = (names: string[]) => {
    const records = [record('bare', at(20_000, 50)), record('reins-pg', at(12_000, 70)), ...names.map((n) => record(n, at(15_000, 64)))];
    return checkTargets(summarize(records, new Map()), 1000).filter((c) => c.limit.startsWith('CPU per request <=')).map((c) => [c.limit, c.pass]);
  };
  // Both floors: each gets its own line; 70 / 64 µs is 1.09x.
  assert.deepEqual(targets(['floor', 'floor-search']), [
    ["CPU per request <= 1.15x bare's", false],
    ["CPU per request <= 1.15x the floor's", true],
    ["CPU per request <= 1.15x the floor-search's", true],
  ]);
  // Neither: the governed floor's line says it was not measured, and the search floor has none.
  assert.deepEqual(targets([]), [
    ["CPU per request <= 1.15x bare's", false],
    ["CPU per request <= 1.15x the governed floor's", null],
  ]);
  // The other store's floors are not this variant's.
  assert.equal(targets(['floor-pglite', 'floor-pglite-search']).length, 2);
});

test('cpuSpentBetween: per process; one that started meanwhile counts whole, unreadable is null', () => {
  assert.equal(cpuSpentBetween(new Map([[1, 100], [2, 50]]), new Map([[1, 130], [3, 20]])), 50);
  assert.equal(cpuSpentBetween(null, new Map([[1, 1]])), null);
});

test("an added p99 target is not judged when the direct upstream's own p99 was as high as the reference's", () => {
  // The run of 2026-11-29 03:28 UTC: a stall of the machine during the direct upstream's 1,000/s job put its p99 at
  // 884 ms, and every gateway's "added" p99 came out negative; the ratio of two negative figures judged nothing.
  const paced = (p99: number) => [{ round: 1, ok: 3000, warmupOk: 0, failed: 0, seconds: 3, rps: 1000, latency: { count: 3000, p50: 0.4, p90: 1, p99, max: p99, mean: 1 }, targetCpuMs: null, upstreamCpuMs: 0, idleGatewaysCpuMs: 0, upstreamServed: 3000, stealMs: 0, storeCpuMs: null } as unknown as RoundResult];
  const rec = (name: string, p99: number): TargetRecord => ({ name, label: name, measured: true, caveats: [], notes: [], rounds: { sequential: [], paced: paced(p99), max: [] } });
  // Samples: 95 answers at 0.3 ms and 5 at the target's p99.
  const samples = (p99: number) => [...Array.from({ length: 95 }, () => 0.3), ...Array.from({ length: 5 }, () => p99)];
  const judge = (direct: number, bare: number, reins: number) => {
    const pooled = new Map([['direct', { paced: samples(direct) }], ['bare', { paced: samples(bare) }], ['reins-pg', { paced: samples(reins) }]]);
    const summaries = summarize([rec('direct', direct), rec('bare', bare), rec('reins-pg', reins)], pooled);
    return checkTargets(summaries, 1000).find((c) => c.target === 'reins-pg' && c.limit.startsWith("added p99 at 1000 requests/s <= 2x bare's"))!;
  };
  const stalled = judge(884, 3.5, 5);
  assert.equal(stalled.pass, null);
  assert.equal(stalled.notJudged, true);
  assert.equal(verdictOf(stalled), 'not judged');
  assert.match(stalled.value, /the direct upstream's own p99 \(884\.000 ms\) was as high as bare's p99, so this run cannot judge it/);
  // The same figures without the stall are judged as before.
  const judged = judge(0.5, 3.5, 5);
  assert.equal(judged.pass, true);
  assert.equal(verdictOf(judged), 'pass');
  assert.equal(verdictOf(judge(0.5, 1.5, 5)), '**fail**');
});

test("the added p99 target checks the median of the rounds' ratios; the pooled figure is shown beside it", () => {
  // The paced rounds of Reins on PostgreSQL in the run recorded 2026-11-29 08:41 UTC: two rounds near the bare
  // proxy's, one (its third) on a machine whose CPU per request had doubled, which alone decided the pooled p99.
  const pacedRound = (round: number, p99: number) =>
    ({ round, ok: 3000, warmupOk: 1000, failed: 0, seconds: 3, rps: 1000, latency: { count: 3000, p50: 0.5, p90: 1, p99, max: p99, mean: 1 }, targetCpuMs: null, upstreamCpuMs: 0, idleGatewaysCpuMs: 0, upstreamServed: 4000, stealMs: 0, storeCpuMs: null }) as unknown as RoundResult;
  const rec = (name: string, p99s: number[]): TargetRecord => ({ name, label: name, measured: true, caveats: [], notes: [], rounds: { sequential: [], paced: p99s.map((p, i) => pacedRound(i, p)), max: [] } });
  const direct = [0.47, 0.65, 0.38];
  const bare = [3.03, 3.15, 1.37];
  const reins = [4.6, 3.59, 38.77];
  // Pooled samples: each round's 100 answers, 99 at 0.3 ms and one at the round's p99.
  const pool = (p99s: number[]) => p99s.flatMap((p) => [...Array.from({ length: 98 }, () => 0.3), p, p]);
  const pooled = new Map([['direct', { paced: pool(direct) }], ['bare', { paced: pool(bare) }], ['reins-pg', { paced: pool(reins) }]]);
  const summaries = summarize([rec('direct', direct), rec('bare', bare), rec('reins-pg', reins)], pooled);
  assert.deepEqual(
    summaries.find((s) => s.name === 'reins-pg')!.byRound.map((r) => r.addedP99Paced?.toFixed(2)),
    ['4.13', '2.94', '38.39'],
  );
  const check = checkTargets(summaries, 1000).find((c) => c.target === 'reins-pg' && c.limit === "added p99 at 1000 requests/s <= 2x bare's")!;
  // Rounds: 4.13 / 2.56 = 1.61x, 2.94 / 2.50 = 1.18x, 38.39 / 0.99 = 38.78x; the median 1.61x passes.
  assert.equal(check.pass, true);
  assert.match(check.value, /pooled \(\d+\.\d\dx\); 1\.61x, the median of the rounds' \(1\.61x, 1\.18x, 38\.78x\)$/);
  // A round whose reference added p99 is at or below zero is left out, and the value says so.
  const stalledDirect = summarize([rec('direct', [0.47, 9, 0.38]), rec('bare', bare), rec('reins-pg', reins)], pooled);
  const partly = checkTargets(stalledDirect, 1000).find((c) => c.target === 'reins-pg' && c.limit === "added p99 at 1000 requests/s <= 2x bare's")!;
  assert.match(partly.value, /\(1\.61x, 38\.78x\) \(1 round\(s\) left out: bare's added p99 at or below zero\)$/);
  // The rounds judge the run even when the pooled reference is at or below zero; no pooled ratio is shown then.
  const highDirect = new Map([...pooled, ['direct', { paced: Array.from({ length: 300 }, () => 9) }]]);
  const rounds = checkTargets(summarize([rec('direct', direct), rec('bare', bare), rec('reins-pg', reins)], highDirect), 1000).find(
    (c) => c.target === 'reins-pg' && c.limit === "added p99 at 1000 requests/s <= 2x bare's",
  )!;
  assert.equal(rounds.pass, true);
  assert.match(rounds.value, / pooled; 1\.61x, the median of the rounds'/);
});
