/**
 * Fake OpenAI upstream: plain node:http, answers POST /v1/chat/completions with a fixed chat.completion at once.
 * It reads the whole request body first and checks the provider key, so a target that drops the body or the
 * credential shows up as an error instead of a fast number. GET /__count tells how many completions it served,
 * which lets the runner check that every request really reached the upstream (no cache in between).
 *
 * Run as a child: node --import tsx bench/gateway-overhead/fake-upstream.ts; prints {"ready":"<url>"}.
 */
import { createServer } from 'node:http';
import { COMPLETION_BODY, UPSTREAM_KEY } from './payloads.js';
import { announceReady, endWithRunner } from './server-child.js';

const body = Buffer.from(COMPLETION_BODY);
const expectedAuth = `Bearer ${UPSTREAM_KEY}`;
let served = 0;
let refused = 0;

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/__count') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ served, refused }));
    return;
  }
  let received = 0;
  req.on('data', (chunk: Buffer) => {
    received += chunk.length;
  });
  req.on('end', () => {
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}`, type: 'invalid_request_error', param: null, code: null } }));
      return;
    }
    if (req.headers.authorization !== expectedAuth || received === 0) {
      refused++;
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Incorrect API key provided, or empty body.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } }));
      return;
    }
    served++;
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': body.length,
      'openai-organization': 'bench-org',
      'openai-processing-ms': '312',
      'openai-version': '2020-10-01',
      'x-request-id': 'req_bench0000000000000000000000',
      'x-ratelimit-limit-requests': '30000',
      'x-ratelimit-remaining-requests': '29999',
    });
    res.end(body);
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
