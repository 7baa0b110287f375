/**
 * Every decision is audited when it is made: a replica killed with SIGKILL in the middle of a streaming LLM call and
 * with an egress tunnel open leaves both decisions in the audit log, with their outcome unknown (no end event).
 *
 * Two replicas run as real child processes (`node --import tsx src/main.ts`) on one PostgreSQL database: A serves
 * the calls, B is where the test watches the log (so the decisions are seen on the store, not in A's memory). The
 * LLM upstream is the fake provider's `slow-stream` model (one chunk, then silence); the tunnel goes to a local TCP
 * echo server. PostgreSQL only: PGlite is embedded in one process, so no second process can share it.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { startFakeProviders, type FakeProviders } from '../../fakes/fake-providers.js';
import { providersAt } from '../../helpers/gateway.js';
import { ADMIN_TOKEN, agentWithKey, Client, enc, waitFor } from '../../helpers/harness.js';
import { readUntil } from '../../helpers/socket-read.js';
import { freshPostgresDatabase, postgresReachable, storeKinds } from '../../helpers/stores.js';
import { unusedPort } from '../../helpers/ports.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const AGENT = 'eng/streamer';
/** Generous: three replicas start under tsx on a machine shared with other test runs. */
const START_LIMIT_MS = 120_000;
const SEEN_LIMIT_MS = 60_000;

interface ReplicaProcess {
  proc: ChildProcess;
  url: string;
  exited: Promise<void>;
  output(): string;
}

/** Starts `src/main.ts` and resolves once it logs that it listens (its log line names the URL). */
async function startReplicaProcess(name: string, env: NodeJS.ProcessEnv): Promise<ReplicaProcess> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const keep = (line: string) => {
    lines.push(line);
    if (lines.length > 40) lines.shift();
  };
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not listen within ${START_LIMIT_MS} ms:\n${lines.join('\n')}`)), START_LIMIT_MS);
    // Both streams are drained for the process's whole life: a full pipe would block its logging.
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      keep(line);
      if (!line.includes('reins is listening')) return;
      clearTimeout(timer);
      resolve((JSON.parse(line) as { url: string }).url);
    });
    createInterface({ input: proc.stderr! }).on('line', keep);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${name} exited before listening:\n${lines.join('\n')}`));
    });
  });
  return { proc, url, exited, output: () => lines.join('\n') };
}

async function stop(replica: ReplicaProcess | null): Promise<void> {
  if (!replica || replica.proc.exitCode !== null || replica.proc.signalCode !== null) return;
  replica.proc.kill('SIGTERM');
  await replica.exited;
}

const wanted = storeKinds().includes('postgres');

describe('a replica killed mid-call leaves its decisions in the audit log [postgres]', { skip: !wanted }, async () => {
  if (!(await postgresReachable())) return;

  let drop: () => Promise<void> = async () => {};
  let fake: FakeProviders;
  const echo = net.createServer((socket) => socket.pipe(socket));
  let echoPort = 0;
  const dir = mkdtempSync(join(tmpdir(), 'reins-killed-'));
  let envA: NodeJS.ProcessEnv;
  let envB: NodeJS.ProcessEnv;
  let a: ReplicaProcess | null = null;
  let restarted: ReplicaProcess | null = null;
  let b: ReplicaProcess | null = null;
  let key = '';
  let egressPort = 0;
  const open: { destroy(): void }[] = [];

  before(async () => {
    const database = await freshPostgresDatabase();
    drop = database.drop;
    fake = await startFakeProviders();
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    echoPort = (echo.address() as AddressInfo).port;
    const base: NodeJS.ProcessEnv = { ...process.env, HOST: '127.0.0.1', PORT: '0', DATABASE_URL: database.url, REINS_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: 'info' };
    delete base.REINS_DATA_DIR;
    // The egress check on addresses is off ([]): the tunnel's origin is on loopback.
    const configA = join(dir, 'a.yaml');
    egressPort = await unusedPort();
    writeFileSync(configA, JSON.stringify({ providers: providersAt(fake.origin), egress: { port: egressPort, deniedNetworks: [] } }));
    const configB = join(dir, 'b.yaml');
    writeFileSync(configB, JSON.stringify({ providers: providersAt(fake.origin) }));
    envA = { ...base, REINS_CONFIG: configA };
    envB = { ...base, REINS_CONFIG: configB };
    // B first: it applies the migrations and creates the agent; A then starts with the agent's tier in its cache.
    b = await startReplicaProcess('replica B', envB);
    const admin = new Client(b.url, ADMIN_TOKEN);
    key = await agentWithKey(admin, AGENT);
    // T3: the egress allow-list policy lets the agent reach any host.
    assert.equal((await admin.put(`/api/v1/identities/autonomy-tier?id=${enc(AGENT)}`, { tier: 'T3' })).status, 200);
    a = await startReplicaProcess('replica A', envA);
  });

  after(async () => {
    for (const o of open) o.destroy();
    if (a && a.proc.exitCode === null && a.proc.signalCode === null) a.proc.kill('SIGKILL');
    await stop(restarted);
    await stop(b);
    await fake?.close();
    echo.close();
    await drop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('kill -9 during a streaming LLM call and an open egress tunnel: after restart both decisions are in the log, outcome unknown', { timeout: 600_000 }, async () => {
    const killed = a!;
    // A streaming call through A, its first chunk received: the upstream then stays silent, so the call stays open.
    const stream = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.request(new URL('/llm/openai/v1/chat/completions', killed.url), {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      });
      req.once('response', resolve);
      req.once('error', reject);
      req.end(JSON.stringify({ model: 'slow-stream', stream: true, messages: [{ role: 'user', content: 'keep talking' }] }));
    });
    open.push(stream);
    assert.equal(stream.statusCode, 200);
    stream.on('error', () => undefined);
    const firstChunk = await new Promise<string>((resolve) => stream.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8'))));
    assert.match(firstChunk, /Hel/);

    // A tunnel through A's egress proxy to the echo server, with bytes through it both ways.
    const tunnel = net.connect(egressPort, '127.0.0.1');
    open.push(tunnel);
    tunnel.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      tunnel.once('connect', resolve);
      tunnel.once('error', reject);
    });
    tunnel.write(`CONNECT 127.0.0.1:${echoPort} HTTP/1.1\r\nHost: 127.0.0.1:${echoPort}\r\nProxy-Authorization: Bearer ${key}\r\n\r\n`);
    const established = await readUntil(tunnel, (t) => t.includes('\r\n\r\n'));
    assert.match(established, /^HTTP\/1\.1 200/);
    tunnel.write('ping\n');
    assert.equal(await readUntil(tunnel, (t) => t.includes('ping\n')), 'ping\n');

    // Both decisions reach the store while the calls are open: seen through the other replica.
    const watcher = new Client(b!.url, ADMIN_TOKEN);
    const decisions = async (client: Client) => {
      const items: any[] = (await client.get(`/api/v1/audit-events?identity=${enc(AGENT)}&limit=500`)).body.items;
      return {
        items,
        llm: items.find((e) => e.action === 'llm.request' && e.data.model === 'slow-stream'),
        egress: items.find((e) => e.action === 'egress.connect' && e.data.port === echoPort),
      };
    };
    let seen = await decisions(watcher);
    await waitFor(async () => {
      seen = await decisions(watcher);
      return seen.llm !== undefined && seen.egress !== undefined;
    }, SEEN_LIMIT_MS, 50);
    assert.ok(seen.llm, 'the LLM decision is in the log while the stream is open');
    assert.ok(seen.egress, 'the tunnel decision is in the log while the tunnel is open');

    // kill -9: nothing of A runs after this, no end event, no flush on shutdown.
    killed.proc.kill('SIGKILL');
    await killed.exited;
    assert.equal(killed.proc.signalCode, 'SIGKILL');
    // The client sides see their connections cut.
    await new Promise<void>((resolve) => (tunnel.destroyed ? resolve() : tunnel.once('close', () => resolve())));

    restarted = await startReplicaProcess('replica A, restarted', envA);
    const admin = new Client(restarted.url, ADMIN_TOKEN);
    const after = await decisions(admin);
    for (const [what, decision] of [
      ['LLM call', after.llm],
      ['egress tunnel', after.egress],
    ] as const) {
      assert.ok(decision, `the ${what}'s decision is in the log after the restart`);
      assert.equal(decision.outcome, 'ok');
      assert.equal(decision.data.decision, 'allow');
      assert.equal(decision.data.agent.tier, 'T3');
      assert.equal(decision.data.end, undefined, 'a decision event holds no outcome');
      assert.equal(decision.callEnded, false, `the ${what}'s outcome is unknown: no end event`);
      const call = (await admin.get(`/api/v1/audit-events?callId=${decision.data.callId}`)).body.items;
      assert.deepEqual(call.map((e: any) => e.id), [decision.id], `only the ${what}'s decision carries its callId`);
    }
    assert.equal(after.egress.host, '127.0.0.1');
    assert.equal(after.egress.data.method, 'CONNECT');
    assert.equal(after.llm.data.stream, true);
    assert.equal(after.items.filter((e: any) => e.action.endsWith('_end')).length, 0, 'no end event for either');

    // Each call is counted once: its decision, with no end to add or double it.
    const spend = (await admin.get(`/api/v1/spend?identity=${enc(AGENT)}`)).body.items;
    assert.deepEqual(spend.map((r: any) => [r.identity, r.requests, r.inputTokens, r.costUsd]), [[AGENT, 1, 0, 0]]);
  });
});
