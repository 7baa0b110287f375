/**
 * A rolling update's SIGTERM loses nothing. Two replicas run as real child processes (`node --import tsx
 * src/main.ts`) on one PostgreSQL database, behind a front that plays the Kubernetes Service (each connection to A
 * while A accepts, else to B). While A serves three streaming LLM calls and holds three parked calls (two plain, one
 * streaming), A gets SIGTERM:
 *  - its /readyz answers 503 "shutting down" first (shutdown.delaySeconds keeps it serving a moment, as preStop
 *    does in the manifests), then it stops taking connections;
 *  - the streams finish, whole;
 *  - the parked calls' connections are closed at once (A does not wait out its 25 s grace for a reviewer): their
 *    entries stay pending in the shared store, the SDK's own retry (plain calls) or the agent's (the stream)
 *    reaches B through the front and attaches to the same entry, and the release on B answers them there;
 *  - an egress tunnel open through A's forward proxy is cut when A's listeners close (a tunnel has no end to wait
 *    for), and its end event is written before A exits;
 *  - A exits 0, and the log holds every decision: each stream's decision and end, each parked call's decision on A
 *    and its retry's on B with its end, the tunnel's decision and end, the releases, and no entry stopped as orphaned.
 * PostgreSQL only: PGlite is embedded in one process, so no second process can share it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { CLOSE_GRACE_MS } from '../../../src/app/server.js';
import { ADMIN_TOKEN, agentWithKey, Client, enc, waitFor, WAIT_MS } from '../../helpers/harness.js';
import { readUntil } from '../../helpers/socket-read.js';
import { startReplicaProcess, stopReplicaProcess, type ReplicaProcess } from '../../helpers/replica-process.js';
import { freshPostgresDatabase, postgresReachable, storeKinds } from '../../helpers/stores.js';

const AGENT = 'eng/rolling-bot';
const HELD_MODEL = 'gpt-held';
const STREAM_MODEL = 'gpt-paced';
const CHUNKS = 12;
const CHUNK_MS = 250;

/** An OpenAI-compatible upstream: `gpt-paced` streams CHUNKS chunks CHUNK_MS apart (a stream still running at SIGTERM). */
function startUpstream(): Promise<{ origin: string; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as { model: string; stream?: boolean; messages: { content: string }[] };
      const usage = { prompt_tokens: 5, completion_tokens: CHUNKS, total_tokens: 5 + CHUNKS };
      const base = { id: 'chatcmpl-r', object: 'chat.completion.chunk', created: 1_700_000_000, model: body.model };
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'chatcmpl-r', object: 'chat.completion', created: 1_700_000_000, model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: `answer to ${body.messages.at(-1)?.content}`, refusal: null }, finish_reason: 'stop', logprobs: null }], usage }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const paced = body.model === STREAM_MODEL;
      let i = 0;
      const next = () => {
        if (res.destroyed) return;
        if (i < (paced ? CHUNKS : 1)) {
          res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: `c${i} ` }, finish_reason: null }] })}\n\n`);
          i++;
          setTimeout(next, paced ? CHUNK_MS : 0);
          return;
        }
        res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
        res.write(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
        res.end('data: [DONE]\n\n');
      };
      next();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: () => new Promise<void>((done) => {
          for (const s of sockets) s.destroy();
          server.close(() => done());
        }),
      }),
    ),
  );
}

/** The Service: each new connection goes to the first backend that accepts it (A until A stops listening, then B). */
function startFront(backends: () => number[]): Promise<{ url: string; connectionsTo: Map<number, number>; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const connectionsTo = new Map<number, number>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    const tryNext = (ports: number[]) => {
      const [port, ...rest] = ports;
      if (port === undefined) return client.destroy();
      const upstream = net.connect(port, '127.0.0.1');
      sockets.add(upstream);
      upstream.once('close', () => sockets.delete(upstream));
      upstream.once('error', () => (upstream.connecting || !upstream.readable ? tryNext(rest) : client.destroy()));
      upstream.once('connect', () => {
        connectionsTo.set(port, (connectionsTo.get(port) ?? 0) + 1);
        upstream.removeAllListeners('error');
        upstream.on('error', () => client.destroy());
        client.pipe(upstream).pipe(client);
        upstream.once('close', () => client.destroy());
        client.once('close', () => upstream.destroy());
      });
    };
    tryNext(backends());
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        connectionsTo,
        close: () => new Promise<void>((done) => {
          for (const s of sockets) s.destroy();
          server.close(() => done());
        }),
      }),
    ),
  );
}

const portOf = (url: string) => Number(new URL(url).port);

describe('SIGTERM during streaming and parked calls loses no audit event and no decision [postgres]', { skip: !storeKinds().includes('postgres') }, async () => {
  if (!(await postgresReachable())) return;
  let drop: () => Promise<void> = async () => {};
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let front: Awaited<ReturnType<typeof startFront>>;
  let a: ReplicaProcess | null = null;
  let b: ReplicaProcess | null = null;
  let key = '';
  const dir = mkdtempSync(join(tmpdir(), 'reins-rolling-'));
  // The origin of the egress tunnel: echoes what it gets.
  const echo = net.createServer((socket) => {
    socket.on('error', () => undefined);
    socket.pipe(socket);
  });
  let echoPort = 0;

  before(async () => {
    const database = await freshPostgresDatabase();
    drop = database.drop;
    upstream = await startUpstream();
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    echoPort = (echo.address() as AddressInfo).port;
    const config = join(dir, 'reins.yaml');
    // shutdown.delaySeconds: A keeps serving with readiness false for a moment after SIGTERM, so the test sees it.
    // The egress proxy on a free port, its address check off ([]): the tunnel's origin is on loopback.
    writeFileSync(
      config,
      JSON.stringify({
        providers: { openai: { baseUrl: upstream.origin, apiKey: 'sk-upstream-key' } },
        gateway: { heldKeepAliveSeconds: 1 },
        shutdown: { delaySeconds: 2 },
        egress: { port: 0, deniedNetworks: [] },
      }),
    );
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: '0', DATABASE_URL: database.url, REINS_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN, REINS_CONFIG: config, LOG_LEVEL: 'info' };
    // B first: it migrates and gets the agent and the approve policy; A then starts with them in its caches.
    b = await startReplicaProcess('replica B', env);
    const admin = new Client(b.url, ADMIN_TOKEN);
    key = await agentWithKey(admin, AGENT);
    // T3: the built-in egress allow-list lets the agent reach any host (the tunnel's origin).
    assert.equal((await admin.put(`/api/v1/identities/autonomy-tier?id=${enc(AGENT)}`, { tier: 'T3' })).status, 200);
    const policy = await admin.post('/api/v1/policies', { name: 'review-held-model', kind: 'approve', appliesTo: ['llm'], match: `object.llm.model == '${HELD_MODEL}'`, message: 'A person looks first.' });
    assert.equal(policy.status, 201, JSON.stringify(policy.body));
    a = await startReplicaProcess('replica A', env);
    front = await startFront(() => [a, b].filter((r): r is ReplicaProcess => r !== null).map((r) => portOf(r.url)));
  });

  after(async () => {
    await stopReplicaProcess(a);
    await stopReplicaProcess(b);
    await front?.close();
    await upstream?.close();
    echo.close();
    await drop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('streams finish, parked calls are answered on B after the retry attaches, A exits 0, every decision is in the log', { timeout: 600_000 }, async () => {
    const replicaA = a!;
    const adminB = new Client(b!.url, ADMIN_TOKEN);
    // The SDK's own retry policy (2 retries): a call whose connection is closed before its answer is sent again.
    const sdk = new OpenAI({ baseURL: `${front.url}/llm/openai/v1`, apiKey: key, maxRetries: 2 });

    // Three streams through A, each past its first chunk.
    const streams = await Promise.all(
      [0, 1, 2].map(async (i) => {
        const stream = await sdk.chat.completions.create({ model: STREAM_MODEL, stream: true, messages: [{ role: 'user', content: `stream ${i}` }] });
        const iterator = stream[Symbol.asyncIterator]();
        const first = await iterator.next();
        assert.equal(first.done, false);
        const rest = (async () => {
          let text = first.value.choices[0]?.delta.content ?? '';
          for (let r = await iterator.next(); !r.done; r = await iterator.next()) text += r.value.choices[0]?.delta.content ?? '';
          return text;
        })();
        return rest;
      }),
    );

    // Two plain calls and one streaming call parked on A.
    const plain = [0, 1].map((i) => sdk.chat.completions.create({ model: HELD_MODEL, messages: [{ role: 'user', content: `parked ${i}` }] }));
    for (const p of plain) p.catch(() => undefined);
    const heldStreamBody = { model: HELD_MODEL, stream: true as const, messages: [{ role: 'user' as const, content: 'parked stream' }] };
    const heldStream = await new OpenAI({ baseURL: `${front.url}/llm/openai/v1`, apiKey: key, maxRetries: 0 }).chat.completions.create(heldStreamBody);
    const heldStreamEnd = (async () => {
      try {
        for await (const _chunk of heldStream) void _chunk;
        return 'ended';
      } catch (err) {
        return `failed: ${(err as Error).message}`;
      }
    })();
    let entries: any[] = [];
    await waitFor(async () => {
      entries = (await adminB.get('/api/v1/held-calls?state=pending')).body.items;
      return entries.length === 3;
    }, WAIT_MS);
    assert.deepEqual(entries.map((e) => e.attachedCalls), [1, 1, 1]);
    assert.equal(front.connectionsTo.get(portOf(b!.url)) ?? 0, 0, 'every call so far went to A');

    // A tunnel through A's egress proxy to the echo server, bytes through it both ways.
    const egressUrl = new URL(String(replicaA.listening.egressUrl));
    const tunnel = net.connect(Number(egressUrl.port), egressUrl.hostname);
    tunnel.on('error', () => undefined);
    const tunnelClosed = new Promise<void>((resolve) => tunnel.once('close', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      tunnel.once('connect', resolve);
      tunnel.once('error', reject);
    });
    tunnel.write(`CONNECT 127.0.0.1:${echoPort} HTTP/1.1\r\nHost: 127.0.0.1:${echoPort}\r\nProxy-Authorization: Bearer ${key}\r\n\r\n`);
    assert.match(await readUntil(tunnel, (t) => t.includes('\r\n\r\n')), /^HTTP\/1\.1 200/);
    tunnel.write('ping\n');
    assert.equal(await readUntil(tunnel, (t) => t.includes('ping\n')), 'ping\n');

    // SIGTERM: readiness goes false first, while A still serves.
    const sigterm = Date.now();
    replicaA.proc.kill('SIGTERM');
    await waitFor(async () => {
      const r = await fetch(`${replicaA.url}/readyz`).catch(() => null);
      return r?.status === 503 && ((await r.json()) as { reason: string }).reason === 'shutting down';
    }, WAIT_MS, 20);

    // The streams finish, whole.
    const texts = await Promise.all(streams);
    for (const text of texts) assert.equal(text, Array.from({ length: CHUNKS }, (_, i) => `c${i} `).join(''));

    // A leaves without waiting out its grace for the parked calls, and exits 0.
    const exit = await replicaA.exited;
    assert.equal(exit.code, 0, replicaA.output());
    const took = Date.now() - sigterm;
    assert.ok(took < CLOSE_GRACE_MS, `A exited ${took} ms after SIGTERM: the parked calls were handed over, not waited for`);
    assert.ok(replicaA.lines.some((l) => l.includes('only parked calls left in flight')), replicaA.output());
    // The tunnel was cut when A's listeners closed.
    await tunnelClosed;

    // The held stream was cut; the agent sends it again, and it reaches B.
    assert.match(await heldStreamEnd, /^(ended|failed)/);
    const retriedStream = sdk.chat.completions.create(heldStreamBody);
    retriedStream.catch(() => undefined);

    // The entries stay pending, and every retry attached to its entry (the SDK's for the plain calls).
    await waitFor(async () => {
      entries = (await adminB.get('/api/v1/held-calls?state=pending')).body.items;
      return entries.length === 3 && entries.every((e) => e.attachedCalls === 2);
    }, WAIT_MS);
    assert.ok((front.connectionsTo.get(portOf(b!.url)) ?? 0) >= 3, 'the retries went to B');

    // Released on B: every waiting client gets its answer.
    for (const e of entries) assert.equal((await adminB.post(`/api/v1/held-calls/${e.id}/approve`, {})).status, 200);
    const answers = await Promise.all(plain);
    assert.deepEqual(answers.map((r) => r.choices[0]?.message.content).sort(), ['answer to parked 0', 'answer to parked 1']);
    let streamed = '';
    for await (const chunk of await retriedStream) streamed += chunk.choices[0]?.delta.content ?? '';
    assert.equal(streamed, 'c0 ');

    // The log (read on B): every decision and end.
    let events: any[] = [];
    await waitFor(async () => {
      events = (await adminB.get(`/api/v1/audit-events?identity=${enc(AGENT)}&limit=500`)).body.items;
      const decisions = events.filter((e) => e.action === 'llm.request');
      // Three streams and three retries ended; the three first calls of the parked ones were cut before their answer.
      return decisions.length === 9 && decisions.filter((e) => e.callEnded === true).length === 6;
    }, WAIT_MS);
    const decisions = events.filter((e) => e.action === 'llm.request');
    const byModel = (model: string) => decisions.filter((e) => e.data.model === model);
    assert.equal(byModel(STREAM_MODEL).length, 3, 'each stream decided once');
    for (const d of byModel(STREAM_MODEL)) {
      assert.equal(d.callEnded, true, 'each stream ended, and its end is in the log');
      const call = (await adminB.get(`/api/v1/audit-events?callId=${d.data.callId}`)).body.items;
      const end = call.find((e: any) => e.action === 'llm.request_end');
      assert.ok(end, `stream ${d.data.callId}: end event`);
      assert.equal(end.outcome, 'ok');
    }
    // Each parked call: its decision on A (the hold) and its retry's on B, both naming the one entry.
    const held = byModel(HELD_MODEL);
    assert.equal(held.length, 6);
    for (const e of entries) {
      const forEntry = held.filter((d) => d.data.held?.entryId === e.id);
      assert.equal(forEntry.length, 2, `entry ${e.id}: the first call's decision and the retry's`);
      assert.equal(forEntry.filter((d) => d.callEnded === true).length, 1, `entry ${e.id}: the retry ended on B, released`);
      // The first call's connection was closed while it waited: like a call cut by a crash, its decision stands with
      // no end (its client got no answer from it; the retry's end carries the outcome).
      assert.equal(forEntry.filter((d) => d.callEnded === false).length, 1, `entry ${e.id}: the first call has no end`);
    }
    // The tunnel: its decision (on A, before SIGTERM) and its end, written by A before it exited.
    const connect = events.filter((e) => e.action === 'egress.connect' && e.data.port === echoPort);
    assert.equal(connect.length, 1, 'the tunnel decided once');
    assert.equal(connect[0].callEnded, true, 'the cut tunnel has its end event');
    const tunnelEvents = (await adminB.get(`/api/v1/audit-events?callId=${connect[0].data.callId}`)).body.items;
    const tunnelEnd = tunnelEvents.find((e: any) => e.action === 'egress.connect_end');
    assert.ok(tunnelEnd, 'egress.connect_end');
    assert.ok(tunnelEnd.data.bytesUp >= 5 && tunnelEnd.data.bytesDown >= 5, JSON.stringify(tunnelEnd.data));
    const control = (await adminB.get('/api/v1/audit-events?action=held_call.approve&limit=50')).body.items;
    assert.deepEqual(control.map((c: any) => c.data.heldCallId).sort(), entries.map((e) => e.id).sort());
    assert.deepEqual((await adminB.get('/api/v1/audit-events?action=held_call.orphaned')).body.items, [], 'no entry stopped as orphaned');
    const all = (await adminB.get('/api/v1/held-calls')).body.items;
    assert.deepEqual(all.map((e: any) => e.state), ['released', 'released', 'released']);
  });
});
