/**
 * Sensor ingest through HTTP: validation naming the field, the 500-item limit (refused whole, nothing stored,
 * counted), node status with fresh, stale and idle nodes, and the ingest lag against a local metrics server.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, describeEachStore } from '../../helpers/harness.js';
import { FakeCluster, item, mintSensorToken, recordedCounter, report, startGuardReplica, startMetricsServer, TestClock } from './helpers.js';
import type { ClusterFacts } from '../../../src/runtime-guard/types.js';

function factsWithNodes(names: string[]): ClusterFacts {
  return {
    fetchedAtUnix: 0,
    complete: true,
    pods: [],
    replicaSets: [],
    jobs: [],
    services: [],
    endpointSlices: [],
    nodes: names.map((name) => ({ name, addresses: [] })),
    apiServerAddresses: [],
    clusterDnsAddresses: [],
    selfService: null,
    selfPods: [],
  };
}

describeEachStore('runtime sensor ingest', ({ store }) => {
  let replica: Replica;
  let sensor: Client;
  let admin: Client;
  let metrics: Awaited<ReturnType<typeof startMetricsServer>>;
  const clock = new TestClock();
  const cluster = new FakeCluster(clock, factsWithNodes(['node-a', 'node-b', 'node-c', 'node-d', 'node-e']));
  cluster.leader = false;

  before(async () => {
    metrics = await startMetricsServer();
    replica = await startGuardReplica(store(), { cluster, clock });
    admin = new Client(replica.url, ADMIN_TOKEN);
    sensor = new Client(replica.url, await mintSensorToken(admin));
  });
  after(async () => {
    await replica.close();
    await metrics.close();
  });

  const storedFor = async (node: string): Promise<number> => {
    const r = await replica.db.query<{ n: number }>('SELECT count(*)::int AS n FROM runtime_observations WHERE node = $1', [node]);
    return r.rows[0]!.n;
  };
  const sendItems = (node: string, n: number, extra: Partial<Parameters<typeof item>[0]> = {}) =>
    sensor.post('/api/v1/runtime/sensor/reports', report(node, Array.from({ length: n }, (_, i) => item({ destIP: '162.159.140.245', observedAt: clock.unix - i, ...extra }))));

  test('a valid report is stored whole: every item, with its node', async () => {
    const sent = await sendItems('node-v', 3);
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    assert.deepEqual(sent.body, { stored: 3 });
    assert.equal(await storedFor('node-v'), 3);
    const empty = await sensor.post('/api/v1/runtime/sensor/reports', report('node-v', []));
    assert.deepEqual(empty.body, { stored: 0 });
  });

  const invalid: Array<[string, (r: any) => void, string]> = [
    ['a missing node', (r) => delete r.node, 'node'],
    ['a missing observations list', (r) => delete r.observations, 'observations'],
    ['an unknown family', (r) => (r.observations[3].family = 'ftp'), 'observations[3].family'],
    ['a zero count', (r) => (r.observations[1].count = 0), 'observations[1].count'],
    ['a fractional observedAt', (r) => (r.observations[2].observedAt = 1.5), 'observations[2].observedAt'],
    ['a missing behavior', (r) => delete r.observations[0].behavior, 'observations[0].behavior'],
    ['a destIP that is no address', (r) => (r.observations[4].destIP = 'api.openai.com'), 'observations[4].destIP'],
    ['a podIP that is no address', (r) => (r.observations[0].podIP = '10.0.0'), 'observations[0].podIP'],
    ['neither a pod name nor a pod IP', (r) => Object.assign(r.observations[1], { podName: '', podIP: '' }), 'observations[1].podName'],
    ["an item of another node than the report's", (r) => (r.observations[2].node = 'node-z'), 'observations[2].node'],
    ['an empty namespace', (r) => (r.observations[0].namespace = ''), 'observations[0].namespace'],
  ];
  for (const [name, spoil, field] of invalid) {
    test(`${name}: 400 naming ${field}, nothing stored`, async () => {
      const body: any = report('node-x', Array.from({ length: 5 }, (_, i) => item({ destIP: '162.159.140.245', observedAt: clock.unix - i })));
      spoil(body);
      const r = await sensor.post('/api/v1/runtime/sensor/reports', body);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.error.code, 'invalid_request');
      assert.ok(r.body.error.message.startsWith(`${field}: `), r.body.error.message);
      assert.equal(r.body.error.field, field);
      assert.equal(await storedFor('node-x'), 0);
    });
  }

  test('unknown fields are ignored (a newer sensor must not lose its reports)', async () => {
    const withExtra = { ...item({ destIP: '10.0.0.1', observedAt: clock.unix }), container: 'app' };
    const r = await sensor.post('/api/v1/runtime/sensor/reports', { ...report('node-u', [withExtra]), sensorVersion: '0.9' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  });

  test('control characters in text fields are replaced, never a reason to lose the report', async () => {
    const r = await sensor.post('/api/v1/runtime/sensor/reports', report('node-ctl', [item({ destIP: '10.0.0.1', subject: 'evil\u0001\u0000name', destName: 'a\nb', observedAt: clock.unix })]));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const stored = await replica.db.query<{ subject: string; dest_name: string }>("SELECT subject, dest_name FROM runtime_observations WHERE node = 'node-ctl'");
    assert.deepEqual(stored.rows, [{ subject: 'evil\ufffd\ufffdname', dest_name: 'a\ufffdb' }]);
    const statusSent = await sensor.post('/api/v1/runtime/sensor/status', { node: 'node-ctl', sensorAlive: true, bpfLsm: 'unknown', reason: 'nul\u0000' });
    assert.equal(statusSent.status, 200);
  });

  const storedRows = async (node: string) =>
    (
      await replica.db.query<{ subject: string; dest_name: string; count: number; observed_at: string; pod_name: string }>(
        'SELECT subject, dest_name, count, observed_at, pod_name FROM runtime_observations WHERE node = $1 ORDER BY id',
        [node],
      )
    ).rows;

  test('DEL (U+007F), which JSON carries unescaped, is replaced like the other control characters', async () => {
    const body = JSON.stringify(report('node-del', [item({ destIP: '10.0.0.1', subject: '/bin/x\u007fy', observedAt: clock.unix })]));
    assert.ok(body.includes('\u007f') && !body.includes('\\'), 'DEL is sent raw, with no backslash in the body');
    const r = await sensor.post('/api/v1/runtime/sensor/reports', undefined, { raw: body });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal((await storedRows('node-del'))[0]!.subject, '/bin/x\ufffdy');
  });

  test('a report is stored with the values it was validated with, however its JSON spells them', async () => {
    // Integers spelled as JSON allows (1.0, 1e1), a key given twice (the last one counts), an unknown field.
    const at = clock.unix;
    const raw =
      `{"node":"node-spell","sentAtUnix":${at},"observations":[` +
      `{"rule":"r","behavior":"tcp-connect","subject":"/first","subject":"/second","destIP":"10.0.0.1","destName":"","count":1.0,` +
      `"podName":"p","podIP":"","namespace":"eng","result":"allowed","mode":"monitor","observedAt":${at}.0,"family":"network","extra":{"a":[1,2]}},` +
      `{"rule":"r","behavior":"tcp-connect","subject":"/s","destIP":"10.0.0.1","destName":"","count":1e1,` +
      `"podName":"q","podIP":"","namespace":"eng","result":"allowed","mode":"monitor","observedAt":${at - 1},"family":"network"}]}`;
    const r = await sensor.post('/api/v1/runtime/sensor/reports', undefined, { raw });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(
      (await storedRows('node-spell')).map((row) => [row.subject, row.count, Number(row.observed_at), row.pod_name]),
      [
        ['/second', 1, at, 'p'],
        ['/s', 10, at - 1, 'q'],
      ],
    );
    // A number PostgreSQL's JSON parser refuses, in a field the route ignores: stored all the same.
    const huge = raw.replace('node-spell', 'node-huge').replace('"extra":{', `"extra":{"n":1${'0'.repeat(200_000)},`);
    const hugeSent = await sensor.post('/api/v1/runtime/sensor/reports', undefined, { raw: huge });
    assert.equal(hugeSent.status, 200, JSON.stringify(hugeSent.body));
    assert.equal((await storedRows('node-huge')).length, 2);
    // With a byte order mark (the body parser skips it; the text is not stored as sent then).
    const bom = await sensor.post('/api/v1/runtime/sensor/reports', undefined, { raw: `\ufeff${raw.replace('node-spell', 'node-bom')}` });
    assert.equal(bom.status, 200, JSON.stringify(bom.body));
    assert.equal((await storedRows('node-bom')).length, 2);
  });

  test('bytes that are not UTF-8 are stored as the parser read them (U+FFFD), never a reason to lose the report', async () => {
    // The route stores a report from its body's bytes (PostgreSQL reads them as UTF-8); bytes that are not UTF-8 fail
    // that statement, and the report is stored from its parsed items instead, as the body parser read them.
    const text = JSON.stringify(report('node-bytes', [item({ destIP: '10.0.0.1', subject: '/bin/xQy', observedAt: clock.unix })]));
    const bytes = Buffer.from(text);
    bytes[bytes.indexOf('/bin/xQy') + 6] = 0xff;
    const res = await fetch(new URL('/api/v1/runtime/sensor/reports', sensor.baseUrl), {
      method: 'POST',
      headers: { authorization: `Bearer ${sensor.token}`, 'content-type': 'application/json' },
      body: bytes,
    });
    assert.equal(res.status, 200, await res.text());
    assert.equal((await storedRows('node-bytes'))[0]!.subject, '/bin/x\ufffdy');
  });

  test('500 valid items of maximum field sizes are stored: the route takes more than the general body limit (1 MiB)', async () => {
    const big = (n: number, c: string) => c.repeat(n);
    const items = Array.from({ length: 500 }, (_, i) =>
      item({
        rule: big(256, 'r'),
        behavior: big(128, 'b'),
        subject: `/${big(4095, 's')}`,
        destName: `${i}.${big(1000, 'n')}`.slice(0, 1024),
        podName: big(253, 'p'),
        namespace: big(253, 'n'),
        result: big(64, 'x'),
        mode: big(32, 'm'),
        observedAt: clock.unix - 10,
      }),
    );
    const body = JSON.stringify(report('node-big', items));
    assert.ok(body.length > 1024 * 1024 * 2, `the body is ${body.length} bytes`);
    const sent = await sensor.post('/api/v1/runtime/sensor/reports', undefined, { raw: body });
    assert.equal(sent.status, 200, JSON.stringify(sent.body).slice(0, 300));
    assert.equal(await storedFor('node-big'), 500);
  });

  test('not JSON: 400; another content type: 415', async () => {
    const bad = await sensor.post('/api/v1/runtime/sensor/reports', undefined, { raw: '{"node":' });
    assert.equal(bad.status, 400);
    const text = await sensor.post('/api/v1/runtime/sensor/reports', undefined, { raw: 'node=a', contentType: 'text/plain' });
    assert.equal(text.status, 415);
  });

  test('exactly 500 observations are stored; 501 are refused whole with 413 naming the limit, and counted', async () => {
    const ok = await sendItems('node-500', 500);
    assert.equal(ok.status, 200);
    assert.equal(await storedFor('node-500'), 500);
    const over = await sendItems('node-501', 501);
    assert.equal(over.status, 413, JSON.stringify(over.body));
    assert.equal(over.body.error.code, 'payload_too_large');
    assert.match(over.body.error.message, /^observations: at most 500 per report, got 501/);
    assert.equal(await storedFor('node-501'), 0);
    const text = (await new Client(replica.url).get('/metrics')).body as string;
    assert.match(text, /reins_runtime_reports_refused_total\{status="413"\} 1/);
    assert.match(text, /reins_runtime_observations_ingested_total \d+/);
  });

  test('node status: fresh, stale, idle, unavailable and silent nodes, and the fleet answer', async () => {
    const sendStatus = (node: string, bpfLsm: string, reason = '', sensorAlive = true) =>
      sensor.post('/api/v1/runtime/sensor/status', { node, sensorAlive, bpfLsm, reason });
    assert.equal((await sendStatus('node-c', 'available', 'bpf listed in /sys/kernel/security/lsm')).status, 200);
    clock.advance(121);
    await sendStatus('node-a', 'available', 'bpf listed in /sys/kernel/security/lsm');
    await sendStatus('node-b', 'unknown');
    await sendStatus('node-d', 'unavailable', 'bpf not in /sys/kernel/security/lsm');
    const status = await admin.get('/api/v1/runtime/status');
    assert.equal(status.status, 200);
    const byNode = Object.fromEntries(status.body.nodes.map((n: any) => [n.node, n]));
    assert.deepEqual(byNode['node-a'], { node: 'node-a', sensorAlive: true, bpfLsm: 'available', reason: 'bpf listed in /sys/kernel/security/lsm' });
    assert.equal(byNode['node-b'].bpfLsm, 'unknown');
    assert.match(byNode['node-b'].reason, /idle/);
    assert.equal(byNode['node-c'].bpfLsm, 'unknown');
    assert.equal(byNode['node-c'].sensorAlive, false);
    assert.match(byNode['node-c'].reason, /stale/);
    assert.equal(byNode['node-d'].bpfLsm, 'unavailable');
    assert.match(byNode['node-e'].reason, /no sensor status/);
    assert.equal(status.body.bpfLsm, 'unavailable');
    assert.match(status.body.bpfLsmReason, /node-d/);

    // node-d fixed: nothing positively unavailable, but idle, stale and silent nodes leave the fleet unknown, not clean.
    await sendStatus('node-d', 'available', 'bpf listed');
    const second = await admin.get('/api/v1/runtime/status');
    assert.equal(second.body.bpfLsm, 'unknown');
    assert.match(second.body.bpfLsmReason, /node-b, node-c, node-e/);

    // Every node fresh and positively available: available.
    for (const node of ['node-b', 'node-c', 'node-e']) await sendStatus(node, 'available', 'bpf listed');
    const third = await admin.get('/api/v1/runtime/status');
    assert.equal(third.body.bpfLsm, 'available', third.body.bpfLsmReason);
    assert.equal(third.body.crd, 'available');
  });

  test('ingest lag: never scraped, unreachable, counter ahead, refused report, sensor restart, bad metrics', async () => {
    // Not the leader yet: nobody scraped. 0 means unknown, and no error was seen.
    let lag = (await admin.get('/api/v1/runtime/status')).body.ingestLag;
    assert.deepEqual(lag, { lag: 0, perNode: [], scrapedAtUnix: 0, scrapeError: '' });

    cluster.leader = true;
    cluster.targets = ['http://127.0.0.1:1/metrics'];
    await replica.runtimeGuard.scrapeNow();
    lag = (await admin.get('/api/v1/runtime/status')).body.ingestLag;
    assert.equal(lag.scrapedAtUnix, 0);
    assert.match(lag.scrapeError, /http:\/\/127\.0\.0\.1:1\/metrics could not be read/);

    // 10 recorded, 7 stored: a lag of 3.
    cluster.targets = [metrics.url];
    assert.equal((await sendItems('node-l', 7)).status, 200);
    metrics.text = recordedCounter({ 'node-l': 10 });
    await replica.runtimeGuard.scrapeNow();
    lag = (await admin.get('/api/v1/runtime/status')).body.ingestLag;
    assert.equal(lag.scrapedAtUnix, clock.unix);
    assert.equal(lag.lag, 3);
    assert.deepEqual(lag.perNode, [{ node: 'node-l', recorded: 10, stored: 7, lag: 3 }]);
    // Sensors that report status but expose no counter are named: their side was not read.
    assert.match(lag.scrapeError, /no reins_sensor_observations_recorded_total for running sensor node\(s\) node-a/);

    // A refused report: the sensor recorded its 501 items, none is stored. The loss shows as lag.
    assert.equal((await sendItems('node-l', 501)).status, 413);
    metrics.text = recordedCounter({ 'node-l': 511 });
    clock.advance(15);
    await replica.runtimeGuard.scrapeNow();
    lag = (await admin.get('/api/v1/runtime/reconciliation')).body.ingestLag;
    assert.equal(lag.lag, 504);

    // The sensor restarted (its counter went down): re-baselined, its lag restarts at 0; new loss shows again.
    metrics.text = recordedCounter({ 'node-l': 5 });
    await replica.runtimeGuard.scrapeNow();
    lag = (await admin.get('/api/v1/runtime/status')).body.ingestLag;
    assert.deepEqual(lag.perNode, [{ node: 'node-l', recorded: 5, stored: 5, lag: 0 }]);
    metrics.text = recordedCounter({ 'node-l': 9 });
    assert.equal((await sendItems('node-l', 1)).status, 200);
    await replica.runtimeGuard.scrapeNow();
    lag = (await admin.get('/api/v1/runtime/status')).body.ingestLag;
    assert.deepEqual(lag.perNode, [{ node: 'node-l', recorded: 9, stored: 6, lag: 3 }]);

    // Metrics that cannot be parsed, or a 503: scrapeError set, the lag untrustworthy.
    metrics.text = 'reins_sensor_observations_recorded_total{node="node-l"} lots\n';
    await replica.runtimeGuard.scrapeNow();
    lag = (await admin.get('/api/v1/runtime/status')).body.ingestLag;
    assert.match(lag.scrapeError, /could not be read: bad value/);
    metrics.status = 503;
    await replica.runtimeGuard.scrapeNow();
    lag = (await admin.get('/api/v1/runtime/status')).body.ingestLag;
    assert.match(lag.scrapeError, /HTTP 503/);
  });
});
