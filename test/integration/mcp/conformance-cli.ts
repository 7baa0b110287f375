/**
 * Runs the official MCP conformance suite (@modelcontextprotocol/conformance) by its own CLI on Node 22 from
 * test/outside-clients, and reads its results. Used by conformance.test.ts (/mcp/{server}) and
 * conformance-reins.test.ts (/mcp/reins), one file each so that each has the runner's whole per-file time limit
 * (one run of the whole suite takes half a minute or more on a loaded machine).
 *
 * The CLI has no option for request headers, so test/outside-clients/reins-token.mjs (preloaded into it) adds the
 * Reins token to its requests to Reins, the way a configured client sends it; nothing else changes.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OUTSIDE_CLIENTS_DIR, outsideClient, outsideClientEnv } from '../../helpers/outside-clients.js';
import { postgresReachable, storeKinds, type StoreKind } from '../../helpers/stores.js';

/**
 * The one store the conformance files run on. What the suite exercises is the MCP transport path, the same code on
 * either store (the store only resolves the token and receives the audit events; the MCP suites in this folder cover
 * those on both). PostgreSQL when the run includes it and it is reachable: a fresh database starts in a second where
 * PGlite compiles and migrates an in-process WASM database, a minute of CPU on a loaded two-core machine, which these
 * files' several suite runs cannot spare within the per-file limit. PGlite otherwise.
 */
export const CONFORMANCE_STORE: StoreKind = storeKinds().includes('postgres') && (await postgresReachable()) ? 'postgres' : 'pglite';

const TOKEN_PRELOAD = fileURLToPath(new URL('reins-token.mjs', `file://${OUTSIDE_CLIENTS_DIR}`));

export interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | string;
  errorMessage?: string;
}
/** Each scenario's checks, by scenario name. */
export type Results = Map<string, Check[]>;

/** Runs `conformance server` (one scenario, or the active suite) and reads each scenario's checks.json. */
export function conformance(url: string, token: { origin: string; secret: string } | null, scenario?: string): Promise<{ code: number | null; output: string; results: Results }> {
  const dir = mkdtempSync(join(tmpdir(), 'reins-conformance-'));
  const env = outsideClientEnv(token ? { NODE_OPTIONS: `--import ${TOKEN_PRELOAD}`, REINS_ORIGIN: token.origin, REINS_TOKEN: token.secret } : {});
  const args = ['server', '--url', url, '-o', dir, ...(scenario ? ['--scenario', scenario] : [])];
  return new Promise((resolve, reject) => {
    const child = spawn(outsideClient('conformance'), args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      const results: Results = new Map();
      for (const name of readdirSync(dir)) {
        const scenarioName = name.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '');
        results.set(scenarioName, JSON.parse(readFileSync(join(dir, name, 'checks.json'), 'utf8')) as Check[]);
      }
      rmSync(dir, { recursive: true, force: true });
      resolve({ code, output, results });
    });
  });
}

/** A scenario's outcome, check by check (INFO checks only report). */
export function outcome(checks: Check[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of checks) if (c.status !== 'INFO') out[c.id] = c.status;
  return out;
}

export function failures(results: Results): string[] {
  const out: string[] = [];
  for (const [scenario, checks] of results) for (const c of checks) if (c.status === 'FAILURE') out.push(`${scenario}/${c.id}: ${c.errorMessage ?? ''}`);
  return out;
}
