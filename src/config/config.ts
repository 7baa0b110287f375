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
const ProviderConfig = Type.Object(
  {
    baseUrl: Origin,
    apiKey: Type.Optional(Type.String()),
    region: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);

const FileConfig = Type.Object(
  {
    deployment: Type.Optional(Type.Union([Type.Literal('self-hosted'), Type.Literal('saas')])),
    providers: Type.Optional(
      Type.Object(
        {
          openai: Type.Optional(ProviderConfig),
          anthropic: Type.Optional(ProviderConfig),
          bedrock: Type.Optional(ProviderConfig),
        },
        { additionalProperties: false },
      ),
    ),
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
    sessions: Type.Optional(
      Type.Object(
        { ttlSeconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 30 * 24 * 3600 })) },
        { additionalProperties: false },
      ),
    ),
    // USD per million tokens by model glob ("gpt-4o*") or provider-qualified glob ("bedrock:*"); over the defaults.
    prices: Type.Optional(
      Type.Record(
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
      ),
    ),
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
  },
  { additionalProperties: false },
);
export type FileConfig = Static<typeof FileConfig>;

/** The LLM providers Reins forwards to (`/llm/<provider>`), and the keys of `providers` in the configuration. */
export type ProviderName = 'openai' | 'anthropic' | 'bedrock';

export interface ProviderSettings {
  baseUrl: string;
  apiKey?: string;
  region?: string;
}

export interface Config {
  host: string;
  port: number;
  logLevel: string;
  store: { kind: 'postgres'; url: string } | { kind: 'pglite'; dataDir: string | 'memory' };
  bootstrapAdminToken?: string;
  deployment: 'self-hosted' | 'saas';
  providers: { openai?: ProviderSettings; anthropic?: ProviderSettings; bedrock?: ProviderSettings };
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
  approvals: {
    expirySweepSeconds: number;
    webhook: { url: string; secret: string; intervalSeconds: number; maxAttempts: number } | null;
  };
  http: { bodyLimitBytes: number; trustProxy: boolean; failedAuthLimit: number; failedAuthWindowSeconds: number };
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

  const bootstrap = env.REINS_BOOTSTRAP_ADMIN_TOKEN;
  if (bootstrap !== undefined && bootstrap !== '' && bootstrap.length < 16) {
    throw new ConfigError('REINS_BOOTSTRAP_ADMIN_TOKEN', 'must be at least 16 characters');
  }
  const databaseUrl = env.DATABASE_URL;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL', 'must be a postgres:// or postgresql:// URL');
  }
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
    ...(bootstrap ? { bootstrapAdminToken: bootstrap } : {}),
    deployment: f.deployment ?? 'self-hosted',
    providers: { ...f.providers },
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
  };
  return config;
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
