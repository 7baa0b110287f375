/**
 * The synthetic cluster and day of sensor evidence of the reconciliation benchmark: 2,000 workloads (Deployments
 * behind ReplicaSets, 3 pods each) in 20 namespaces on 20 nodes; each workload talks to a handful of destinations
 * (an AI provider or two for some, package registries, in-cluster Services, cluster DNS), seen as DNS questions
 * (with answers, search-domain expansions included) and connections. Deterministic: the same seed gives the same
 * day.
 */
import { kube, type FakeKubeApi } from '../../test/fakes/fake-kube-api.js';

export const NAMESPACES = 20;
/** `BENCH_WORKLOADS` (default 2,000; 20,000 for the every-workload-has-a-row figure) spread over the namespaces. */
export const WORKLOADS_PER_NAMESPACE = Math.max(1, Math.floor(Number(process.env.BENCH_WORKLOADS ?? 2000) / NAMESPACES));
export const PODS_PER_WORKLOAD = 3;
export const NODES = 20;
export const IN_CLUSTER_SERVICES = 200;

/** A small PRNG (mulberry32): deterministic evidence without a dependency. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Destination {
  name: string;
  ip: string;
}

const PROVIDERS: Destination[] = [
  { name: 'api.openai.com', ip: '162.159.140.245' },
  { name: 'api.anthropic.com', ip: '160.79.104.10' },
  { name: 'generativelanguage.googleapis.com', ip: '142.250.74.10' },
  { name: 'api.mistral.ai', ip: '104.18.20.1' },
  { name: 'api.groq.com', ip: '104.18.30.2' },
  { name: 'bedrock-runtime.us-east-1.amazonaws.com', ip: '52.94.0.20' },
];
const REGISTRIES: Destination[] = [
  { name: 'pypi.org', ip: '151.101.0.223' },
  { name: 'files.pythonhosted.org', ip: '151.101.1.63' },
  { name: 'registry.npmjs.org', ip: '104.16.0.35' },
  { name: 'ghcr.io', ip: '140.82.112.33' },
];
const OTHER_EXTERNAL: Destination[] = [
  { name: 'github.com', ip: '140.82.112.3' },
  { name: 'hooks.slack.com', ip: '3.120.0.10' },
];
const KUBE_DNS = '10.96.0.10';

export interface PodModel {
  namespace: string;
  name: string;
  ip: string;
  node: string;
  /** What the pod reaches: names with the address they resolve to ('' for in-cluster names). */
  destinations: Destination[];
}

export interface ClusterModel {
  pods: PodModel[];
  podsByNode: PodModel[][];
  nodes: string[];
}

function serviceIp(i: number): string {
  return `10.96.${10 + Math.floor(i / 250)}.${(i % 250) + 1}`;
}

export function buildModel(seed = 7): ClusterModel {
  const random = rng(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const nodes = Array.from({ length: NODES }, (_, i) => `node-${String(i).padStart(2, '0')}`);
  const pods: PodModel[] = [];
  let podIndex = 0;
  for (let n = 0; n < NAMESPACES; n++) {
    const namespace = `team-${String(n).padStart(2, '0')}`;
    for (let w = 0; w < WORKLOADS_PER_NAMESPACE; w++) {
      const workload = `svc-${String(w).padStart(3, '0')}`;
      // A workload's destinations: about a third reach AI providers around the gateway, most use registries and
      // in-cluster Services, everyone asks cluster DNS.
      const destinations: Destination[] = [];
      if (random() < 0.35) destinations.push(pick(PROVIDERS));
      if (random() < 0.1) destinations.push(pick(PROVIDERS));
      if (random() < 0.6) destinations.push(pick(REGISTRIES));
      if (random() < 0.3) destinations.push(pick(OTHER_EXTERNAL));
      for (let s = 0; s < 2; s++) {
        const i = Math.floor(random() * IN_CLUSTER_SERVICES);
        destinations.push({ name: `backend-${i}.shared.svc.cluster.local`, ip: serviceIp(i) });
      }
      for (let p = 0; p < PODS_PER_WORKLOAD; p++) {
        podIndex += 1;
        pods.push({
          namespace,
          name: `${workload}-6d5f7c9b8-${String(p).padStart(5, 'x')}`,
          ip: `10.${100 + Math.floor(podIndex / 62_500)}.${Math.floor(podIndex / 250) % 250}.${(podIndex % 250) + 1}`,
          node: nodes[podIndex % NODES]!,
          destinations,
        });
      }
    }
  }
  const podsByNode = nodes.map((node) => pods.filter((p) => p.node === node));
  return { pods, podsByNode, nodes };
}

/** The model's objects in the fake Kubernetes API (plus cluster DNS, the API server and the service's own Service). */
export function seedKube(api: FakeKubeApi, model: ClusterModel): void {
  for (const [i, node] of model.nodes.entries()) api.upsert('nodes', kube.node({ name: node, addresses: [`192.168.10.${i + 1}`] }));
  api.upsert('services', kube.service({ namespace: 'default', name: 'kubernetes', clusterIP: '10.96.0.1' }));
  api.upsert('endpointslices', kube.endpointSlice({ namespace: 'default', service: 'kubernetes', name: 'kubernetes', endpoints: [{ address: '172.20.5.5' }] }));
  api.upsert('services', kube.service({ namespace: 'kube-system', name: 'kube-dns', clusterIP: KUBE_DNS, labels: { 'k8s-app': 'kube-dns' } }));
  api.upsert('services', kube.service({ namespace: 'reins', name: 'reins', clusterIP: '10.96.7.7' }));
  for (let i = 0; i < IN_CLUSTER_SERVICES; i++) api.upsert('services', kube.service({ namespace: 'shared', name: `backend-${i}`, clusterIP: serviceIp(i) }));
  const replicaSets = new Set<string>();
  for (const pod of model.pods) {
    const rs = pod.name.slice(0, pod.name.lastIndexOf('-'));
    const deployment = rs.slice(0, rs.lastIndexOf('-'));
    if (!replicaSets.has(`${pod.namespace}/${rs}`)) {
      replicaSets.add(`${pod.namespace}/${rs}`);
      api.upsert('replicasets', kube.replicaSet({ namespace: pod.namespace, name: rs, owner: { kind: 'Deployment', name: deployment } }));
      // The Deployment object too: the informers list Deployments (every workload has a row, pods or not).
      api.upsert('deployments', kube.workload({ kind: 'Deployment', namespace: pod.namespace, name: deployment }));
    }
    api.upsert('pods', kube.pod({ namespace: pod.namespace, name: pod.name, ip: pod.ip, node: pod.node, owner: { kind: 'ReplicaSet', name: rs } }));
  }
}

const SUBJECTS = ['/usr/local/bin/python3.12', '/usr/bin/node', '/app/server'];

/**
 * The body of one sensor report: `size` items for pods of `node`, observed in [fromUnix, toUnix). A DNS question
 * (sometimes through an ndots:5 expansion first) and the connection that follows it, counts aggregated as a
 * sensor does within a flush.
 */
export function reportBody(model: ClusterModel, nodeIndex: number, size: number, fromUnix: number, toUnix: number, random: () => number): string {
  const pods = model.podsByNode[nodeIndex]!;
  const node = model.nodes[nodeIndex]!;
  const items: object[] = [];
  while (items.length < size) {
    const pod = pods[Math.floor(random() * pods.length)]!;
    const dest = pod.destinations[Math.floor(random() * pod.destinations.length)]!;
    const observedAt = fromUnix + Math.floor(random() * (toUnix - fromUnix));
    const subject = SUBJECTS[Math.floor(random() * SUBJECTS.length)]!;
    const base = { node, podName: pod.name, podIP: pod.ip, namespace: pod.namespace, result: 'allowed', mode: 'monitor', subject };
    const external = !dest.name.endsWith('.cluster.local');
    if (external && random() < 0.2) {
      items.push({ ...base, family: 'dns', rule: 'reins-monitor-dns', behavior: 'dns-query', destName: `${dest.name}.${pod.namespace}.svc.cluster.local`, destIP: '', count: 1, observedAt });
    }
    items.push({ ...base, family: 'dns', rule: 'reins-monitor-dns', behavior: 'dns-query', destName: dest.name, destIP: dest.ip, count: 1 + Math.floor(random() * 4), observedAt });
    if (items.length < size) {
      items.push({ ...base, family: 'network', rule: 'reins-monitor-network', behavior: 'tcp-connect', destName: '', destIP: dest.ip, count: 1 + Math.floor(random() * 20), observedAt });
    }
    if (items.length < size && random() < 0.05) {
      items.push({ ...base, family: 'network', rule: 'reins-monitor-network', behavior: 'udp-send', destName: '', destIP: KUBE_DNS, count: 1 + Math.floor(random() * 10), observedAt });
    }
  }
  items.length = size;
  return JSON.stringify({ node, sentAtUnix: toUnix, observations: items });
}
