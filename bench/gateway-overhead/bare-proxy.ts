/**
 * The floor any Node gateway stands on: a node:http server that forwards every request to the upstream over a
 * keep-alive undici Pool (the same client, pool size and dispatch path Reins uses: pass-through.ts) and streams the
 * answer back. No parsing, no policy, no audit: only hop-by-hop headers are dropped, as any correct proxy must.
 *
 * Run as a child: node --import tsx bench/gateway-overhead/bare-proxy.ts <upstream origin>; prints {"ready":"<url>"}.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { Pool } from 'undici';
import { installDiagnostics } from './diagnostics.js';
import { passThrough } from './pass-through.js';
import { announceReady, endWithRunner } from './server-child.js';

if (process.env.BENCH_DIAGNOSE === '1') installDiagnostics();

const upstream = process.argv[2];
if (!upstream) throw new Error('usage: bare-proxy.ts <upstream origin>');
const pool = new Pool(upstream, { connections: 128, keepAliveTimeout: 30_000 });

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host']);

function forwardable(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

const server = createServer((req, res) => {
  passThrough(pool, { method: req.method ?? 'GET', path: req.url ?? '/', headers: forwardable(req.headers), body: req }, res, HOP_BY_HOP, {
    failed: (err) => {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `upstream: ${err.message}`, type: 'api_error', param: null, code: null } }));
    },
  });
});
server.keepAliveTimeout = 60_000;
server.headersTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  announceReady(`http://127.0.0.1:${address.port}`);
});
endWithRunner();
