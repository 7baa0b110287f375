/**
 * The route's floor: the least any HTTP ingest route for sensor reports must do, in a process of its own as the
 * replica is. node:http, the sensor's bearer token checked against its SHA-256 (as Reins keeps tokens), the body
 * read whole up to the route's limit, parsed, its shape checked as far as storing it needs (an object with a `node`
 * and an `observations` array of at most 500), and stored by the store's own statement (storeReport(), the insert
 * the route runs) through the store's own adapter; answered `{"stored": n}` as the route answers.
 *
 * With `--index`, the indexed floor: the same, and the observation index every replica keeps current beside it, by
 * reading each stored row back from the table (every replica answers for the whole fleet, whichever replica stored a
 * row), as the first answer after an ingest needs. It is Reins' own ObservationFeed, tailed as the runtime guard tails
 * it (again 200 ms after a read that found rows, else every second), so the index's cost is the same on both sides.
 *
 * What the real route does beyond the indexed floor: Fastify's routing and hooks, the compiled schema over every
 * item, the cleaning and checks (ingest.ts), the metrics, the runtime guard's other work. bench/reconciliation/run.ts
 * sends the same kind of reports to each, from as many senders, and reads the route's throughput against theirs.
 *
 *   node --import tsx bench/reconciliation/route-floor.ts <database url> <sha256 hex of the sensor token> [--index]
 *
 * Prints {"ready":"<url>"} once listening (server-child.ts). With --index, `GET /index` brings the index up to date and answers
 * `{"rows": n}`: the rows the index holds, which the runner checks against the rows stored.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SensorReport } from '../../src/runtime-guard/contract.js';
import { MAX_OBSERVATIONS_PER_REPORT, MAX_REPORT_BODY_BYTES, storeReport } from '../../src/runtime-guard/ingest.js';
import { ObservationFeed } from '../../src/runtime-guard/observation-store.js';
import { BUSY_TAIL_MS } from '../../src/runtime-guard/runtime-guard.js';
import { PostgresDb } from '../../src/store/postgres.js';
import { announceReady, endWithRunner } from '../gateway-overhead/server-child.js';

const [databaseUrl, tokenHashHex, indexFlag] = process.argv.slice(2);
if (!databaseUrl || !tokenHashHex || !/^[0-9a-f]{64}$/.test(tokenHashHex) || (indexFlag !== undefined && indexFlag !== '--index')) {
  throw new Error('usage: route-floor.ts <database url> <sha256 hex of the sensor token> [--index]');
}
const tokenHash = Buffer.from(tokenHashHex, 'hex');
const db = new PostgresDb(databaseUrl);
const feed = indexFlag ? new ObservationFeed(db, { nowMs: Date.now }) : null;
let stopped = false;

/** The runtime guard's tail loop (runtime-guard.ts): read again soon while rows arrive, else once a second. */
function tail(): void {
  if (!feed || stopped) return;
  const before = feed.index.size;
  feed.catchUp().then(
    () => setTimeout(tail, feed.index.size === before ? 1000 : BUSY_TAIL_MS).unref(),
    (err: Error) => {
      process.stderr.write(`route floor: reading new observations failed: ${err.message}\n`);
      setTimeout(tail, 1000).unref();
    },
  );
}
const PATH = '/api/v1/runtime/sensor/reports';

function answer(res: ServerResponse, status: number, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function authorized(header: string | undefined): boolean {
  if (!header?.startsWith('Bearer ')) return false;
  return timingSafeEqual(createHash('sha256').update(header.slice(7)).digest(), tokenHash);
}

/** The report, or why it cannot be stored. */
function reportOf(text: string): SensorReport | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'the body is no JSON';
  }
  if (typeof value !== 'object' || value === null) return 'the body is no object';
  const { node, observations } = value as { node?: unknown; observations?: unknown };
  if (typeof node !== 'string' || node === '') return 'node: a name';
  if (!Array.isArray(observations)) return 'observations: an array';
  if (observations.length > MAX_OBSERVATIONS_PER_REPORT) return `observations: at most ${MAX_OBSERVATIONS_PER_REPORT}`;
  return value as SensorReport;
}

const server = createServer((req, res) => {
  if (feed && req.method === 'GET' && req.url === '/index') {
    req.resume();
    // catchUp reads every row committed before it is called, a read under way included.
    feed.catchUp().then(
      () => answer(res, 200, { rows: feed.index.size }),
      (err: Error) => answer(res, 500, { error: 'internal', message: err.message }),
    );
    return;
  }
  if (req.method !== 'POST' || req.url !== PATH) {
    req.resume();
    return answer(res, 404, { error: 'not_found' });
  }
  if (!authorized(req.headers.authorization)) {
    req.resume();
    return answer(res, 401, { error: 'unauthenticated' });
  }
  if (!(req.headers['content-type'] ?? '').includes('json')) {
    req.resume();
    return answer(res, 415, { error: 'unsupported_media_type' });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > MAX_REPORT_BODY_BYTES) tooLarge = true;
    else chunks.push(chunk);
  });
  req.on('end', () => {
    if (tooLarge) return answer(res, 413, { error: 'too_large' });
    const bytes = Buffer.concat(chunks, size);
    const report = reportOf(bytes.toString('utf8'));
    if (typeof report === 'string') return answer(res, 400, { error: 'bad_request', message: report });
    storeReport(db, report, bytes).then(
      (stored) => answer(res, 200, { stored }),
      (err: Error) => answer(res, 500, { error: 'internal', message: err.message }),
    );
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  tail();
  announceReady(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
endWithRunner(() => {
  stopped = true;
  return new Promise<void>((done) => server.close(() => done()))
    .then(() => feed?.settle())
    .then(() => db.close());
});
