/**
 * Which of an upstream answer's headers a forwarding plane gives its client, read from the raw list undici's
 * dispatcher hands over. The LLM gateway and the MCP proxy both answer through it (answer-relay.ts).
 */
import { util } from 'undici';
import { HOP_BY_HOP_HEADERS } from './hop-by-hop.js';

/** RFC 9110 hop-by-hop headers plus those a proxy sets itself. */
const HOP_BY_HOP = new Set([...HOP_BY_HOP_HEADERS, 'host', 'content-length']);

/** Answer headers never passed back: cookies and transport policy are for the upstream's origin, not Reins'. */
const NEVER_DOWNSTREAM = new Set(['set-cookie', 'alt-svc', 'strict-transport-security']);

const NONE: ReadonlySet<string> = new Set();

/** The header names a `Connection` value lists (hop-by-hop for this message only), lower-case. */
export function listedInConnection(value: string | string[] | undefined): ReadonlySet<string> {
  // Most messages name nothing but keep-alive here: no set to build.
  if (value === undefined || value === 'keep-alive' || value === 'close') return NONE;
  const joined = Array.isArray(value) ? value.join(',') : value;
  return new Set(joined.split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== ''));
}

/**
 * Whether an answer's header (lower-case name) goes back to the client. `sameBody`: the body goes to the client byte
 * for byte, so the upstream's content-length holds and is kept (the client then reads a sized body instead of a
 * chunked one; a body cut short is still an error for it). A body the plane rewrites gets its own framing.
 */
function goesDownstream(name: string, sameBody: boolean, connectionListed: ReadonlySet<string>): boolean {
  if (name === 'content-length') return sameBody;
  return !HOP_BY_HOP.has(name) && !NEVER_DOWNSTREAM.has(name) && !connectionListed.has(name);
}

/**
 * An upstream answer's headers as undici's dispatcher hands them over (`[name, value, name, value, …]` in bytes),
 * read once: a lookup for the plane's own reading, and the lines the client gets (`goesDownstream`). No object
 * keyed by header name is built: a fresh object given a dozen names one by one cost more than everything else here
 * (perf, 2026-11-28).
 */
export class AnswerHeaders {
  /** Every header as `[name, value, …]`, names lower-case, in the order they came. */
  private readonly lines: string[];
  private readonly connection: string | undefined;

  constructor(raw: readonly Buffer[]) {
    // Sized once: grown by push, the list's backing store was copied three or four times a call (allocations.ts).
    const count = raw.length - (raw.length % 2);
    const lines = new Array<string>(count);
    let connection: string | undefined;
    for (let i = 0; i < count; i += 2) {
      const name = util.headerNameToString(raw[i]!);
      const value = raw[i + 1]!.toString('latin1');
      lines[i] = name;
      lines[i + 1] = value;
      if (name === 'connection') connection = connection === undefined ? value : `${connection},${value}`;
    }
    this.lines = lines;
    this.connection = connection;
  }

  /** The value of a header (lower-case name), the first when repeated; undefined when absent. */
  get(name: string): string | undefined {
    const lines = this.lines;
    for (let i = 0; i < lines.length; i += 2) if (lines[i] === name) return lines[i + 1];
    return undefined;
  }

  /**
   * The headers the client gets, as the flat `[name, value, …]` list `writeHead` takes (repeats kept as lines).
   * `sameBody`: the client gets the upstream's body byte for byte (see `goesDownstream`).
   */
  forClient(sameBody: boolean): string[] {
    // The names the answer lists in Connection are known only once every line is read.
    const listed = listedInConnection(this.connection);
    const lines = this.lines;
    // At most every line; trimmed to what goes (a shorter length cuts the same store, no copy).
    const out = new Array<string>(lines.length);
    let n = 0;
    for (let i = 0; i < lines.length; i += 2) {
      if (!goesDownstream(lines[i]!, sameBody, listed)) continue;
      out[n++] = lines[i]!;
      out[n++] = lines[i + 1]!;
    }
    out.length = n;
    return out;
  }
}
