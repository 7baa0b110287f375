/**
 * The synthetic cluster and day of sensor evidence of the reconciliation benchmark: by default 20,000 workloads
 * (Deployments behind ReplicaSets, 3 pods each) in 20 namespaces, about 60 pods a node (1,000 nodes), a healthy
 * cluster (README.md, "The model"): a quarter of the workloads make no outbound connection in the day, most of the
 * rest reach in-cluster Services, cluster DNS, package registries and other SaaS, a fifth call AI providers through
 * the service's own Service, and a few percent reach a provider around it (the findings). Seen as DNS questions (with
 * answers, search-domain expansions included) and connections. Deterministic: the same seed gives the same day.
 */
import { kube, type FakeKubeApi } from '../../test/fakes/fake-kube-api.js';

export const NAMESPACES = 20;
/** `BENCH_WORKLOADS` (default 20,000, issue 24's scale; 2,000 for the smaller figure) spread over the namespaces. */
export const WORKLOADS_PER_NAMESPACE = Math.max(1, Math.floor(Number(process.env.BENCH_WORKLOADS ?? 20_000) / NAMESPACES));
export const WORKLOADS = NAMESPACES * WORKLOADS_PER_NAMESPACE;
export const PODS_PER_WORKLOAD = 3;
/** Pods per node: Kubernetes' default limit is 110; managed clusters run 30-60 on a typical node. */
export const PODS_PER_NODE = 60;
export const NODES = Math.max(20, Math.ceil((WORKLOADS * PODS_PER_WORKLOAD) / PODS_PER_NODE));
export const IN_CLUSTER_SERVICES = 200;
/** Observations of a full run: issue 24's day (5,000,000 at 20,000 workloads), 50 per workload below 20,000 (1,000,000 at 2,000 before). */
export const DEFAULT_OBSERVATIONS = WORKLOADS >= 20_000 ? 5_000_000 : 500 * WORKLOADS;

/** Shares of the workloads (README.md, "The model"). */
export const SHARES = {
  /** No outbound connection or DNS question in the day (inbound-only services, idle batch, scaled to zero). */
  quiet: 0.25,
  /** Call AI providers through the gateway: the service's own Service, by name. */
  gateway: 0.2,
  /** Reach an AI provider outside governance (the runtime guard's findings); a second provider for a quarter of them. */
  bypass: 0.04,
  secondProvider: 0.25,
  registry: 0.6,
  otherExternal: 0.3,
};

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
/** The service's own Service (seedKube): what a governed workload talks to. */
const GATEWAY: Destination = { name: 'reins.reins.svc.cluster.local', ip: '10.96.7.7' };

export interface PodModel {
  namespace: string;
  name: string;
  ip: string;
  node: string;
  /** What the pod reaches: names with the address they resolve to. Empty for a quiet workload. */
  destinations: Destination[];
}

export interface ClusterModel {
  pods: PodModel[];
  /** Per node, its pods with outbound evidence (what its sensor reports about). */
  podsByNode: PodModel[][];
  nodes: string[];
  /** `<namespace>/<name>` of the workloads that call the gateway (their audit events; the bypassing ones too, split traffic). */
  governedIdentities: string[];
}

/** A node's InternalIP (1,000 nodes need more than one /24). */
export function nodeAddress(i: number): string {
  return `192.168.${10 + Math.floor(i / 250)}.${(i % 250) + 1}`;
}

function serviceIp(i: number): string {
  return `10.96.${10 + Math.floor(i / 250)}.${(i % 250) + 1}`;
}

export function buildModel(seed = 7): ClusterModel {
  const random = rng(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const nodes = Array.from({ length: NODES }, (_, i) => `node-${String(i).padStart(NODES > 100 ? 4 : 2, '0')}`);
  const pods: PodModel[] = [];
  const governedIdentities: string[] = [];
  let podIndex = 0;
  for (let n = 0; n < NAMESPACES; n++) {
    const namespace = `team-${String(n).padStart(2, '0')}`;
    for (let w = 0; w < WORKLOADS_PER_NAMESPACE; w++) {
      const workload = `svc-${String(w).padStart(3, '0')}`;
      // A workload's destinations (SHARES): quiet ones reach nothing; the others use in-cluster Services and cluster
      // DNS, most a registry, some other SaaS, a fifth the gateway, a few an AI provider around it.
      const destinations: Destination[] = [];
      const quiet = random() < SHARES.quiet;
      let governed = false;
      if (!quiet) {
        if (random() < SHARES.bypass) {
          destinations.push(pick(PROVIDERS));
          if (random() < SHARES.secondProvider) destinations.push(pick(PROVIDERS));
        }
        if (random() < SHARES.gateway) {
          destinations.push(GATEWAY);
          governed = true;
        }
        if (random() < SHARES.registry) destinations.push(pick(REGISTRIES));
        if (random() < SHARES.otherExternal) destinations.push(pick(OTHER_EXTERNAL));
        for (let s = 0; s < 2; s++) {
          const i = Math.floor(random() * IN_CLUSTER_SERVICES);
          destinations.push({ name: `backend-${i}.shared.svc.cluster.local`, ip: serviceIp(i) });
        }
      }
      if (governed || destinations.some((d) => PROVIDERS.includes(d))) governedIdentities.push(`${namespace}/${workload}`);
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
  const podsByNode: PodModel[][] = nodes.map(() => []);
  for (const pod of pods) if (pod.destinations.length > 0) podsByNode[nodes.indexOf(pod.node)]!.push(pod);
  return { pods, podsByNode, nodes, governedIdentities };
}

/** The model's objects in the fake Kubernetes API (plus cluster DNS, the API server and the service's own Service). */
export function seedKube(api: FakeKubeApi, model: ClusterModel): void {
  for (const [i, node] of model.nodes.entries()) api.upsert('nodes', kube.node({ name: node, addresses: [nodeAddress(i)] }));
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
  if (pods.length === 0) return JSON.stringify({ node, sentAtUnix: toUnix, observations: [] });
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

/**
 * The day's governed calls (audit events): `[type, identity, host or null, atUnix]`, from the workloads that call the
 * gateway (and those that also bypass it). Half LLM requests, a quarter egress (with a host), a quarter MCP.
 */
export function auditEvents(model: ClusterModel, count: number, startUnix: number, endUnix: number): Array<[string, string, string | null, number]> {
  const random = rng(11);
  const hosts = ['api.openai.com', 'api.anthropic.com', 'pypi.org', 'github.com'];
  const out: Array<[string, string, string | null, number]> = [];
  for (let i = 0; i < count; i++) {
    const subject = model.governedIdentities[Math.floor(random() * model.governedIdentities.length)]!;
    const type = random() < 0.5 ? 'llm' : random() < 0.5 ? 'egress' : 'mcp';
    const at = Math.floor(startUnix + random() * (endUnix - startUnix));
    out.push([type, subject, type === 'egress' ? hosts[Math.floor(random() * hosts.length)]! : null, at]);
  }
  return out;
}
