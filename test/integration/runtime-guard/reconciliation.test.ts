/**
 * The reconciliation and observations endpoints end to end on one replica: observations through the real ingest
 * route, cluster facts from a RuntimeCluster, governed calls from real egress audit events (calls through the
 * replica's forward proxy), `n` and `governedCalls` joined by name.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ProxyAgent, fetch } from 'undici';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, agentWithKey, Client, describeEachStore, enc, WAIT_MS, waitFor } from '../../helpers/harness.js';
import { IP, makeFacts } from '../../unit/runtime-guard/fixtures.js';
import { FakeCluster, item, mintSensorToken, report, startGuardReplica, TestClock } from './helpers.js';
import { DEFAULT_DENIED_NETWORKS } from '../../../src/shared/networks.js';

const AGENT = 'eng/Deployment/agent';

describeEachStore('runtime reconciliation through HTTP', ({ store }) => {
  let replica: Replica;
  let admin: Client;
  let sensor: Client;
  const clock = new TestClock();
  const cluster = new FakeCluster(clock, makeFacts());
  const at = (secondsAgo: number) => clock.unix - secondsAgo;

  before(async () => {
    replica = await startGuardReplica(store(), { cluster, clock, config: { egress: { port: 0, deniedNetworks: [...DEFAULT_DENIED_NETWORKS] } } });
    admin = new Client(replica.url, ADMIN_TOKEN);
    sensor = new Client(replica.url, await mintSensorToken(admin));
    // The workload's own identity: a Deployment eng/agent joins identity eng/agent by name.
    const key = await agentWithKey(admin, 'eng/agent');
    // Two egress calls to api.openai.com through the gateway (the sandbox resolves no public name, so they fail
    // upstream: still gateway-recorded calls with their host), one to another host.
    const proxy = new ProxyAgent({ uri: replica.egressUrl!.replace('http://', `http://agent:${key}@`), proxyTunnel: false });
    for (const url of ['http://api.openai.com/v1/models', 'http://api.openai.com/v1/models', 'http://example.org/']) {
      await fetch(url, { dispatcher: proxy }).then((r) => r.text()).catch(() => {});
    }
    await proxy.close();
    // Each call: its decision event and its end event; n and governedCalls count the decisions, each call once.
    const audited = async () => {
      const items = (await admin.get(`/api/v1/audit-events?type=egress&identity=${enc('eng/agent')}`)).body.items;
      const decisions = items.filter((e: any) => e.action === 'egress.request');
      // A refused call is one event; an allowed one waits for its end.
      const open = decisions.filter((d: any) => d.data.end === undefined && !items.some((e: any) => e.action === 'egress.request_end' && e.data.callId === d.data.callId));
      return decisions.length >= 3 && open.length === 0;
    };
    assert.ok((await waitFor(audited, WAIT_MS)) >= 0, 'egress decisions and ends audited');
    // The window ends at the test clock's now: move it past the audit events just written.
    clock.ms = Date.now() + 1000;

    const sent = await sensor.post(
      '/api/v1/runtime/sensor/reports',
      report('node-a', [
        item({ family: 'dns', behavior: 'dns-query', podName: 'agent-7d9f-a', podIP: '10.244.1.1', destName: 'api.openai.com', destIP: IP.openai, observedAt: at(300) }),
        item({ family: 'network', podName: 'agent-7d9f-a', podIP: '10.244.1.1', destIP: IP.openai, count: 3, observedAt: at(290) }),
        item({ family: 'network', podName: 'agent-7d9f-b', podIP: '10.244.1.2', destIP: IP.openai, count: 2, observedAt: at(100) }),
        item({ family: 'dns', behavior: 'dns-query', podName: 'agent-7d9f-b', podIP: '10.244.1.2', destName: 'api.anthropic.com', destIP: '', observedAt: at(90) }),
        item({ family: 'exec', behavior: 'process-exec', podName: 'agent-7d9f-b', podIP: '10.244.1.2', destName: '/bin/sh', observedAt: at(80) }),
        // Two hours ago: outside the default 1h window, inside 6h.
        item({ family: 'dns', behavior: 'dns-query', podName: 'agent-7d9f-a', podIP: '10.244.1.1', destName: 'api.mistral.ai', destIP: '', observedAt: at(7200) }),
        // A bare pod: attribution unconfirmed, pod level.
        item({ family: 'network', podName: 'scratch', podIP: '10.244.1.5', namespace: 'eng', destIP: IP.unknown, observedAt: at(50) }),
        // The service's own pod: dropped before counting.
        item({ family: 'network', podName: 'reins-5f-new', podIP: IP.reinsPod, namespace: 'reins', destIP: IP.openai, observedAt: at(50) }),
      ]),
    );
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
  });
  after(async () => {
    await replica.close();
  });

  test('rows per workload: the Deployment with its provider destinations, m, n and governedCalls from egress audit events', async () => {
    const r = await admin.get('/api/v1/runtime/reconciliation');
    assert.equal(r.status, 200);
    assert.equal(r.body.enabled, true);
    assert.equal(r.body.networkDetectorDisabled, false, r.body.disabledReason);
    assert.equal(r.body.windowEndUnix, clock.unix);
    assert.deepEqual(r.body.ingestLag, { lag: 0, perNode: [], scrapedAtUnix: r.body.ingestLag.scrapedAtUnix, scrapeError: r.body.ingestLag.scrapeError });
    const keys = r.body.rows.map((row: any) => row.workloadKey);
    // Every workload of the facts has a row, evidence or not (issue 18 item 5), sorted per rule 2; not the service's own.
    assert.deepEqual(keys, [AGENT, 'eng/Pod/scratch', 'eng/Deployment/meshy', 'eng/StatefulSet/db', 'shop/Deployment/orders']);
    const row = r.body.rows[0];
    assert.equal(row.bypassedDestinations, 2);
    // m: 5 connections + 1 resolution to api.openai.com, 1 resolution of api.anthropic.com.
    assert.equal(row.m, 7);
    // n: every gateway-recorded call of identity eng/agent (three egress calls, each with two audit events).
    assert.equal(row.n, 3);
    assert.equal(row.dnsOnly, false);
    assert.equal(row.joinMethod, 'name-based');
    assert.equal(row.attributionConfirmed, true);
    const openai = row.destinations.find((d: any) => d.destName === 'api.openai.com');
    assert.deepEqual(
      { source: openai.source, count: openai.count, destIP: openai.destIP, rung: openai.rung, kind: openai.kind, suppressed: openai.suppressed, governedCalls: openai.governedCalls },
      { source: 'network', count: 5, destIP: IP.openai, rung: 'R0', kind: 'provider', suppressed: false, governedCalls: 2 },
    );
    const anthropic = row.destinations.find((d: any) => d.destName === 'api.anthropic.com');
    assert.equal(anthropic.source, 'dns');
    assert.equal(anthropic.governedCalls, 0);
    const scratch = r.body.rows[1];
    assert.equal(scratch.attributionConfirmed, false);
    assert.equal(scratch.destinations[0].destName, `ip:${IP.unknown} (unattributed)`);
    assert.equal(scratch.destinations[0].rung, 'R6');
  });

  test('a wider window takes in older evidence', async () => {
    const r = await admin.get('/api/v1/runtime/reconciliation?window=6h');
    const row = r.body.rows.find((x: any) => x.workloadKey === AGENT);
    assert.equal(row.bypassedDestinations, 3);
    assert.ok(row.destinations.some((d: any) => d.destName === 'api.mistral.ai'));
  });

  test('facts missing: the network detector stands down for the window, DNS findings stay counted', async () => {
    const saved = cluster.factsValue;
    cluster.factsValue = null;
    try {
      const r = await admin.get('/api/v1/runtime/reconciliation');
      assert.equal(r.body.networkDetectorDisabled, true);
      assert.match(r.body.disabledReason, /no cluster facts/);
    } finally {
      cluster.factsValue = saved;
    }
  });

  test('observations of one workload: raw items of its pods grouped by family, newest first, key echoed', async () => {
    const r = await admin.get(`/api/v1/runtime/workloads/${enc(AGENT)}/observations`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.workloadKey, AGENT);
    assert.deepEqual(r.body.groups.map((g: any) => [g.family, g.items.length]), [
      ['dns', 2],
      ['network', 2],
      ['open', 0],
      ['exec', 1],
      ['other', 0],
    ]);
    const dns = r.body.groups[0];
    assert.equal(dns.heading, 'Names resolved (DNS)');
    assert.deepEqual(dns.items.map((i: any) => i.destName), ['api.anthropic.com', 'api.openai.com']);
    assert.deepEqual(Object.keys(dns.items[0]).sort(), ['behavior', 'count', 'destIP', 'destName', 'mode', 'namespace', 'node', 'observedAt', 'podName', 'result', 'rule', 'subject']);
    assert.equal(r.body.groups[3].needsBpfLsm, true);
    assert.equal(dns.totalItems, 2);
    assert.equal(dns.truncated, false);

    const wide = await admin.get(`/api/v1/runtime/workloads/${enc(AGENT)}/observations?window=24h`);
    assert.equal(wide.body.groups[0].items.length, 3);
    const pod = await admin.get(`/api/v1/runtime/workloads/${enc('eng/Pod/scratch')}/observations`);
    assert.deepEqual(pod.body.groups[1].items.map((i: any) => i.destIP), [IP.unknown]);
  });

  test('an unknown workload: 200 with empty groups; a malformed key: 400 naming key', async () => {
    const unknown = await admin.get(`/api/v1/runtime/workloads/${enc('eng/Deployment/nobody')}/observations`);
    assert.equal(unknown.status, 200);
    assert.deepEqual(unknown.body.groups, []);
    assert.equal(unknown.body.workloadKey, 'eng/Deployment/nobody');
    for (const bad of ['eng', 'eng/Deployment', 'eng/Deployment/a/b', 'Eng/Deployment/a', 'eng//a', 'eng/Deployment/']) {
      const r = await admin.get(`/api/v1/runtime/workloads/${enc(bad)}/observations`);
      assert.equal(r.status, 400, bad);
      assert.equal(r.body.error.field, 'key');
      assert.match(r.body.error.message, /^key: /);
    }
    const unencoded = await admin.get('/api/v1/runtime/workloads/eng/Deployment/agent/observations');
    assert.equal(unencoded.status, 400);
    assert.match(unencoded.body.error.message, /percent-encode/);
  });

  test('the routes are in the OpenAPI description', async () => {
    const doc = (await admin.get('/api/v1/openapi.json')).body;
    for (const path of ['/api/v1/runtime/status', '/api/v1/runtime/reconciliation', '/api/v1/runtime/workloads/{key}/observations', '/api/v1/runtime/sensor/reports', '/api/v1/runtime/sensor/status']) {
      assert.ok(doc.paths[path], path);
    }
    assert.ok(doc.paths['/api/v1/runtime/reconciliation'].get.responses['200']);
  });
});
