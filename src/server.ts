/**
 * One Reins replica: store, migrations, bootstrap admin, tier cache, HTTP server. `main.ts` runs it;
 * tests start several on one database the same way.
 */
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { Config } from './config/config.js';
import { REDACTED_LOG_PATHS, buildApp } from './http/app.js';
import { createMetrics } from './http/metrics.js';
import { bootstrapAdmin } from './identity/bootstrap.js';
import { TierCache } from './identity/tier-cache.js';
import type { Db } from './store/db.js';
import { migrate } from './store/migrate.js';
import { openStore } from './store/open.js';

export interface Replica {
  app: FastifyInstance;
  db: Db;
  tiers: TierCache;
  /** Base URL once listening. */
  url: string;
  close(): Promise<void>;
}

export interface StartOptions {
  logger?: FastifyServerOptions['logger'];
  /** Reuse an open store instead of opening config.store (tests sharing one PGlite). */
  db?: Db;
  /** Listen for NOTIFY (default true). Off only to prove the periodic re-read converges alone. */
  listen?: boolean;
}

export function defaultLogger(level: string): FastifyServerOptions['logger'] {
  return { level, redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' } };
}

export async function startReplica(config: Config, options: StartOptions = {}): Promise<Replica> {
  const logger = options.logger ?? defaultLogger(config.logLevel);
  const ownsDb = !options.db;
  const db = options.db ?? (await openStore(config.store));
  let tiers: TierCache | null = null;
  try {
    await migrate(db);
    if (config.bootstrapAdminToken) await bootstrapAdmin(db, config.bootstrapAdminToken);
    tiers = new TierCache(db, { refreshSeconds: config.identity.tierRefreshSeconds, listen: options.listen ?? true });
    await tiers.start();
    const app = await buildApp({ config, db, tiers, registry: createMetrics(), logger });
    const address = await app.listen({ host: config.host, port: config.port });
    const cache = tiers;
    return {
      app,
      db,
      tiers: cache,
      url: address,
      async close() {
        await app.close();
        await cache.stop();
        if (ownsDb) await db.close();
      },
    };
  } catch (err) {
    await tiers?.stop().catch(() => {});
    if (ownsDb) await db.close().catch(() => {});
    throw err;
  }
}
