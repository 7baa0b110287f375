/**
 * `startRuntimeCluster`: the runtime guard's Kubernetes side behind the `RuntimeCluster` seam (../cluster.ts).
 * Loads the standard client configuration, checks the API server answers (else `ClusterUnavailableError`,
 * and the caller reports the replica inactive), then starts the cluster facts, the capability probe, the
 * leader Lease and the RuntimePolicy controller. `stop()` ends all of it: watches aborted, Lease released,
 * timers cleared.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { CoreApi } from '@kubernetes/client-node';
import type { ClusterCapability, ClusterEnvironment, RuntimeCluster } from '../cluster.js';
import type { ClusterFacts } from '../types.js';
import { CapabilityProbe } from './capability.js';
import { ClusterFactsCache, clusterDnsSettings, parseResolvConf, parseSelfService } from './cluster-facts.js';
import { ClusterUnavailableError, dedupeErrors, describeKubeError, httpStatusOf, loadKubeConfig, makeApi, type ClusterLog } from './client.js';
import { LeaderLease } from './leader.js';
import { RuntimePolicyController } from './policy-controller.js';
import { sensorMetricsTargets } from './sensor-discovery.js';

export { ClusterUnavailableError } from './client.js';

export interface RuntimeClusterOptions {
  environment: ClusterEnvironment;
  /** `runtimeGuard.selfService`: `namespace/name` of the service's own Service; its namespace holds the Lease. */
  selfService: string;
  /** `runtimeGuard.sensor.metricsTargets`; empty = discover sensor pods. */
  metricsTargets: string[];
  /** Background failures (a list or watch, the Lease, the probe, the controller). The cluster keeps retrying. */
  onError(err: Error): void;
  log?: ClusterLog;
  /** CRD re-probe interval; the spec's 5 minutes by default. */
  probeIntervalMs?: number;
  leaseDurationSeconds?: number;
  renewMs?: number;
  /** How often the leader checks the RuntimePolicies for drift (default 60 s). */
  policyIntervalMs?: number;
  /** Server-side watch timeout (default 60 s) and the grace after which a watch that did not end is abandoned. */
  watchTimeoutSeconds?: number;
  watchGraceMs?: number;
  /** Backoff bounds after a failed list or watch (default 1 s .. 30 s). */
  retryMinMs?: number;
  retryMaxMs?: number;
  /** The Lease holder identity (default HOSTNAME plus a random suffix). */
  identity?: string;
  /** In a pod: the text of /etc/resolv.conf (read from disk when absent). */
  resolvConf?: string;
  now?: () => number;
}

/** The API server's own addresses the client knows: its configured host and what discovery advertises. */
function apiServerAddresses(server: string, advertised: Array<{ serverAddress?: string }>): string[] {
  const hosts: string[] = [];
  try {
    hosts.push(new URL(server).hostname.replace(/^\[|\]$/g, ''));
  } catch {
    // A server URL the client accepted but URL does not: nothing to add.
  }
  for (const a of advertised) {
    const address = a.serverAddress ?? '';
    const host = address.startsWith('[') ? address.slice(1, address.indexOf(']')) : address.replace(/:\d+$/, '');
    hosts.push(host);
  }
  return [...new Set(hosts.filter((h) => isIP(h) !== 0))];
}

function readResolvConf(): string {
  try {
    return readFileSync('/etc/resolv.conf', 'utf8');
  } catch {
    return '';
  }
}

export async function startRuntimeCluster(options: RuntimeClusterOptions): Promise<RuntimeCluster> {
  const self = parseSelfService(options.selfService);
  if (!self) throw new ClusterUnavailableError(`runtimeGuard.selfService "${options.selfService}" is not namespace/name`);
  const kc = loadKubeConfig(options.environment);
  const server = kc.getCurrentCluster()?.server ?? '';

  // One discovery call: the API server answers, and says where else it listens.
  let advertised: Array<{ serverAddress?: string }> = [];
  try {
    const versions = await makeApi(kc, CoreApi, new AbortController().signal, 10_000).getAPIVersions();
    advertised = versions.serverAddressByClientCIDRs ?? [];
  } catch (err) {
    const answered = httpStatusOf(err) !== undefined;
    throw new ClusterUnavailableError(
      answered
        ? `the Kubernetes API server at ${server} refused the discovery request: ${describeKubeError(err)}`
        : `the Kubernetes API server at ${server} is not reachable: ${describeKubeError(err)}`,
    );
  }

  // In a pod with the cluster's DNS policy, resolv.conf names the cluster domain, the node's extra search
  // domains and the cluster DNS address this pod uses (a NodeLocal DNSCache or the kube-dns ClusterIP).
  const resolv = options.environment.kind === 'in-cluster' ? parseResolvConf(options.resolvConf ?? readResolvConf()) : { nameservers: [], search: [] };
  const dns = clusterDnsSettings(resolv.search);
  const clusterFirst = dns.clusterDomain !== undefined;
  const log = options.log;
  // A lasting failure (a missing permission, an API server down) says so once a minute, not every retry.
  const onError = dedupeErrors(options.onError, 60_000, options.now);

  const facts = new ClusterFactsCache({
    kc,
    selfService: options.selfService,
    apiServerAddresses: apiServerAddresses(server, advertised),
    clusterDnsAddresses: clusterFirst ? resolv.nameservers.filter((ns) => isIP(ns) !== 0) : [],
    ...(dns.clusterDomain ? { clusterDomain: dns.clusterDomain } : {}),
    searchDomains: dns.searchDomains,
    onError,
    ...(options.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: options.watchTimeoutSeconds } : {}),
    ...(options.watchGraceMs !== undefined ? { watchGraceMs: options.watchGraceMs } : {}),
    ...(options.retryMinMs !== undefined ? { retryMinMs: options.retryMinMs } : {}),
    ...(options.retryMaxMs !== undefined ? { retryMaxMs: options.retryMaxMs } : {}),
    ...(options.now ? { now: options.now } : {}),
  });

  let crdAvailable = false;
  // Declared before the probe and the Lease, whose callbacks trigger it.
  let controller: RuntimePolicyController | undefined;
  const probe = new CapabilityProbe({
    kc,
    leaseNamespace: self.namespace,
    ...(options.probeIntervalMs !== undefined ? { intervalMs: options.probeIntervalMs } : {}),
    onError,
    onProbe: (capability) => {
      const available = capability.crd === 'available';
      if (available !== crdAvailable) log?.info({ crd: capability.crd, reason: capability.crdReason }, 'runtime guard: RuntimePolicy CRD state changed');
      crdAvailable = available;
      if (available) controller?.trigger();
    },
    ...(options.now ? { now: options.now } : {}),
  });
  const lease = new LeaderLease({
    kc,
    namespace: self.namespace,
    ...(options.identity ? { identity: options.identity } : {}),
    ...(options.leaseDurationSeconds !== undefined ? { leaseDurationSeconds: options.leaseDurationSeconds } : {}),
    ...(options.renewMs !== undefined ? { renewMs: options.renewMs } : {}),
    onError,
    onChange: (leader) => {
      log?.info({ identity: lease.identity, leader }, leader ? 'runtime guard: this replica leads' : 'runtime guard: this replica follows');
      if (leader) controller?.trigger();
    },
    ...(options.now ? { now: options.now } : {}),
  });
  controller = new RuntimePolicyController({
    kc,
    isLeader: () => lease.isLeader(),
    crdServed: () => crdAvailable,
    ...(options.policyIntervalMs !== undefined ? { intervalMs: options.policyIntervalMs } : {}),
    onError,
    onRound: (round) => {
      if (round.created.length + round.replaced.length + round.deleted.length > 0) log?.info(round, 'runtime guard: RuntimePolicies reconciled');
    },
  });

  facts.start();
  probe.start();
  lease.start();
  controller.start();

  let stopping: Promise<void> | undefined;
  return {
    facts: (): ClusterFacts | null => facts.facts(),
    capability: (): ClusterCapability => probe.capability(),
    sensorMetricsTargets: () =>
      sensorMetricsTargets(
        options.metricsTargets,
        [...facts.podRecords()].map((r) => ({ ip: r.fact.ip, phase: r.phase, sensorPort: r.sensorPort })),
      ),
    isLeader: () => lease.isLeader(),
    stop: () =>
      (stopping ??= (async () => {
        // Writes stop first; the Lease is released last, once nothing of this replica writes any more.
        await controller.stop();
        await Promise.all([probe.stop(), facts.stop()]);
        await lease.stop();
      })()),
  };
}
