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

  const status = async (): Promise<NodeStatus> => {
    lsm.state = await readBpfLsm(config.lsmPath);
    const parts = [lsm.state.reason];
    if (config.replays.length > 0) parts.push(`replaying recorded engine output (${config.replays.map((r) => `${r.gadget}: ${r.file}`).join(', ')})`);
    else parts.push(`observing ${observing.map((g) => FAMILY_OF[g]).join(', ') || 'nothing'}`);
    if (notObserved.length > 0) parts.push(...notObserved);
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
  let finish!: (code: number) => void;
  const done = new Promise<number>((resolve) => (finish = resolve));
  let stopping: Promise<void> | null = null;

  const shutdown = async (drainMs: number): Promise<boolean> => {
    clearInterval(expireTimer);
    await engine?.stop();
    adapter.expire(true);
    const delivered = await reporter.drain(drainMs);
    await reporter.sendStatus();
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
    const wanted = GADGETS.filter((g) => config.families.includes(FAMILY_OF[g]));
    // open and exec need BPF-LSM (spec "Observation item"): without it they are not observed, and the status says why.
    observing = wanted.filter((g) => (g !== 'trace_open' && g !== 'trace_exec') || lsm.state.bpfLsm === 'available');
    const skipped = wanted.filter((g) => !observing.includes(g)).map((g) => FAMILY_OF[g]);
    if (skipped.length > 0) notObserved = [`${skipped.join(' and ')} not observed: BPF-LSM is ${lsm.state.bpfLsm} on this node`];
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
    engine.start(observing);
  }

  return {
    metrics,
    metricsPort,
    done,
    stop: () => {
      stopping ??= shutdown(Math.min(config.drainMs, 5_000)).then(() => finish(0));
      return stopping;
    },
  };
}
