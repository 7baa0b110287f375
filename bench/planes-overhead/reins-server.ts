/**
 * One Reins replica in its own process, from dist/ (run.ts builds it first), as bench/gateway-overhead/reins-server.ts
 * starts one, with the MCP upstream as `mcpServers: [{ name: bench, url }]` and the egress proxy on a free port:
 * in-memory PGlite or a PostgreSQL database, the bootstrap admin, the production logger at level `warn`.
 *
 * Run as a child: node --import tsx bench/planes-overhead/reins-server.ts <mcp upstream url> <admin token> [<postgres url>];
 * prints {"egress":"http://host:port"} and then {"ready":"<url>"}. With BENCH_CPU_PROFILE_DIR set, SIGUSR2 starts and stops a
 * CPU profile of the replica (profile-switch.ts), so that a profile covers the measured load and nothing else.
 */
const dist = new URL('../../dist/', import.meta.url).href;
const { loadConfig } = (await import(`${dist}config/config.js`)) as typeof import('../../src/config/config.js');
const { startReplica } = (await import(`${dist}app/server.js`)) as typeof import('../../src/app/server.js');
import { MCP_SERVER_NAME } from './payloads.js';
import { installProfileSwitch } from './profile-switch.js';
import { announceReady, endWithRunner } from '../gateway-overhead/server-child.js';

const [mcpUpstream, admin, databaseUrl] = process.argv.slice(2);
if (!mcpUpstream || !admin) throw new Error('usage: reins-server.ts <mcp upstream url> <admin token> [<postgres url>]');

// The bench's origins are on loopback, which the default deniedNetworks closes: this list keeps only metadata closed.
const yaml = [
  `mcpServers:`,
  `  - { name: ${MCP_SERVER_NAME}, url: "${mcpUpstream}" }`,
  `egress: { port: 0, deniedNetworks: ["169.254.0.0/16", "fe80::/10"] }`,
  '',
].join('\n');
const config = loadConfig(
  {
    HOST: '127.0.0.1',
    PORT: '0',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : { REINS_DATA_DIR: 'memory' }),
    REINS_BOOTSTRAP_ADMIN_TOKEN: admin,
    LOG_LEVEL: 'warn',
  },
  yaml,
);
const replica = await startReplica(config);
if (!replica.egressUrl) throw new Error('the egress proxy did not start');
await installProfileSwitch('reins');
process.stdout.write(`${JSON.stringify({ egress: replica.egressUrl })}\n`);
announceReady(replica.url);
endWithRunner(() => replica.close());
