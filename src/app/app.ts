/**
 * Assembles the HTTP server: framework plugins, the one auth and error layer, then each domain's routes
 * registered by that domain's own module.
 */
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Registry } from 'prom-client';
import type { Tracer } from '@opentelemetry/api';
import { CallTelemetry, ModelLabels } from '../governance/call-telemetry.js';
import { registerAuditRoutes } from '../audit/routes.js';
import { ownSecrets, type Config, type ProviderName } from '../config/config.js';
import type { IdentityChange } from '../identity/identity-change.js';
import { registerIdentityRoutes } from '../identity/routes.js';
import { registerOidcRoutes } from '../identity/oidc-routes.js';
import type { TierCache } from '../identity/tier-cache.js';
import type { AuditWriter } from '../audit/audit-writer.js';
import type { CredentialCache } from '../governance/credential-cache.js';
import type { GrantLookup } from '../approvals/grants.js';
import { LlmGovernance, policyRoute } from '../governance/llm-governance.js';
import { isGatewayRequest, LlmGateway, registerLlmGateway } from '../planes/llm/routes.js';
import type { PriceTable } from '../budgets/prices.js';
import { resolveCaller } from '../governance/caller.js';
import { REINS_MCP_PATH, registerReinsMcpRoute } from '../planes/reins-mcp/route.js';
import { ReinsMcpServer } from '../planes/reins-mcp/server.js';
import { isMcpRequest, McpGateway } from '../planes/mcp/proxy.js';
import { registerMcpProxyRoute } from '../planes/mcp/route.js';
import { McpGovernance, PlaneGovernance } from '../governance/plane-governance.js';
import { REINS_VERSION } from '../version.js';
import type { GatewayRules } from '../budgets/gateway-rules.js';
import { registerGatewayRuleRoutes } from '../budgets/routes.js';
import { registerRateLimitRoutes } from '../budgets/rate-limit-routes.js';
import { registerSpendRoutes } from '../budgets/spend.js';
import { registerApprovalRoutes } from '../approvals/routes.js';
import { requestDesk } from '../governance/request-desk.js';
import { StoredRequestNotes } from '../approvals/request-notes.js';
import type { HeldCallRegistry } from '../held-calls/registry.js';
import { registerHeldCallRoutes } from '../held-calls/routes.js';
import { stopHeldCallsOf } from '../held-calls/registry.js';
import { endApprovalsOf } from '../approvals/identity-removal.js';
import type { HumanReviewCache } from '../held-calls/settings.js';
import type { PolicySet } from '../policy/policy-set.js';
import { registerPolicyRoutes } from '../policy/routes.js';
import type { RuntimeGuard } from '../runtime-guard/runtime-guard.js';
import { registerRuntimeGuardRoutes } from '../runtime-guard/routes.js';
import type { Db } from '../store/db.js';
import { registerAuth, TokenUseRecorder } from '../identity/auth.js';
import { registerConsole } from './console.js';
import { createListener, type ListenerOptions } from './listener.js';
import { CredentialThrottle } from '../identity/credential-throttle.js';
import { registerErrorHandling } from '../shared/error-handler.js';
import { registerGatewayMetrics, registerHttpMetrics } from './metrics.js';
import { MAX_JSON_DEPTH } from '../shared/json-depth.js';
import { frameworkErrorAnswer, parseQueryString, registerRequestTextChecks } from '../shared/request-text.js';
import { ErrorBody } from '../shared/schemas.js';
import { registerSystemRoutes } from './system-routes.js';
import { finishOpenApiDocument } from './openapi.js';

export interface AppDeps {
  config: Config;
  db: Db;
  tiers: TierCache;
  registry: Registry;
  logger: FastifyServerOptions['logger'];
  gateway: GatewayRuntime;
  runtimeGuard: RuntimeGuard;
  /** The certificate and key read from `tls.certFile`/`tls.keyFile` (`loadTls`); absent: cleartext. */
  tls?: ListenerOptions['tls'];
  /** The replica's shutdown state: /readyz answers 503 once `draining` (the replica's close sets it). */
  lifecycle?: { readonly draining: boolean };
}

/** What the data plane reads on every call, owned (started and stopped) by the replica. */
export interface GatewayRuntime {
  policies: PolicySet;
  rules: GatewayRules;
  credentials: CredentialCache;
  audit: AuditWriter;
  prices: PriceTable;
  /** Each upstream's own `prices` (budgets/upstream-prices.ts), by name. */
  upstreamPrices?: ReadonlyMap<string, PriceTable>;
  grants: GrantLookup;
  held: HeldCallRegistry;
  review: HumanReviewCache;
  /** Exports a span per governed call when OTEL_EXPORTER_OTLP_ENDPOINT is set (tracing.ts); null otherwise. */
  tracer?: Tracer | null;
}

/** Header values that must never reach a log line. */
export const REDACTED_LOG_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["proxy-authorization"]',
  'req.headers.cookie',
  'req.headers["x-csrf-token"]',
  'res.headers["set-cookie"]',
];

export interface BuiltApp {
  app: FastifyInstance;
  /** The MCP and egress planes' governance; the egress proxy, on its own port, is started by the replica. */
  plane: PlaneGovernance;
  /** Failed credentials per client address, shared by every plane (the egress proxy's included). */
  throttle: CredentialThrottle;
}

export async function buildApp(deps: AppDeps): Promise<BuiltApp> {
  const gw = deps.gateway;
  // The data plane, built first: the server hands it every /llm/ request before Fastify sees it.
  let app: FastifyInstance | null = null;
  const log = {
    warn: (obj: object, msg: string) => app?.log.warn(obj, msg),
    error: (obj: object, msg: string) => app?.log.error(obj, msg),
  };
  const uses = new TokenUseRecorder(deps.db);
  const throttle = new CredentialThrottle({
    limit: deps.config.http.failedAuthLimit,
    windowSeconds: deps.config.http.failedAuthWindowSeconds,
    // Batched, like the data plane's events: a failure is answered without waiting for the store.
    audit: (event) => void gw.audit.enqueue(event),
  });
  const failedAuth = throttle.gate({ trustProxy: deps.config.http.trustProxy });
  const gatewayMetrics = registerGatewayMetrics(deps.registry, () => gw.audit.pending);
  // What every plane's governance reads and reports to: one set, so the LLM, MCP and egress planes cannot drift apart.
  const governed = {
    tiers: deps.tiers,
    policies: gw.policies,
    credentials: gw.credentials,
    audit: gw.audit,
    grants: gw.grants,
    onTokenUse: (tokenId: string) => uses.touch(tokenId),
    onError: (err: Error, what: string) => log.error({ err }, `gateway: ${what} failed`),
    onCompleted: gatewayMetrics.completed,
    telemetry: new CallTelemetry({ metrics: gatewayMetrics, tracer: gw.tracer ?? null, models: new ModelLabels(gw.prices), llmRoute: (provider, route) => policyRoute(provider as ProviderName, route) }),
    notes: new StoredRequestNotes(deps.db),
    held: gw.held,
  };
  const gateway = new LlmGateway(
    {
      providers: deps.config.providers,
      heldKeepAliveMs: deps.config.gateway.heldKeepAliveSeconds * 1000,
      failedAuth,
      hooks: new LlmGovernance({ ...governed, db: deps.db, rules: gw.rules, prices: gw.prices, upstreamPrices: gw.upstreamPrices, ownSecrets: ownSecrets(deps.config) }),
    },
    log,
  );

  const plane = new PlaneGovernance(governed);
  const mcp = new McpGateway(
    {
      servers: deps.config.mcpServers,
      hooks: new McpGovernance(plane, { hideDeniedTools: deps.config.gateway.hideDeniedTools }),
      heldKeepAliveMs: deps.config.gateway.heldKeepAliveSeconds * 1000,
      heldAnswerMs: deps.config.gateway.mcpHeldAnswerSeconds * 1000,
      failedAuth,
      allowedOrigins: deps.config.gateway.mcpAllowedOrigins,
    },
    log,
  );
  const reinsMcp = new ReinsMcpServer({
    resolve: (secret, headers) => resolveCaller({ credentials: gw.credentials, tiers: deps.tiers, onTokenUse: (id) => uses.touch(id) }, secret, headers),
    desk: requestDesk(deps.db),
    version: REINS_VERSION,
    log,
    failedAuth,
    allowedOrigins: deps.config.gateway.mcpAllowedOrigins,
  });

  app = Fastify({
    // The data plane is served on node:http objects before Fastify's request pipeline (see planes/llm/routes.ts).
    // HTTP/1.1 and HTTP/2 on one port, cleartext or TLS (listener.ts): every request takes the same way in.
    serverFactory: (handler, options) => {
      const server = createListener(
        (req, res) => {
          const url = req.url ?? '';
          if (isGatewayRequest(url)) gateway.handle(req, res);
          else if (url === REINS_MCP_PATH || url.startsWith(`${REINS_MCP_PATH}?`)) reinsMcp.handle(req, res);
          else if (isMcpRequest(url)) mcp.handle(req, res);
          else handler(req, res);
        },
        { tls: deps.tls ?? null },
      );
      // What Fastify sets on a server it creates itself and not on a factory's: without it Node's 5 s idle keep-alive
      // applies, shorter than load balancers' and clients' own (a reused idle connection then meets a reset).
      const { keepAliveTimeout, requestTimeout } = options as { keepAliveTimeout?: number; requestTimeout?: number };
      server.keepAliveTimeout = keepAliveTimeout ?? 72_000;
      if (typeof requestTimeout === 'number') server.requestTimeout = requestTimeout;
      return server;
    },
    logger: deps.logger,
    bodyLimit: deps.config.http.bodyLimitBytes,
    trustProxy: deps.config.http.trustProxy,
    // Request ids let a log line be matched to a client's report; they carry no secret.
    requestIdHeader: 'x-request-id',
    // The router's own errors (bad percent-encoding in the path) and the query string: see request-text.ts.
    frameworkErrors: frameworkErrorAnswer(() => app),
    routerOptions: { querystringParser: parseQueryString },
  });
  app.setValidatorCompiler(TypeBoxValidatorCompiler);
  // The control plane speaks JSON only: any other content type is a 415, not a body to guess at.
  app.removeContentTypeParser('text/plain');
  registerRequestTextChecks(app);
  app.addSchema(ErrorBody);

  await app.register(cookie);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Reins API',
        version: '1',
        description:
          'Governance gateway and control plane for AI agents. Errors answer {"error": {"code", "message"}}. ' +
          'On /api/v1, a string (value or field name, in the body, query or path) containing U+0000 or a lone surrogate, ' +
          `bad percent-encoding in the path or query, and a JSON body nested deeper than ${MAX_JSON_DEPTH} levels are 400 invalid_request naming the field.`,
      },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'A personal access token, agent key or sensor token' },
          session: { type: 'apiKey', in: 'cookie', name: 'reins_session', description: 'Console session; state changes also need X-CSRF-Token' },
        },
      },
      security: [{ bearer: [] }, { session: [] }],
      // Relative: the replica that serves the document (each replica, behind any address or proxy path).
      servers: [{ url: '/', description: 'The Reins replica serving this document' }],
    },
    // operationIds, 4XX answers, single-member anyOf, unused components: see openapi.ts (redocly lint passes).
    transformObject: (document) =>
      'openapiObject' in document ? (finishOpenApiDocument(document.openapiObject as Record<string, unknown>) as typeof document.openapiObject) : document.swaggerObject,
  });

  registerErrorHandling(app);
  registerAuth(app, deps.db, throttle);
  // The windows still open are summarised into the audit log before the writer drains (it closes after the app).
  app.addHook('onClose', async () => throttle.close());
  registerHttpMetrics(app, deps.registry);
  registerSystemRoutes(app, { db: deps.db, registry: deps.registry, lifecycle: deps.lifecycle ?? { draining: false } });
  registerIdentityRoutes(app, {
    db: deps.db,
    onIdentityChange: (change: IdentityChange) => {
      deps.tiers.apply(change);
      gw.credentials.forgetIdentity(change.id);
    },
    onTokenRevoked: (tokenId) => gw.credentials.forgetToken(tokenId),
    endHoldings: async (tx, actor, id) => ({ ...(await endApprovalsOf(tx, actor, id)), heldCallsStopped: await stopHeldCallsOf(tx, actor, id) }),
    sessionTtlSeconds: deps.config.sessions.ttlSeconds,
    tokenSignIn: deps.config.auth.tokenSignIn,
    throttle,
  });
  registerOidcRoutes(app, {
    db: deps.db,
    oidc: deps.config.auth.oidc,
    sessionTtlSeconds: deps.config.sessions.ttlSeconds,
    tokenSignIn: deps.config.auth.tokenSignIn,
    onIdentityChange: (change: IdentityChange) => {
      deps.tiers.apply(change);
      gw.credentials.forgetIdentity(change.id);
    },
    onTokenRevoked: (tokenId) => gw.credentials.forgetToken(tokenId),
    onFailedSignIn: (ip, reason) => throttle.failed(ip, 'sign-in', reason),
  });
  registerAuditRoutes(app, deps.db);
  registerPolicyRoutes(app, { db: deps.db, policies: gw.policies });
  registerGatewayRuleRoutes(app, { db: deps.db, rules: gw.rules });
  registerRateLimitRoutes(app, { db: deps.db, rules: gw.rules, upstreams: Object.keys(deps.config.providers) });
  registerSpendRoutes(app, deps.db);
  registerApprovalRoutes(app, deps.db);
  registerHeldCallRoutes(app, { db: deps.db, registry: gw.held, review: gw.review });
  registerRuntimeGuardRoutes(app, { guard: deps.runtimeGuard, registry: deps.registry });
  registerLlmGateway(app, gateway);
  registerReinsMcpRoute(app, reinsMcp);
  registerMcpProxyRoute(app, mcp);
  await registerConsole(app);
  await app.ready();
  return { app, plane, throttle };
}
