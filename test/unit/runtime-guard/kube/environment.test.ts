import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { delimiter } from 'node:path';
import { detectClusterEnvironment, SERVICE_ACCOUNT_TOKEN_PATH } from '../../../../src/runtime-guard/kube/environment.js';
import { startFakeKubeApi } from '../../../fakes/fake-kube-api.js';

const KUBECONFIG_OK = `
apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster: { server: "https://10.0.0.1:6443" }
users:
- name: me
  user: { token: abc }
contexts:
- name: prod
  context: { cluster: prod, user: me }
current-context: prod
`;

/** A fake file system: path → content. */
function files(entries: Record<string, string>): [(p: string) => boolean, (p: string) => string] {
  return [
    (p) => p in entries,
    (p) => {
      const text = entries[p];
      if (text === undefined) throw new Error(`ENOENT: ${p}`);
      return text;
    },
  ];
}

describe('detectClusterEnvironment', () => {
  test('in a pod: KUBERNETES_SERVICE_HOST set and the service-account token mounted', () => {
    const [exists, read] = files({ [SERVICE_ACCOUNT_TOKEN_PATH]: 'token' });
    assert.deepEqual(detectClusterEnvironment({ KUBERNETES_SERVICE_HOST: '10.96.0.1' }, exists, read), { kind: 'in-cluster' });
  });

  test('the in-cluster check wins over a KUBECONFIG', () => {
    const [exists, read] = files({ [SERVICE_ACCOUNT_TOKEN_PATH]: 'token', '/k/config': KUBECONFIG_OK });
    assert.deepEqual(detectClusterEnvironment({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBECONFIG: '/k/config' }, exists, read), { kind: 'in-cluster' });
  });

  test('the service host without a mounted token is not a pod (automountServiceAccountToken: false)', () => {
    const [exists, read] = files({});
    assert.equal(detectClusterEnvironment({ KUBERNETES_SERVICE_HOST: '10.96.0.1' }, exists, read), null);
  });

  test('a mounted token without the service host is not a pod either', () => {
    const [exists, read] = files({ [SERVICE_ACCOUNT_TOKEN_PATH]: 'token' });
    assert.equal(detectClusterEnvironment({}, exists, read), null);
  });

  test('KUBECONFIG naming a file whose current context names a cluster', () => {
    const [exists, read] = files({ '/k/config': KUBECONFIG_OK });
    assert.deepEqual(detectClusterEnvironment({ KUBECONFIG: '/k/config' }, exists, read), { kind: 'kubeconfig', kubeconfigPath: '/k/config' });
  });

  test('a KUBECONFIG path list: the first file that names a cluster', () => {
    const [exists, read] = files({ '/k/empty': 'apiVersion: v1\nkind: Config\n', '/k/config': KUBECONFIG_OK });
    const env = { KUBECONFIG: ['/k/missing', '/k/empty', '/k/config'].join(delimiter) };
    assert.deepEqual(detectClusterEnvironment(env, exists, read), { kind: 'kubeconfig', kubeconfigPath: '/k/config' });
  });

  const refused: Array<[string, Record<string, string>]> = [
    ['the file does not exist', {}],
    ['no current context', { '/k/config': KUBECONFIG_OK.replace('current-context: prod', '') }],
    ['the current context is not defined', { '/k/config': KUBECONFIG_OK.replace('current-context: prod', 'current-context: staging') }],
    ['the context names an undefined cluster', { '/k/config': KUBECONFIG_OK.replace('{ cluster: prod, user: me }', '{ cluster: gone, user: me }') }],
    ['the file is not YAML', { '/k/config': ':\n  - [unbalanced' }],
    ['the file is empty', { '/k/config': '' }],
  ];
  for (const [why, fs] of refused) {
    test(`not running in a cluster when KUBECONFIG is set but ${why}`, () => {
      const [exists, read] = files(fs);
      assert.equal(detectClusterEnvironment({ KUBECONFIG: '/k/config' }, exists, read), null);
    });
  }

  test('nothing set: not running in a cluster', () => {
    const [exists, read] = files({});
    assert.equal(detectClusterEnvironment({}, exists, read), null);
    assert.equal(detectClusterEnvironment({ KUBECONFIG: '' }, exists, read), null);
  });

  test('with the real file system: the fake API server\'s kubeconfig', async () => {
    const api = await startFakeKubeApi();
    try {
      assert.deepEqual(detectClusterEnvironment({ KUBECONFIG: api.kubeconfigPath }), { kind: 'kubeconfig', kubeconfigPath: api.kubeconfigPath });
      assert.equal(detectClusterEnvironment({ KUBECONFIG: `${api.kubeconfigPath}.missing` }), null);
    } finally {
      await api.close();
    }
  });
});
