/**
 * Issue 18, item 6: bad percent-encoding anywhere in a runtime guard request answers the contract's error body
 * (`{"error":{"code","message"}}`), never Fastify's own.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, describeEachStore } from '../../helpers/harness.js';
import { makeFacts } from '../../unit/runtime-guard/fixtures.js';
import { FakeCluster, mintSensorToken, startGuardReplica, TestClock } from './helpers.js';

describeEachStore('runtime guard: bad percent-encoding', ({ store }) => {
  let replica: Replica;
  let admin: Client;
  let sensor: Client;
  const clock = new TestClock();

  before(async () => {
    replica = await startGuardReplica(store(), { cluster: new FakeCluster(clock, makeFacts()), clock });
    admin = new Client(replica.url, ADMIN_TOKEN);
    sensor = new Client(replica.url, await mintSensorToken(admin));
  });
  after(async () => {
    await replica.close();
  });

  const contractError = (r: { status: number; body: any }, what: string): void => {
    assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
    assert.deepEqual(Object.keys(r.body), ['error'], what);
    assert.equal(typeof r.body.error.code, 'string', what);
    assert.equal(typeof r.body.error.message, 'string', what);
    assert.equal(r.body.statusCode, undefined, what);
  };

  test('in the path, the query, a query name, and on the sensor routes', async () => {
    contractError(await admin.get('/api/v1/runtime/workloads/%zz/observations'), 'path parameter');
    contractError(await admin.get('/api/v1/runtime/workloads/eng%2FDeployment%2Fagent%E0%A4%A/observations'), 'truncated UTF-8 in the path');
    // `window` is lenient by contract (unparseable falls back to 1h without an error): bad encoding there too.
    assert.equal((await admin.get('/api/v1/runtime/reconciliation?window=%zz')).status, 200);
    contractError(await admin.get('/api/v1/runtime/reconciliation?%zz=1'), 'query name');
    contractError(await admin.get('/api/v1/runtime/status?x=%'), 'status query');
    contractError(await admin.get('/api/v1/runtime/%zz'), 'an unknown path segment');
    contractError(await sensor.post('/api/v1/runtime/sensor/reports?x=%zz', { node: 'a', sentAtUnix: 1, observations: [] }), 'sensor report');
  });
});
