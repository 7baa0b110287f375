/**
 * The egress destination: a local HTTPS origin with the test certificate (test/fixtures/tls/server.pem, issued for
 * localhost and 127.0.0.1 by the test CA). `GET /small` answers a fixed small JSON body with keep-alive; `GET
 * /__count` answers how many `/small` requests it has served and how many TLS connections it has accepted.
 *
 * Run as a child: node --import tsx bench/planes-overhead/tls-origin.ts; prints {"ready":"https://127.0.0.1:<port>"}.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { ORIGIN_BODY, TLS_DIR } from './payloads.js';
import { announceReady, endWithRunner } from '../gateway-overhead/server-child.js';

let served = 0;
let connections = 0;
const body = Buffer.from(ORIGIN_BODY);

const server = createServer(
  { key: readFileSync(`${TLS_DIR}/server-key.pem`), cert: readFileSync(`${TLS_DIR}/server.pem`) },
  (req, res) => {
    if (req.url === '/small') {
      served++;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
      res.end(body);
    } else if (req.url === '/__count') {
      const text = JSON.stringify({ served, connections });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    } else {
      res.writeHead(404, { 'content-length': 0 });
      res.end();
    }
  },
);
server.on('secureConnection', () => connections++);
server.keepAliveTimeout = 60_000;
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const { port } = server.address() as AddressInfo;
announceReady(`https://127.0.0.1:${port}`);
endWithRunner();
