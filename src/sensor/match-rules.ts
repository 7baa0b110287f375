/**
 * A RuntimePolicy's `spec.match` rules (deploy/base/runtime-policy-crd.yaml): what a monitor-mode policy reports.
 * A rule holds the fields of its family: `names` (DNS question names, globs: `*` any run of characters,
 * case-insensitive), `cidrs` and `ports` (IPv4 destinations; no ports = every port), `paths` (file and binary path
 * prefixes). A rule matches an event when every field it sets for the family holds; an event is reported when some
 * rule matches. `allow` is for enforce mode (exceptions to a denial): a monitor policy reports every match.
 * Kept apart from policies.ts so the adapter's hot path loads no Kubernetes client.
 */
import type { ObservationFamily } from '../runtime-guard/types.js';

/** What of an event the rules look at. */
export interface MatchSubject {
  /** dns: the question name; open: the path; exec: the binary. */
  name: string;
  /** network: the IPv4 destination and port. */
  destIP: string;
  port: number | null;
}

/** A compiled rule set: `null` from `compileMatch` means "matches every event" (Reins' own policies). */
export type MatchRules = (subject: MatchSubject) => boolean;

interface RawRule {
  names?: unknown;
  cidrs?: unknown;
  ports?: unknown;
  paths?: unknown;
}

const strings = (v: unknown): string[] | null => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : null);

/** `a.b.c.d` as an unsigned 32-bit number, or null. */
export function ipv4(address: string): number | null {
  const parts = address.split('.');
  if (parts.length !== 4) return null;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    n = n * 256 + Number(p);
  }
  return n;
}

function cidr(text: string): { base: number; mask: number } | string {
  const [address, bits = '32'] = text.split('/');
  const base = ipv4(address ?? '');
  if (base === null || !/^\d{1,2}$/.test(bits) || Number(bits) > 32) return `cidrs: "${text}" is not an IPv4 CIDR`;
  const mask = Number(bits) === 0 ? 0 : (0xffffffff << (32 - Number(bits))) >>> 0;
  return { base: (base & mask) >>> 0, mask };
}

function glob(pattern: string): RegExp {
  const escaped = pattern.toLowerCase().replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*');
  return new RegExp(`^${escaped}$`);
}

/**
 * The policy's `match` for a family as one test, `null` when it matches every event, or a string saying why the
 * rules cannot be followed (the policy is then not followed: never read as "everything").
 */
export function compileMatch(family: Exclude<ObservationFamily, 'other'>, raw: unknown): MatchRules | null | string {
  if (!Array.isArray(raw)) return 'match is not a list of rules';
  const tests: MatchRules[] = [];
  for (const [i, r] of raw.entries()) {
    const rule = (r && typeof r === 'object' ? r : {}) as RawRule;
    if (family === 'dns') {
      const names = strings(rule.names);
      if (names === null || names.includes('*')) return null;
      const patterns = names.map(glob);
      tests.push((s) => {
        const name = s.name.toLowerCase();
        return patterns.some((p) => p.test(name));
      });
    } else if (family === 'network') {
      const ports = Array.isArray(rule.ports) ? rule.ports.filter((p): p is number => Number.isInteger(p)) : [];
      const cidrTexts = strings(rule.cidrs);
      const blocks: { base: number; mask: number }[] = [];
      for (const text of cidrTexts ?? []) {
        const b = cidr(text);
        if (typeof b === 'string') return `match[${i}].${b}`;
        blocks.push(b);
      }
      const everyAddress = cidrTexts === null || blocks.some((b) => b.mask === 0);
      if (everyAddress && ports.length === 0) return null;
      tests.push((s) => {
        if (ports.length > 0 && (s.port === null || !ports.includes(s.port))) return false;
        if (everyAddress) return true;
        const ip = ipv4(s.destIP);
        return ip !== null && blocks.some((b) => ((ip & b.mask) >>> 0) === b.base);
      });
    } else {
      const paths = strings(rule.paths);
      if (paths === null || paths.includes('/') || paths.includes('')) return null;
      // A prefix by path components: /etc/pass is not a prefix of /etc/passwd.
      tests.push((s) => paths.some((p) => s.name === p || s.name.startsWith(p.endsWith('/') ? p : `${p}/`)));
    }
  }
  return (s) => tests.some((t) => t(s));
}
