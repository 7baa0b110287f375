/**
 * The secret of an `Authorization: Bearer` header, read as /^Bearer\s+(\S+)\s*$/i reads it, without the regular
 * expression: every governed call reads it first, with its code cold, and a regular expression's run there cost more
 * than the rest of the reading (the egress proxy's set-up timings, 2026-11-28).
 */

const BEARER = 'bearer';

/** The bearer secret of an `Authorization` header, or null. */
export function bearerSecret(header: string | undefined): string | null {
  if (!header || header.length <= BEARER.length + 1) return null;
  for (let i = 0; i < BEARER.length; i++) {
    // ASCII letters only, in either case (what /i matches without the u flag).
    if ((header.charCodeAt(i) | 0x20) !== BEARER.charCodeAt(i)) return null;
  }
  let start = BEARER.length;
  if (!isSpace(header.charCodeAt(start))) return null;
  while (start < header.length && isSpace(header.charCodeAt(start))) start++;
  let end = start;
  while (end < header.length && !isSpace(header.charCodeAt(end))) end++;
  if (end === start) return null;
  for (let i = end; i < header.length; i++) if (!isSpace(header.charCodeAt(i))) return null;
  return header.slice(start, end);
}

/** What `\s` matches in a regular expression (ECMAScript WhiteSpace and LineTerminator). */
export function isSpace(c: number): boolean {
  if (c <= 0x20) return c === 0x20 || (c >= 0x09 && c <= 0x0d);
  if (c < 0xa0) return false;
  return (
    c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
  );
}
