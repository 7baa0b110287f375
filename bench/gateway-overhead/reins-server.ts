/**
 * One Reins replica in its own process, as `npm start` runs it (from dist/, which run.ts builds first): in-memory PGlite or a PostgreSQL database,
 * the bootstrap admin, and the fake upstream as the OpenAI provider. The production logger at level `warn`, so per-request logging is off as
 * an operator would run it under load, while anything Reins warns about per call still costs what it costs.
 *
 * Run as a child: node --import tsx bench/gateway-overhead/reins-server.ts <upstream origin> <admin token> [<postgres url>];
 * prints {"ready":"<url>"}.
 */
// The built server (run.ts builds it first), not the sources through tsx: tsx's transform adds helpers to every
// closure, which is not what an operator runs.
const dist = new URL('../../dist/', import.meta.url).href;
const { loadConfig } = (await import(`${dist}config/config.js`)) as typeof import('../../src/config/config.js');
const { startReplica } = (await import(`${dist}app/server.js`)) as typeof import('../../src/app/server.js');
import { installDiagnostics } from './diagnostics.js';
import { UPSTREAM_KEY } from './payloads.js';
import { announceReady, endWithRunner } from './server-child.js';

if (process.env.BENCH_DIAGNOSE === '1') installDiagnostics();

const [upstream, admin, databaseUrl] = process.argv.slice(2);
if (!upstream || !admin) throw new Error('usage: reins-server.ts <upstream origin> <admin token> [<postgres url>]');

const yaml = `providers:\n  openai: { baseUrl: "${upstream}", apiKey: "${UPSTREAM_KEY}" }\n`;
const config = loadConfig(
  {
    HOST: '127.0.0.1',
    PORT: '0',
    // Without a database URL: embedded PGlite in memory, in a worker thread of this process.
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : { REINS_DATA_DIR: 'memory' }),
    REINS_BOOTSTRAP_ADMIN_TOKEN: admin,
    LOG_LEVEL: 'warn',
  },
  yaml,
);
const replica = await startReplica(config);
announceReady(replica.url);
endWithRunner(() => replica.close());
