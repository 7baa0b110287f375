/**
 * One forwarded request's answer, relayed from the upstream to the client as it arrives: the handler undici's
 * `dispatch` calls (onConnect, onHeaders, onData, onComplete, onError). It writes each piece straight into the
 * client's ServerResponse, pausing the upstream while the client's socket is full, and tells the plane how the
 * answer ended. The LLM gateway and the MCP proxy answer through it; what to do with each answer is the plane's
 * (`RelayRoute`).
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
import { AnswerHeaders } from './answer-headers.js';

/** How the answer ended, as the audit's `end` says it. */
export type RelayEnd = 'forwarded' | 'upstream_unreachable' | 'client_aborted';

/** Where an answer's body goes, as the plane chose when its headers came. */
export type AnswerPlan =
  /** To the client as it comes (the plane wrote the head), each chunk shown to `observe` first. */
  | { observe: ((chunk: Buffer) => void) | null }
  /** To the client as `rewrite` turns each chunk (the plane wrote the head); `rest()` is written last. */
  | { rewrite: (chunk: Buffer) => string; rest: () => string }
  /** Kept, up to `limit` bytes, for `collected`; nothing of it goes to the client as it comes. */
  | { collect: number };

/** What the plane does at each point of the answer. */
export interface RelayRoute {
  /** The upstream answered (status and headers, before any body): the plane writes the client's head, or not. */
  answered(status: number, headers: AnswerHeaders): AnswerPlan;
  /** A collected answer, complete: its first `limit` bytes, and whether that is all of it. */
  collected(body: Buffer, whole: boolean): void;
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
  private observe: ((chunk: Buffer) => void) | null = null;
  private rewrite: ((chunk: Buffer) => string) | null = null;
  private rest: (() => string) | null = null;
  /** The kept chunks of an answer the plane collects; null while it goes to the client. */
  private collecting: Buffer[] | null = null;
  private collectLimit = 0;
  private collectedBytes = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly route: RelayRoute,
  ) {
    // `on`: a response closes once and is dropped with its listeners (see read-body.ts).
    res.on('close', () => this.clientClosed());
  }

  onConnect(abort: (err?: Error) => void): void {
    // A client that left while the request waited for a connection: nothing goes upstream.
    if (this.clientGone) abort(new ClientGone());
    else this.abortCall = abort;
  }

  onHeaders(status: number, raw: Buffer[], resume: () => void): boolean {
    // 1xx answers are informational; the final answer's headers come in a later call.
    if (status < 200) return true;
    this.resumeCall = resume;
    let plan: AnswerPlan;
    try {
      plan = this.route.answered(status, new AnswerHeaders(raw));
    } catch (err) {
      // Headers the client cannot be given (writeHead refused them): the request fails as an unreachable upstream would.
      this.abortCall?.(err as Error);
      return false;
    }
    this.answering = true;
    if ('collect' in plan) {
      this.collecting = [];
      this.collectLimit = plan.collect;
    } else if ('rewrite' in plan) {
      this.rewrite = plan.rewrite;
      this.rest = plan.rest;
    } else this.observe = plan.observe;
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.collecting !== null) {
      this.collectedBytes += chunk.length;
      if (this.collectedBytes <= this.collectLimit) this.collecting.push(chunk);
      return true;
    }
    let out: Buffer | string = chunk;
    if (this.rewrite !== null) {
      out = this.rewrite(chunk);
      if (out === '') return true;
    }
    // Written first, read after: the client's bytes leave before the plane looks at them.
    const room = this.res.write(out);
    if (this.observe !== null) this.observe(chunk);
    if (room) return true;
    // The client's socket is full: undici stops reading the upstream until it drains.
    if (this.resumeCall) this.res.once('drain', this.resumeCall);
    return false;
  }

  onComplete(): void {
    if (this.collecting !== null) this.route.collected(Buffer.concat(this.collecting), this.collectedBytes <= this.collectLimit);
    else if (this.rest !== null) this.res.end(this.rest());
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
