/**
 * The embedded store's engine: PGlite (PostgreSQL compiled to WebAssembly), answering the messages of `PgliteDb`
 * (pglite.ts). The server runs it in a worker thread of the Reins process: PGlite executes every statement
 * synchronously inside WebAssembly; on the main thread a batch of audit inserts held the event loop for
 * milliseconds at a time, and every call arriving meanwhile waited. Here it only costs this thread. The CLI, which
 * answers no calls and lives for one command, runs the same `serve` on its main thread and skips starting one.
 *
 * The protocol is the `Db` adapter's, one message per operation (types in pglite-protocol.ts). PGlite
 * serialises queries and transactions itself (one connection), exactly as it did in-process: a query that
 * arrives while a transaction is open waits for it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { mkdirSync, readFileSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { checkpointWhenWalGrows } from './pglite-checkpoints.js';
import type { FromWorker, SerializedError, ToWorker, WorkerOptions } from './pglite-protocol.js';

/** Where the engine's requests come from and its answers go: the worker's parentPort, or PgliteDb's in-process endpoint. */
export interface StorePort {
  postMessage(message: FromWorker): void;
  on(event: 'message', listener: (message: ToWorker) => void): unknown;
}

/** An open transaction: PGlite's handle, how the main thread ends it, and which message asked to end it. */
interface OpenTransaction {
  t: Transaction;
  end(commit: boolean): void;
  endId: number;
}

/** Thrown inside PGlite's transaction callback when the main thread rolls back: PGlite then runs ROLLBACK. */
class RollbackRequested extends Error {}

/** The fields of a PostgreSQL error the main thread rebuilds (pg-protocol's DatabaseError names). */
export function serializeError(err: unknown): SerializedError {
  const e = err as Error & Record<string, unknown>;
  const out: SerializedError = { message: e?.message ?? String(err) };
  for (const key of ['code', 'severity', 'detail', 'hint', 'constraint', 'table', 'column', 'schema', 'where', 'position'] as const) {
    if (typeof e?.[key] === 'string') out[key] = e[key] as string;
  }
  return out;
}

/**
 * One full collection a moment after the database is up. Creating a new database leaves initdb's WebAssembly
 * instance and its memory (about 170 MB) unreferenced once create's promise chain has unwound; a thread that only
 * ever waits for messages allocates too little for V8 to collect it on its own, and the process would carry it
 * for good (measured: 777 MB resident after a first start without this, 501 MB with it, 483 MB in-process).
 */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** Opens the database, answers `ready` (or rejects), then answers every request arriving on `port`. */
export async function serve(port: StorePort, options: WorkerOptions): Promise<void> {
  const { dataDir } = options;
  const transactions = new Map<number, OpenTransaction>();
  const unlistens = new Map<string, () => Promise<void>>();
  let nextTransaction = 1;
  const send = (message: FromWorker): void => port.postMessage(message);

  if (dataDir !== 'memory') mkdirSync(dataDir, { recursive: true });
  const pg =
    dataDir !== 'memory'
      ? await PGlite.create(dataDir)
      : await PGlite.create(options.loadDataDir === undefined ? undefined : { loadDataDir: new Blob([readFileSync(options.loadDataDir)]) });
  const stopCheckpoints = checkpointWhenWalGrows(pg, options.checkpoints);
  send({ op: 'ready' });

  const answer = (id: number, work: Promise<{ rows: unknown[]; rowCount: number } | void>) =>
    work.then(
      (result) => send({ op: 'result', id, rows: result?.rows ?? [], rowCount: result?.rowCount ?? 0 }),
      (err: unknown) => send({ op: 'error', id, error: serializeError(err) }),
    );

  const query = async (q: PGlite | Transaction, sql: string, params: unknown[]) => {
    const r = await q.query(sql, params);
    return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
  };

  port.on('message', (m: ToWorker) => {
    switch (m.op) {
      case 'query': {
        if (m.tx === undefined) return void answer(m.id, query(pg, m.sql, m.params));
        const open = transactions.get(m.tx);
        if (!open) return void send({ op: 'error', id: m.id, error: { message: `transaction ${m.tx} is not open` } });
        return void answer(m.id, query(open.t, m.sql, m.params));
      }
      case 'begin': {
        const tx = nextTransaction++;
        let open: OpenTransaction | undefined;
        // PGlite's transaction() runs BEGIN, the callback, then COMMIT (or ROLLBACK when the callback throws); the
        // callback here only waits for the main thread's end message, and the outcome answers that message.
        pg.transaction(
          (t) =>
            new Promise<void>((resolve, reject) => {
              open = { t, endId: -1, end: (commit) => (commit ? resolve() : reject(new RollbackRequested())) };
              transactions.set(tx, open);
              send({ op: 'began', id: m.id, tx });
            }),
        ).then(
          () => send({ op: 'result', id: open!.endId, rows: [], rowCount: 0 }),
          (err: unknown) => {
            if (!open) return send({ op: 'error', id: m.id, error: serializeError(err) }); // BEGIN itself failed
            transactions.delete(tx);
            if (err instanceof RollbackRequested) send({ op: 'result', id: open.endId, rows: [], rowCount: 0 });
            else send({ op: 'error', id: open.endId, error: serializeError(err) });
          },
        );
        return;
      }
      case 'end': {
        const open = transactions.get(m.tx);
        if (!open) return void send({ op: 'error', id: m.id, error: { message: `transaction ${m.tx} is not open` } });
        transactions.delete(m.tx);
        open.endId = m.id;
        open.end(m.commit);
        return;
      }
      case 'listen': {
        if (unlistens.has(m.channel)) return void send({ op: 'result', id: m.id, rows: [], rowCount: 0 });
        return void answer(
          m.id,
          pg.listen(m.channel, (payload) => send({ op: 'notification', channel: m.channel, payload })).then((unlisten) => {
            unlistens.set(m.channel, unlisten);
          }),
        );
      }
      case 'unlisten': {
        const unlisten = unlistens.get(m.channel);
        unlistens.delete(m.channel);
        return void answer(m.id, unlisten ? unlisten() : Promise.resolve());
      }
      case 'close':
        stopCheckpoints();
        return void answer(m.id, pg.closed ? Promise.resolve() : pg.close());
    }
  });
}

/**
 * How far below the thread that answers calls the store's thread runs (nice value). When both want the same core
 * (a one-core replica, a busy machine), a batch of audit inserts in WebAssembly would otherwise get an equal share
 * of it; a lower priority gives the event loop the larger share. It does not hand the event loop the core the
 * moment a call arrives: a kernel that lets the running thread finish its slice (bench/gateway-overhead/README.md,
 * "Where the tail waits": up to a 4 ms tick) still makes that call wait behind an insert in progress. 5 and not
 * more: with the event loop saturated the store still gets about a quarter of the core, more than the audit writes
 * of a saturated gateway take (bench/gateway-overhead: about 60 µs of store CPU per call against 200 µs on the event
 * loop), so audit events are written as they come, not deferred.
 */
export const STORE_THREAD_NICE = 5;
const LOWEST_PRIORITY = 19;

/**
 * Lowers this thread's priority by STORE_THREAD_NICE from the process's. Only on Linux, where a nice value belongs
 * to the thread that sets it; elsewhere (macOS) it would lower the whole process. A refusal leaves it as it was.
 */
export function lowerThreadPriority(): void {
  if (process.platform !== 'linux') return;
  try {
    // Relative to the process's own nice value (a replica started under `nice` keeps the same distance).
    setPriority(Math.min(LOWEST_PRIORITY, getPriority() + STORE_THREAD_NICE));
  } catch {
    // not allowed here: the thread keeps the process's priority
  }
}

if (parentPort) {
  const port = parentPort;
  serve(port, workerData as WorkerOptions).then(
    () => {
      // Once PGlite is loaded: threads started meanwhile on this thread's behalf (libuv's pool, for the files it
      // read) would inherit the lower priority, and they serve the whole process.
      lowerThreadPriority();
      setTimeout(collectGarbage, 1_000).unref();
    },
    (err: unknown) => port.postMessage({ op: 'failed', error: serializeError(err) } satisfies FromWorker),
  );
}
