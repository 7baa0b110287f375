/**
 * One sensor: engine output (live `ig` processes or recorded files) → adapter → reporter, with the metrics server
 * and the node status. Live and replay differ only in where the lines come from.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Server } from 'node:http';
import { EventAdapter, FAMILY_OF, GADGETS, type Gadget } from './adapter.js';
import type { SensorConfig } from './config.js';
import { Engine } from './engine.js';
import { readBpfLsm, type LsmState } from './lsm.js';
import type { ObservationPlan, PolicyWatcher } from './policies.js';
import { SensorMetrics, serveMetrics } from './metrics.js';
import { Reporter, type NodeStatus } from './reporter.js';

export interface RunningSensor {
  metrics: SensorMetrics;
  metricsPort: number;
  /** Resolves with the exit code: --once at the end of the files, or after stop(). */
  done: Promise<number>;
  stop(): Promise<void>;
}

export async function startSensor(config: SensorConfig, log: (message: string) => void): Promise<RunningSensor> {
  const metrics = new SensorMetrics(config.node);
  const lsm: { state: LsmState } = { state: await readBpfLsm(config.lsmPath) };
  const troubles = new Map<Gadget, string>();
  let observing: Gadget[] = [];
  let notObserved: string[] = [];
  let policyNotes: string[] = [];
  let policyTrouble: string | null = null;

  const status = async (): Promise<NodeStatus> => {
    lsm.state = await readBpfLsm(config.lsmPath);
    const parts = [lsm.state.reason];
    if (config.replays.length > 0) parts.push(`replaying recorded engine output (${config.replays.map((r) => `${r.gadget}: ${r.file}`).join(', ')})`);
    else parts.push(`observing ${observing.map((g) => FAMILY_OF[g]).join(', ') || 'nothing'}`);
    if (notObserved.length > 0) parts.push(...notObserved);
    if (policyTrouble) parts.push(policyTrouble);
    parts.push(...policyNotes);
    for (const [g, t] of troubles) parts.push(`${g}: ${t}`);
    return { node: config.node, sensorAlive: true, bpfLsm: lsm.state.bpfLsm, reason: parts.join('; ').slice(0, 1024) };
  };

  const reporter = new Reporter({
    url: config.reinsUrl,
    token: config.token,
    node: config.node,
    metrics,
    status,
    flushMs: config.flushMs,
    statusMs: config.statusMs,
    maxQueuedReports: config.maxQueuedReports,
    log,
  });
  const adapter = new EventAdapter({
    node: config.node,
    dnsAnswerWaitMs: config.dnsAnswerWaitMs,
    sink: { observe: (o) => reporter.record(o), drop: (cause) => (metrics.eventsDropped[cause] += 1) },
  });
  const onLine = (gadget: Gadget, line: string) => {
    if (line.trim() === '') return;
    metrics.eventsRead[gadget] += 1;
    adapter.line(gadget, line);
  };

  let metricsServer: Server;
  let metricsPort: number;
  try {
    ({ server: metricsServer, port: metricsPort } = await serveMetrics(metrics, config.metricsPort, config.metricsHost));
  } catch (err) {
    throw new Error(`metrics port ${config.metricsPort}: ${(err as Error).message}`);
  }
  // Questions whose answer never came go out without an address once the wait is over.
  const expireTimer = setInterval(() => adapter.expire(), Math.max(50, Math.min(1_000, config.dnsAnswerWaitMs)));
  reporter.start();

  let engine: Engine | null = null;
  let watcher: PolicyWatcher | null = null;
  let finish!: (code: number) => void;
  const done = new Promise<number>((resolve) => (finish = resolve));
  let stopping: Promise<void> | null = null;

  /** `stopping`: a sensor told to stop (SIGTERM) says so, so that Reins shows it not running rather than silent. */
  const shutdown = async (drainMs: number, stopping = false): Promise<boolean> => {
    clearInterval(expireTimer);
    watcher?.stop();
    await engine?.stop();
    adapter.expire(true);
    const delivered = await reporter.drain(drainMs);
    await reporter.sendFinalStatus(stopping ? { sensorAlive: false, reason: 'stopped (SIGTERM or SIGINT): no longer observing this node' } : undefined);
    await reporter.stop();
    await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
    metricsServer.closeAllConnections?.();
    return delivered;
  };

  if (config.replays.length > 0) {
    void (async () => {
      for (const r of config.replays) {
        try {
          const rl = createInterface({ input: createReadStream(r.file), crlfDelay: Infinity });
          for await (const line of rl) onLine(r.gadget, line);
        } catch (err) {
          log(`--replay ${r.file}: ${(err as Error).message}`);
          if (config.once) {
            await shutdown(0);
            finish(2);
            return;
          }
        }
      }
      // The end of the files: what is waiting goes out now rather than at the next tick.
      adapter.expire(true);
      reporter.flush();
      if (config.once) {
        const delivered = await shutdown(config.drainMs);
        if (!delivered) log(`could not deliver every report to ${config.reinsUrl} within ${config.drainMs} ms`);
        finish(delivered ? 0 : 1);
      }
    })();
  } else {
    // open and exec need BPF-LSM (spec "Observation item"): without it they are not observed, and the status says why.
    const observe = (families: readonly string[], why: string) => {
      const wanted = GADGETS.filter((g) => families.includes(FAMILY_OF[g]));
      observing = wanted.filter((g) => (g !== 'trace_open' && g !== 'trace_exec') || lsm.state.bpfLsm === 'available');
      const skipped = wanted.filter((g) => !observing.includes(g)).map((g) => FAMILY_OF[g]);
      notObserved = [why];
      if (skipped.length > 0) notObserved.push(`${skipped.join(' and ')} not observed: BPF-LSM is ${lsm.state.bpfLsm} on this node`);
      engine?.set(observing);
    };
    engine = new Engine({
      igPath: config.ig.path,
      image: (g) => `${config.ig.repository}/${g}:${config.ig.version}`,
      extraArgs: config.ig.extraArgs,
      restartMaxMs: config.ig.restartMaxMs,
      restartMinMs: Math.min(1_000, config.ig.restartMaxMs),
      onLine,
      onRestart: (g) => (metrics.engineRestarts[g] += 1),
      onState: (g, trouble) => (trouble === null ? troubles.delete(g) : troubles.set(g, trouble)),
      log,
    });
    if (config.policies === 'auto') {
      try {
        // Loaded only here: the Kubernetes client is most of the sensor's start-up time, and --replay never needs it.
        const { PolicyWatcher } = await import('./policies.js');
        watcher = PolicyWatcher.create({
          env: config.kubeEnv,
          intervalMs: config.policyIntervalMs,
          onPlan: (plan: ObservationPlan) => {
            adapter.configure(plan.families, plan.namespaceLabels);
            policyNotes = plan.notes;
            const families = [...plan.families.keys()];
            const absent = (['dns', 'network', 'open', 'exec'] as const).filter((f) => !plan.families.has(f));
            observe(families, absent.length > 0 ? `no monitor RuntimePolicy for ${absent.join(', ')}: not observed` : 'following the RuntimePolicies');
          },
          onTrouble: (t) => (policyTrouble = t),
        });
      } catch (err) {
        policyTrouble = `cannot load the Kubernetes client configuration: ${(err as Error).message}`;
      }
    }
    if (watcher) {
      // A family whose policy is absent is not observed: nothing runs until the policies are read.
      notObserved = ['waiting for the RuntimePolicies'];
      void watcher.start();
    } else {
      observe(config.families, `observing REINS_SENSOR_FAMILIES (${config.policies === 'off' ? 'REINS_SENSOR_POLICIES=off' : 'no Kubernetes API configuration'})`);
    }
  }

  return {
    metrics,
    metricsPort,
    done,
    stop: () => {
      stopping ??= shutdown(Math.min(config.drainMs, 5_000), true).then(() => finish(0));
      return stopping;
    },
  };
}
