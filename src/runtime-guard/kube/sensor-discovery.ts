/**
 * Where the sensors' metrics are scraped (docs/api.md "Runtime sensor ingest": the counters of observations
 * recorded). The rule:
 *
 * 1. `runtimeGuard.sensor.metricsTargets`, when it is not empty, exactly as configured.
 * 2. Otherwise every running pod labelled `app.kubernetes.io/name=reins-sensor` that has a pod IP:
 *    `http://<podIP>:<port>/metrics`, where `port` is the container port named `metrics` (of any container),
 *    9090 when none is named so. Sorted, so the list is stable between calls.
 */

export const SENSOR_LABEL = { key: 'app.kubernetes.io/name', value: 'reins-sensor' } as const;
export const SENSOR_METRICS_PORT_NAME = 'metrics';
export const DEFAULT_SENSOR_METRICS_PORT = 9090;

interface SensorPodLike {
  metadata?: { labels?: Record<string, string> };
  spec?: { containers?: Array<{ ports?: Array<{ name?: string; containerPort?: number }> }> };
}

/** The metrics port of a sensor pod, null when the pod is not a sensor. */
export function sensorMetricsPort(pod: SensorPodLike): number | null {
  if (pod.metadata?.labels?.[SENSOR_LABEL.key] !== SENSOR_LABEL.value) return null;
  for (const container of pod.spec?.containers ?? []) {
    for (const port of container.ports ?? []) {
      if (port.name === SENSOR_METRICS_PORT_NAME && port.containerPort) return port.containerPort;
    }
  }
  return DEFAULT_SENSOR_METRICS_PORT;
}

export interface SensorPod {
  ip: string;
  phase: string;
  /** From `sensorMetricsPort`; null for a pod that is not a sensor. */
  sensorPort: number | null;
}

export function sensorMetricsTargets(configured: readonly string[], pods: Iterable<SensorPod>): string[] {
  if (configured.length > 0) return [...configured];
  const targets = new Set<string>();
  for (const pod of pods) {
    if (pod.sensorPort === null || pod.phase !== 'Running' || pod.ip === '') continue;
    const host = pod.ip.includes(':') ? `[${pod.ip}]` : pod.ip;
    targets.add(`http://${host}:${pod.sensorPort}/metrics`);
  }
  return [...targets].sort();
}
