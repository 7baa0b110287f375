import { isSpace } from '../../shared/bearer.js';

/**
 * The Reins token in `Proxy-Authorization`. `Basic base64(user:token)` is what clients send for
 * `HTTPS_PROXY=http://agent:<token>@host:port`: the token is the password and the user name is ignored.
 * `HTTPS_PROXY=http://<token>@host:port` sends `<token>:` (an empty password), so then the user name is the token.
 * `Bearer <token>` is for clients that can set the header themselves.
 */
export function proxySecret(header: string | undefined): string | null {
  if (header === undefined) return null;
  // `<scheme> <value>` with whitespace around and between, as /^\s*(\S+)\s+(\S+)\s*$/ reads it, without the
  // regular expression: every CONNECT reads this header first, with its code cold, and the expression's run was the
  // costliest step of reading it (timings on the set-up path, 2026-11-28). trim() drops what \s matches.
  const text = header.trim();
  let gap = 0;
  while (gap < text.length && !isSpace(text.charCodeAt(gap))) gap++;
  let start = gap;
  while (start < text.length && isSpace(text.charCodeAt(start))) start++;
  if (gap === 0 || start === gap || start === text.length) return null;
  for (let i = start; i < text.length; i++) if (isSpace(text.charCodeAt(i))) return null;
  const scheme = text.slice(0, gap).toLowerCase();
  const value = text.slice(start);
  if (scheme === 'bearer') return value;
  if (scheme !== 'basic') return null;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  const password = decoded.slice(colon + 1);
  const secret = password !== '' ? password : decoded.slice(0, colon);
  return secret === '' ? null : secret;
}
