/**
 * The Reins token in `Proxy-Authorization`. `Basic base64(user:token)` is what clients send for
 * `HTTPS_PROXY=http://agent:<token>@host:port`: the token is the password and the user name is ignored.
 * `HTTPS_PROXY=http://<token>@host:port` sends `<token>:` (an empty password), so then the user name is the token.
 * `Bearer <token>` is for clients that can set the header themselves.
 */
export function proxySecret(header: string | undefined): string | null {
  if (header === undefined) return null;
  const match = /^\s*(\S+)\s+(\S+)\s*$/.exec(header);
  if (!match) return null;
  const scheme = match[1]!.toLowerCase();
  const value = match[2]!;
  if (scheme === 'bearer') return value;
  if (scheme !== 'basic') return null;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  const password = decoded.slice(colon + 1);
  const secret = password !== '' ? password : decoded.slice(0, colon);
  return secret === '' ? null : secret;
}
