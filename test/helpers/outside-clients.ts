/**
 * The clients that test Reins from the outside and need Node 22: Claude Code, Codex CLI and the MCP conformance
 * suite, installed from the npm registry into test/outside-clients by `npm run outside-clients` (CI runs it).
 * The product itself runs on Node 20; these run as child processes on their own Node 22.
 *
 * Outside CI a machine without them skips the suites that need them, with the reason; in CI (CI=1) the suites
 * run and fail, so a broken install never passes silently.
 */
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const OUTSIDE_CLIENTS_DIR = fileURLToPath(new URL('../outside-clients/', import.meta.url));
/** Their bin folder: `node` (22), `claude`, `codex`, `conformance`. */
export const OUTSIDE_CLIENTS_BIN = join(OUTSIDE_CLIENTS_DIR, 'node_modules', '.bin');

export function outsideClient(name: 'node' | 'claude' | 'codex' | 'conformance'): string {
  return join(OUTSIDE_CLIENTS_BIN, name);
}

/** The `skip` option of a suite that runs one of them. */
export const skipWithoutOutsideClients: string | false =
  !existsSync(outsideClient('node')) && !process.env.CI
    ? 'the Node 22 outside clients are not installed (run `npm run outside-clients`); skipping'
    : false;

/** An environment whose PATH finds Node 22 first, so the clients' `#!/usr/bin/env node` scripts run on it. */
export function outsideClientEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, PATH: `${OUTSIDE_CLIENTS_BIN}${delimiter}${process.env.PATH ?? ''}`, ...extra };
}
