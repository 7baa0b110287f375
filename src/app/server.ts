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
import { AuditMaintenance } from '../audit/retention.js';
import { AuditOtlpExporter } from '../audit/otlp-export.js';
import { REINS_VERSION } from '../version.js';
import { WebhookDispatcher } from '../approvals/webhook.js';
import { HeldCallRegistry } from '../held-calls/registry.js';
import { HumanReviewCache } from '../held-calls/settings.js';
import { createPriceTable, DEFAULT_PRICES } from '../budgets/prices.js';
import { GEMINI_PRICES, upstreamPriceTables } from '../budgets/upstream-prices.js';
import { GatewayRules } from '../budgets/gateway-rules.js';
import { REDACTED_LOG_PATHS, buildApp, type GatewayRuntime } from './app.js';
import { governHeapGrowth } from './heap-growth.js';
import { createMetrics, registerAuditExportMetrics } from './metrics.js';
import { loadTls } from './listener.js';
import { startTracing } from './tracing.js';
import { bootstrapAdmin } from '../identity/bootstrap.js';
import { TierCache } from '../identity/tier-cache.js';
import { PolicySet } from '../policy/policy-set.js';
import { seedBuiltInPolicies } from '../policy/store.js';
import type { Db } from '../store/db.js';
import { migrate, pendingMigrations } from '../store/migrate.js';
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
  /** The migrations this replica applied at start (`001_foundation`, …); none when the schema was current. */
  migrationsApplied: string[];
  /** True from the start of `close()`: /readyz answers 503 so the replica leaves the load balancer first. */
  readonly draining: boolean;
  /**
   * Graceful shutdown (SIGTERM): readiness false, no new connections, calls in flight finish (streams included),
   * parked calls handed over to the shared store, the audit writer drained, then the store closed.
   */
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

/** How often a closing server looks whether only parked calls are left in flight. */
const HAND_OVER_POLL_MS = 50;

/**
 * Fastify's close (no new connections; in-flight requests finish), bounded by `graceMs`. Parked calls wait for a
 * person, who may take minutes: they are handed over instead of waited for. Once every request still in flight is
 * a parked call, their connections are closed: their entries stay pending in the shared store (the registry's
 * `stop` leaves them there), and the clients' retries reach another replica and attach to them.
 */
async function closeServer(app: FastifyInstance, graceMs: number, inFlight: () => number, parked: () => number): Promise<void> {
  const cut = setTimeout(() => {
    app.log.warn({ graceMs }, 'requests still in flight after the shutdown grace: closing their connections');
    app.server.closeAllConnections();
  }, graceMs);
  let handedOver = 0;
  const handOver = setInterval(() => {
    const open = inFlight();
    const waiting = parked();
    if (open === 0 || open > waiting) return;
    // Logged once per batch: the closed connections' requests leave the count on the next tick.
    if (waiting !== handedOver) app.log.info({ parked: waiting }, 'only parked calls left in flight: handing them over (their entries stay pending for the clients\' retries)');
    handedOver = waiting;
    app.server.closeAllConnections();
  }, HAND_OVER_POLL_MS);
  try {
    await app.close();
  } finally {
    clearTimeout(cut);
    clearInterval(handOver);
  }
}

/** Whether every migration this version ships is applied (a fresh store has no schema_migrations table yet). */
async function schemaCurrent(db: Db): Promise<boolean> {
  const table = await db.query<{ t: string | null }>(`SELECT to_regclass('schema_migrations')::text AS t`);
  return table.rows[0]?.t != null && (await pendingMigrations(db)) === 0;
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
  // Read before anything starts: a bad file stops start-up with a message naming the key.
  const tls = loadTls(config.tls);
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
    // The old generation's growth by heap size (heap-growth.ts): V8's own for a replica serving calls, held to 25%
    // while parked calls or a large cluster's index fill hundreds of MB.
    const releaseHeapGrowth = governHeapGrowth();
    stoppers.push(async () => releaseHeapGrowth());
    let migrationsApplied: string[] = [];
    if (config.migrations === 'auto') migrationsApplied = await migrate(db);
    else if (!(await schemaCurrent(db))) {
      throw new Error('the store has migrations not applied and REINS_MIGRATE is off: run `reins migrate` first (the Job before a rolling update)');
    }
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
    const auditUpkeep = new AuditMaintenance(db, { retentionDays: config.audit.retentionDays, intervalMs: config.audit.maintenanceSeconds * 1000, onError });
    auditUpkeep.start();
    stoppers.push(() => auditUpkeep.stop());
    const metricsRegistry = createMetrics();
    if (config.audit.otlp) {
      const otlp = config.audit.otlp;
      const exporter = new AuditOtlpExporter(db, { url: otlp.logsUrl, batchSize: otlp.batchSize, intervalMs: otlp.intervalSeconds * 1000, serviceName: config.tracing?.serviceName ?? 'reins', serviceVersion: REINS_VERSION, onError });
      registerAuditExportMetrics(metricsRegistry, () => exporter.lag);
      exporter.start();
      stoppers.push(() => exporter.stop());
    }
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

    // Stopped after the app and the audit writer: the spans of the calls that finished while closing are sent too.
    const tracing = startTracing(config.tracing);
    if (tracing) stoppers.push(() => tracing.shutdown());

    const gateway: GatewayRuntime = { policies, rules, credentials, audit, prices, upstreamPrices: pricesByUpstream, grants: options.grants ?? new StoredGrantLookup(db), held, review, tracer: tracing?.tracer ?? null };
    const lifecycle = { draining: false };
    const { app, plane, throttle } = await buildApp({ config, db, tiers, registry: metricsRegistry, logger, gateway, runtimeGuard, tls, lifecycle });
    // Requests in flight on every plane (the gateway's bypass Fastify's routing), for the hand-over of parked calls.
    let inFlight = 0;
    app.server.on('request', (_req, res) => {
      inFlight++;
      // `on`: a response closes once, and is dropped with its listeners (see read-body.ts).
      res.on('close', () => inFlight--);
    });
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
    let closing: Promise<void> | null = null;
    return {
      app,
      egressUrl,
      db,
      tiers,
      gateway,
      runtimeGuard,
      // Fastify names the scheme from its own `https` option, which the listener (listener.ts) replaces.
      url: tls ? address.replace(/^http:/, 'https:') : address,
      migrationsApplied,
      get draining() {
        return lifecycle.draining;
      },
      close() {
        closing ??= (async () => {
          // Readiness first, so the load balancer stops sending here (still served for shutdown.delaySeconds); then
          // the server (no new calls; in-flight calls finish and queue their audit events; parked calls handed over),
          // then the writer drains. The egress proxy (last started) stops first, then the app, then what they both read.
          lifecycle.draining = true;
          const delayMs = config.shutdown.delaySeconds * 1000;
          if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
          const [proxyStop] = config.egress ? stoppers.splice(-1) : [];
          await proxyStop?.();
          await closeServer(app, options.closeGraceMs ?? CLOSE_GRACE_MS, () => inFlight, () => held.waiting);
          for (const stop of stoppers.reverse()) await stop();
          if (ownsDb) await db.close();
        })();
        return closing;
      },
    };
  } catch (err) {
    for (const stop of stoppers.reverse()) await stop().catch(() => {});
    if (ownsDb) await db.close().catch(() => {});
    throw err;
  }
}
