/**
 * The `reins` admin CLI. Two modes:
 *  - with --url and --token (or REINS_URL and REINS_TOKEN) it calls a running server's API;
 *  - otherwise it opens the store itself (DATABASE_URL, or the PGlite directory REINS_DATA_DIR), applies
 *    migrations and acts as the system actor. Changes still NOTIFY, so running replicas on PostgreSQL
 *    apply them at once. An embedded PGlite directory is one process's (data-dir-lock.ts): while a server
 *    holds it the CLI refuses and points at --url, since whatever it wrote there the server would never see.
 *
 * Started once per command, so it loads only what the command needs: the store and its modules only without
 * --url, and PGlite on the CLI's own thread (no worker thread to start).
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config/config.js';
import { SYSTEM_CLI } from './shared/actor.js';
import { createAdmin } from './identity/bootstrap.js';
import { createIdentity, listIdentities, requireIdentityId, setAutonomyTier, type CreateIdentityInput } from './identity/identities.js';
import { mintToken } from './identity/tokens.js';
import { AppError } from './shared/errors.js';
import { DataDirLockedError } from './store/data-dir-lock.js';
import type { Db } from './store/db.js';

const USAGE = `usage: reins <command> [options]

commands:
  admin create <id>                              create an admin developer identity and print its first token
  identity create <id> --kind agent|developer    create an identity [--role admin|viewer|developer] [--display-name NAME]
  identity list                                  list identities with their tiers
  token create <identity-id> [--name NAME]       mint a personal access token or agent key [--expires-at ISO-8601]
  tier set <agent-id> <T1|T2|T3|T4|"">           set an agent's autonomy tier ("" clears it: the agent resolves to T2)
  audit export --since T [--until T] [--type TYPE]
                                                 audit events as JSON lines (the API's shape, newest first) on stdout,
                                                 streamed; T is ISO 8601 or Unix seconds, --until exclusive
  migrate                                        apply the store's pending migrations and exit (a Kubernetes Job before
                                                 a rolling update; replicas also apply them at start unless REINS_MIGRATE=off)

options:
  --url URL, --token TOKEN   use a running server's API (also REINS_URL, REINS_TOKEN)
  (without them the CLI opens the store: DATABASE_URL, or REINS_DATA_DIR for the embedded store,
   which a running server holds: then use --url and --token)
`;

class UsageError extends Error {}

interface Api {
  call(method: string, path: string, body?: unknown): Promise<unknown>;
}

function httpApi(url: string, token: string): Api {
  return {
    async call(method, path, body) {
      const res = await fetch(new URL(path, url), {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const json = (await res.json().catch(() => ({}))) as { error?: { message?: string } };
      if (!res.ok) throw new Error(`${res.status}: ${json.error?.message ?? res.statusText}`);
      return json;
    },
  };
}

/** `reins migrate`: the pending migrations applied (each once, under the advisory lock replicas take too), named. */
async function migrateStore(): Promise<string> {
  const config = loadConfig();
  const [{ openStore }, { migrate }] = await Promise.all([import('./store/open.js'), import('./store/migrate.js')]);
  const db = await openStore(config.store, undefined, { inProcess: true });
  try {
    const applied = await migrate(db);
    return applied.length === 0 ? 'schema up to date: no migration to apply' : `applied ${applied.length} migrations: ${applied.join(', ')}`;
  } finally {
    await db.close();
  }
}

async function withStore<T>(fn: (db: Db) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const [{ openStore }, { migrate }] = await Promise.all([import('./store/open.js'), import('./store/migrate.js')]);
  const db = await openStore(config.store, undefined, { inProcess: true });
  try {
    await migrate(db);
    return await fn(db);
  } finally {
    await db.close();
  }
}

/** An ISO 8601 date-time or Unix seconds, as the API takes them. */
function parseWhen(raw: string | undefined, option: string): Date | undefined {
  if (raw === undefined) return undefined;
  const d = /^\d+$/.test(raw) ? new Date(Number(raw) * 1000) : new Date(raw);
  if (raw === '' || Number.isNaN(d.getTime())) throw new UsageError(`${option} must be an ISO 8601 date-time or Unix seconds`);
  return d;
}

function exportFilter(sinceRaw: string | undefined, untilRaw: string | undefined, type: string | undefined): { since: Date; until?: Date; type?: string } {
  const since = parseWhen(sinceRaw, '--since');
  if (!since) throw new UsageError('audit export needs --since (ISO 8601 or Unix seconds)');
  const until = parseWhen(untilRaw, '--until');
  if (until && until.getTime() <= since.getTime()) throw new UsageError('--until must be after --since');
  if (type !== undefined && (type === '' || type.length > 40)) throw new UsageError('--type must be 1 to 40 characters (llm, mcp, egress, control)');
  return { since, ...(until ? { until } : {}), ...(type ? { type } : {}) };
}

/** Resolves once stdout took the chunk: a slow reader (a pipe to gzip, a network copy) slows the export, not memory. */
function writeStdout(chunk: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    process.stdout.once('error', onError);
    process.stdout.write(chunk, (err) => {
      process.stdout.off('error', onError);
      if (err) reject(err);
      else resolve();
    });
  });
}

function print(value: unknown): void {
  process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n`);
}

export async function runCli(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      token: { type: 'string' },
      kind: { type: 'string' },
      role: { type: 'string' },
      'display-name': { type: 'string' },
      name: { type: 'string' },
      'expires-at': { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      type: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [group, verb, ...args] = positionals;
  if (values.help || !group) {
    print(USAGE);
    return;
  }
  const url = values.url ?? process.env.REINS_URL;
  const token = values.token ?? process.env.REINS_TOKEN;
  const api = url && token ? httpApi(url, token) : null;
  const command = `${group} ${verb ?? ''}`.trim();
  if (command === 'migrate') {
    // The store itself, never a server's API: a Job runs it before the new version's replicas start.
    print(await migrateStore());
    return;
  }

  switch (command) {
    case 'admin create': {
      const id = requireIdentityId(args[0], 'id');
      if (api) {
        await api.call('POST', '/api/v1/identities', { id, kind: 'developer', role: 'admin' });
        const minted = (await api.call('POST', '/api/v1/tokens', { identityId: id, name: values.name ?? 'cli' })) as { token: string };
        print(minted.token);
      } else {
        print((await withStore((db) => createAdmin(db, id, values.name ?? 'cli'))).token);
      }
      return;
    }
    case 'identity create': {
      const id = requireIdentityId(args[0], 'id');
      const kind: 'agent' | 'developer' | null = values.kind === 'agent' ? 'agent' : values.kind === 'developer' ? 'developer' : null;
      if (!kind) throw new UsageError('--kind must be agent or developer');
      const role = values.role;
      if (role !== undefined && !['admin', 'viewer', 'developer'].includes(role)) throw new UsageError('--role must be admin, viewer or developer');
      const input: CreateIdentityInput = {
        id,
        kind,
        ...(role ? { role: role as 'admin' | 'viewer' | 'developer' } : {}),
        ...(values['display-name'] ? { displayName: values['display-name'] } : {}),
      };
      print(api ? await api.call('POST', '/api/v1/identities', input) : (await withStore((db) => createIdentity(db, SYSTEM_CLI, input))).value);
      return;
    }
    case 'identity list': {
      const items = api ? ((await api.call('GET', '/api/v1/identities')) as { items: unknown[] }).items : await withStore((db) => listIdentities(db));
      print(items);
      return;
    }
    case 'token create': {
      const identityId = requireIdentityId(args[0], 'identity-id');
      const expiresAt = values['expires-at'];
      if (expiresAt !== undefined && Number.isNaN(new Date(expiresAt).getTime())) throw new UsageError('--expires-at must be an ISO 8601 date-time');
      const name = values.name ?? 'cli';
      if (api) {
        const minted = (await api.call('POST', '/api/v1/tokens', { identityId, name, ...(expiresAt ? { expiresAt } : {}) })) as { token: string };
        print(minted.token);
      } else {
        const minted = await withStore((db) => mintToken(db, SYSTEM_CLI, { identityId, name, ...(expiresAt ? { expiresAt: new Date(expiresAt) } : {}) }));
        print(minted.token);
      }
      return;
    }
    case 'audit export': {
      const filter = exportFilter(values.since, values.until, values.type);
      const lines = await import('./audit/export-lines.js');
      const written = api
        ? await lines.exportAuditLines(lines.apiPages(url!, token!, filter), writeStdout)
        : await withStore((db) => lines.exportAuditLines(lines.storePages(db, filter), writeStdout));
      process.stderr.write(`reins: exported ${written} audit events\n`);
      return;
    }
    case 'tier set': {
      const id = requireIdentityId(args[0], 'agent-id');
      const tier = args[1];
      if (tier === undefined) throw new UsageError('tier set needs a tier: T1, T2, T3, T4, or "" to clear');
      const result = api
        ? await api.call('PUT', `/api/v1/identities/autonomy-tier?id=${encodeURIComponent(id)}`, { tier })
        : (await withStore((db) => setAutonomyTier(db, SYSTEM_CLI, id, tier))).value;
      print(result);
      return;
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

export async function main(argv: string[]): Promise<number> {
  try {
    await runCli(argv);
    return 0;
  } catch (err) {
    if (err instanceof DataDirLockedError) {
      process.stderr.write(
        `reins: ${err.message}.\nA running server holds it (or another reins command): what the CLI wrote there the server would never see. ` +
          `Use the server's API instead: reins --url http://HOST:PORT --token TOKEN ... (or REINS_URL and REINS_TOKEN)\n`,
      );
      return 1;
    }
    if (err instanceof UsageError) {
      process.stderr.write(`reins: ${err.message}\n\n${USAGE}`);
      return 2;
    }
    if (err instanceof ConfigError || err instanceof AppError) {
      process.stderr.write(`reins: ${err.message}\n`);
      return 2;
    }
    process.stderr.write(`reins: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
