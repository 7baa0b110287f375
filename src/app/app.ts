/**
 * Assembles the HTTP server: framework plugins, the one auth and error layer, then each domain's routes
 * registered by that domain's own module.
 */
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { createServer } from 'node:http';
import type { Registry } from 'prom-client';
import { registerAuditRoutes } from '../audit/routes.js';
import { ownSecrets, type Config } from '../config/config.js';
import type { IdentityChange } from '../identity/identity-change.js';
import { registerIdentityRoutes } from '../identity/routes.js';
import type { TierCache } from '../identity/tier-cache.js';
import type { AuditWriter } from '../audit/audit-writer.js';
import type { CredentialCache } from '../governance/credential-cache.js';
import type { GrantLookup } from '../approvals/grants.js';
import { LlmGovernance } from '../governance/llm-governance.js';
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
import { CredentialThrottle } from '../identity/credential-throttle.js';
import { registerErrorHandling } from '../shared/error-handler.js';
import { registerGatewayMetrics, registerHttpMetrics } from './metrics.js';
import { MAX_JSON_DEPTH } from '../shared/json-depth.js';
import { frameworkErrorAnswer, parseQueryString, registerRequestTextChecks } from '../shared/request-text.js';
import { ErrorBody } from '../shared/schemas.js';
import { registerSystemRoutes } from './system-routes.js';

export interface AppDeps {
  config: Config;
  db: Db;
  tiers: TierCache;
  registry: Registry;
  logger: FastifyServerOptions['logger'];
  gateway: GatewayRuntime;
  runtimeGuard: RuntimeGuard;
}

/** What the data plane reads on every call, owned (started and stopped) by the replica. */
export interface GatewayRuntime {
  policies: PolicySet;
  rules: GatewayRules;
  credentials: CredentialCache;
  audit: AuditWriter;
  prices: PriceTable;
  grants: GrantLookup;
  held: HeldCallRegistry;
  review: HumanReviewCache;
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
    notes: new StoredRequestNotes(deps.db),
    held: gw.held,
  };
  const gateway = new LlmGateway(
    {
      providers: deps.config.providers,
      heldKeepAliveMs: deps.config.gateway.heldKeepAliveSeconds * 1000,
      failedAuth,
      hooks: new LlmGovernance({ ...governed, db: deps.db, rules: gw.rules, prices: gw.prices, ownSecrets: ownSecrets(deps.config) }),
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
    serverFactory: (handler) =>
      createServer((req, res) => {
        const url = req.url ?? '';
        if (isGatewayRequest(url)) gateway.handle(req, res);
        else if (url === REINS_MCP_PATH || url.startsWith(`${REINS_MCP_PATH}?`)) reinsMcp.handle(req, res);
        else if (isMcpRequest(url)) mcp.handle(req, res);
        else handler(req, res);
      }),
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
    },
  });

  registerErrorHandling(app);
  registerAuth(app, deps.db, throttle);
  // The windows still open are summarised into the audit log before the writer drains (it closes after the app).
  app.addHook('onClose', async () => throttle.close());
  registerHttpMetrics(app, deps.registry);
  registerSystemRoutes(app, { db: deps.db, registry: deps.registry });
  registerIdentityRoutes(app, {
    db: deps.db,
    onIdentityChange: (change: IdentityChange) => {
      deps.tiers.apply(change);
      gw.credentials.forgetIdentity(change.id);
    },
    onTokenRevoked: (tokenId) => gw.credentials.forgetToken(tokenId),
    endHoldings: async (tx, actor, id) => ({ ...(await endApprovalsOf(tx, actor, id)), heldCallsStopped: await stopHeldCallsOf(tx, actor, id) }),
    sessionTtlSeconds: deps.config.sessions.ttlSeconds,
    throttle,
  });
  registerAuditRoutes(app, deps.db);
  registerPolicyRoutes(app, { db: deps.db, policies: gw.policies });
  registerGatewayRuleRoutes(app, { db: deps.db, rules: gw.rules });
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
