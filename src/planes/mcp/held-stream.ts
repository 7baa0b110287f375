/**
 * Keeping a held tool call's connection alive. An approve policy can park a `tools/call` for 30 minutes, but
 * the MCP TypeScript client gives up on a request after 60 s by default and Node's HTTP client drops a
 * response that sends nothing for 300 s. So a POST whose call is parked is answered at once with an SSE
 * stream (the streamable HTTP transport allows SSE for any POST that carries requests), and while a person
 * decides, the stream carries:
 * - `notifications/progress` for each held call that asked for progress (`params._meta.progressToken`):
 *   a client that opted in to `resetTimeoutOnProgress` keeps waiting, and every client can show the message;
 * - an SSE comment otherwise, which keeps the HTTP connection alive but cannot reset the MCP client's own
 *   request timeout (nothing in the protocol can without a progress token).
 * The call's answer (the upstream's, or Reins' refusal) then arrives on the same stream.
 */
import type { ServerResponse } from 'node:http';
import { sseEvent } from './sse.js';
import type { JsonRpcId, McpHold } from './types.js';

/** Often enough that a client with the SDK's 60 s default and `resetTimeoutOnProgress` never times out. */
export const HELD_KEEP_ALIVE_MS = 10_000;
/**
 * When a held call of a client that asked for no progress is answered "held, call again after approval": before
 * the MCP TypeScript SDK's default request timeout (60 s) and Codex's default tool timeout (60 s), with room for
 * a loaded machine (`gateway.mcpHeldAnswerSeconds`).
 */
export const HELD_ANSWER_MS = 45_000;

interface Waiting {
  progressToken: string | number | undefined;
  hold: McpHold;
  progress: number;
}

export class HeldStream {
  private readonly waiting = new Map<JsonRpcId, Waiting>();
  private timer: NodeJS.Timeout | null = null;

  private constructor(
    private readonly res: ServerResponse,
    private readonly intervalMs: number,
  ) {}

  /** Starts the SSE answer, or null when the answer has already begun or the client cannot read SSE. */
  static open(res: ServerResponse, acceptsSse: boolean, intervalMs: number): HeldStream | null {
    if (!acceptsSse || res.headersSent || res.destroyed) return null;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
    res.flushHeaders();
    return new HeldStream(res, intervalMs);
  }

  /** A call of this request is parked: say so at once, then at every beat. */
  add(requestId: JsonRpcId, progressToken: string | number | undefined, hold: McpHold): void {
    const w: Waiting = { progressToken, hold, progress: 0 };
    this.waiting.set(requestId, w);
    this.beat(w);
    if (!this.timer) {
      this.timer = setInterval(() => {
        for (const each of this.waiting.values()) this.beat(each);
      }, this.intervalMs);
      this.timer.unref();
    }
  }

  /** The call was decided: no more beats for it. */
  settled(requestId: JsonRpcId): void {
    this.waiting.delete(requestId);
    if (this.waiting.size === 0) this.stop();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.waiting.clear();
  }

  private beat(w: Waiting): void {
    if (this.res.destroyed || this.res.writableEnded) return;
    if (w.progressToken === undefined) {
      this.res.write(`: held by Reins for approval (entry ${w.hold.entryId})\n\n`);
      return;
    }
    // Progress must increase with every notification; there is no total (nobody knows when a person decides).
    w.progress += 1;
    this.res.write(
      sseEvent({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: w.progressToken, progress: w.progress, message: heldMessage(w.hold) } }),
    );
  }
}

export function heldMessage(hold: McpHold): string {
  return (
    `Waiting for a reviewer: Reins policy "${hold.policyName}" holds this tool call for approval (entry ${hold.entryId}, ` +
    `until ${hold.expiresAt.toISOString()}). ${hold.policyMessage}`
  );
}

/** The tool result of a held call answered before its client's timeout: what happened, and what the model should do. */
export function heldAnswerText(hold: McpHold): string {
  return (
    `Held for approval, not run: Reins policy "${hold.policyName}" holds this tool call until an admin approves or denies it ` +
    `(held call ${hold.entryId}, open until ${hold.expiresAt.toISOString()}). ${hold.policyMessage} ` +
    'Call this tool again with the same arguments after an admin approves it (Reins console: Security > Approvals): ' +
    'the repeated call runs once approved. A repeated call before then waits for the same decision.'
  );
}
