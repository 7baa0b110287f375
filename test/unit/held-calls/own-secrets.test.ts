/** Reins' own secret values: which the configuration yields, and their exact-text redaction. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig, MIN_OWN_SECRET_LENGTH, ownSecrets } from '../../../src/config/config.js';
import { promptExcerpt, redactCredentials, redactOwnSecrets } from '../../../src/held-calls/redact.js';

const yaml = `
providers:
  openai: { baseUrl: "https://proxy:proxy-pass-9@llm.internal", apiKey: "openai-configured-key" }
  anthropic: { baseUrl: "https://api.anthropic.com", apiKey: "short" }
mcpServers:
  - name: tickets
    url: https://mcp.internal/mcp
    headers: { Authorization: "Bearer mcp-upstream-credential", X-Tenant: "acme" }
approvals:
  webhook: { url: "https://hooks.internal/reins", secret: "webhook-signing-secret-1" }
`;

test('the configuration yields its secret values of 8 characters or more, and nothing else', () => {
  const config = loadConfig(
    { DATABASE_URL: 'postgres://reins:db%40pass-77@db:5432/reins', REINS_BOOTSTRAP_ADMIN_TOKEN: 'bootstrap-admin-secret-42' },
    yaml,
  );
  assert.deepEqual(new Set(ownSecrets(config)), new Set([
    'bootstrap-admin-secret-42',
    'openai-configured-key',
    'proxy-pass-9',
    'Bearer mcp-upstream-credential',
    'mcp-upstream-credential',
    'webhook-signing-secret-1',
    'db%40pass-77',
    'db@pass-77',
  ]));
  assert.ok(ownSecrets(config).every((s) => s.length >= MIN_OWN_SECRET_LENGTH));
  assert.deepEqual(ownSecrets(loadConfig({ REINS_DATA_DIR: 'memory' })), []);
});

test('own secrets are replaced by their exact text, overlapping and repeated ones included', () => {
  const secrets = ['plain-words-secret', 'words-secret-and-more', 'tiny'];
  assert.equal(
    redactOwnSecrets('a plain-words-secret-and-more b plain-words-secret c tiny', secrets),
    'a [REDACTED:reins-secret] b [REDACTED:reins-secret] c tiny',
  );
  assert.equal(redactOwnSecrets('nothing here', secrets), 'nothing here');
  assert.equal(redactOwnSecrets('x'.repeat(20), ['xxxxxxxx']), '[REDACTED:reins-secret][REDACTED:reins-secret]xxxx');
});

test('own secrets go first, then the format rules; the excerpt is cut after both', () => {
  const own = ['configured-provider-key'];
  assert.equal(redactCredentials('key=configured-provider-key', own), 'key=[REDACTED:reins-secret]');
  assert.equal(redactCredentials('use configured-provider-key now', own), 'use [REDACTED:reins-secret] now');
  assert.equal(redactCredentials('use configured-provider-key now'), 'use configured-provider-key now');
  const excerpt = promptExcerpt(`${'a'.repeat(30)} configured-provider-key`, 40, own);
  assert.ok(!excerpt.includes('configured'), excerpt);
});
