/**
 * The sensor's command line and environment (the command line is fixed: outside tests drive it). Configuration
 * comes from the environment, as a DaemonSet sets it; `--replay FILE --source <gadget>` pairs replace the live
 * engine with recorded output.
 */
import { GADGETS, isGadget, type Gadget } from './adapter.js';
import type { ObservationFamily } from '../runtime-guard/types.js';

export interface Replay {
  file: string;
  gadget: Gadget;
}

export interface SensorConfig {
  reinsUrl: string;
  token: string;
  node: string;
  metricsPort: number;
  metricsHost: string;
  flushMs: number;
  statusMs: number;
  maxQueuedReports: number;
  dnsAnswerWaitMs: number;
  lsmPath: string;
  families: ObservationFamily[];
  drainMs: number;
  ig: { path: string; version: string; repository: string; extraArgs: string[]; restartMaxMs: number };
  /** `auto`: follow the RuntimePolicies when a Kubernetes API configuration is present; `off`: REINS_SENSOR_FAMILIES. */
  policies: 'auto' | 'off';
  policyIntervalMs: number;
  /** Where the Kubernetes client configuration comes from. */
  kubeEnv: { KUBERNETES_SERVICE_HOST?: string; KUBECONFIG?: string };
  replays: Replay[];
  once: boolean;
}

export const HELP = `reins-sensor: the Reins runtime guard's node sensor (one per node, a DaemonSet)

Reads kernel evidence from Inspektor Gadget (ig run <gadget> -o json: trace_dns, trace_tcp, trace_open,
trace_exec), turns each event into an observation item, and sends reports (every ~10 s, at most 500 items) and
the node status (every 30 s) to Reins with a sensor token. Counters in Prometheus text on :METRICS_PORT/metrics.

Usage:
  reins-sensor                                       run on a node (live engine)
  reins-sensor --replay FILE --source GADGET [--replay FILE --source GADGET ...] [--once]
                                                     feed recorded engine output (JSON lines, as ig prints
                                                     them) instead; each event's own timestamp is its time.
                                                     Without --once it keeps running after the files end;
                                                     with --once it flushes, sends, and exits 0.
  reins-sensor --help

Environment:
  REINS_URL                      Reins' base URL (required), e.g. http://reins.reins.svc:8080
  REINS_SENSOR_TOKEN             a sensor token (POST /api/v1/runtime/sensor-tokens) (required)
  NODE_NAME                      this node's name, from the downward API (required)
  METRICS_PORT                   metrics port (default 9090); METRICS_HOST (default 0.0.0.0)
  REINS_SENSOR_FLUSH_SECONDS     report flush interval (default 10)
  REINS_SENSOR_STATUS_SECONDS    node status interval (default 30)
  REINS_SENSOR_MAX_QUEUED_REPORTS  reports kept while Reins is unreachable (default 30); the oldest goes first
  REINS_SENSOR_DNS_WAIT_SECONDS  how long a DNS question waits for its answer (default 5)
  REINS_SENSOR_LSM_PATH          the host's LSM list (default /sys/kernel/security/lsm)
  REINS_SENSOR_POLICIES          auto (default): observe what the RuntimePolicies (runtime.reins.dev/v1) ask for,
                                 when a Kubernetes API configuration is present (in a pod: KUBERNETES_SERVICE_HOST
                                 and the service account; else the file KUBECONFIG names);
                                 off: observe REINS_SENSOR_FAMILIES
  REINS_SENSOR_POLICY_SECONDS    the RuntimePolicies are watched (a change applies at once) and also re-listed
                                 this often (default 30)
  REINS_SENSOR_FAMILIES          families observed without policies (default dns,network,open,exec; open and exec
                                 only with BPF-LSM)
  REINS_SENSOR_DRAIN_SECONDS     --once and shutdown: how long to keep trying to deliver (default 60)
Engine (live mode):
  IG_PATH                        the ig binary (default ig)
  IG_VERSION                     gadget image tag (default v0.55.1, the release the sensor is built against)
  IG_GADGET_REPOSITORY           gadget image repository (default ghcr.io/inspektor-gadget/gadget)
  IG_EXTRA_ARGS                  extra arguments for every ig run (space-separated)
  IG_RESTART_MAX_SECONDS         longest back-off between engine restarts (default 60)
  HOST_ROOT                      read by ig itself (passed on with the rest of the environment): where the host's
                                 root is mounted in the container (the DaemonSet: /host)
`;

export class ConfigError extends Error {}

const FAMILY_OF_NAME: Record<string, ObservationFamily> = { dns: 'dns', network: 'network', open: 'open', exec: 'exec' };

export function parseArgs(argv: string[]): { help: boolean; replays: Replay[]; once: boolean } {
  const replays: Replay[] = [];
  let once = false;
  let help = false;
  let file: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new ConfigError(`${arg} needs a value`);
      return v;
    };
    if (arg === '--help' || arg === '-h') help = true;
    else if (arg === '--once') once = true;
    else if (arg === '--replay') {
      if (file !== null) throw new ConfigError(`--replay ${file} has no --source`);
      file = value();
    } else if (arg === '--source') {
      const source = value();
      if (file === null) throw new ConfigError('--source must follow a --replay FILE');
      if (!isGadget(source)) throw new ConfigError(`--source ${source}: must be one of ${GADGETS.join(', ')}`);
      replays.push({ file, gadget: source });
      file = null;
    } else throw new ConfigError(`unknown argument ${arg} (see --help)`);
  }
  if (file !== null) throw new ConfigError(`--replay ${file} has no --source`);
  if (once && replays.length === 0) throw new ConfigError('--once applies to --replay only');
  return { help, replays, once };
}

export function loadConfig(env: NodeJS.ProcessEnv, args: { replays: Replay[]; once: boolean }): SensorConfig {
  const required = (name: string) => {
    const v = env[name]?.trim();
    if (!v) throw new ConfigError(`${name} is required (see --help)`);
    return v;
  };
  const int = (name: string, fallback: number, min: number) => {
    const raw = env[name]?.trim();
    if (!raw) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < min) throw new ConfigError(`${name}: must be a number ≥ ${min}, got "${raw}"`);
    return n;
  };
  const reinsUrl = required('REINS_URL');
  if (!/^https?:\/\//.test(reinsUrl)) throw new ConfigError(`REINS_URL: must start with http:// or https://, got "${reinsUrl}"`);
  const families = (env.REINS_SENSOR_FAMILIES?.trim() || 'dns,network,open,exec').split(',').map((f) => f.trim()).filter(Boolean).map((f) => {
    const family = FAMILY_OF_NAME[f];
    if (!family) throw new ConfigError(`REINS_SENSOR_FAMILIES: unknown family "${f}" (dns, network, open, exec)`);
    return family;
  });
  const metricsPort = int('METRICS_PORT', 9090, 0);
  if (metricsPort > 65535 || !Number.isInteger(metricsPort)) throw new ConfigError(`METRICS_PORT: not a port: ${metricsPort}`);
  return {
    reinsUrl,
    token: required('REINS_SENSOR_TOKEN'),
    node: required('NODE_NAME'),
    metricsPort,
    metricsHost: env.METRICS_HOST?.trim() || '0.0.0.0',
    flushMs: int('REINS_SENSOR_FLUSH_SECONDS', 10, 0.05) * 1000,
    statusMs: int('REINS_SENSOR_STATUS_SECONDS', 30, 0.05) * 1000,
    maxQueuedReports: Math.floor(int('REINS_SENSOR_MAX_QUEUED_REPORTS', 30, 1)),
    dnsAnswerWaitMs: int('REINS_SENSOR_DNS_WAIT_SECONDS', 5, 0) * 1000,
    lsmPath: env.REINS_SENSOR_LSM_PATH?.trim() || '/sys/kernel/security/lsm',
    families,
    drainMs: int('REINS_SENSOR_DRAIN_SECONDS', 60, 0) * 1000,
    ig: {
      path: env.IG_PATH?.trim() || 'ig',
      version: env.IG_VERSION?.trim() || 'v0.55.1',
      repository: (env.IG_GADGET_REPOSITORY?.trim() || 'ghcr.io/inspektor-gadget/gadget').replace(/\/+$/, ''),
      extraArgs: (env.IG_EXTRA_ARGS ?? '').split(/\s+/).filter(Boolean),
      restartMaxMs: int('IG_RESTART_MAX_SECONDS', 60, 0.01) * 1000,
    },
    policies: policiesMode(env.REINS_SENSOR_POLICIES),
    policyIntervalMs: int('REINS_SENSOR_POLICY_SECONDS', 30, 0.05) * 1000,
    kubeEnv: {
      ...(env.KUBERNETES_SERVICE_HOST ? { KUBERNETES_SERVICE_HOST: env.KUBERNETES_SERVICE_HOST } : {}),
      ...(env.KUBECONFIG ? { KUBECONFIG: env.KUBECONFIG } : {}),
    },
    replays: args.replays,
    once: args.once,
  };
}

function policiesMode(raw: string | undefined): 'auto' | 'off' {
  const v = raw?.trim() || 'auto';
  if (v !== 'auto' && v !== 'off') throw new ConfigError(`REINS_SENSOR_POLICIES: auto or off, got "${v}"`);
  return v;
}
