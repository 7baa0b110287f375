/** RFC 9110 §7.6.1 hop-by-hop headers (and the legacy Proxy-Connection): they end at every proxy, Reins included. */
export const HOP_BY_HOP_HEADERS: readonly string[] = [
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];
