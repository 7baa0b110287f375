/**
 * One Reins replica: store, migrations, bootstrap admin, the caches the request path reads (tiers,
 * policies, gateway rules, credentials), the audit writer, and the HTTP server. `main.ts` runs it;
 * tests start several on one database the same way.
 */
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { AddressInfo } from 'node:net';
import { AuditWriter } from '../audit/audit-writer.js';
import type { Config } from '../config/config.js';
import { ConfigError } from '../config/config.js';
import { CredentialCache } from '../governance/credential-cache.js';
import { DeniedNetworks } from '../planes/egress/denied-networks.js';
import { createEgressProxy } from '../planes/egress/proxy.js';
import { EgressGovernance } from '../governance/plane-governance.js';
import type { GrantLookup } from '../approvals/grants.js';
import { StoredGrantLookup } from '../approvals/grant-lookup.js';
import { ExpirySweeper } from '../approvals/expiry-sweeper.js';
import { WebhookDispatcher } from '../approvals/webhook.js';
import { HeldCallRegistry } from '../held-calls/registry.js';
import { HumanReviewCache } from '../held-calls/settings.js';
import { createPriceTable, DEFAULT_PRICES } from '../budgets/prices.js';
import { GEMINI_PRICES, upstreamPriceTables } from '../budgets/upstream-prices.js';
import { GatewayRules } from '../budgets/gateway-rules.js';
import { REDACTED_LOG_PATHS, buildApp, type GatewayRuntime } from './app.js';
import { createMetrics } from './metrics.js';
import { bootstrapAdmin } from '../identity/bootstrap.js';
import { TierCache } from '../identity/tier-cache.js';
import { PolicySet } from '../policy/policy-set.js';
import { seedBuiltInPolicies } from '../policy/store.js';
import type { Db } from '../store/db.js';
import { migrate } from '../store/migrate.js';
import { openStore } from '../store/open.js';
import { RuntimeGuard, type RuntimeGuardOptions } from '../runtime-guard/runtime-guard.js';

export interface Replica {
  app: FastifyInstance;
  /** The egress forward proxy's URL (http://host:port) when `egress` is configured. */
  egressUrl: string | null;
  db: Db;
  tiers: TierCache;
  gateway: GatewayRuntime;
  runtimeGuard: RuntimeGuard;
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
  /** Where the gateway reads a caller's active grants (default: the grants table, read per call). */
  grants?: GrantLookup;
  /** The runtime guard's cluster side and clock (tests); default: the Kubernetes client and Date.now. */
  runtimeGuard?: Omit<RuntimeGuardOptions, 'onError'>;
  /** How long `close()` lets requests in flight finish before it cuts their connections (default `CLOSE_GRACE_MS`). */
  closeGraceMs?: number;
}

/**
 * How long `close()` waits for requests in flight (a held call waiting for its reviewer, a long stream, a
 * client that never reads its answer) before it cuts their connections: inside Kubernetes' default 30 s
 * termination grace, so the replica still flushes its audit events and leaves on its own terms rather than by
 * SIGKILL. Without a bound, one request that never ends would hold the shutdown forever.
 */
export const CLOSE_GRACE_MS = 25_000;

/** Fastify's close, which waits for every open connection, bounded by `graceMs`. */
async function closeServer(app: FastifyInstance, graceMs: number): Promise<void> {
  const cut = setTimeout(() => {
    app.log.warn({ graceMs }, 'requests still in flight after the shutdown grace: closing their connections');
    app.server.closeAllConnections();
  }, graceMs);
  try {
    await app.close();
  } finally {
    clearTimeout(cut);
  }
}

export function defaultLogger(level: string): FastifyServerOptions['logger'] {
  return { level, redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' } };
}

function priceTable(config: Config) {
  try {
    return createPriceTable(config.prices, [...DEFAULT_PRICES, ...GEMINI_PRICES]);
  } catch (err) {
    throw new ConfigError('prices', (err as Error).message);
  }
}

/** Each upstream's own `prices`, checked at start like the global ones. */
function upstreamPrices(config: Config) {
  for (const [name, settings] of Object.entries(config.providers)) {
    try {
      upstreamPriceTables({ [name]: settings });
    } catch (err) {
      throw new ConfigError(`providers.${name}.prices`, (err as Error).message);
    }
  }
  return upstreamPriceTables(config.providers);
}

export async function startReplica(config: Config, options: StartOptions = {}): Promise<Replica> {
  const logger = options.logger ?? defaultLogger(config.logLevel);
  const prices = priceTable(config);
  const pricesByUpstream = upstreamPrices(config);
  const ownsDb = !options.db;
  const db = options.db ?? (await openStore(config.store));
  const listen = options.listen ?? true;
  // Started in order, stopped in reverse; whatever started before a failure is stopped again.
  const stoppers: (() => Promise<void>)[] = [];
  // Background errors (cache re-reads, audit writes) are held until the server's logger exists.
  const early: Error[] = [];
  let report = (err: Error): void => void early.push(err);
  const onError = (err: Error): void => report(err);
  try {
    await migrate(db);
    if (config.bootstrapAdminToken) await bootstrapAdmin(db, config.bootstrapAdminToken);
    await seedBuiltInPolicies(db);

    const tiers = new TierCache(db, { refreshSeconds: config.identity.tierRefreshSeconds, listen });
    await tiers.start();
    stoppers.push(() => tiers.stop());
    const refreshSeconds = config.gateway.rulesRefreshSeconds;
    const policies = new PolicySet(db, { refreshSeconds, listen, onError });
    await policies.start();
    stoppers.push(() => policies.stop());
    const rules = new GatewayRules(db, { refreshSeconds, listen, onError });
    await rules.start();
    stoppers.push(() => rules.stop());
    const review = new HumanReviewCache(db, { refreshSeconds, listen, onError });
    await review.start();
    stoppers.push(() => review.stop());
    const held = new HeldCallRegistry(db, review, { listen, onError });
    await held.start();
    stoppers.push(() => held.stop());
    const credentials = new CredentialCache(db, { listen });
    await credentials.start();
    stoppers.push(() => credentials.stop());
    const audit = new AuditWriter(db, { maxQueue: config.gateway.auditQueue, onError });
    stoppers.push(() => audit.close());
    const sweeper = new ExpirySweeper(db, { intervalMs: config.approvals.expirySweepSeconds * 1000, onError });
    sweeper.start();
    stoppers.push(() => sweeper.stop());
    if (config.approvals.webhook) {
      const webhook = new WebhookDispatcher(db, config.approvals.webhook, onError);
      webhook.start();
      stoppers.push(() => webhook.stop());
    }

    const runtimeGuard = await RuntimeGuard.start(config, db, { ...options.runtimeGuard, onError: (err, what) => onError(new Error(`${what}: ${err.message}`, { cause: err })) });
    stoppers.push(() => runtimeGuard.stop());

    const gateway: GatewayRuntime = { policies, rules, credentials, audit, prices, upstreamPrices: pricesByUpstream, grants: options.grants ?? new StoredGrantLookup(db), held, review };
    const { app, plane, throttle } = await buildApp({ config, db, tiers, registry: createMetrics(), logger, gateway, runtimeGuard });
    // Errors of the background parts go to the server's log from now on.
    report = (err) => app.log.error({ err }, 'background task failed');
    for (const err of early.splice(0)) report(err);
    // A gateway takes bursts of new connections (agents starting together, SDK retries): Node's default accept
    // backlog of 511 resets some of them under load; the kernel caps this at net.core.somaxconn.
    const address = await app.listen({ host: config.host, port: config.port, backlog: 4096 });
    let egressUrl: string | null = null;
    if (config.egress) {
      const proxy = createEgressProxy(new EgressGovernance(plane), {
        log: { warn: (obj, msg) => app.log.warn(obj, msg), error: (obj, msg) => app.log.error(obj, msg) },
        deniedNetworks: new DeniedNetworks(config.egress.deniedNetworks),
        // The control plane and gateway port: an agent key must not reach it through the proxy, whatever the list says.
        ownPorts: [(app.server.address() as AddressInfo).port],
        // A forward proxy on its own port: the client is the socket's peer, whatever http.trustProxy says.
        failedAuth: throttle.gate({ trustProxy: false }),
      });
      const at = await proxy.listen(config.egress.port, config.host).catch(async (err: unknown) => {
        await app.close();
        throw err;
      });
      egressUrl = `http://${at.family === 'IPv6' ? `[${at.address}]` : at.address}:${at.port}`;
      stoppers.push(() => proxy.close());
    }
    return {
      app,
      egressUrl,
      db,
      tiers,
      gateway,
      runtimeGuard,
      url: address,
      async close() {
        // The server first (no new calls; in-flight calls finish and queue their audit events), then the writer drains.
        // The egress proxy (last started) stops first, then the app, then what they both read.
        const [proxyStop] = config.egress ? stoppers.splice(-1) : [];
        await proxyStop?.();
        await closeServer(app, options.closeGraceMs ?? CLOSE_GRACE_MS);
        for (const stop of stoppers.reverse()) await stop();
        if (ownsDb) await db.close();
      },
    };
  } catch (err) {
    for (const stop of stoppers.reverse()) await stop().catch(() => {});
    if (ownsDb) await db.close().catch(() => {});
    throw err;
  }
}
