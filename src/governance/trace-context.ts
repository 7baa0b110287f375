/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` a client sends, parsed and checked,
 * and the one Reins sends upstream. Pure: strings in, values out.
 *
 *   traceparent: 00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>
 *
 * A header that does not parse is ignored (the specification's rule: start afresh rather than guess), and so is an
 * all-zero trace or span id.
 */

export interface IncomingTrace {
  traceId: string;
  spanId: string;
  /** Bit 0 set: the caller records (samples) this trace. */
  flags: number;
  /** The caller's `tracestate`, passed on unchanged (at most 512 characters, as the specification allows dropping). */
  state: string | null;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
const MAX_TRACESTATE = 512;

/** The caller's trace, or null when it sent none or one that does not parse. */
export function parseTraceparent(traceparent: string | undefined, tracestate: string | undefined): IncomingTrace | null {
  if (traceparent === undefined) return null;
  const m = TRACEPARENT.exec(traceparent.trim());
  if (!m) return null;
  const [, version, traceId, spanId, flags, rest] = m;
  // Version ff is invalid; version 00 has nothing after the flags; a later version may add fields after them.
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  const state = tracestate !== undefined && tracestate.trim() !== '' && tracestate.length <= MAX_TRACESTATE ? tracestate.trim() : null;
  return { traceId: traceId!, spanId: spanId!, flags: parseInt(flags!, 16), state };
}

/** The `traceparent` header for a span: version 00, its trace and span ids, its flags. */
export function formatTraceparent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${(flags & 0xff).toString(16).padStart(2, '0')}`;
}
