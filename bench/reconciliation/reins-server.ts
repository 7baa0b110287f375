/**
 * The replica of the reconciliation benchmark in its own process, from dist/ as `npm start` runs it: PostgreSQL,
 * the runtime guard on, KUBECONFIG naming the runner's fake Kubernetes API, the runner's sensor metrics endpoint,
 * and the egress plane configured (so governedCalls are computed).
 *
 * Run as a child: node --import tsx bench/reconciliation/reins-server.ts <postgres url> <admin token> <metrics url>
 * with KUBECONFIG set; prints {"ready":"<url>"}.
 */
import { announceReady, endWithRunner } from '../gateway-overhead/server-child.js';

const dist = new URL('../../dist/', import.meta.url).href;
const { loadConfig } = (await import(`${dist}config/config.js`)) as typeof import('../../src/config/config.js');
const { startReplica } = (await import(`${dist}app/server.js`)) as typeof import('../../src/app/server.js');

const [databaseUrl, admin, metricsUrl] = process.argv.slice(2);
if (!databaseUrl || !admin || !metricsUrl) throw new Error('usage: reins-server.ts <postgres url> <admin token> <metrics url>');

const yaml = [
  'egress: { port: 0 }',
  'runtimeGuard:',
  '  enabled: true',
  '  selfService: reins/reins',
  '  sensor:',
  `    metricsTargets: ["${metricsUrl}"]`,
  '    scrapeIntervalSeconds: 15',
  '',
].join('\n');
const config = loadConfig(
  {
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: databaseUrl,
    REINS_BOOTSTRAP_ADMIN_TOKEN: admin,
    LOG_LEVEL: 'warn',
    ...(process.env.KUBECONFIG ? { KUBECONFIG: process.env.KUBECONFIG } : {}),
  },
  yaml,
);
const replica = await startReplica(config);
announceReady(replica.url);
endWithRunner(() => replica.close());
