/**
 * One forwarded call's answer, relayed from the upstream to the client as it arrives. It is the handler undici's
 * `dispatch` calls (onConnect, onHeaders, onData, onComplete, onError) and writes each piece straight into the
 * client's ServerResponse, pausing the upstream while the client's socket is full.
 *
 * Not `pool.request()`: its body stream (a Readable, piped into the response), the header object it builds and
 * Node's `writeHead` walks again, and its promise cost a pass-through proxy about 30% of its CPU per call here
 * (2026-11-28, side by side on one core at the maximum: 95 against 66 µs a call). undici's own `request()` is a
 * handler of this same interface; undici 7 marks these methods deprecated in favour of a controller-based form
 * (onResponseStart, …), which it adapts back to these through a wrapper that builds the header object again (84 µs
 * a call in the same comparison).
 */
import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { AnswerHeaders } from './forward.js';

/** How the call's answer ended, as the audit's `end` says it. */
export type RelayEnd = 'forwarded' | 'upstream_unreachable' | 'client_aborted';

/** What the route does at each point of the answer (routes.ts). */
export interface RelayRoute {
  /**
   * The upstream answered (status and headers, before any body). The route writes the client's head, or not, and
   * says where the body goes: to the client with each chunk shown to `observe`, or collected whole for `collected`.
   */
  answered(status: number, headers: AnswerHeaders): { observe: ((chunk: Buffer) => void) | null } | 'collect';
  /** A collected answer, complete. */
  collected(body: Buffer): void;
  /** No answer came: the upstream could not be reached, or the client left first (`clientGone`). */
  failed(err: Error, clientGone: boolean): void;
  /** An answer was under way and is over: relayed whole, cut by the upstream, or cut by the client leaving. */
  ended(end: RelayEnd): void;
}

class ClientGone extends Error {
  constructor() {
    super('the client closed the connection');
  }
}

export class AnswerRelay implements Dispatcher.DispatchHandler {
  private abortCall: ((err?: Error) => void) | null = null;
  private resumeCall: (() => void) | null = null;
  private answering = false;
  private clientGone = false;
  private upstreamFailed = false;
  private collecting: Buffer[] | null = null;
  private observe: ((chunk: Buffer) => void) | null = null;

  constructor(
    private readonly res: ServerResponse,
    private readonly route: RelayRoute,
  ) {
    res.once('close', () => this.clientClosed());
  }

  onConnect(abort: (err?: Error) => void): void {
    // A client that left while the call waited for a connection: nothing goes upstream.
    if (this.clientGone) abort(new ClientGone());
    else this.abortCall = abort;
  }

  onHeaders(status: number, raw: Buffer[], resume: () => void): boolean {
    // 1xx answers are informational; the final answer's headers come in a later call.
    if (status < 200) return true;
    this.resumeCall = resume;
    let how: ReturnType<RelayRoute['answered']>;
    try {
      how = this.route.answered(status, new AnswerHeaders(raw, true));
    } catch (err) {
      // Headers the client cannot be given (writeHead refused them): the call fails as an unreachable upstream would.
      this.abortCall?.(err as Error);
      return false;
    }
    this.answering = true;
    if (how === 'collect') this.collecting = [];
    else this.observe = how.observe;
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.collecting !== null) {
      this.collecting.push(chunk);
      return true;
    }
    if (this.observe !== null) this.observe(chunk);
    if (this.res.write(chunk)) return true;
    // The client's socket is full: undici stops reading the upstream until it drains.
    if (this.resumeCall) this.res.once('drain', this.resumeCall);
    return false;
  }

  onComplete(): void {
    if (this.collecting !== null) this.route.collected(Buffer.concat(this.collecting));
    else this.res.end();
  }

  onError(err: Error): void {
    if (!this.answering) {
      this.route.failed(err, this.clientGone);
      return;
    }
    // Cut mid-answer: the client sees its connection end without a complete body, as the upstream's did.
    if (!this.clientGone) this.upstreamFailed = true;
    this.res.destroy();
  }

  private clientClosed(): void {
    if (!this.res.writableFinished && !this.upstreamFailed) {
      this.clientGone = true;
      this.abortCall?.(new ClientGone());
    }
    if (this.answering) this.route.ended(this.res.writableFinished ? 'forwarded' : this.upstreamFailed ? 'upstream_unreachable' : 'client_aborted');
  }
}
