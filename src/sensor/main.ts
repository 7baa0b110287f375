/**
 * `reins-sensor` entry point (bin/reins-sensor.mjs runs the built dist/sensor/main.js). See config.ts for the
 * command line and environment, README.md next to this file for the design.
 */
import { ConfigError, HELP, loadConfig, parseArgs } from './config.js';
import { startSensor } from './sensor.js';

const log = (message: string) => process.stderr.write(`${new Date().toISOString()} reins-sensor: ${message}\n`);

async function main(): Promise<number> {
  let config;
  try {
    const args = parseArgs(process.argv.slice(2));
    if (args.help) {
      process.stdout.write(HELP);
      return 0;
    }
    config = loadConfig(process.env, args);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`reins-sensor: ${err.message}\n`);
      return 64;
    }
    throw err;
  }
  const sensor = await startSensor(config, log);
  log(`node ${config.node}: reporting to ${config.reinsUrl}, metrics on :${sensor.metricsPort}/metrics${config.replays.length > 0 ? `, replaying ${config.replays.length} file(s)${config.once ? ' once' : ''}` : ''}`);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      log(`${signal}: flushing and stopping`);
      void sensor.stop();
    });
  }
  return sensor.done;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    log(`fatal: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
    process.exit(1);
  },
);
