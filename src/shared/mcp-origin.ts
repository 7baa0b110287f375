/**
 * MCP's DNS-rebinding rule for the streamable HTTP transport: a server MUST validate the `Origin` header, and answer
 * 403 when it is present and not allowed. A web page can reach a Reins on the developer's machine (or behind their
 * VPN) through a host name that resolves there; its requests carry the page's Origin. Clients that are not browsers
 * send no Origin and pass. Allowed: loopback origins (localhost, *.localhost, 127.0.0.0/8, [::1]: pages that already
 * run on the machine) and the configured `gateway.mcpAllowedOrigins` ("*" allows any). The request's own Host is
 * never the measure: under DNS rebinding it is the attacker's name too.
 */
import type { IncomingHttpHeaders } from 'node:http';

function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** Null when the request may proceed; otherwise the message of the 403. */
export function refusedOrigin(headers: IncomingHttpHeaders, allowed: readonly string[]): string | null {
  const raw = headers.origin;
  if (raw === undefined) return null;
  const origin = Array.isArray(raw) ? raw[0] : raw;
  if (allowed.includes('*')) return null;
  let parsed: URL | null = null;
  try {
    parsed = origin && origin !== 'null' ? new URL(origin) : null;
  } catch {
    parsed = null;
  }
  if (parsed && (parsed.protocol === 'http:' || parsed.protocol === 'https:')) {
    if (isLoopbackHost(parsed.hostname) || allowed.includes(parsed.origin)) return null;
  }
  const shown = String(origin).slice(0, 200);
  return (
    `Forbidden: Origin ${JSON.stringify(shown)} is not allowed on Reins' MCP endpoints (DNS-rebinding protection). ` +
    'Clients that are not browsers send no Origin; a web app that must call Reins needs its origin in gateway.mcpAllowedOrigins.'
  );
}
