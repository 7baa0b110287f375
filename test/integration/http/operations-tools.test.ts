/**
 * What operators' own tools make of a running replica: `redocly lint` (its recommended rules) on the OpenAPI document
 * and `promtool check metrics` on `/metrics`, after governed calls have filled the gateway's metrics. Outside CI a
 * machine without the tool skips its test with the reason; under CI=1 it fails (as the browser suites do without
 * Chromium): `.ci/run` installs promtool (Debian's `prometheus` package), `npm ci` installs @redocly/cli.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { agentWithKey, describeEachStore } from '../../helpers/harness.js';
import { openai, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const REDOCLY = join(ROOT, 'node_modules/.bin/redocly');
const PROMTOOL = process.env.PROMTOOL_PATH ?? 'promtool';

function promtoolFound(): boolean {
  return spawnSync(PROMTOOL, ['--version'], { encoding: 'utf8' }).status === 0;
}

/**
 * A tool run without blocking this process: the replica under test lives in it, and a spawnSync that blocks for a
 * minute on a loaded machine stalls its timers (a kept-alive connection could then be closed under the next request).
 */
function run(command: string, args: string[], options: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs: number }): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

const skipWithoutRedocly: string | false = !existsSync(REDOCLY) && !process.env.CI ? `redocly not found at ${REDOCLY} (npm install); skipping the OpenAPI lint` : false;
const skipWithoutPromtool: string | false =
  !process.env.CI && !promtoolFound() ? `promtool not found (apt-get install prometheus, or set PROMTOOL_PATH); skipping the metrics check` : false;

describeEachStore('operators\' tools on a running replica', ({ store }) => {
  let w: GatewayWorld;
  let dir: string;
  let doc: any;
  let metrics: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'reins-ops-tools-'));
    w = await startGatewayWorld(store());
    const key = await agentWithKey(w.admin, 'eng/ops-tools-bot');
    const client = openai(w.replica.url, key);
    // Calls that fill the gateway's metrics: an allowed one (tokens, cost, latency) and a refused one.
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    await w.admin.post('/api/v1/policies', { name: 'ops-no-embeddings', kind: 'deny', appliesTo: ['llm'], match: "object.llm.route == 'embeddings'", message: 'No embeddings.' });
    await assert.rejects(client.embeddings.create({ model: 'text-embedding-3-small', input: 'x' }));
    // Both read now, one after the other: a tool run takes long on a loaded machine, and a request after a long
    // idle gap could meet its kept-alive connection being closed by the server.
    doc = (await w.admin.get('/api/v1/openapi.json', { token: null })).body;
    metrics = (await w.admin.get('/metrics', { token: null })).body as string;
  });
  after(async () => {
    await w?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the OpenAPI document passes redocly lint (recommended rules) with no errors', { skip: skipWithoutRedocly }, async () => {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    const r = await run(REDOCLY, ['lint', file, '--format=json', '--max-problems=1000'], {
      timeoutMs: 120_000,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    });
    assert.notEqual(r.stdout, '', `redocly printed nothing (status ${r.status}): ${r.stderr}`);
    const report = JSON.parse(r.stdout.slice(r.stdout.indexOf('{'))) as { problems: { severity: string; ruleId: string; message: string; location: { pointer: string }[] }[] };
    const errors = report.problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId}: ${p.message} (${p.location[0]?.pointer})`);
    assert.deepEqual(errors, []);
    // What the issue names, checked on the document itself too.
    assert.ok(Array.isArray(doc.servers) && doc.servers.length > 0);
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      assert.doesNotMatch(path, /\{\*\}/);
      for (const [method, op] of Object.entries(item)) assert.equal(typeof op.operationId, 'string', `${method} ${path} has no operationId`);
    }
    // The LLM endpoints are listed one by one, with their parameters.
    assert.ok(doc.paths['/llm/openai/v1/chat/completions']?.post);
    assert.ok(doc.paths['/llm/anthropic/v1/messages']?.post);
    assert.equal(doc.paths['/llm/bedrock/model/{modelId}/converse']?.post?.parameters?.[0]?.name, 'modelId');
  });

  test('/metrics passes promtool check metrics, with the gateway\'s histograms, counters and gauges', { skip: skipWithoutPromtool }, async () => {
    const text = metrics;
    const r = await run(PROMTOOL, ['check', 'metrics'], { input: text, timeoutMs: 60_000 });
    assert.equal(r.status, 0, `promtool check metrics failed:\n${r.stdout}${r.stderr}`);
    assert.equal(`${r.stdout}${r.stderr}`.trim(), '');
    assert.match(text, /reins_gateway_governance_duration_seconds_bucket\{le="0\.0001",plane="llm",provider="openai"\} \d+/);
    assert.match(text, /reins_gateway_upstream_duration_seconds_count\{plane="llm",provider="openai"\} [1-9]/);
    assert.match(text, /reins_gateway_tokens_total\{provider="openai",model="gpt-4o-mini",type="input"\} [1-9]/);
    assert.match(text, /reins_gateway_cost_usd_total\{provider="openai",model="gpt-4o-mini"\} \d/);
    assert.match(text, /reins_gateway_held_calls\{plane="llm"\} 0/);
    assert.match(text, /reins_gateway_requests_total\{provider="openai",outcome="refused",reason="policy"\} 1/);
    assert.doesNotMatch(text, /^# TYPE \S+_total gauge$/m);
  });
});
