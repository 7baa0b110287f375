/** `npm start`: one Reins replica, configured from the environment and REINS_CONFIG. */
import { ConfigError, loadConfig } from './config/config.js';
import { startReplica } from './app/server.js';
import { DataDirLockedError } from './store/data-dir-lock.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`reins: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const replica = await startReplica(config);
  const log = replica.app.log;
  log.info(
    {
      store: config.store.kind === 'postgres' ? 'postgres' : `pglite:${config.store.dataDir}`,
      url: replica.url,
      // The egress forward proxy's address (egress.port 0 picks a free port), or null when it is off.
      egressUrl: replica.egressUrl,
      migrationsApplied: replica.migrationsApplied,
    },
    'reins is listening',
  );
  const admins = await replica.db.query(`SELECT 1 FROM identities WHERE role = 'admin' LIMIT 1`);
  if (admins.rows.length === 0) {
    log.warn(
      'no admin exists yet: restart with REINS_BOOTSTRAP_ADMIN_TOKEN=<a secret of 16+ characters> (creates default/admin), ' +
        'or stop the server and run `npx reins admin create <namespace>/<name>`',
    );
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    replica.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err: unknown) => {
  // The embedded store is one process's: a second replica needs PostgreSQL (DATABASE_URL) to share a store.
  const hint = err instanceof DataDirLockedError ? '; stop that process first, or run replicas on PostgreSQL (DATABASE_URL) to share a store' : '';
  process.stderr.write(`reins: failed to start: ${err instanceof Error ? err.message : String(err)}${hint}\n`);
  process.exit(1);
});
