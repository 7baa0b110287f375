/**
 * How the bare proxy and the governed floor hand the upstream's answer to the client: undici's `dispatch` with a
 * handler that writes each piece into the response as it arrives (raw headers, backpressure both ways), the way
 * Reins relays an answer (src/planes/llm/relay.ts), written here on its own so that the reference proxies share
 * no code with what they measure.
 *
 * Not `pool.request()` and `pipe()`: measured side by side on one core at the maximum (2026-11-28), a pass-through
 * spent 95 µs of CPU a call that way and 66 through dispatch, and Reins moved to dispatch. A reference left on the
 * heavier path would flatter Reins by the difference (README.md, "How it is made honest").
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Dispatcher, Pool } from 'undici';

export interface PassThroughHooks {
  /** Each chunk of the answer's body as it passes. */
  chunk?(chunk: Buffer): void;
  /** The answer is over: relayed whole or cut. */
  ended?(status: number): void;
  /** No answer: the upstream could not be reached (the response is still the caller's to write). */
  failed(err: Error): void;
}

class PassThrough implements Dispatcher.DispatchHandler {
  private abortCall: ((err?: Error) => void) | null = null;
  private resumeCall: (() => void) | null = null;
  private status = 0;
  private gone = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly drop: ReadonlySet<string>,
    private readonly hooks: PassThroughHooks,
  ) {
    res.once('close', () => {
      if (res.writableFinished) return;
      this.gone = true;
      this.abortCall?.(new Error('the client left'));
    });
  }

  onConnect(abort: (err?: Error) => void): void {
    if (this.gone) abort(new Error('the client left'));
    else this.abortCall = abort;
  }

  onHeaders(status: number, raw: Buffer[], resume: () => void): boolean {
    if (status < 200) return true;
    this.status = status;
    this.resumeCall = resume;
    const headers: string[] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i]!.toString('latin1').toLowerCase();
      if (!this.drop.has(name)) headers.push(name, raw[i + 1]!.toString('latin1'));
    }
    this.res.writeHead(status, headers);
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.hooks.chunk?.(chunk);
    if (this.res.write(chunk)) return true;
    if (this.resumeCall) this.res.once('drain', this.resumeCall);
    return false;
  }

  onComplete(): void {
    this.res.end();
    this.hooks.ended?.(this.status);
  }

  onError(err: Error): void {
    if (this.status === 0) {
      if (!this.gone) this.hooks.failed(err);
      return;
    }
    this.res.destroy();
    this.hooks.ended?.(this.status);
  }
}

/** Forwards one request and relays its answer into `res`, leaving out the answer's headers named in `drop`. */
export function passThrough(
  pool: Pool,
  request: { method: string; path: string; headers: IncomingHttpHeaders | Record<string, string>; body: Buffer | NodeJS.ReadableStream },
  res: ServerResponse,
  drop: ReadonlySet<string>,
  hooks: PassThroughHooks,
): void {
  pool.dispatch(request as Dispatcher.DispatchOptions, new PassThrough(res, drop, hooks));
}
