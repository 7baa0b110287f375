/**
 * What the gateway knows of each upstream's tools: their annotations, learned from the upstream's own
 * `tools/list` results (never from anything a client sends), per configured server.
 */
import type { AnnotationSource, ToolAnnotations } from './types.js';

/** MCP's defaults for a hint the server did not declare: the cautious reading (may write, may destroy,
 * reaches outside, not safe to repeat). */
export const DEFAULT_ANNOTATIONS: Readonly<ToolAnnotations> = Object.freeze({
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: false,
  openWorldHint: true,
});

const HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const;

/** A tool's declared annotations with MCP's defaults for the hints it left out (or declared as non-booleans). */
export function resolveAnnotations(declared: unknown): ToolAnnotations {
  const out: ToolAnnotations = { ...DEFAULT_ANNOTATIONS };
  if (typeof declared !== 'object' || declared === null) return out;
  const d = declared as Record<string, unknown>;
  for (const hint of HINTS) {
    const v = d[hint];
    if (typeof v === 'boolean') out[hint] = v;
  }
  return out;
}

export interface ListedTool {
  name: string;
  annotations: ToolAnnotations;
}

/** The tools of a `tools/list` result, skipping entries without a name. */
export function toolsOf(result: Record<string, unknown>): ListedTool[] | null {
  if (!Array.isArray(result.tools)) return null;
  const out: ListedTool[] = [];
  for (const t of result.tools as unknown[]) {
    if (typeof t !== 'object' || t === null) continue;
    const { name, annotations } = t as Record<string, unknown>;
    if (typeof name === 'string') out.push({ name, annotations: resolveAnnotations(annotations) });
  }
  return out;
}

interface ServerTools {
  listed: Map<string, ToolAnnotations>;
  /** Names a complete `tools/list` did not hold: decided with the defaults without asking again. */
  unlisted: Set<string>;
}

export type Lookup = { annotations: ToolAnnotations; source: AnnotationSource } | null;

export class AnnotationCache {
  private readonly servers = new Map<string, ServerTools>();

  private of(server: string): ServerTools {
    let s = this.servers.get(server);
    if (!s) {
      s = { listed: new Map(), unlisted: new Set() };
      this.servers.set(server, s);
    }
    return s;
  }

  /** What is known of a tool; null when it was never seen, so the upstream should be asked. */
  lookup(server: string, tool: string): Lookup {
    const s = this.servers.get(server);
    const listed = s?.listed.get(tool);
    if (listed) return { annotations: listed, source: 'listed' };
    if (s?.unlisted.has(tool)) return { annotations: { ...DEFAULT_ANNOTATIONS }, source: 'unlisted' };
    return null;
  }

  /** A page of a `tools/list` result that passed through (or that the gateway fetched itself). */
  learn(server: string, tools: readonly ListedTool[]): void {
    const s = this.of(server);
    for (const t of tools) {
      s.listed.set(t.name, t.annotations);
      s.unlisted.delete(t.name);
    }
  }

  /** A complete listing, every page read: it replaces what was known. */
  replace(server: string, tools: readonly ListedTool[]): void {
    this.servers.set(server, { listed: new Map(tools.map((t) => [t.name, t.annotations])), unlisted: new Set() });
  }

  /** A tool a complete listing did not hold. */
  markUnlisted(server: string, tool: string): void {
    const s = this.of(server);
    if (!s.listed.has(tool)) s.unlisted.add(tool);
  }

  /** `notifications/tools/list_changed`: what was learned may be stale. */
  forget(server: string): void {
    this.servers.delete(server);
  }
}
