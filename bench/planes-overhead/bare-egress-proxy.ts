/**
 * The floor any Node forward proxy stands on, for the egress figures: node:http's 'connect' event, `net.connect`
 * to the authority asked for, `200 Connection Established`, then the two sockets piped into each other, as the
 * Node documentation's own CONNECT proxy does. No credential, no policy, no audit, no DNS cache. Nagle is off on
 * the upstream leg (node:http already turns it off on the client's), as any proxy relaying TLS records should.
 *
 * Run as a child: node --import tsx bench/planes-overhead/bare-egress-proxy.ts; prints {"ready":"http://127.0.0.1:<port>"}.
 */
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { installProfileSwitch } from './profile-switch.js';
import { announceReady, endWithRunner } from '../gateway-overhead/server-child.js';

// profile.ts --cpu-prof profiles the bare proxy too, to set its areas beside Reins'.
await installProfileSwitch('bare-egress');

const server = createServer((_req, res) => {
  // Only tunnels are measured; a plain request is not this baseline's business.
  res.writeHead(405, { 'content-length': 0 });
  res.end();
});

server.on('connect', (req, client, head: Buffer) => {
  const authority = req.url ?? '';
  const colon = authority.lastIndexOf(':');
  const host = authority.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(authority.slice(colon + 1));
  if (colon <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) {
    client.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n');
    return;
  }
  let established = false;
  const upstream = connect({ host, port, noDelay: true }, () => {
    established = true;
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  // Each side's end is passed on by pipe; an error on either cuts both.
  upstream.on('error', () => {
    if (!established && client.writable) client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n');
    else client.destroy();
  });
  client.on('error', () => upstream.destroy());
  client.on('close', () => upstream.destroy());
});

await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address() as AddressInfo;
announceReady(`http://127.0.0.1:${port}`);
endWithRunner();
