import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../../src/config/config.js';

const load = (yaml: string, env: Record<string, string> = {}) => loadConfig({ REINS_DATA_DIR: 'memory', ...env }, yaml);

function refuses(yaml: string, key: string, env: Record<string, string> = {}) {
  assert.throws(
    () => load(yaml, env),
    (err: unknown) => err instanceof ConfigError && err.key === key && err.message.includes(key),
    `expected a ConfigError naming ${key}`,
  );
}

describe('configuration', () => {
  test('defaults: embedded store in ./.reins-data, 127.0.0.1:8080, self-hosted, runtime guard off', () => {
    const c = loadConfig({});
    assert.deepEqual(c.store, { kind: 'pglite', dataDir: './.reins-data' });
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.port, 8080);
    assert.equal(c.deployment, 'self-hosted');
    assert.equal(c.runtimeGuard.enabled, false);
    assert.equal(c.runtimeGuard.selfService, 'reins/reins');
    assert.equal(c.identity.tierRefreshSeconds, 30);
    assert.equal(c.egress, null);
  });

  test('DATABASE_URL selects PostgreSQL; REINS_DATA_DIR=memory keeps PGlite in memory', () => {
    assert.deepEqual(loadConfig({ DATABASE_URL: 'postgres://h/db' }).store, { kind: 'postgres', url: 'postgres://h/db' });
    assert.deepEqual(loadConfig({ REINS_DATA_DIR: 'memory' }).store, { kind: 'pglite', dataDir: 'memory' });
  });

  test('the documented example file loads, with ${VAR} interpolation', () => {
    const c = load(
      `
deployment: self-hosted
providers:
  openai:    { baseUrl: "https://api.openai.com",    apiKey: "\${OPENAI_API_KEY}" }
  anthropic: { baseUrl: "https://api.anthropic.com", apiKey: "\${ANTHROPIC_API_KEY}" }
  bedrock:   { baseUrl: "https://bedrock-runtime.us-east-1.amazonaws.com", region: "us-east-1" }
mcpServers:
  - { name: github, url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer \${GITHUB_MCP_TOKEN}" } }
egress: { port: 8081 }
runtimeGuard:
  enabled: false
  selfService: reins/reins
  sensor:
    metricsTargets: []
    scrapeIntervalSeconds: 15
`,
      { OPENAI_API_KEY: 'sk-o', ANTHROPIC_API_KEY: 'sk-a', GITHUB_MCP_TOKEN: 'gh' },
    );
    assert.equal(c.providers.openai?.apiKey, 'sk-o');
    assert.equal(c.mcpServers[0]?.headers.Authorization, 'Bearer gh');
    // Absent: loopback, unspecified, link-local and private ranges (Smokescreen's default).
    assert.deepEqual(c.egress, {
      port: 8081,
      deniedNetworks: ['127.0.0.0/8', '::1/128', '0.0.0.0/8', '::/128', '169.254.0.0/16', 'fe80::/10', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', 'fc00::/7'],
    });
  });

  test('failed credentials: 20 per address and 60 s window by default, both configurable under http', () => {
    const c = loadConfig({});
    assert.deepEqual({ limit: c.http.failedAuthLimit, window: c.http.failedAuthWindowSeconds }, { limit: 20, window: 60 });
    const set = load('http: { failedAuthLimit: 5, failedAuthWindowSeconds: 300 }');
    assert.deepEqual({ limit: set.http.failedAuthLimit, window: set.http.failedAuthWindowSeconds }, { limit: 5, window: 300 });
  });

  test('egress.deniedNetworks replaces the default list; [] turns the address check off', () => {
    assert.deepEqual(load('egress: { port: 8081, deniedNetworks: ["10.0.0.0/8", "fd00::/8", "192.0.2.7"] }').egress?.deniedNetworks, ['10.0.0.0/8', 'fd00::/8', '192.0.2.7']);
    assert.deepEqual(load('egress: { port: 8081, deniedNetworks: [] }').egress?.deniedNetworks, []);
  });

  test('audit retention: 90 days by default, 0 keeps everything', () => {
    assert.deepEqual(load('').audit, { retentionDays: 90, maintenanceSeconds: 300, otlp: null });
    assert.equal(load('audit: { retentionDays: 0 }').audit.retentionDays, 0);
    assert.equal(load('audit: { retentionDays: 365, maintenanceSeconds: 60 }').audit.maintenanceSeconds, 60);
  });

  test('audit OTLP export: the endpoint is a base URL (/v1/logs added), OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is used as is', () => {
    assert.deepEqual(load('audit: { export: { otlp: { endpoint: "http://collector:4318/" } } }').audit.otlp, { logsUrl: 'http://collector:4318/v1/logs', batchSize: 1000, intervalSeconds: 1 });
    assert.equal(load('', { OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: 'https://c.example/custom/logs' }).audit.otlp?.logsUrl, 'https://c.example/custom/logs');
    refuses('', 'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT', { OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: 'nope' });
  });

  test('${VAR:-default} supplies a default; an unset ${VAR} names the key', () => {
    assert.equal(load('providers: { openai: { baseUrl: "https://x.test", apiKey: "${NOPE:-fallback}" } }').providers.openai?.apiKey, 'fallback');
    refuses('providers: { openai: { baseUrl: "https://x.test", apiKey: "${NOPE}" } }', 'providers.openai.apiKey');
  });

  const bad: [string, string, string][] = [
    ['unknown top-level key', 'colour: blue', 'colour'],
    ['unknown nested key', 'runtimeGuard: { enabeld: true }', 'runtimeGuard.enabeld'],
    ['bad enum', 'deployment: cloud', 'deployment'],
    ['bad type', 'runtimeGuard: { enabled: "yes" }', 'runtimeGuard.enabled'],
    ['bad port', 'egress: { port: 70000 }', 'egress.port'],
    ['a denied network that is not one', 'egress: { port: 1, deniedNetworks: ["10.0.0.0/8", "intranet"] }', 'egress.deniedNetworks[1]'],
    ['a denied network with a bad prefix', 'egress: { port: 1, deniedNetworks: ["10.0.0.0/33"] }', 'egress.deniedNetworks[0]'],
    ['bad interval', 'runtimeGuard: { sensor: { scrapeIntervalSeconds: 0 } }', 'runtimeGuard.sensor.scrapeIntervalSeconds'],
    ['bad url in a list', 'mcpServers: [ { name: a, url: "ftp://x" } ]', 'mcpServers[0].url'],
    ['provider path instead of origin', 'providers: { openai: { baseUrl: "https://api.openai.com/v1" } }', 'providers.openai.baseUrl'],
    ['duplicate MCP server', 'mcpServers: [ { name: a, url: "http://x" }, { name: a, url: "http://y" } ]', 'mcpServers[1].name'],
    ['reserved MCP server name', 'mcpServers: [ { name: reins, url: "http://x" } ]', 'mcpServers[0].name'],
    ['tier refresh above 30 s', 'identity: { tierRefreshSeconds: 60 }', 'identity.tierRefreshSeconds'],
    ['a failed-auth limit of 0', 'http: { failedAuthLimit: 0 }', 'http.failedAuthLimit'],
    ['a fractional failed-auth limit', 'http: { failedAuthLimit: 2.5 }', 'http.failedAuthLimit'],
    ['a failed-auth window over a day', 'http: { failedAuthWindowSeconds: 86401 }', 'http.failedAuthWindowSeconds'],
    ['an unknown http key', 'http: { failedAuthLimt: 5 }', 'http.failedAuthLimt'],
    ['a negative retention', 'audit: { retentionDays: -1 }', 'audit.retentionDays'],
    ['a fractional retention', 'audit: { retentionDays: 1.5 }', 'audit.retentionDays'],
    ['an unknown audit key', 'audit: { retentionDay: 30 }', 'audit.retentionDay'],
    ['an OTLP endpoint that is no URL', 'audit: { export: { otlp: { endpoint: "collector:4318" } } }', 'audit.export.otlp.endpoint'],
    ['not a mapping', '- a\n- b', '(root)'],
    ['an upstream of no known name without kind', 'providers: { vllm: { baseUrl: "http://vllm.ml:8000" } }', 'providers.vllm.kind'],
    ['an unknown kind', 'providers: { vllm: { kind: llama, baseUrl: "http://vllm.ml:8000" } }', 'providers.vllm.kind'],
    ['an upstream name with capitals', 'providers: { VLLM: { kind: openai-compatible, baseUrl: "http://vllm.ml:8000" } }', 'providers.VLLM'],
  ];
  test('providers: kind defaults to the name for openai, anthropic and bedrock; other names say theirs', () => {
    const c = load(`
providers:
  openai: { baseUrl: "https://api.openai.com", apiKey: "sk-o" }
  bedrock: { baseUrl: "https://bedrock-runtime.us-east-1.amazonaws.com", region: us-east-1 }
  vllm: { kind: openai-compatible, baseUrl: "http://vllm.ml:8000" }
  azure-eu: { kind: azure-openai, baseUrl: "https://acme-eu.openai.azure.com", apiKey: "az" }
  gemini: { kind: gemini, baseUrl: "https://generativelanguage.googleapis.com", apiKey: "g" }
  openai-eu: { kind: openai, baseUrl: "https://eu.api.openai.com", apiKey: "sk-eu" }
`);
    assert.deepEqual(
      Object.fromEntries(Object.entries(c.providers).map(([name, p]) => [name, p.kind])),
      { openai: 'openai', bedrock: 'bedrock', vllm: 'openai-compatible', 'azure-eu': 'azure-openai', gemini: 'gemini', 'openai-eu': 'openai' },
    );
    assert.equal(c.providers.vllm?.apiKey, undefined);
  });

  for (const [what, yaml, key] of bad) test(`${what} stops start-up naming ${key}`, () => refuses(yaml, key));

  test('gateway.mcpAllowedOrigins: origins (normalised) or "*", default none; mcpHeldAnswerSeconds defaults to 45', () => {
    assert.deepEqual(loadConfig({}).gateway.mcpAllowedOrigins, []);
    assert.equal(loadConfig({}).gateway.mcpHeldAnswerSeconds, 45);
    assert.deepEqual(load('gateway: { mcpAllowedOrigins: ["https://App.example.com/", "*"], mcpHeldAnswerSeconds: 20 }').gateway.mcpAllowedOrigins, ['https://app.example.com', '*']);
    refuses('gateway: { mcpAllowedOrigins: ["https://app.example.com/path"] }', 'gateway.mcpAllowedOrigins[0]');
    refuses('gateway: { mcpAllowedOrigins: ["*", "app.example.com"] }', 'gateway.mcpAllowedOrigins[1]');
    refuses('gateway: { mcpAllowedOrigins: ["https://[bad"] }', 'gateway.mcpAllowedOrigins[0]');
    refuses('gateway: { mcpHeldAnswerSeconds: 0 }', 'gateway.mcpHeldAnswerSeconds');
  });

  test('invalid YAML names REINS_CONFIG', () => refuses('a: [', 'REINS_CONFIG'));
  test('bad environment values are named', () => {
    refuses('', 'PORT', { PORT: 'eighty' });
    refuses('', 'PORT', { PORT: '65536' });
    refuses('', 'DATABASE_URL', { DATABASE_URL: 'mysql://x' });
    refuses('', 'REINS_BOOTSTRAP_ADMIN_TOKEN', { REINS_BOOTSTRAP_ADMIN_TOKEN: 'short' });
    refuses('', 'LOG_LEVEL', { LOG_LEVEL: 'loud' });
  });
  test('a missing config file names REINS_CONFIG', () => {
    assert.throws(() => loadConfig({ REINS_CONFIG: '/nonexistent/reins.yaml' }), (e: unknown) => e instanceof ConfigError && e.key === 'REINS_CONFIG');
  });
});
