/**
 * The answer path warmed at start: the first reconciliation answer after a start ran 3-4x slower than warm ones
 * until V8 had optimised the engine, so a replica runs the computation on a small made-up day first.
 */
import { GovernedCallIndex } from './governed-calls.js';
import { ObservationIndex } from './observation-index.js';
import { reconcile } from './reconciliation.js';
import type { ClusterFacts, Observation } from './types.js';
import { resolveWindow } from './window.js';

/**
 * Runs the reconciliation answer's computation (the index's window sums, the governed calls', the engine) several
 * times over a small made-up cluster and day, so that V8 has compiled and optimised it before the first real answer:
 * run cold on a day of a large cluster the engine took 3–4 times as long as warm. Its own objects only: no store, no
 * cached answer (an answer is always computed from the rows committed before its request).
 */
export function warmUpAnswerPath(rounds = 30): void {
  const nowUnix = 1_700_000_000;
  const window = resolveWindow(nowUnix, '24h');
  const facts: ClusterFacts = {
    fetchedAtUnix: nowUnix,
    complete: true,
    pods: [],
    replicaSets: [],
    jobs: [],
    services: [
      { namespace: 'kube-system', name: 'kube-dns', clusterIPs: ['10.96.0.10'] },
      { namespace: 'default', name: 'kubernetes', clusterIPs: ['10.96.0.1'] },
      { namespace: 'reins', name: 'reins', clusterIPs: ['10.96.7.7'] },
      { namespace: 'shared', name: 'backend', clusterIPs: ['10.96.9.9'] },
    ],
    endpointSlices: [],
    nodes: [{ name: 'node-a', addresses: ['192.168.0.1'] }],
    apiServerAddresses: [],
    clusterDnsAddresses: ['10.96.0.10'],
    selfService: { namespace: 'reins', name: 'reins' },
    selfPods: [{ namespace: 'reins', name: 'reins-0', ip: '10.244.255.1' }],
  };
  // Every path of the engine: providers, registries, names that are not findings (with their search-domain
  // expansions), in-cluster Services, cluster DNS, IMDS, an address nobody named, a name the sensor gave.
  const destinations: Array<[string, string]> = [
    ['api.openai.com', '162.159.140.245'],
    ['api.anthropic.com', '160.79.104.10'],
    ['pypi.org', '151.101.0.223'],
    ['github.com', '140.82.112.3'],
    ['backend.shared.svc.cluster.local', '10.96.9.9'],
    ['', '169.254.169.254'],
    ['', '203.0.113.9'],
  ];
  const observations = new ObservationIndex();
  const calls = new GovernedCallIndex();
  let n = 0;
  for (const namespace of ['warm-a', 'warm-b', 'warm-c', 'reins']) {
    for (let w = 0; w < 30; w++) {
      // Deployments of three pods, and single pods without an owner (a pod-level row).
      const owned = w % 5 !== 0;
      const rs = `app-${w}-5d8f`;
      if (owned) facts.replicaSets.push({ namespace, name: rs, ownerReferences: [{ kind: 'Deployment', name: `app-${w}`, controller: true }] });
      calls.add('llm', `${namespace}/app-${w}`, null, nowUnix - 60);
      calls.add('egress', `${namespace}/app-${w}`, 'api.openai.com:443', nowUnix - 60);
      for (let p = 0; p < (owned ? 3 : 1); p++) {
        n += 1;
        const podName = namespace === 'reins' && w === 0 && p === 0 ? 'reins-0' : `${rs}-${p}`;
        const podIP = `10.244.${n >> 8}.${n & 255}`;
        facts.pods.push({
          namespace,
          name: podName,
          ip: podIP,
          node: 'node-a',
          containers: [{ name: 'app', image: 'app:1' }],
          ownerReferences: owned ? [{ kind: 'ReplicaSet', name: rs, controller: true }] : [],
        });
        const base = { rule: 'warm-up', subject: '/app', node: 'node-a', podName, podIP, namespace, result: 'allowed', mode: 'monitor' };
        const add = (o: Omit<Observation, keyof typeof base>): void => observations.add({ ...base, ...o });
        for (let d = 0; d < destinations.length; d++) {
          if ((w + d) % 3 === 0) continue;
          const [name, ip] = destinations[d]!;
          const at = nowUnix - 60 - d;
          if (name !== '') {
            if (d === 0 || d === 3) add({ family: 'dns', behavior: 'dns-query', destName: `${name}.${namespace}.svc.cluster.local`, destIP: '', count: 1, observedAt: at });
            add({ family: 'dns', behavior: 'dns-query', destName: name, destIP: ip, count: 2, observedAt: at });
          }
          add({ family: 'network', behavior: 'tcp-connect', destName: d === 1 && w % 2 === 0 ? name : '', destIP: ip, count: 3, observedAt: at });
          if (d === 0) add({ family: 'network', behavior: 'udp-send', destName: '', destIP: '162.159.140.246', count: 1, observedAt: at });
        }
        add({ family: 'network', behavior: 'udp-send', destName: '', destIP: '10.96.0.10', count: 1, observedAt: nowUnix - 30 });
      }
    }
  }
  for (let i = 0; i < rounds; i++) {
    // A new facts object per round over the same arrays, as the informer cache hands them out; now and then stale
    // (the network detector's stand-down) or with the egress plane off.
    const stale = i % 6 === 5;
    reconcile({
      observations: observations.aggregate(window),
      facts: { ...facts, fetchedAtUnix: stale ? nowUnix - 3600 : nowUnix },
      governedCalls: calls.aggregate(window),
      window,
      egressPlaneEnabled: i % 4 !== 3,
      nowUnix,
    });
  }
}
