/**
 * The egress client: a TCP connection (straight to the origin, or to Reins' egress proxy with a CONNECT that must
 * answer 200), TLS over it with the test CA, and HTTP/1.1 keep-alive requests inside. No agent, no pool, no TLS
 * session reuse: every new connection pays a full handshake, the same for both paths.
 */
import { readFileSync } from 'node:fs';
import { connect as tcpConnect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { ORIGIN_BODY, TLS_DIR, type EgressTarget } from './payloads.js';

const CA = readFileSync(`${TLS_DIR}/ca.pem`);
const CRLFCRLF = Buffer.from('\r\n\r\n');
const BODY_LENGTH = Buffer.byteLength(ORIGIN_BODY);

function openTcp(host: string, port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = tcpConnect({ host, port, noDelay: true });
    s.once('connect', () => {
      s.off('error', reject);
      resolve(s);
    });
    s.once('error', reject);
  });
}

/** Sends CONNECT and reads the proxy's answer head; nothing follows it before the client's TLS hello. */
function connectThrough(s: Socket, target: EgressTarget): Promise<void> {
  const authority = `${target.origin.host}:${target.origin.port}`;
  return new Promise((resolve, reject) => {
    let buf: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      const end = buf.indexOf(CRLFCRLF);
      if (end < 0) return;
      s.off('data', onData);
      s.off('error', reject);
      s.pause();
      const status = Number(buf.toString('latin1', 9, 12));
      if (status !== 200) reject(new Error(`CONNECT answered ${buf.toString('latin1', 0, Math.min(buf.length, 300))}`));
      else if (buf.length > end + 4) reject(new Error('bytes after the CONNECT answer'));
      else resolve();
    };
    s.on('data', onData);
    s.once('error', reject);
    s.write(`CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\nproxy-authorization: ${target.proxy!.authorization}\r\n\r\n`);
  });
}

function startTls(s: Socket): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const t = tlsConnect({ socket: s, servername: 'localhost', ca: CA });
    t.once('secureConnect', () => {
      t.off('error', reject);
      resolve(t);
    });
    t.once('error', reject);
  });
}

/** One HTTPS connection to the origin with one request at a time on it. */
export class OriginConnection {
  private pending: Buffer | null = null;
  private waiting: ((status: number) => void) | null = null;
  private failed: ((err: Error) => void) | null = null;
  private readonly request: Buffer;

  private constructor(private readonly socket: TLSSocket, target: EgressTarget) {
    this.request = Buffer.from(`GET /small HTTP/1.1\r\nhost: localhost:${target.origin.port}\r\nconnection: keep-alive\r\n\r\n`, 'latin1');
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    const fail = (err: Error) => {
      const f = this.failed;
      this.waiting = null;
      this.failed = null;
      f?.(err);
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('connection closed')));
  }

  /** Opens a connection; `phases` gets the ms taken to the tunnel (or TCP connect) and to the end of the TLS handshake. */
  static async open(target: EgressTarget, phases?: { tunnel: number; tls: number }): Promise<OriginConnection> {
    const t0 = performance.now();
    const s = target.proxy ? await openTcp(target.proxy.host, target.proxy.port) : await openTcp(target.origin.host, target.origin.port);
    try {
      if (target.proxy) await connectThrough(s, target);
      const t1 = performance.now();
      const t = await startTls(s);
      if (phases) {
        phases.tunnel = t1 - t0;
        phases.tls = performance.now() - t1;
      }
      return new OriginConnection(t, target);
    } catch (err) {
      s.destroy();
      throw err;
    }
  }

  /** GET /small; resolves with the status once the whole answer is in (its body checked for length). */
  get(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.failed = reject;
      this.pending = null;
      this.socket.write(this.request);
    });
  }

  close(): void {
    this.socket.removeAllListeners('close');
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    const buf = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = buf;
    const end = buf.indexOf(CRLFCRLF);
    if (end < 0) return;
    const head = buf.toString('latin1', 0, end);
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    const bodyLength = length ? Number(length[1]) : -1;
    if (bodyLength < 0) {
      this.failed?.(new Error('answer without content-length'));
      return;
    }
    if (buf.length - (end + 4) < bodyLength) return;
    const status = Number(head.slice(9, 12));
    const done = this.waiting;
    this.waiting = null;
    this.failed = null;
    this.pending = null;
    done?.(status === 200 && bodyLength !== BODY_LENGTH ? 0 : status);
  }
}
