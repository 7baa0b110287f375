/**
 * Replicas with the runtime guard on for the integration tests: a kubeconfig that passes the environment check,
 * a RuntimeCluster of the test's own (facts, capability, metrics targets, leadership set by the test), a clock
 * the test moves, and builders for sensor reports.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../../../src/config/config.js';
import type { ClusterCapability, RuntimeCluster } from '../../../src/runtime-guard/cluster.js';
import type { StartClusterInput } from '../../../src/runtime-guard/runtime-guard.js';
import type { ClusterFacts } from '../../../src/runtime-guard/types.js';
import { startReplica, type Replica } from '../../../src/app/server.js';
import { Client, testConfigFor, type TestStore } from '../../helpers/harness.js';

/** A kubeconfig whose current context names a cluster (nothing listens there: only the environment check reads it). */
export function writeKubeconfig(server = 'http://127.0.0.1:1'): string {
  const dir = mkdtempSync(join(tmpdir(), 'reins-rg-'));
  const path = join(dir, 'kubeconfig');
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: test, cluster: {server: "' + server + '"}}]',
      'users: [{name: test, user: {token: test-token}}]',
      'contexts: [{name: test, context: {cluster: test, user: test}}]',
      'current-context: test',
      '',
    ].join('\n'),
  );
  return path;
}

/** A settable clock, Unix milliseconds. */
export class TestClock {
  constructor(public ms = Date.now()) {}
  now = (): number => this.ms;
  get unix(): number {
    return Math.floor(this.ms / 1000);
  }
  advance(seconds: number): void {
    this.ms += seconds * 1000;
  }
}

export class FakeCluster implements RuntimeCluster {
  /** Stamped fresh on every read unless `staleFacts` is set, like an informer that keeps receiving events. */
  factsValue: ClusterFacts | null;
  capabilityValue: ClusterCapability = { crd: 'available', crdReason: 'runtime.reins.dev/v1 runtimepolicies is served', rbacGaps: [], probedAtUnix: 0 };
  targets: string[] = [];
  leader = true;
  stopped = false;
  started: StartClusterInput | null = null;

  constructor(
    private readonly clock: TestClock,
    facts: ClusterFacts | null = null,
  ) {
    this.factsValue = facts;
  }

  facts(): ClusterFacts | null {
    return this.factsValue ? { ...this.factsValue, fetchedAtUnix: this.clock.unix } : null;
  }
  capability(): ClusterCapability {
    return this.capabilityValue;
  }
  sensorMetricsTargets(): string[] {
    return this.targets;
  }
  isLeader(): boolean {
    return this.leader;
  }
  async stop(): Promise<void> {
    this.stopped = true;
  }
}

export interface GuardReplicaOptions {
  /** Over `configured: true, enabled: true`. */
  runtimeGuard?: Partial<Config['runtimeGuard']>;
  config?: Partial<Config>;
  /** The environment the configuration is loaded with; default: KUBECONFIG naming a cluster. */
  env?: Record<string, string>;
  /** The cluster side; 'fail' rejects as an unreachable API server does. */
  cluster?: RuntimeCluster | 'fail' | ((input: StartClusterInput) => Promise<RuntimeCluster>);
  clock?: TestClock;
  tailEveryMs?: number;
  sweepEveryMs?: number;
}

let kubeconfig: string | null = null;
export function sharedKubeconfig(): string {
  kubeconfig ??= writeKubeconfig();
  return kubeconfig;
}

export async function startGuardReplica(store: TestStore, options: GuardReplicaOptions = {}): Promise<Replica> {
  const env = options.env ?? { KUBECONFIG: sharedKubeconfig() };
  const base = testConfigFor(store, options.config ?? {}, env);
  const config: Config = { ...base, runtimeGuard: { ...base.runtimeGuard, configured: true, enabled: true, ...options.runtimeGuard } };
  const cluster = options.cluster;
  const startCluster =
    cluster === undefined
      ? undefined
      : cluster === 'fail'
        ? async () => {
            throw new Error('the Kubernetes API server at http://127.0.0.1:1 is not reachable: connect ECONNREFUSED');
          }
        : typeof cluster === 'function'
          ? cluster
          : async (input: StartClusterInput) => {
              if (cluster instanceof FakeCluster) cluster.started = input;
              return cluster;
            };
  return startReplica(config, {
    logger: false,
    ...(store.db ? { db: store.db } : {}),
    runtimeGuard: {
      ...(startCluster ? { startCluster } : {}),
      ...(options.clock ? { nowMs: options.clock.now } : {}),
      ...(options.tailEveryMs !== undefined ? { tailEveryMs: options.tailEveryMs } : {}),
      ...(options.sweepEveryMs !== undefined ? { sweepEveryMs: options.sweepEveryMs } : {}),
    },
  });
}

export async function mintSensorToken(admin: Client, name = 'sensor'): Promise<string> {
  const minted = await admin.post('/api/v1/runtime/sensor-tokens', { name });
  if (minted.status !== 201) throw new Error(`sensor token: ${minted.status} ${JSON.stringify(minted.body)}`);
  return minted.body.token as string;
}

export interface ReportItem {
  rule: string;
  behavior: string;
  subject: string;
  destIP: string;
  destName: string;
  count: number;
  podName: string;
  podIP: string;
  namespace: string;
  result: string;
  mode: string;
  observedAt: number;
  family: string;
  node?: string;
}

export function item(fields: Partial<ReportItem> & { observedAt: number }): ReportItem {
  return {
    rule: 'reins-monitor-network',
    behavior: 'tcp-connect',
    subject: '/usr/bin/python3',
    destIP: '',
    destName: '',
    count: 1,
    podName: 'agent-7d9f-a',
    podIP: '10.244.1.1',
    namespace: 'eng',
    result: 'allowed',
    mode: 'monitor',
    family: 'network',
    ...fields,
  };
}

export function report(node: string, observations: ReportItem[], sentAtUnix = Math.floor(Date.now() / 1000)) {
  return { node, sentAtUnix, observations };
}

/** A metrics endpoint serving whatever text the test sets (503 when `status` says so). */
export async function startMetricsServer(): Promise<{ url: string; text: string; status: number; hits: number; close(): Promise<void> }> {
  const state = { url: '', text: '', status: 200, hits: 0, close: async () => {} };
  const server = http.createServer((_req, res) => {
    state.hits += 1;
    res.writeHead(state.status, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(state.text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return state;
}

export function recordedCounter(counts: Record<string, number>): string {
  return [
    '# HELP reins_sensor_observations_recorded_total Observation items recorded',
    '# TYPE reins_sensor_observations_recorded_total counter',
    ...Object.entries(counts).map(([node, n]) => `reins_sensor_observations_recorded_total{node="${node}"} ${n}`),
    '',
  ].join('\n');
}
