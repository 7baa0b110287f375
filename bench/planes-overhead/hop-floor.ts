/**
 * What one more hop costs on this machine with this CPU placement, before any HTTP: a message of an MCP
 * tools/call's size (400 bytes) echoed by a TCP server, sent one at a time on one connection, directly and
 * through a relay that only copies bytes (two sockets piped into each other, Nagle off). The relay sits where
 * the proxies sit, the client and the echo server where the load generator and the upstreams sit.
 *
 * No proxy can add less than the relay does; on a virtual machine whose idle CPUs halt (no guest halt polling),
 * each hand-over between the two CPUs is a wake-up through the hypervisor, and the relay pays four per round trip.
 *
 * Three roles, one file: node --import tsx hop-floor.ts echo | relay <echoPort> | client <port> <warmup> <count>.
 * The servers print {"ready":"tcp://127.0.0.1:<port>"}; the client prints {"p50":ms,"p99":ms}.
 */
import { type AddressInfo, connect, createServer } from 'node:net';
import { announceReady, endWithRunner } from '../gateway-overhead/server-child.js';

const MESSAGE = Buffer.alloc(400, 'x');

function listen(onSocket: Parameters<typeof createServer>[1]): void {
  const server = createServer({ noDelay: true }, onSocket);
  server.listen(0, '127.0.0.1', () => announceReady(`tcp://127.0.0.1:${(server.address() as AddressInfo).port}`));
  endWithRunner();
}

const [role, ...rest] = process.argv.slice(2);
if (role === 'echo') {
  listen((socket) => socket.on('data', (chunk) => socket.write(chunk)));
} else if (role === 'relay') {
  const echoPort = Number(rest[0]);
  listen((client) => {
    const upstream = connect({ port: echoPort, host: '127.0.0.1', noDelay: true });
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
} else if (role === 'client') {
  const [port, warmup, count] = rest.map(Number) as [number, number, number];
  const socket = connect({ port, host: '127.0.0.1', noDelay: true });
  const latencies: number[] = [];
  let received = 0;
  let sent = 0n;
  let done = 0;
  const send = () => {
    sent = process.hrtime.bigint();
    socket.write(MESSAGE);
  };
  socket.on('connect', send);
  socket.on('data', (chunk) => {
    received += chunk.length;
    if (received < MESSAGE.length) return; // the echo may arrive in pieces
    received -= MESSAGE.length;
    if (done++ >= warmup) latencies.push(Number(process.hrtime.bigint() - sent) / 1e6);
    if (done < warmup + count) return send();
    latencies.sort((a, b) => a - b);
    const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
    process.stdout.write(`${JSON.stringify({ p50: at(0.5), p99: at(0.99) })}\n`);
    socket.end();
  });
} else {
  throw new Error('hop-floor.ts: echo | relay <echoPort> | client <port> <warmup> <count>');
}
