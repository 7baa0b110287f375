/**
 * The adapter on the engine's sample events (test/fixtures/ig, shapes from Inspektor Gadget's own repository):
 * every family, the search-domain expansion, a PTR question, an answer without addresses, IPv6 dropped, a
 * process without Kubernetes enrichment, a host-network pod, the 2024 flat shape, and bad engine output.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { EventAdapter, firstIPv4, type DropCause, type Gadget } from '../../src/sensor/adapter.js';
import type { Observation } from '../../src/runtime-guard/types.js';

const T0 = 1787816561;
const fixture = (name: string) => readFileSync(new URL(`../fixtures/ig/${name}.jsonl`, import.meta.url), 'utf8').split('\n');

function run(gadget: Gadget, lines: string[], now = 0) {
  const observed: Observation[] = [];
  const dropped: Partial<Record<DropCause, number>> = {};
  const adapter = new EventAdapter({
    node: 'node-a',
    nowMs: () => now,
    sink: { observe: (o) => observed.push(o), drop: (c) => (dropped[c] = (dropped[c] ?? 0) + 1) },
  });
  for (const l of lines) adapter.line(gadget, l);
  return { observed, dropped, adapter };
}

test('trace_dns: one observation per question as the pod asked it; destIP the first IPv4 of its own answer', () => {
  const { observed, dropped, adapter } = run('trace_dns', fixture('trace_dns'));
  assert.equal(adapter.pendingQuestions, 0, 'every question of the fixture was answered or dropped');
  assert.deepEqual(
    observed.map((o) => [o.podName, o.destName, o.destIP, o.observedAt - T0]),
    [
      // The search-domain expansion: each variant its own observation, the NXDOMAIN ones without an address.
      ['agent-7d4-aaaaa', 'api.openai.com.eng.svc.cluster.local', '', 0],
      ['agent-7d4-aaaaa', 'api.openai.com.svc.cluster.local', '', 0],
      ['agent-7d4-aaaaa', 'api.openai.com.cluster.local', '', 0],
      ['agent-7d4-aaaaa', 'api.openai.com', '162.159.140.245', 1],
      // PTR: the reverse name as asked (Reins suppresses it as reverse-dns); its answer holds a name, no address.
      ['agent-7d4-aaaaa', '245.140.159.162.in-addr.arpa', '', 2],
      // An answer without addresses.
      ['nightly-1-bbbbb', 'api.anthropic.com', '', 3],
    ],
  );
  const first = observed[3]!;
  assert.deepEqual(first, {
    rule: 'reins-observe-dns',
    behavior: 'dns-query',
    subject: '/usr/local/bin/python3.12',
    destIP: '162.159.140.245',
    destName: 'api.openai.com',
    count: 1,
    node: 'node-a',
    podName: 'agent-7d4-aaaaa',
    podIP: '10.244.1.1',
    namespace: 'eng',
    result: 'allowed',
    mode: 'monitor',
    observedAt: T0 + 1,
    family: 'dns',
  });
  assert.equal(observed[5]!.podIP, '10.244.1.2');
  assert.equal(observed[0]!.subject, 'python3', 'without --paths the process name stands for the binary');
  // The AAAA pair and the question over IPv6 are IPv6 (counted apart); the host process has no pod.
  assert.deepEqual(dropped, { ipv6: 3, 'no-pod': 1 });
});

test('trace_dns: a question never answered is reported without an address once the wait is over', () => {
  const question = fixture('trace_dns')[10]!; // the PTR question alone
  let now = 1_000;
  const observed: Observation[] = [];
  const adapter = new EventAdapter({ node: 'node-a', nowMs: () => now, dnsAnswerWaitMs: 5_000, sink: { observe: (o) => observed.push(o), drop: () => {} } });
  adapter.line('trace_dns', question);
  adapter.expire();
  assert.equal(observed.length, 0, 'still waiting for the answer');
  now += 5_001;
  adapter.expire();
  assert.deepEqual(observed.map((o) => [o.destName, o.destIP]), [['245.140.159.162.in-addr.arpa', '']]);
  adapter.line('trace_dns', question);
  adapter.expire(true);
  assert.equal(observed.length, 2, 'the end of a replay reports every question still waiting');
});

test('trace_dns: the number of questions waiting is bounded (the oldest goes out without an address)', () => {
  const observed: Observation[] = [];
  const adapter = new EventAdapter({ node: 'node-a', maxPendingQuestions: 2, sink: { observe: (o) => observed.push(o), drop: () => {} } });
  const q = JSON.parse(fixture('trace_dns')[0]!);
  for (let i = 0; i < 5; i++) adapter.event('trace_dns', { ...q, id: `0x${i}` });
  assert.equal(adapter.pendingQuestions, 2);
  assert.equal(observed.length, 3);
});

test('trace_dns: a packet in which the pod is the server is not its own question', () => {
  const q = JSON.parse(fixture('trace_dns')[0]!);
  const { observed, dropped } = run('trace_dns', [JSON.stringify({ ...q, pkt_type: 'HOST' })]);
  assert.equal(observed.length, 0);
  assert.deepEqual(dropped, { 'not-observed': 1 });
});

test('trace_tcp: connects are network observations; accept, close and IPv6 are not; a host-network pod is named, not addressed', () => {
  const { observed, dropped } = run('trace_tcp', fixture('trace_tcp'));
  assert.deepEqual(
    observed.map((o) => [o.namespace, o.podName, o.podIP, o.destIP, o.destName, o.observedAt - T0]),
    [
      ['eng', 'agent-7d4-aaaaa', '10.244.1.1', '162.159.140.245', '', 1],
      ['eng', 'agent-7d4-aaaaa', '10.244.1.1', '162.159.140.245', '', 1],
      ['eng', 'agent-7d4-aaaaa', '10.244.1.1', '10.96.0.10', '', 2],
      ['monitoring', 'node-agent-x1', '', '160.79.104.10', '', 4],
    ],
  );
  assert.deepEqual(
    [observed[0]!.rule, observed[0]!.behavior, observed[0]!.subject, observed[0]!.family, observed[0]!.result, observed[0]!.mode],
    ['reins-observe-network', 'tcp-connect', 'python3', 'network', 'allowed', 'monitor'],
  );
  assert.deepEqual(dropped, { 'not-observed': 2, ipv6: 1 });
});

test('trace_tcp: the 2024 flat shape (comm/pid at the top, numeric proto), as Inspektor Gadget v0.33.0 documents it, reads the same', () => {
  const { observed, dropped } = run('trace_tcp', fixture('trace_tcp-flat-2024'));
  // Line 1 is kubectl gadget's documented line (a pod), line 2 plain ig's (a container outside Kubernetes: no pod).
  assert.deepEqual(dropped, { 'no-pod': 1 });
  assert.deepEqual(
    observed.map((o) => [o.namespace, o.podName, o.podIP, o.destIP, o.subject, o.family, o.observedAt]),
    [
      ['default', 'mypod2', '10.244.0.8', '1.1.1.1', 'wget', 'network', Date.UTC(2024, 6, 31, 18, 38, 31) / 1000],
      ['eng', 'agent-7d4-aaaaa', '10.244.1.1', '160.79.104.10', 'python3', 'network', T0 + 6],
    ],
  );
});

test('trace_dns: the 2024 flat shape (v0.33.0: comm/pcomm at the top, numeric proto) pairs question and answer the same', () => {
  const { observed, dropped, adapter } = run('trace_dns', fixture('trace_dns-flat-2024'));
  assert.deepEqual(dropped, {});
  assert.equal(adapter.pendingQuestions, 0);
  assert.deepEqual(
    observed.map((o) => [o.podName, o.podIP, o.subject, o.destName, o.destIP, o.observedAt]),
    [['agent-7d4-aaaaa', '10.244.1.1', 'python3', 'api.anthropic.com', '160.79.104.10', T0 + 7]],
  );
});

test('the event time: RFC 3339 with any offset, or timestamp_raw in nanoseconds when timestamp is missing', () => {
  const e = JSON.parse(fixture('trace_tcp')[0]!);
  const at = (fields: Record<string, unknown>) => {
    const { observed } = run('trace_tcp', [JSON.stringify({ ...e, timestamp: undefined, timestamp_raw: undefined, ...fields })], 5_000);
    return observed[0]!.observedAt;
  };
  assert.equal(at({ timestamp: '2026-08-27T02:42:41.999999999-05:00' }), T0);
  assert.equal(at({ timestamp_raw: 1787816561640251531 }), T0);
  assert.equal(at({}), 5, 'neither: the time it was read');
});

test('trace_open and trace_exec: paths opened and binaries executed, with the error as the result', () => {
  const open = run('trace_open', fixture('trace_open'));
  assert.deepEqual(
    open.observed.map((o) => [o.family, o.rule, o.behavior, o.subject, o.destName, o.result, o.podIP]),
    [
      ['open', 'reins-observe-open', 'file-open', 'python3', '/etc/ssl/certs/ca-certificates.crt', 'allowed', ''],
      ['open', 'reins-observe-open', 'file-open', 'python3', '/etc/ssl/certs/ca-certificates.crt', 'allowed', ''],
      ['open', 'reins-observe-open', 'file-open', 'python3', '/root/.config/openai/credentials', 'ENOENT', ''],
    ],
  );
  const exec = run('trace_exec', fixture('trace_exec'));
  assert.deepEqual(
    exec.observed.map((o) => [o.family, o.behavior, o.subject, o.destName, o.observedAt - T0]),
    [
      ['exec', 'process-exec', '/usr/local/bin/python3.12', '/usr/local/bin/python3 agent.py', 0],
      ['exec', 'process-exec', '/usr/bin/curl', 'curl -s https://api.openai.com/v1/models', 3],
    ],
  );
});

test('bad engine output is skipped and counted by cause, never thrown', () => {
  const lines = fixture('bad-lines');
  const tcp = run('trace_tcp', lines);
  assert.equal(tcp.observed.length, 0);
  // truncated + log line: bad-json; unknown object and an array: unknown-event; a connect without dst and the DNS
  // event fed to trace_tcp (no type): missing-fields / unknown-event.
  assert.deepEqual(tcp.dropped, { 'bad-json': 2, 'unknown-event': 3, 'missing-fields': 1 });
  const dns = run('trace_dns', lines);
  assert.equal(dns.observed.length, 0);
  // Here the connect is no DNS event at all (unknown), the DNS event without a name is missing a field.
  assert.deepEqual(dns.dropped, { 'bad-json': 2, 'unknown-event': 3, 'missing-fields': 1 });
  for (const g of ['trace_open', 'trace_exec'] as const) {
    const r = run(g, ['{"k8s":', 'null', '42', '"text"', '{}', JSON.stringify({ fname: '', exepath: '' })]);
    assert.equal(r.observed.length, 0);
  }
});

test('kube-system and kube-public are outside the observation policies', () => {
  const e = JSON.parse(fixture('trace_tcp')[0]!);
  const { observed, dropped } = run('trace_tcp', [JSON.stringify({ ...e, k8s: { ...e.k8s, namespace: 'kube-system' } })]);
  assert.equal(observed.length, 0);
  assert.deepEqual(dropped, { 'namespace-excluded': 1 });
});

test('firstIPv4: the first IPv4 of a comma-separated string or a list', () => {
  assert.equal(firstIPv4('2606:4700::1,162.159.140.245,172.66.0.243'), '162.159.140.245');
  assert.equal(firstIPv4(['::1', '10.0.0.1']), '10.0.0.1');
  assert.equal(firstIPv4(''), '');
  assert.equal(firstIPv4(undefined), '');
  assert.equal(firstIPv4('999.1.1.1'), '');
});
