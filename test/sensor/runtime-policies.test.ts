/**
 * What the RuntimePolicies (deploy/base/runtime-policy-crd.yaml) tell the sensor beyond family and mode:
 *  - `spec.namespaceSelector`: a label selector on the Namespace (matchLabels, matchExpressions
 *    In/NotIn/Exists/DoesNotExist; empty = every namespace) minus excludeNamespaces. Unit tests of the selector and
 *    the adapter on the engine's sample events, and the live sensor on the fake Kubernetes API (Namespaces with
 *    labels, a relabel picked up on the next list).
 *  - `spec.match`: the events a monitor policy reports (DNS name globs, IPv4 CIDRs and ports, path prefixes);
 *    Reins' own four match everything.
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
import { compileMatch } from '../../src/sensor/match-rules.js';
import { needsNamespaceLabels, planFromPolicies } from '../../src/sensor/policies.js';
import { desiredRuntimePolicies } from '../../src/runtime-guard/kube/runtime-policy.js';
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
const policy = (family: string, namespaceSelector: Record<string, unknown>, match: unknown[] = [{ names: ['*'], cidrs: ['0.0.0.0/0'], paths: ['/'] }]) => ({
  apiVersion: 'runtime.reins.dev/v1',
  kind: 'RuntimePolicy',
  metadata: { name: `reins-observe-${family}` },
  spec: { mode: 'monitor', family, requiresBpfLsm: false, namespaceSelector, match },
});

/** The adapter following one policy, fed a fixture: what it observed and dropped. */
function adapt(p: ReturnType<typeof policy>, gadget: 'trace_dns' | 'trace_tcp' | 'trace_open' | 'trace_exec', labels: Record<string, Record<string, string>> = {}) {
  const observed: Observation[] = [];
  const dropped: Partial<Record<DropCause, number>> = {};
  const adapter = new EventAdapter({ node: 'node-a', sink: { observe: (o) => observed.push(o), drop: (c) => (dropped[c] = (dropped[c] ?? 0) + 1) } });
  const plan = planFromPolicies([p], new Map(Object.entries(labels)));
  assert.deepEqual(plan.notes, []);
  adapter.configure(plan.families, plan.namespaceLabels);
  for (const l of fixture(gadget)) adapter.line(gadget, l);
  adapter.expire(true);
  return { observed, dropped };
}

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
    const { observed, dropped } = adapt(policy('network', namespaceSelector), 'trace_tcp', labels);
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

test('match rules: DNS name globs, IPv4 CIDRs and ports, path prefixes by components; Reins\' own four match everything', () => {
  for (const p of desiredRuntimePolicies()) assert.equal(compileMatch(p.spec.family, p.spec.match), null, `${p.metadata.name} matches every event`);
  const dns = compileMatch('dns', [{ names: ['api.openai.com', '*.anthropic.com'] }]);
  assert.ok(typeof dns === 'function');
  const at = (name: string, destIP = '', port: number | null = null) => ({ name, destIP, port });
  assert.equal(dns(at('api.openai.com')), true);
  assert.equal(dns(at('API.OpenAI.com')), true, 'DNS names are case-insensitive');
  assert.equal(dns(at('api.anthropic.com')), true);
  assert.equal(dns(at('api.openai.com.eng.svc.cluster.local')), false, 'a search-domain variant is another name');
  const net = compileMatch('network', [{ cidrs: ['160.79.104.0/23'], ports: [443] }, { cidrs: ['10.0.0.1'] }]);
  assert.ok(typeof net === 'function');
  assert.equal(net(at('', '160.79.105.7', 443)), true);
  assert.equal(net(at('', '160.79.105.7', 80)), false, 'another port');
  assert.equal(net(at('', '160.79.106.1', 443)), false, 'outside the /23');
  assert.equal(net(at('', '10.0.0.1', 5432)), true, 'a bare address is a /32, every port');
  const any443 = compileMatch('network', [{ cidrs: ['0.0.0.0/0'], ports: [443] }]);
  assert.ok(typeof any443 === 'function' && any443(at('', '1.2.3.4', 443)) && !any443(at('', '1.2.3.4', 22)));
  const paths = compileMatch('open', [{ paths: ['/etc/pass', '/var/run/secrets/'] }]);
  assert.ok(typeof paths === 'function');
  assert.equal(paths(at('/etc/pass')), true);
  assert.equal(paths(at('/etc/passwd')), false, 'a prefix by path components');
  assert.equal(paths(at('/var/run/secrets/kubernetes.io/serviceaccount/token')), true);
  const none = compileMatch('exec', []);
  assert.ok(typeof none === 'function' && !none(at('/bin/sh')), 'no rule: nothing matches');
  assert.match(String(compileMatch('network', [{ cidrs: ['10.0.0.0/33'] }])), /cidrs: "10\.0\.0\.0\/33" is not an IPv4 CIDR/);
  assert.match(String(compileMatch('dns', 'everything')), /match is not a list/);
  const bad = planFromPolicies([policy('network', {}, [{ cidrs: ['2001:db8::/32'] }])]);
  assert.equal(bad.families.has('network'), false, 'rules it cannot read are not followed');
  assert.match(bad.notes.join('\n'), /reins-observe-network: match\[0\]\.cidrs: "2001:db8::\/32" is not an IPv4 CIDR; not followed/);
});

test('the adapter reports only what the match rules cover; the rest is dropped as no-match', () => {
  const all = adapt(policy('dns', {}), 'trace_dns').observed.map((o) => o.destName);
  assert.ok(all.includes('api.openai.com') && all.includes('api.openai.com.eng.svc.cluster.local'));
  const openai = adapt(policy('dns', {}, [{ names: ['api.openai.com'] }]), 'trace_dns');
  assert.deepEqual([...new Set(openai.observed.map((o) => o.destName))], ['api.openai.com']);
  assert.equal(openai.observed[0]!.destIP, '162.159.140.245', 'the answer still gives the address');
  assert.ok((openai.dropped['no-match'] ?? 0) > 0);

  const connects = adapt(policy('network', {}), 'trace_tcp').observed;
  const target = connects[0]!.destIP;
  const one = adapt(policy('network', {}, [{ cidrs: [`${target}/32`] }]), 'trace_tcp');
  assert.deepEqual([...new Set(one.observed.map((o) => o.destIP))], [target]);
  assert.equal(one.observed.length, connects.filter((o) => o.destIP === target).length);
  assert.equal(adapt(policy('network', {}, [{ cidrs: ['0.0.0.0/0'], ports: [1] }]), 'trace_tcp').observed.length, 0, 'no connect to port 1');

  const execs = adapt(policy('exec', {}), 'trace_exec').observed;
  const binary = execs[0]!.subject;
  const dir = binary.slice(0, binary.lastIndexOf('/'));
  assert.deepEqual([...new Set(adapt(policy('exec', {}, [{ paths: [dir] }]), 'trace_exec').observed.map((o) => o.subject))].every((b) => b.startsWith(`${dir}/`)), true);
  assert.equal(adapt(policy('exec', {}, [{ paths: ['/nowhere'] }]), 'trace_exec').observed.length, 0);
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
