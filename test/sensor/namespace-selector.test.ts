/**
 * The RuntimePolicies' `spec.namespaceSelector` (deploy/base/runtime-policy-crd.yaml): a label selector on the
 * Namespace (matchLabels, matchExpressions In/NotIn/Exists/DoesNotExist; empty = every namespace) minus
 * excludeNamespaces. The sensor observes only the namespaces a family's policy covers: unit tests of the selector
 * and the adapter on the engine's sample events, and the live sensor on the fake Kubernetes API (Namespaces with
 * labels, a relabel picked up on the next list).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EventAdapter, type DropCause } from '../../src/sensor/adapter.js';
import { loadConfig } from '../../src/sensor/config.js';
import { selectorMatches, type LabelSelector } from '../../src/sensor/label-selector.js';
import { needsNamespaceLabels, planFromPolicies } from '../../src/sensor/policies.js';
import { startSensor } from '../../src/sensor/sensor.js';
import type { Observation } from '../../src/runtime-guard/types.js';
import { fakeReins } from './fake-reins.js';

const WAIT_MS = 30_000;
const FIXTURES = fileURLToPath(new URL('../fixtures/ig/', import.meta.url));
const fixture = (name: string) => readFileSync(`${FIXTURES}${name}.jsonl`, 'utf8').split('\n');

async function until(what: string, check: () => boolean): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > WAIT_MS) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const cleanup: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

const sel = (s: Partial<LabelSelector>): LabelSelector => ({ matchLabels: {}, matchExpressions: [], ...s });
const policy = (family: string, namespaceSelector: Record<string, unknown>, name = `reins-observe-${family}`) => ({
  apiVersion: 'runtime.reins.dev/v1',
  kind: 'RuntimePolicy',
  metadata: { name },
  spec: { mode: 'monitor', family, requiresBpfLsm: false, namespaceSelector, match: [{ cidrs: ['0.0.0.0/0'] }] },
});

test('label selector: matchLabels and the four operators, as Kubernetes evaluates them', () => {
  const labels = { team: 'agents', tier: 'prod' };
  assert.equal(selectorMatches(sel({}), {}), true, 'empty selects everything');
  assert.equal(selectorMatches(sel({ matchLabels: { team: 'agents' } }), labels), true);
  assert.equal(selectorMatches(sel({ matchLabels: { team: 'agents', tier: 'dev' } }), labels), false, 'every pair must hold');
  assert.equal(selectorMatches(sel({ matchExpressions: [{ key: 'tier', operator: 'In', values: ['prod', 'staging'] }] }), labels), true);
  assert.equal(selectorMatches(sel({ matchExpressions: [{ key: 'tier', operator: 'In', values: ['dev'] }] }), labels), false);
  assert.equal(selectorMatches(sel({ matchExpressions: [{ key: 'owner', operator: 'In', values: ['x'] }] }), labels), false, 'In needs the label');
  assert.equal(selectorMatches(sel({ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['prod'] }] }), labels), false);
  assert.equal(selectorMatches(sel({ matchExpressions: [{ key: 'owner', operator: 'NotIn', values: ['x'] }] }), labels), true, 'NotIn holds without the label');
  assert.equal(selectorMatches(sel({ matchExpressions: [{ key: 'team', operator: 'Exists', values: [] }] }), labels), true);
  assert.equal(selectorMatches(sel({ matchExpressions: [{ key: 'team', operator: 'DoesNotExist', values: [] }] }), labels), false);
  assert.equal(selectorMatches(sel({ matchExpressions: [{ key: 'owner', operator: 'DoesNotExist', values: [] }] }), {}), true);
});

test('the plan: a selector per family; Namespaces listed only when a selector needs them; a malformed selector is not followed', () => {
  const reins = planFromPolicies([policy('dns', { excludeNamespaces: ['kube-system'] })]);
  assert.equal(needsNamespaceLabels(reins), false, "Reins' own policies cover every namespace: no Namespace list");
  const plan = planFromPolicies([policy('network', { matchLabels: { team: 'ops' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['dev'] }], excludeNamespaces: ['kube-system'] })]);
  assert.equal(needsNamespaceLabels(plan), true);
  assert.deepEqual(plan.families.get('network')!.namespaceSelector, { matchLabels: { team: 'ops' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['dev'] }] });
  const bad = planFromPolicies([policy('network', { matchExpressions: [{ key: 'team', operator: 'Like' }] })]);
  assert.equal(bad.families.has('network'), false, 'never read as "every namespace"');
  assert.match(bad.notes.join('\n'), /reins-observe-network: namespaceSelector\.matchExpressions\[0\] needs a key and an operator/);
});

test('the adapter observes only the namespaces the selector covers, minus the excluded ones', () => {
  const run = (namespaceSelector: Record<string, unknown>, labels: Record<string, Record<string, string>>) => {
    const observed: Observation[] = [];
    const dropped: Partial<Record<DropCause, number>> = {};
    const adapter = new EventAdapter({ node: 'node-a', sink: { observe: (o) => observed.push(o), drop: (c) => (dropped[c] = (dropped[c] ?? 0) + 1) } });
    const plan = planFromPolicies([policy('network', namespaceSelector)], new Map(Object.entries(labels)));
    adapter.configure(plan.families, plan.namespaceLabels);
    for (const l of fixture('trace_tcp')) adapter.line('trace_tcp', l);
    return { namespaces: [...new Set(observed.map((o) => o.namespace))].sort(), dropped };
  };
  const labels = { eng: { team: 'agents' }, monitoring: { team: 'ops' } };
  assert.deepEqual(run({}, labels).namespaces, ['eng', 'monitoring'], 'empty selector: every namespace');
  const ops = run({ matchLabels: { team: 'ops' } }, labels);
  assert.deepEqual(ops.namespaces, ['monitoring']);
  assert.ok((ops.dropped['namespace-excluded'] ?? 0) > 0, 'eng connects dropped as outside the policy');
  assert.deepEqual(run({ matchExpressions: [{ key: 'team', operator: 'NotIn', values: ['ops'] }] }, labels).namespaces, ['eng']);
  assert.deepEqual(run({ matchLabels: { team: 'agents' }, excludeNamespaces: ['eng'] }, labels).namespaces, [], 'excludeNamespaces wins over the labels');
  // A namespace the list does not know yet (created since) counts as one without labels.
  assert.deepEqual(run({ matchExpressions: [{ key: 'team', operator: 'DoesNotExist' }] }, { monitoring: { team: 'ops' } }).namespaces, ['eng']);
});

test('live: the sensor lists the Namespaces for a selector, observes the matching ones, and follows a relabel', async () => {
  const { startFakeKubeApi } = await import('../fakes/fake-kube-api.js');
  const api = await startFakeKubeApi({ crdServed: true });
  cleanup.push(() => api.close());
  const namespace = (name: string, labels: Record<string, string>) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
  api.upsert('namespaces', namespace('eng', { team: 'agents' }));
  api.upsert('namespaces', namespace('monitoring', { team: 'ops' }));
  api.upsert('runtimepolicies', policy('network', { matchLabels: { team: 'ops' }, excludeNamespaces: ['kube-system', 'kube-public'] }));

  const dir = mkdtempSync(join(tmpdir(), 'reins-sensor-ns-'));
  // A fake `ig` printing the gadget's fixture lines, then ending (the sensor restarts it: the lines come again).
  const ig = join(dir, 'ig');
  writeFileSync(
    ig,
    `#!${process.execPath}
const gadget = process.argv[3].split('/').pop().split(':')[0];
process.stdout.write(require('node:fs').readFileSync(${JSON.stringify(FIXTURES)} + gadget + '.jsonl', 'utf8'));
setTimeout(() => process.exit(1), 50);
`,
  );
  chmodSync(ig, 0o755);
  writeFileSync(join(dir, 'lsm'), 'capability,bpf');
  const reins = await fakeReins();
  cleanup.push(() => reins.close());
  const config = loadConfig(
    {
      REINS_URL: reins.url, REINS_SENSOR_TOKEN: 'rs_test', NODE_NAME: 'node-a', METRICS_PORT: '0', METRICS_HOST: '127.0.0.1',
      REINS_SENSOR_FLUSH_SECONDS: '0.1', REINS_SENSOR_STATUS_SECONDS: '0.1', REINS_SENSOR_LSM_PATH: join(dir, 'lsm'),
      IG_PATH: ig, IG_RESTART_MAX_SECONDS: '0.2', KUBECONFIG: api.kubeconfigPath, REINS_SENSOR_POLICY_SECONDS: '0.1',
    },
    { replays: [], once: false },
  );
  const sensor = await startSensor(config, () => {});
  cleanup.push(() => sensor.stop());
  const network = () => reins.reports.flatMap((r) => r.observations.filter((o: any) => o.family === 'network'));
  await until('monitoring connects reported', () => network().some((o: any) => o.namespace === 'monitoring'));
  await until('eng connects dropped', () => sensor.metrics.eventsDropped['namespace-excluded'] > 0);
  assert.ok(!network().some((o: any) => o.namespace === 'eng'), 'eng is not labelled team=ops');

  // eng joins the team: the next list of the Namespaces covers it.
  api.upsert('namespaces', namespace('eng', { team: 'ops' }));
  await until('eng connects reported after the relabel', () => network().some((o: any) => o.namespace === 'eng'));
});
