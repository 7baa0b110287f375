import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../src/config/config.js';

test('no runtimeGuard section: not configured; any section, even empty: configured', () => {
  assert.equal(loadConfig({}, 'deployment: self-hosted\n').runtimeGuard.configured, false);
  assert.equal(loadConfig({}).runtimeGuard.configured, false);
  assert.equal(loadConfig({}, 'runtimeGuard: {}\n').runtimeGuard.configured, true);
  const on = loadConfig({}, 'runtimeGuard:\n  enabled: true\n  sensor: { scrapeIntervalSeconds: 5 }\n').runtimeGuard;
  assert.equal(on.configured, true);
  assert.equal(on.enabled, true);
  assert.equal(on.sensor.scrapeIntervalSeconds, 5);
});

test('the cluster check reads the environment the configuration was loaded with, nothing else', () => {
  assert.deepEqual(loadConfig({ KUBECONFIG: '/etc/kube/config', PATH: '/bin' }).runtimeGuard.clusterEnv, { KUBECONFIG: '/etc/kube/config' });
  assert.deepEqual(loadConfig({ KUBERNETES_SERVICE_HOST: '10.96.0.1' }).runtimeGuard.clusterEnv, { KUBERNETES_SERVICE_HOST: '10.96.0.1' });
  assert.deepEqual(loadConfig({}).runtimeGuard.clusterEnv, {});
});
