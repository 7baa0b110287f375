/**
 * Ports a test names before anything listens on them: one a child process will listen on later, or one that must
 * refuse connections.
 *
 * Taking a port with listen(0) and releasing it does not keep it: under the whole suite other tests' listen(0) and
 * every outgoing connection draw from the kernel's ephemeral range, and one of them can get the released port before
 * the child binds it (CI saw a sensor die on EADDRINUSE that way). So these come from below the ephemeral range
 * (32768-60999 on Linux), which the kernel never hands out by itself, chosen at random and checked free by binding.
 */
import net from 'node:net';
import { readFileSync } from 'node:fs';

const LOWEST = 20_000;

/** The first port of the kernel's ephemeral range (the ports listen(0) and outgoing connections take). */
function ephemeralStart(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(first) && first > LOWEST + 1000) return first;
  } catch {
    // Not Linux: the IANA dynamic range starts at 49152.
  }
  return 32_768;
}

const HIGHEST = ephemeralStart() - 1;

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port on 127.0.0.1 that nothing listens on and that the kernel will not give to anyone by itself. */
export async function unusedPort(): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = LOWEST + Math.floor(Math.random() * (HIGHEST - LOWEST + 1));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port between ${LOWEST} and ${HIGHEST} in 200 tries`);
}
