/**
 * The benchmark's OTLP/HTTP log receiver, in its own process so that its parsing does not take the exporter's CPU:
 * accepts every `POST /v1/logs`, counts its records, and answers `GET /count` with the total. Prints its port.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let received = 0;
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/count') return void res.end(String(received));
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceLogs: { scopeLogs: { logRecords: unknown[] }[] }[] };
    for (const rl of body.resourceLogs) for (const sl of rl.scopeLogs) received += sl.logRecords.length;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.listen(0, '127.0.0.1', () => console.log((server.address() as AddressInfo).port));
