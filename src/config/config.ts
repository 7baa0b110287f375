/**
 * Configuration: the YAML file named by REINS_CONFIG plus the environment, validated once at start.
 * Every key has a default; an unknown key or a bad value stops start-up with a ConfigError naming it.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { Type, type Static, type TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { DEFAULT_DENIED_NETWORKS, parseNetwork } from '../shared/networks.js';

const Origin = Type.String({ pattern: '^https?://[^/?#\\s]+/?$', description: 'an origin such as https://api.openai.com' });
/** The wire protocols Reins governs; a `providers` entry names one in `kind` (default: its name, for the first three). */
export const PROVIDER_KINDS = ['openai', 'anthropic', 'bedrock', 'openai-compatible', 'azure-openai', 'gemini'] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];
/** The names whose kind may be left out: the three upstreams every configuration before `kind` had. */
export const DEFAULT_KIND_NAMES: readonly ProviderKind[] = ['openai', 'anthropic', 'bedrock'];
/** An upstream's name, as it appears in `/llm/<name>`: lowercase, like an MCP server's. */
export const UPSTREAM_NAME = '^[a-z0-9][a-z0-9-]{0,62}$';

/** USD per million tokens by model glob; the shape of `prices` and of an upstream's own `prices`. */
const Prices = Type.Record(
    Type.String({ minLength: 1, maxLength: 200 }),
    Type.Object(
      {
        inputPerMTok: Type.Number({ minimum: 0 }),
        outputPerMTok: Type.Number({ minimum: 0 }),
        cacheReadPerMTok: Type.Optional(Type.Number({ minimum: 0 })),
        cacheWritePerMTok: Type.Optional(Type.Number({ minimum: 0 })),
      },
      { additionalProperties: false },
    ),
  );

const ProviderConfig = Type.Object(
  {
    kind: Type.Optional(Type.Union(PROVIDER_KINDS.map((k) => Type.Literal(k)))),
    baseUrl: Origin,
    apiKey: Type.Optional(Type.String()),
    region: Type.Optional(Type.String({ minLength: 1 })),
    // This upstream's prices, over the global `prices` and the list prices (a self-hosted model, a contracted rate).
    prices: Type.Optional(Prices),
  },
  { additionalProperties: false },
);

const FileConfig = Type.Object(
  {
    deployment: Type.Optional(Type.Union([Type.Literal('self-hosted'), Type.Literal('saas')])),
    // A map from an upstream's name (served at /llm/<name>) to its kind, origin and credential.
    providers: Type.Optional(Type.Record(Type.String(), ProviderConfig)),
    mcpServers: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$' }),
            url: Type.String({ pattern: '^https?://' }),
            headers: Type.Optional(Type.Record(Type.String(), Type.String())),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    egress: Type.Optional(
      Type.Object(
        {
          port: Type.Integer({ minimum: 0, maximum: 65535 }),
          /** CIDRs (or single addresses) never connected to; absent: DEFAULT_DENIED_NETWORKS; a list replaces it, [] opens all.
           * Reins' own ports on this host's addresses are refused whatever this says. */
          deniedNetworks: Type.Optional(Type.Array(Type.String())),
        },
        { additionalProperties: false },
      ),
    ),
    runtimeGuard: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(Type.Boolean()),
          selfService: Type.Optional(Type.String({ pattern: '^[a-z0-9-]+/[a-z0-9-.]+$' })),
          sensor: Type.Optional(
            Type.Object(
              {
                metricsTargets: Type.Optional(Type.Array(Type.String({ pattern: '^https?://' }))),
                scrapeIntervalSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    identity: Type.Optional(
      Type.Object(
        {
          // How often every replica re-reads all tiers, the safety net under NOTIFY.
          tierRefreshSeconds: Type.Optional(Type.Number({ minimum: 0.1, maximum: 30 })),
        },
        { additionalProperties: false },
      ),
    ),
    auth: Type.Optional(
      Type.Object(
        {
          // OpenID Connect sign-in for the console (identity/oidc-*.ts, docs/sign-in.md).
          oidc: Type.Optional(
            Type.Object(
              {
                issuer: Type.String({ minLength: 1 }),
                clientId: Type.String({ minLength: 1 }),
                clientSecret: Type.Optional(Type.String()),
                redirectUrl: Type.String({ minLength: 1 }),
                scopes: Type.Optional(Type.Array(Type.String({ minLength: 1, pattern: '^[\\x21\\x23-\\x5b\\x5d-\\x7e]+$' }), { minItems: 1, maxItems: 50 })),
                identity: Type.Optional(
                  Type.Object(
                    { claim: Type.Optional(Type.String({ minLength: 1 })), namespace: Type.Optional(Type.String({ minLength: 1 })) },
                    { additionalProperties: false },
                  ),
                ),
                roles: Type.Optional(
                  Type.Object(
                    {
                      admin: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
                      viewer: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
                      developer: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
                    },
                    { additionalProperties: false },
                  ),
                ),
                groupsClaim: Type.Optional(Type.String({ minLength: 1 })),
                // The longest an OIDC console session lives: a demotion at the provider takes effect by then at the latest.
                maxSessionSeconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 7 * 24 * 3600 })),
                // The name on the console's button ("Sign in with <displayName>"); default: the issuer's host.
                displayName: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
              },
              { additionalProperties: false },
            ),
          ),
          // Console sign-in with a personal access token: everyone (default), admins only (break-glass), or nobody.
          tokenSignIn: Type.Optional(Type.Union([Type.Literal('all'), Type.Literal('admins'), Type.Literal('off')])),
        },
        { additionalProperties: false },
      ),
    ),
    sessions: Type.Optional(
      Type.Object(
        { ttlSeconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 30 * 24 * 3600 })) },
        { additionalProperties: false },
      ),
    ),
    // USD per million tokens by model glob ("gpt-4o*") or provider-qualified glob ("bedrock:*"); over the defaults.
    prices: Type.Optional(Prices),
    gateway: Type.Optional(
      Type.Object(
        {
          // Gateway audit events held in memory before intake waits for the store (never dropped).
          auditQueue: Type.Optional(Type.Integer({ minimum: 100, maximum: 1_000_000 })),
          // How often every replica re-reads policies and budget/model-access rules, the safety net under NOTIFY.
          rulesRefreshSeconds: Type.Optional(Type.Number({ minimum: 0.1, maximum: 300 })),
          // Remove from MCP tools/list the tools the policies refuse this caller whatever the arguments.
          hideDeniedTools: Type.Optional(Type.Boolean()),
          // How often a held call's open answer carries a ping or an MCP progress notification.
          heldKeepAliveSeconds: Type.Optional(Type.Number({ minimum: 0.05, maximum: 60 })),
          // Browser origins allowed on /mcp/* besides the loopback ones (MCP's DNS-rebinding rule); "*" allows any.
          mcpAllowedOrigins: Type.Optional(
            Type.Array(Type.String({ pattern: '^(\\*|https?://[^/?#\\s]+/?)$', description: 'an origin such as https://app.example.com, or *' }), { maxItems: 1000 }),
          ),
          // How long a held MCP tool call of a client that asked for no progress waits before it is answered
          // "held, call again after approval" (the MCP TypeScript SDK gives up after 60 s).
          mcpHeldAnswerSeconds: Type.Optional(Type.Number({ minimum: 0.05, maximum: 3600 })),
        },
        { additionalProperties: false },
      ),
    ),
    audit: Type.Optional(
      Type.Object(
        {
          // Days an audit event is kept; 0 keeps everything. Whole expired days go (docs/audit.md).
          retentionDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 36500 })),
          // How often the replica holding the audit lease creates partitions ahead and applies retention.
          maintenanceSeconds: Type.Optional(Type.Number({ minimum: 1, maximum: 86400 })),
          // Every audit event as an OpenTelemetry log record over OTLP/HTTP to the organization's Collector (docs/audit.md).
          export: Type.Optional(
            Type.Object(
              {
                otlp: Type.Optional(
                  Type.Object(
                    {
                      // The Collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT: records go to its /v1/logs.
                      endpoint: Type.Optional(Type.String({ pattern: '^https?://' })),
                      batchSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000 })),
                      intervalSeconds: Type.Optional(Type.Number({ minimum: 0.05, maximum: 3600 })),
                    },
                    { additionalProperties: false },
                  ),
                ),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    approvals: Type.Optional(
      Type.Object(
        {
          // How often each replica looks for expired grants to announce (expiry itself is computed on every read).
          expirySweepSeconds: Type.Optional(Type.Number({ minimum: 0.1, maximum: 3600 })),
          // Optional: every notification POSTed as HMAC-signed JSON (X-Reins-Signature), retried with backoff.
          webhook: Type.Optional(
            Type.Object(
              {
                url: Type.String({ pattern: '^https?://' }),
                secret: Type.String({ minLength: 16 }),
                intervalSeconds: Type.Optional(Type.Number({ minimum: 0.1, maximum: 3600 })),
                maxAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    // TLS on the port Reins serves its API, console and gateway on (PORT); the egress proxy stays plain HTTP.
    tls: Type.Optional(
      Type.Object(
        {
          certFile: Type.String({ minLength: 1, description: 'PEM certificate, with its chain' }),
          keyFile: Type.String({ minLength: 1, description: 'PEM private key' }),
        },
        { additionalProperties: false },
      ),
    ),
    http: Type.Optional(
      Type.Object(
        {
          bodyLimitBytes: Type.Optional(Type.Integer({ minimum: 1024, maximum: 64 * 1024 * 1024 })),
          trustProxy: Type.Optional(Type.Boolean()),
          // Failed credentials (bad tokens, sign-ins, proxy logins) per client address and window before 429.
          failedAuthLimit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
          failedAuthWindowSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400 })),
        },
        { additionalProperties: false },
      ),
    ),
    shutdown: Type.Optional(
      Type.Object(
        {
          // After SIGTERM, keep serving this long with /readyz answering 503 before the listener closes, for load
          // balancers that learn from the readiness check (in Kubernetes the manifests' preStop does this).
          delaySeconds: Type.Optional(Type.Number({ minimum: 0, maximum: 120 })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type FileConfig = Static<typeof FileConfig>;

/**
 * A provider kind, where code keys prices and protocol descriptions by it (`budgets/prices.ts`'s "bedrock:<glob>").
 * The name an upstream is configured and served under is a plain string (`Config['providers']`' keys).
 */
export type ProviderName = ProviderKind;

export interface ProviderSettings {
  /** The wire protocol (`kind` in the file; defaults to the name for openai, anthropic and bedrock). */
  kind: ProviderKind;
  baseUrl: string;
  apiKey?: string;
  region?: string;
  /** USD per million tokens by model glob, for calls through this upstream only. */
  prices?: Config['prices'];
}

export interface Config {
  host: string;
  port: number;
  logLevel: string;
  store: { kind: 'postgres'; url: string } | { kind: 'pglite'; dataDir: string | 'memory' };
  /**
   * REINS_MIGRATE: `auto` applies pending migrations at start (under an advisory lock, so replicas starting
   * together apply each once); `off` never does: a replica with migrations pending refuses to start, for teams
   * whose migrations run as a Job (`reins migrate`) with a database role the replicas do not get.
   */
  migrations: 'auto' | 'off';
  bootstrapAdminToken?: string;
  deployment: 'self-hosted' | 'saas';
  /** Upstreams by name (`/llm/<name>`). */
  providers: Record<string, ProviderSettings>;
  mcpServers: { name: string; url: string; headers: Record<string, string> }[];
  egress: { port: number; deniedNetworks: string[] } | null;
  runtimeGuard: {
    /** Whether the file has a `runtimeGuard` section at all (none: "the service is not configured"). */
    configured: boolean;
    enabled: boolean;
    selfService: string;
    sensor: { metricsTargets: string[]; scrapeIntervalSeconds: number };
    /**
     * The environment variables the cluster check reads, as loaded with this configuration (not process.env at
     * request time): the runtime guard decides "not running in a cluster" from them at start.
     */
    clusterEnv: { KUBERNETES_SERVICE_HOST?: string; KUBECONFIG?: string };
  };
  identity: { tierRefreshSeconds: number };
  sessions: { ttlSeconds: number };
  /** Console sign-in through an OpenID provider; null: token sign-in only. */
  /** `tokenSignIn`: who may sign in to the console with a personal access token (the API takes tokens whatever it says). */
  auth: { oidc: OidcConfig | null; tokenSignIn: 'all' | 'admins' | 'off' };
  prices: Record<string, { inputPerMTok: number; outputPerMTok: number; cacheReadPerMTok?: number; cacheWritePerMTok?: number }>;
  gateway: {
    auditQueue: number;
    rulesRefreshSeconds: number;
    hideDeniedTools: boolean;
    heldKeepAliveSeconds: number;
    /** Origins (scheme://host[:port], no trailing slash) allowed on /mcp/* besides loopback ones; '*' allows any. */
    mcpAllowedOrigins: string[];
    mcpHeldAnswerSeconds: number;
  };
  audit: {
    retentionDays: number;
    maintenanceSeconds: number;
    /** OTLP log export of every audit event; null: off. */
    otlp: { logsUrl: string; batchSize: number; intervalSeconds: number } | null;
  };
  approvals: {
    expirySweepSeconds: number;
    webhook: { url: string; secret: string; intervalSeconds: number; maxAttempts: number } | null;
  };
  http: { bodyLimitBytes: number; trustProxy: boolean; failedAuthLimit: number; failedAuthWindowSeconds: number };
  /** PEM files for TLS on PORT (HTTP/2 and HTTP/1.1 by ALPN); null: cleartext (HTTP/2 by prior knowledge and HTTP/1.1). */
  tls: { certFile: string; keyFile: string } | null;
  /** OpenTelemetry span export (OTLP/HTTP, JSON) from the standard OTEL_* variables; null: no spans (tracingFromEnv). */
  tracing?: TracingConfig | null;
  shutdown: { delaySeconds: number };
}

export interface OidcConfig {
  /** The issuer identifier; discovery reads `<issuer>/.well-known/openid-configuration`. */
  issuer: string;
  clientId: string;
  /** Absent: a public client (PKCE only, `token_endpoint_auth_method: none`). */
  clientSecret?: string;
  /** This deployment's `/auth/oidc/callback` as the provider knows it (registered there as a redirect URI). */
  redirectUrl: string;
  scopes: string[];
  /** The claim naming the person and the namespace their identity is created in (`alice@example.com` -> `people/alice`). */
  identity: { claim: string; namespace: string };
  /** Groups (values of `groupsClaim`) per role; `"*"` matches anyone the provider signs in. */
  roles: { admin: string[]; viewer: string[]; developer: string[] };
  groupsClaim: string;
  maxSessionSeconds: number;
  displayName: string;
}

export interface TracingConfig {
  /** Where spans are POSTed: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`. */
  tracesEndpoint: string;
  /** OTEL_SERVICE_NAME, default `reins`. */
  serviceName: string;
  /** OTEL_BSP_SCHEDULE_DELAY: how long finished spans wait to be sent together (ms, default 5000). */
  scheduleDelayMs: number;
}

/**
 * Span export is on when an OTLP endpoint is named (the OpenTelemetry SDK's own variables, so a collector set up for
 * other services needs nothing new), unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. Headers, timeout and
 * sampling (OTEL_EXPORTER_OTLP_HEADERS, OTEL_TRACES_SAMPLER, …) are read by the SDK itself.
 */
export function tracingFromEnv(env: Record<string, string | undefined>): TracingConfig | null {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return null;
  if ((env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase() === 'none') return null;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const name = traces ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  // The signal-specific variable is used as is; the general one is a base the signal's path is appended to.
  const endpoint = traces || (base ? `${base.replace(/\/+$/, '')}/v1/traces` : '');
  if (endpoint === '') return null;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new ConfigError(name, `must be an http:// or https:// URL, got "${endpoint}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(name, `must be an http:// or https:// URL, got "${endpoint}"`);
  const delay = env.OTEL_BSP_SCHEDULE_DELAY?.trim();
  if (delay !== undefined && delay !== '' && (!/^\d+$/.test(delay) || Number(delay) > 3_600_000)) {
    throw new ConfigError('OTEL_BSP_SCHEDULE_DELAY', `must be a number of milliseconds (0 to 3600000), got "${delay}"`);
  }
  return {
    tracesEndpoint: url.href,
    serviceName: env.OTEL_SERVICE_NAME?.trim() || 'reins',
    scheduleDelayMs: delay ? Number(delay) : 5000,
  };
}

/**
 * The audit log's OTLP export: `audit.export.otlp.endpoint` (a base URL, records go to its `/v1/logs`), else
 * OTEL_EXPORTER_OTLP_LOGS_ENDPOINT (the full logs URL, used as is). Neither: off.
 */
function auditOtlp(
  o: { endpoint?: string; batchSize?: number; intervalSeconds?: number } | undefined,
  env: Record<string, string | undefined>,
): Config['audit']['otlp'] {
  const logs = env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT?.trim();
  let logsUrl: string;
  if (o?.endpoint) logsUrl = `${o.endpoint.replace(/\/+$/, '')}/v1/logs`;
  else if (logs) logsUrl = logs;
  else return null;
  try {
    const url = new URL(logsUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http');
    logsUrl = url.href;
  } catch {
    throw new ConfigError(o?.endpoint ? 'audit.export.otlp.endpoint' : 'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT', `must be an http:// or https:// URL, got "${logsUrl}"`);
  }
  return { logsUrl, batchSize: o?.batchSize ?? 1000, intervalSeconds: o?.intervalSeconds ?? 1 };
}

export class ConfigError extends Error {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(`configuration: ${key}: ${message}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** `${VAR}` and `${VAR:-default}` in string values; an unset variable without a default names the key. */
function interpolate(value: unknown, env: Env, path: string): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_m, name: string, fallback?: string) => {
      const v = env[name];
      if (v !== undefined && v !== '') return v;
      if (fallback !== undefined) return fallback;
      throw new ConfigError(path || '(root)', `refers to environment variable ${name}, which is not set (use \${${name}:-default} for a default)`);
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, env, `${path}[${i}]`));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, interpolate(v, env, path ? `${path}.${k}` : k)]),
    );
  }
  return value;
}

/** Turns the first schema error into a message that names the key the way the YAML spells it. */
function firstSchemaError(schema: TSchema, value: unknown): ConfigError | null {
  for (const e of Value.Errors(schema, value)) {
    const segments = e.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    const key = segments.map((s, i) => (/^\d+$/.test(s) ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
    if (e.keyword === 'additionalProperties') {
      const extra = (e.params as { additionalProperties?: string[] }).additionalProperties ?? [];
      const name = extra[0] ?? '?';
      return new ConfigError(key ? `${key}.${name}` : name, 'unknown key');
    }
    if (e.keyword === 'boolean') continue; // reported by its additionalProperties twin
    if (e.keyword === 'required') {
      // Named as the missing key itself (`auth.oidc.issuer: is required`), not as its parent.
      const params = e.params as { requiredProperties?: string[]; missingProperty?: string };
      const name = params.requiredProperties?.[0] ?? params.missingProperty;
      if (name) return new ConfigError(key ? `${key}.${name}` : name, 'is required');
    }
    return new ConfigError(key || '(root)', e.message);
  }
  return null;
}

function intFromEnv(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(name, `must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

export function loadConfig(env: Env = process.env, fileText?: string): Config {
  let file: unknown = {};
  const path = env.REINS_CONFIG;
  const text = fileText ?? (path ? readConfigFile(path) : undefined);
  if (text !== undefined) {
    try {
      file = parseYaml(text) ?? {};
    } catch (err) {
      throw new ConfigError('REINS_CONFIG', `not valid YAML: ${(err as Error).message}`);
    }
    if (typeof file !== 'object' || Array.isArray(file)) throw new ConfigError('(root)', 'must be a mapping of keys');
  }
  file = interpolate(file, env, '');
  const schemaError = firstSchemaError(FileConfig, file);
  if (schemaError) throw schemaError;
  const f = file as FileConfig;

  const names = new Set<string>();
  for (const [i, s] of (f.mcpServers ?? []).entries()) {
    if (names.has(s.name)) throw new ConfigError(`mcpServers[${i}].name`, `duplicate server name "${s.name}"`);
    if (s.name === 'reins') throw new ConfigError(`mcpServers[${i}].name`, '"reins" is the built-in server');
    names.add(s.name);
  }
  for (const [i, entry] of (f.egress?.deniedNetworks ?? []).entries()) {
    const parsed = parseNetwork(entry);
    if ('error' in parsed) throw new ConfigError(`egress.deniedNetworks[${i}]`, parsed.error);
  }

  if (f.auth?.tokenSignIn === 'off' && !f.auth.oidc) {
    throw new ConfigError('auth.tokenSignIn', '"off" needs auth.oidc: without it nobody could sign in to the console');
  }

  const bootstrap = env.REINS_BOOTSTRAP_ADMIN_TOKEN;
  if (bootstrap !== undefined && bootstrap !== '' && bootstrap.length < 16) {
    throw new ConfigError('REINS_BOOTSTRAP_ADMIN_TOKEN', 'must be at least 16 characters');
  }
  const databaseUrl = env.DATABASE_URL;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL', 'must be a postgres:// or postgresql:// URL');
  }
  const migrations = env.REINS_MIGRATE || 'auto';
  if (migrations !== 'auto' && migrations !== 'off') throw new ConfigError('REINS_MIGRATE', `must be auto or off, got "${migrations}"`);
  const logLevel = env.LOG_LEVEL ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of fatal, error, warn, info, debug, trace, silent`);
  }

  const config: Config = {
    host: env.HOST || '127.0.0.1',
    port: intFromEnv(env, 'PORT', 8080, 0, 65535),
    logLevel,
    store: databaseUrl
      ? { kind: 'postgres', url: databaseUrl }
      : { kind: 'pglite', dataDir: env.REINS_DATA_DIR || './.reins-data' },
    migrations,
    ...(bootstrap ? { bootstrapAdminToken: bootstrap } : {}),
    deployment: f.deployment ?? 'self-hosted',
    providers: upstreams(f.providers ?? {}),
    mcpServers: (f.mcpServers ?? []).map((s) => ({ name: s.name, url: s.url, headers: s.headers ?? {} })),
    egress: f.egress ? { port: f.egress.port, deniedNetworks: f.egress.deniedNetworks ?? [...DEFAULT_DENIED_NETWORKS] } : null,
    runtimeGuard: {
      configured: f.runtimeGuard !== undefined,
      enabled: f.runtimeGuard?.enabled ?? false,
      selfService: f.runtimeGuard?.selfService ?? 'reins/reins',
      sensor: {
        metricsTargets: f.runtimeGuard?.sensor?.metricsTargets ?? [],
        scrapeIntervalSeconds: f.runtimeGuard?.sensor?.scrapeIntervalSeconds ?? 15,
      },
      clusterEnv: {
        ...(env.KUBERNETES_SERVICE_HOST ? { KUBERNETES_SERVICE_HOST: env.KUBERNETES_SERVICE_HOST } : {}),
        ...(env.KUBECONFIG ? { KUBECONFIG: env.KUBECONFIG } : {}),
      },
    },
    identity: { tierRefreshSeconds: f.identity?.tierRefreshSeconds ?? 30 },
    sessions: { ttlSeconds: f.sessions?.ttlSeconds ?? 12 * 3600 },
    auth: { oidc: f.auth?.oidc ? oidcConfig(f.auth.oidc) : null, tokenSignIn: f.auth?.tokenSignIn ?? 'all' },
    prices: f.prices ?? {},
    gateway: {
      auditQueue: f.gateway?.auditQueue ?? 20_000,
      rulesRefreshSeconds: f.gateway?.rulesRefreshSeconds ?? 30,
      hideDeniedTools: f.gateway?.hideDeniedTools ?? false,
      heldKeepAliveSeconds: f.gateway?.heldKeepAliveSeconds ?? 10,
      mcpAllowedOrigins: (f.gateway?.mcpAllowedOrigins ?? []).map((o, i) => {
        if (o === '*') return o;
        // Compared with the browser's Origin header, which is the URL's serialised origin (lower-case host, no default port).
        try {
          return new URL(o).origin;
        } catch {
          throw new ConfigError(`gateway.mcpAllowedOrigins[${i}]`, `not an origin: ${o}`);
        }
      }),
      mcpHeldAnswerSeconds: f.gateway?.mcpHeldAnswerSeconds ?? 45,
    },
    audit: {
      retentionDays: f.audit?.retentionDays ?? 90,
      maintenanceSeconds: f.audit?.maintenanceSeconds ?? 300,
      otlp: auditOtlp(f.audit?.export?.otlp, env),
    },
    approvals: {
      expirySweepSeconds: f.approvals?.expirySweepSeconds ?? 15,
      webhook: f.approvals?.webhook
        ? { url: f.approvals.webhook.url, secret: f.approvals.webhook.secret, intervalSeconds: f.approvals.webhook.intervalSeconds ?? 2, maxAttempts: f.approvals.webhook.maxAttempts ?? 10 }
        : null,
    },
    http: {
      bodyLimitBytes: f.http?.bodyLimitBytes ?? 1024 * 1024,
      trustProxy: f.http?.trustProxy ?? false,
      failedAuthLimit: f.http?.failedAuthLimit ?? 20,
      failedAuthWindowSeconds: f.http?.failedAuthWindowSeconds ?? 60,
    },
    tls: f.tls ? { certFile: f.tls.certFile, keyFile: f.tls.keyFile } : null,
    tracing: tracingFromEnv(env),
    shutdown: { delaySeconds: f.shutdown?.delaySeconds ?? 0 },
  };
  return config;
}

/** Loopback hosts, where an http:// issuer or redirect URL is allowed (a provider on the same machine, tests). */
function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** An absolute https:// URL (http:// on loopback only), else a ConfigError naming the key. */
function secureUrl(raw: string, key: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(key, `must be an absolute https:// URL, got "${raw}"`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    throw new ConfigError(key, `must be an https:// URL (http:// only on localhost/127.0.0.1/[::1]), got "${raw}"`);
  }
  if (url.hash !== '') throw new ConfigError(key, 'must not have a #fragment');
  return url;
}

/** `auth.oidc`, checked beyond its schema: URLs, the identity namespace, the role map, the callback path. */
function oidcConfig(o: NonNullable<NonNullable<FileConfig['auth']>['oidc']>): OidcConfig {
  const issuer = secureUrl(o.issuer, 'auth.oidc.issuer');
  const redirect = secureUrl(o.redirectUrl, 'auth.oidc.redirectUrl');
  if (redirect.pathname !== '/auth/oidc/callback' || redirect.search !== '') {
    throw new ConfigError('auth.oidc.redirectUrl', `must be this deployment's /auth/oidc/callback (no query), got "${o.redirectUrl}"`);
  }
  const scopes = o.scopes ?? ['openid', 'email', 'profile', 'groups'];
  if (!scopes.includes('openid')) throw new ConfigError('auth.oidc.scopes', 'must include "openid"');
  const namespace = o.identity?.namespace ?? 'people';
  if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(namespace)) {
    throw new ConfigError('auth.oidc.identity.namespace', 'must be a namespace of identity ids: lowercase letters, digits and "-", at most 63');
  }
  const roles = { admin: o.roles?.admin ?? [], viewer: o.roles?.viewer ?? [], developer: o.roles?.developer ?? [] };
  if (roles.admin.length + roles.viewer.length + roles.developer.length === 0) {
    throw new ConfigError('auth.oidc.roles', 'must map at least one group to a role (admin, viewer, developer); "*" is anyone the provider signs in');
  }
  return {
    // The issuer exactly as written: the ID token's `iss` must equal the discovered issuer, which must equal this.
    issuer: o.issuer,
    clientId: o.clientId,
    ...(o.clientSecret !== undefined && o.clientSecret !== '' ? { clientSecret: o.clientSecret } : {}),
    redirectUrl: redirect.href,
    scopes,
    identity: { claim: o.identity?.claim ?? 'email', namespace },
    roles,
    groupsClaim: o.groupsClaim ?? 'groups',
    maxSessionSeconds: o.maxSessionSeconds ?? 12 * 3600,
    displayName: o.displayName ?? issuer.host,
  };
}

/** Each entry with its kind: written, or the name's own for openai, anthropic and bedrock; else a ConfigError naming the field. */
function upstreams(entries: NonNullable<FileConfig['providers']>): Record<string, ProviderSettings> {
  const out: Record<string, ProviderSettings> = {};
  for (const [name, entry] of Object.entries(entries)) {
    if (!new RegExp(UPSTREAM_NAME).test(name)) {
      throw new ConfigError(`providers.${name}`, 'an upstream name is lowercase letters, digits and dashes (it is the path segment of /llm/<name>)');
    }
    const kind = entry.kind ?? DEFAULT_KIND_NAMES.find((k) => k === name);
    if (kind === undefined) {
      throw new ConfigError(`providers.${name}.kind`, `is required for an upstream not named openai, anthropic or bedrock (one of ${PROVIDER_KINDS.join(', ')})`);
    }
    out[name] = { ...entry, kind };
  }
  return out;
}

/** A URL's password, as written and decoded (`p%40ss` and `p@ss`); none when it has none or is no URL. */
function urlPasswords(url: string | undefined): string[] {
  if (!url) return [];
  try {
    const raw = new URL(url).password;
    if (!raw) return [];
    try {
      return [raw, decodeURIComponent(raw)];
    } catch {
      return [raw];
    }
  } catch {
    return [];
  }
}

/**
 * The shortest value that counts as a secret of Reins' own (`ownSecrets`; held-calls/redact.ts skips shorter ones):
 * a shorter configured value (a region, `true`, a port) would redact ordinary words of a prompt, and is no
 * credential anyway (the bootstrap admin secret and webhook secrets must have 16 characters).
 */
export const MIN_OWN_SECRET_LENGTH = 8;

/**
 * The secret values this configuration holds, for redaction from what Reins shows (held prompts' excerpts): the
 * bootstrap admin secret, the providers' API keys, every MCP server header value (and its credential after a
 * scheme word, `Bearer <token>`), the approval webhook's signing secret, and the passwords in DATABASE_URL and
 * the configured URLs (providers, MCP servers, webhook, sensor metrics targets). Only values of at least
 * MIN_OWN_SECRET_LENGTH characters: a shorter value is no credential and would redact ordinary words.
 */
export function ownSecrets(config: Config): string[] {
  const values: (string | undefined)[] = [config.bootstrapAdminToken];
  for (const provider of Object.values(config.providers)) {
    values.push(provider?.apiKey, ...urlPasswords(provider?.baseUrl));
  }
  for (const server of config.mcpServers) {
    values.push(...urlPasswords(server.url));
    for (const value of Object.values(server.headers)) {
      values.push(value.trim(), value.trim().split(/[ \t]+/).slice(1).join(' '));
    }
  }
  if (config.auth.oidc?.clientSecret) values.push(config.auth.oidc.clientSecret);
  if (config.approvals.webhook) values.push(config.approvals.webhook.secret, ...urlPasswords(config.approvals.webhook.url));
  for (const target of config.runtimeGuard.sensor.metricsTargets) values.push(...urlPasswords(target));
  if (config.store.kind === 'postgres') values.push(...urlPasswords(config.store.url));
  return [...new Set(values.filter((v): v is string => v !== undefined && v.length >= MIN_OWN_SECRET_LENGTH))];
}

function readConfigFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError('REINS_CONFIG', `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** A configuration for tests and embedding: defaults plus overrides, no environment. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return { ...loadConfig({ REINS_DATA_DIR: 'memory' }), ...overrides };
}
