import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decideEnablement, DISABLED_REASONS, shouldStartCluster, type EnablementInput } from '../../../src/runtime-guard/enablement.js';

const inCluster = { kind: 'in-cluster' as const };
const eligible: EnablementInput = { deployment: 'self-hosted', environment: inCluster, configured: true, enabled: true, clusterStarted: true };

const cases: Array<[string, Partial<EnablementInput>, string | null]> = [
  ['everything in place: enabled', {}, null],
  ['SaaS fails closed even with the flag true', { deployment: 'saas' }, DISABLED_REASONS.saas],
  ['SaaS comes before the environment check', { deployment: 'saas', environment: null }, DISABLED_REASONS.saas],
  ['SaaS comes before "not configured"', { deployment: 'saas', configured: false, enabled: false }, DISABLED_REASONS.saas],
  ['no cluster: the flag is irrelevant', { environment: null }, DISABLED_REASONS.notInCluster],
  ['no cluster comes before "not configured"', { environment: null, configured: false, enabled: false }, DISABLED_REASONS.notInCluster],
  ['a kubeconfig cluster is a cluster', { environment: { kind: 'kubeconfig', kubeconfigPath: '/k' } }, null],
  ['no runtimeGuard section', { configured: false, enabled: false }, DISABLED_REASONS.notConfigured],
  ['runtimeGuard.enabled: false', { enabled: false }, DISABLED_REASONS.disabledByConfig],
  ['disabled by config comes before inactive', { enabled: false, clusterStarted: false }, DISABLED_REASONS.disabledByConfig],
  ['the cluster side did not start: inactive on this replica', { clusterStarted: false }, DISABLED_REASONS.inactive],
];

for (const [name, change, reason] of cases) {
  test(`enablement: ${name}`, () => {
    const got = decideEnablement({ ...eligible, ...change });
    assert.deepEqual(got, reason === null ? { enabled: true } : { enabled: false, reason });
  });
}

test('the reason strings are the spec\'s, word for word', () => {
  assert.deepEqual(Object.values(DISABLED_REASONS).sort(), [
    'disabled by config',
    'not running in a cluster',
    'the service is enabled but inactive on this replica (no cluster API access or no shared store)',
    'the service is not configured',
    'unavailable on vendor-hosted (SaaS) tenants',
  ]);
});

test('the cluster side is started only when every other check passed', () => {
  const { clusterStarted: _ignored, ...base } = eligible;
  assert.equal(shouldStartCluster(base), true);
  assert.equal(shouldStartCluster({ ...base, deployment: 'saas' }), false);
  assert.equal(shouldStartCluster({ ...base, environment: null }), false);
  assert.equal(shouldStartCluster({ ...base, configured: false }), false);
  assert.equal(shouldStartCluster({ ...base, enabled: false }), false);
});
