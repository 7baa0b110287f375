/**
 * A minimal HTTP/1.1 keep-alive client for the paced scenario: the request is one prebuilt buffer, the answer is
 * parsed only as far as needed to know its status and where it ends (content-length or chunked). It costs the
 * load generator a fraction of what undici's request() does, which matters on a 2-core machine where the
 * generator shares the cores with the servers it measures, and it allocates little, so its own garbage collection
 * adds little to the tail it measures.
 */
import { connect, type Socket } from 'node:net';

export function buildRequest(url: URL, headers: Record<string, string>, body: string): Buffer {
  const payload = Buffer.from(body);
  const lines = [`POST ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`, 'connection: keep-alive'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  lines.push(`content-length: ${payload.length}`, '', '');
  return Buffer.concat([Buffer.from(lines.join('\r\n'), 'latin1'), payload]);
}

type Done = (status: number) => void;

const CRLFCRLF = Buffer.from('\r\n\r\n');

/** One connection, one request in flight at a time. */
class RawConnection {
  private socket: Socket;
  private pending: Buffer | null = null;
  private done: Done | null = null;
  private status = 0;
  private bodyStart = -1;
  private contentLength = -1;
  private chunked = false;
  private chunkAt = 0;
  ready: Promise<void>;
  broken: Error | null = null;

  constructor(port: number, host: string) {
    this.socket = connect({ port, host, noDelay: true });
    this.ready = new Promise((resolve, reject) => {
      this.socket.once('connect', () => resolve());
      this.socket.once('error', reject);
    });
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    const fail = (err: Error) => {
      this.broken = err;
      const d = this.done;
      this.done = null;
      d?.(0);
    };
    this.socket.on('error', fail);
    this.socket.on('close', () => fail(new Error('connection closed')));
  }

  send(request: Buffer, done: Done): void {
    if (this.broken) {
      done(0);
      return;
    }
    this.done = done;
    this.pending = null;
    this.bodyStart = -1;
    this.socket.write(request);
  }

  close(): void {
    this.socket.removeAllListeners('close');
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    const buf = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = buf;
    if (this.bodyStart < 0) {
      const end = buf.indexOf(CRLFCRLF);
      if (end < 0) return;
      const head = buf.toString('latin1', 0, end);
      this.status = Number(head.slice(9, 12));
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      this.chunked = /\r\ntransfer-encoding:\s*chunked/i.test(head);
      this.contentLength = length ? Number(length[1]) : -1;
      this.bodyStart = end + 4;
      this.chunkAt = this.bodyStart;
    }
    if (this.complete(buf)) {
      const d = this.done;
      this.done = null;
      this.pending = null;
      this.bodyStart = -1;
      d?.(this.status);
    }
  }

  private complete(buf: Buffer): boolean {
    if (!this.chunked) return buf.length - this.bodyStart >= Math.max(0, this.contentLength);
    // Chunked: walk size lines; the last chunk has size 0 and is followed by an empty line (no trailers here).
    for (;;) {
      const lineEnd = buf.indexOf('\r\n', this.chunkAt, 'latin1');
      if (lineEnd < 0) return false;
      const size = parseInt(buf.toString('latin1', this.chunkAt, lineEnd), 16);
      if (size === 0) return buf.length >= lineEnd + 4;
      const next = lineEnd + 2 + size + 2;
      if (buf.length < next) return false;
      this.chunkAt = next;
    }
  }
}

/**
 * Up to `size` keep-alive connections; a request that finds none free waits in line, and that wait is part of
 * its latency. `send` calls back with the status, or 0 when the connection failed.
 */
export class RawPool {
  private readonly idle: RawConnection[] = [];
  private readonly all: RawConnection[] = [];
  private readonly queue: Done[] = [];

  constructor(
    private readonly url: URL,
    private readonly request: Buffer,
    private readonly size: number,
  ) {}

  async open(): Promise<void> {
    for (let i = 0; i < this.size; i++) {
      const c = new RawConnection(Number(this.url.port), this.url.hostname);
      this.all.push(c);
      this.idle.push(c);
    }
    await Promise.all(this.all.map((c) => c.ready));
  }

  send(done: Done): void {
    const c = this.idle.pop();
    if (c) this.run(c, done);
    else this.queue.push(done);
  }

  private run(c: RawConnection, done: Done): void {
    c.send(this.request, (status) => {
      // The answer's time is taken first; handing the connection to the next in line comes after.
      done(status);
      if (!c.broken) {
        const next = this.queue.shift();
        if (next) this.run(c, next);
        else this.idle.push(c);
      } else if (this.all.every((x) => x.broken)) {
        for (const waiting of this.queue.splice(0)) waiting(0);
      }
    });
  }

  close(): void {
    for (const c of this.all) c.close();
  }
}
