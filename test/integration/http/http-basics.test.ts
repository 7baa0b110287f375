/**
 * HTTP basics: the single error body everywhere, 4xx for malformed JSON, wrong content type and oversize
 * bodies, health and metrics endpoints, the OpenAPI description, and fuzzed input that never yields a 500.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Writable } from 'node:stream';
import type { FastifyServerOptions } from 'fastify';
import fc from 'fast-check';
import { defaultLogger } from '../../../src/app/server.js';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, describeEachStore, enc, startTestReplica } from '../../helpers/harness.js';

describeEachStore('http basics', ({ store }) => {
  let replica: Replica;
  let admin: Client;

  before(async () => {
    replica = await startTestReplica(store(), { http: { bodyLimitBytes: 4096, trustProxy: false, failedAuthLimit: 1_000_000, failedAuthWindowSeconds: 60 } });
    admin = new Client(replica.url, ADMIN_TOKEN);
    await admin.post('/api/v1/identities', { id: 'eng/bot', kind: 'agent' });
  });
  after(() => replica.close());

  const tierPath = `/api/v1/identities/autonomy-tier?id=${enc('eng/bot')}`;

  test('malformed JSON is a 400 malformed_json', async () => {
    for (const raw of ['{"tier":', '{tier: "T1"}', "{'tier':'T1'}", '\u0000', '{"tier":"T1"}}']) {
      const r = await admin.put(tierPath, undefined, { raw });
      assert.equal(r.status, 400, raw);
      assert.equal(r.body.error.code, 'malformed_json');
    }
  });

  test('a wrong content type is a 415', async () => {
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'multipart/form-data; boundary=x']) {
      const r = await admin.put(tierPath, undefined, { raw: 'tier=T1', contentType });
      assert.equal(r.status, 415, contentType);
      assert.equal(r.body.error.code, 'unsupported_media_type');
    }
  });

  test('a body over the size limit is a 413', async () => {
    const r = await admin.put(tierPath, { tier: 'T1', pad: 'x'.repeat(10_000) });
    assert.equal(r.status, 413);
    assert.equal(r.body.error.code, 'payload_too_large');
  });

  test('an unknown route is a 404 in the error shape', async () => {
    const r = await admin.get('/api/v1/nothing-here');
    assert.equal(r.status, 404);
    assert.equal(r.body.error.code, 'not_found');
  });

  test('healthz, readyz and metrics answer', async () => {
    assert.deepEqual((await admin.get('/healthz')).body, { status: 'ok' });
    const ready = await admin.get('/readyz');
    assert.equal(ready.status, 200);
    assert.equal(ready.body.store, store().kind);
    const metrics = await admin.get('/metrics', { token: null });
    assert.equal(metrics.status, 200);
    assert.match(metrics.body, /reins_http_requests_total\{route="\/healthz",method="GET",status="200"\}/);
    assert.match(metrics.body, /reins_process_cpu_seconds_total/);
  });

  test('the OpenAPI description lists every route with its statuses', async () => {
    const doc = (await admin.get('/api/v1/openapi.json')).body;
    assert.equal(doc.openapi, '3.1.0');
    const expected: [string, string][] = [
      ['/api/v1/identities', 'get'],
      ['/api/v1/identities', 'post'],
      ['/api/v1/identities', 'delete'],
      ['/api/v1/identities/detail', 'get'],
      ['/api/v1/identities/autonomy-tier', 'put'],
      ['/api/v1/tokens', 'get'],
      ['/api/v1/tokens', 'post'],
      ['/api/v1/tokens/{id}', 'delete'],
      ['/api/v1/runtime/sensor-tokens', 'post'],
      ['/api/v1/auth/session', 'post'],
      ['/api/v1/auth/session', 'delete'],
      ['/api/v1/auth/me', 'get'],
      ['/api/v1/audit-events', 'get'],
      ['/api/v1/policies', 'get'],
      ['/api/v1/policies', 'post'],
      ['/api/v1/policies/{name}', 'get'],
      ['/api/v1/policies/{name}', 'put'],
      ['/api/v1/policies/{name}', 'delete'],
      ['/api/v1/policies/evaluate', 'post'],
      ['/api/v1/budget-rules', 'get'],
      ['/api/v1/budget-rules', 'post'],
      ['/api/v1/budget-rules/{id}', 'put'],
      ['/api/v1/budget-rules/{id}', 'delete'],
      ['/api/v1/model-access', 'post'],
      ['/api/v1/spend', 'get'],
    ];
    // The data plane is described too: where the SDKs point and how they authenticate.
    const gatewayPaths = Object.keys(doc.paths).filter((p) => p.startsWith('/llm/'));
    for (const provider of ['openai', 'anthropic', 'bedrock']) {
      assert.ok(gatewayPaths.some((p) => p.startsWith(`/llm/${provider}/`)), `no /llm/${provider} route in ${gatewayPaths.join(', ')}`);
    }
    assert.ok(doc.paths['/llm/anthropic/api/hello']?.head ?? doc.paths['/llm/anthropic/api/hello']?.get);
    for (const [path, method] of expected) assert.ok(doc.paths[path]?.[method], `${method.toUpperCase()} ${path} missing`);
    assert.ok(doc.paths['/api/v1/identities/autonomy-tier'].put.responses['404']);
  });

  test('request logs never carry credentials', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logged = await startTestReplica(store(), {}, { logger: { ...(defaultLogger('trace') as object), stream } as FastifyServerOptions['logger'] });
    try {
      const c = new Client(logged.url, ADMIN_TOKEN);
      await c.get('/api/v1/identities', { headers: { 'x-api-key': ADMIN_TOKEN, cookie: `reins_session=${ADMIN_TOKEN}` } });
      await c.post('/api/v1/auth/session', { token: ADMIN_TOKEN });
      const minted = await c.post('/api/v1/tokens', { identityId: 'default/admin', name: 'logged' });
      await c.with(minted.body.token).get('/api/v1/auth/me');
      await c.with('reins_pat_wrong-token-wrong-token-wrong').get('/api/v1/auth/me');
      const text = lines.join('');
      assert.ok(text.includes('/api/v1/auth/me'), 'requests are logged');
      for (const secret of [ADMIN_TOKEN, minted.body.token, 'reins_pat_wrong-token-wrong-token-wrong']) assert.equal(text.includes(secret), false);
    } finally {
      await logged.close();
    }
  });

  const routes: [string, string][] = [
    ['PUT', '/api/v1/identities/autonomy-tier'],
    ['POST', '/api/v1/identities'],
    ['GET', '/api/v1/identities'],
    ['GET', '/api/v1/identities/detail'],
    ['DELETE', '/api/v1/identities'],
    ['POST', '/api/v1/tokens'],
    ['GET', '/api/v1/tokens'],
    ['DELETE', '/api/v1/tokens/x'],
    ['POST', '/api/v1/runtime/sensor-tokens'],
    ['POST', '/api/v1/auth/session'],
    ['GET', '/api/v1/audit-events'],
  ];
  const queryValue = fc.oneof(
    fc.string(),
    fc.constantFrom('eng/bot', 'default/admin', '', '%', '%2F', '../..', 'a/b/c', 'T1', '-1', '1e400', '9'.repeat(30), 'null', '[]'),
    fc.string({ unit: 'binary', maxLength: 40 }),
  );
  const queryString = fc
    .array(fc.tuple(fc.constantFrom('id', 'kind', 'identityId', 'limit', 'cursor', 'since', 'until', 'type', 'identity', 'x', '__proto__'), queryValue), { maxLength: 4 })
    .map((pairs) => pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&'));
  const body = fc.oneof(
    fc.json(),
    fc.anything().map((v) => {
      try {
        return JSON.stringify(v) ?? 'null';
      } catch {
        return 'null';
      }
    }),
    fc.record(
      {
        tier: fc.oneof(fc.string(), fc.constantFrom('T1', 'T4', ''), fc.integer(), fc.constant(null)),
        id: fc.oneof(fc.string(), fc.constantFrom('eng/x', 'Eng/X', 'a/b/c')),
        kind: fc.oneof(fc.string(), fc.constantFrom('agent', 'developer')),
        role: fc.oneof(fc.string(), fc.constantFrom('admin', 'viewer')),
        identityId: fc.oneof(fc.string(), fc.constant('eng/bot')),
        name: fc.oneof(fc.string(), fc.constant('')),
        expiresAt: fc.oneof(fc.string(), fc.constant('2999-01-01T00:00:00Z'), fc.integer()),
        token: fc.oneof(fc.string(), fc.constant(ADMIN_TOKEN)),
        __proto__: fc.anything(),
      },
      { requiredKeys: [] },
    ).map((o) => JSON.stringify(o)),
    fc.string(),
  );

  test('fuzzed bodies and query strings never produce a 500', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), queryString, body, fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain'), async ([method, path], qs, raw, contentType) => {
        const r = await admin.request(method, `${path}?${qs}`, undefined, method === 'GET' || method === 'DELETE' ? {} : { raw, contentType });
        assert.ok(r.status < 500, `${method} ${path}?${qs} ${raw} -> ${r.status} ${JSON.stringify(r.body)}`);
        if (r.status >= 400) assert.equal(typeof r.body?.error?.code, 'string');
      }),
      { numRuns: 400 },
    );
  });
});
