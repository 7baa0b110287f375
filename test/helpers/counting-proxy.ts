/**
 * A plain HTTP/1.1 pass-through in front of a Reins replica that counts the requests a client sends, so a test can
 * tell how many attempts an SDK made (its retries included) without trusting the SDK's own account. Bodies and
 * answers are piped both ways unbuffered, streams included.
 */
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closable } from '../fakes/closable.js';

export interface CountingProxy {
  /** The proxy's origin: put it where the replica's URL would go. */
  url: string;
  /** Requests received so far (method and path). */
  readonly requests: string[];
  reset(): void;
  close(): Promise<void>;
}

export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const origin = new URL(target);
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const upstream = httpRequest(
      { host: origin.hostname, port: origin.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  const close = closable(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    reset: () => void requests.splice(0),
    close,
  };
}
