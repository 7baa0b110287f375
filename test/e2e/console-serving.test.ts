/**
 * How the server serves the console (src/app/console.ts), without a browser: index.html for console paths,
 * the hashed assets, the security headers, the server's own paths never shadowed, and the plain page of a
 * replica whose console was not built.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance } from 'fastify';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerConsole } from '../../src/app/console.js';
import { registerErrorHandling } from '../../src/shared/error-handler.js';

async function appServing(dir: string): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  registerErrorHandling(app);
  app.get('/api/v1/identities', async () => ({ items: [] }));
  app.get('/healthz', async () => ({ status: 'ok' }));
  await registerConsole(app, { dir });
  await app.ready();
  return app;
}

describe('serving the console', () => {
  let dir: string;
  let built: FastifyInstance;
  let missing: FastifyInstance;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'reins-console-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><div id="root"></div><script type="module" src="/assets/index-abc123.js"></script>');
    writeFileSync(join(dir, 'assets/index-abc123.js'), 'console.log(1)');
    built = await appServing(dir);
    missing = await appServing(join(dir, 'not-there'));
  });
  after(async () => {
    await built.close();
    await missing.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('/ and every console path answer index.html with the security headers', async () => {
    for (const url of ['/', '/identities', '/approvals/requests/ar_123', '/runtime/workloads/eng%2FDeployment%2Fagent?window=6h']) {
      const r = await built.inject({ url });
      assert.equal(r.statusCode, 200, url);
      assert.match(r.headers['content-type'] as string, /^text\/html/);
      assert.match(r.body, /<div id="root">/);
      const csp = r.headers['content-security-policy'] as string;
      assert.match(csp, /script-src 'self'/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.equal(r.headers['x-content-type-options'], 'nosniff');
      assert.equal(r.headers['cache-control'], 'no-cache');
    }
  });

  test('hashed assets are served, cached as immutable, with nosniff', async () => {
    const r = await built.inject({ url: '/assets/index-abc123.js' });
    assert.equal(r.statusCode, 200);
    assert.match(r.headers['content-type'] as string, /javascript/);
    assert.match(r.headers['cache-control'] as string, /immutable/);
    assert.equal(r.headers['x-content-type-options'], 'nosniff');
  });

  test('the server’s own paths are never shadowed: unknown ones stay the JSON 404', async () => {
    assert.deepEqual((await built.inject({ url: '/api/v1/identities' })).json(), { items: [] });
    assert.deepEqual((await built.inject({ url: '/healthz' })).json(), { status: 'ok' });
    for (const url of ['/api', '/api/v1/nothing-here', '/llm/unknown', '/mcp', '/metrics/x', '/readyz/x', '/assets/missing.js', '/favicon.ico']) {
      const r = await built.inject({ url });
      assert.equal(r.statusCode, 404, url);
      assert.equal(r.json().error.code, 'not_found', url);
    }
    assert.equal((await built.inject({ method: 'POST', url: '/identities' })).statusCode, 404, 'only GET is the console');
  });

  test('a replica whose console was not built answers a short plain page saying how to build it, never a 500', async () => {
    for (const url of ['/', '/identities']) {
      const r = await missing.inject({ url });
      assert.equal(r.statusCode, 200);
      assert.match(r.headers['content-type'] as string, /^text\/plain/);
      assert.match(r.body, /has not been built/);
      assert.match(r.body, /npm run build/);
    }
    assert.equal((await missing.inject({ url: '/assets/index-abc123.js' })).statusCode, 404);
    assert.equal((await missing.inject({ url: '/api/v1/nothing' })).json().error.code, 'not_found');
  });
});
