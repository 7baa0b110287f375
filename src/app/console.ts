/**
 * Serves the admin console: the React app built by Vite into dist/console (console/vite.config.ts) at
 * `/`, with index.html as the answer for every console path so the app's own router takes over. The
 * API, gateway and system paths are never shadowed: an unknown path under them stays the JSON 404.
 * A replica started before the console was built answers a short plain page saying how to build it.
 */
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** dist/console at the package root, from src/app (tsx) and dist/app (built) alike. */
export const CONSOLE_DIR = fileURLToPath(new URL('../../dist/console/', import.meta.url));

/**
 * Path prefixes that belong to the server, never to the console. `/.well-known` too: an MCP or OAuth client probing
 * `/.well-known/oauth-protected-resource` must get the JSON 404 (Reins serves no OAuth metadata), not the console's
 * page with 200, which sends it into an OAuth flow.
 */
const RESERVED = ['/api', '/auth', '/llm', '/mcp', '/healthz', '/readyz', '/metrics', '/.well-known'];

/**
 * Scripts and styles from this origin only (the build emits no inline script), no framing, no plugins.
 * The console talks to its own origin's API only.
 */
export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; " +
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
};

const NOT_BUILT = `Reins is running, but its admin console has not been built.

Build it from the package root, then restart the server:

    npm run build

(or only the console: npx vite build --config console/vite.config.ts)

The API is served meanwhile under /api/v1; its description is at /api/v1/openapi.json.
`;

function isReserved(path: string): boolean {
  return RESERVED.some((p) => path === p || path.startsWith(`${p}/`));
}

/** A path naming a file (the last segment has an extension) is never answered with the app's page. */
function looksLikeFile(path: string): boolean {
  return /\.[A-Za-z0-9]+$/.test(path.slice(path.lastIndexOf('/') + 1));
}

export async function registerConsole(app: FastifyInstance, options: { dir?: string } = {}): Promise<void> {
  const dir = options.dir ?? CONSOLE_DIR;
  const indexPath = join(dir, 'index.html');
  // Decided once at start: a console built later is served after a restart, never half (page without assets).
  const page: Buffer | null = existsSync(indexPath) ? readFileSync(indexPath) : null;

  if (page && existsSync(join(dir, 'assets'))) {
    await app.register(fastifyStatic, {
      root: join(dir, 'assets'),
      prefix: '/assets/',
      decorateReply: false,
      index: false,
      list: false,
      // File names carry a content hash: a changed file is a new name.
      immutable: true,
      maxAge: '365d',
      setHeaders: (res) => {
        for (const [name, value] of Object.entries(CONSOLE_SECURITY_HEADERS)) res.setHeader(name, value);
      },
    });
  }

  const serve = async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '/';
    if (isReserved(path) || looksLikeFile(path)) return reply.callNotFound();
    reply.headers(CONSOLE_SECURITY_HEADERS).header('cache-control', 'no-cache');
    if (!page) return reply.type('text/plain; charset=utf-8').send(NOT_BUILT);
    return reply.type('text/html; charset=utf-8').send(page);
  };
  app.get('/', { schema: { hide: true } }, serve);
  app.get('/*', { schema: { hide: true } }, serve);
}
