import { Worker } from 'node:worker_threads';
import type { Db, ListenOptions, QueryResult, Queryable } from './db.js';
import type { FromWorker, SerializedError, ToWorker, WorkerOptions } from './pglite-protocol.js';
import { storableParams } from './storable.js';

/**
 * The worker's entry sits beside this module: dist/store/pglite-worker.js when built. From source (tsx: tests,
 * benchmarks) Node 20 does not carry the --import hooks into a worker thread, so a one-line bootstrap registers
 * tsx's loader there first.
 */
function startWorker(options: WorkerOptions): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./pglite-worker.js', import.meta.url), { workerData: options });
  const entry = JSON.stringify(new URL('./pglite-worker.ts', import.meta.url).href);
  const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${entry}); })`;
  return new Worker(bootstrap, { eval: true, workerData: options });
}

interface Pending {
  resolve(message: FromWorker): void;
  reject(err: Error): void;
}

/** A PostgreSQL error from the worker, with its SQLSTATE and details, as pg-protocol's DatabaseError carries them. */
export class PgliteError extends Error {
  constructor(fields: SerializedError) {
    super(fields.message);
    this.name = 'PgliteError';
    Object.assign(this, fields);
  }
}

/**
 * Embedded store: PGlite on a directory or in memory, run in a worker thread of this process (pglite-worker.ts)
 * so that its WebAssembly execution never holds the event loop that answers calls. One connection, so PGlite
 * itself serializes queries and transactions, as it did in-process; LISTEN/NOTIFY works in-process.
 *
 * The worker keeps the process alive only while a request is in flight, as a socket to PostgreSQL would not
 * either: a store nobody closed does not hold the process open.
 */
export class PgliteDb implements Db {
  readonly kind = 'pglite' as const;
  private readonly pending = new Map<number, Pending>();
  private readonly subscribers = new Map<string, Set<(payload: string) => void>>();
  private nextId = 1;
  /** Set when the worker died or the store was closed: every later request fails with it. */
  private gone: Error | null = null;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (m: FromWorker) => this.receive(m));
    worker.on('error', (err) => this.fail(new Error(`the embedded store's thread failed: ${err.message}`)));
    worker.on('exit', (code) => this.fail(new Error(`the embedded store's thread exited (code ${code})`)));
    worker.unref();
  }

  static async open(dataDir: string | 'memory'): Promise<PgliteDb> {
    const worker = startWorker({ dataDir });
    await new Promise<void>((resolve, reject) => {
      const onMessage = (m: FromWorker) => {
        if (m.op !== 'ready' && m.op !== 'failed') return;
        worker.off('message', onMessage);
        worker.off('error', onError);
        if (m.op === 'ready') resolve();
        else {
          void worker.terminate();
          reject(new PgliteError(m.error));
        }
      };
      const onError = (err: Error) => {
        worker.off('message', onMessage);
        reject(err);
      };
      worker.on('message', onMessage);
      worker.once('error', onError);
    });
    return new PgliteDb(worker);
  }

  query<T>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<T>> {
    return this.request({ op: 'query', id: 0, sql, params: storableParams(params) as unknown[] }).then(toResult<T>);
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const began = await this.request({ op: 'begin', id: 0 });
    const txId = (began as Extract<FromWorker, { op: 'began' }>).tx;
    const tx: Queryable = {
      query: <R>(sql: string, params: readonly unknown[] = []) =>
        this.request({ op: 'query', id: 0, sql, params: storableParams(params) as unknown[], tx: txId }).then(toResult<R>),
    };
    let result: T;
    try {
      result = await fn(tx);
    } catch (err) {
      await this.request({ op: 'end', id: 0, tx: txId, commit: false }).catch(() => {});
      throw err;
    }
    await this.request({ op: 'end', id: 0, tx: txId, commit: true });
    return result;
  }

  async listen(channel: string, onPayload: (payload: string) => void, _options?: ListenOptions): Promise<() => Promise<void>> {
    // The worker cannot lose its in-process connection, so onResync is never needed.
    let set = this.subscribers.get(channel);
    if (!set) {
      set = new Set();
      this.subscribers.set(channel, set);
      await this.request({ op: 'listen', id: 0, channel });
    }
    set.add(onPayload);
    return async () => {
      const current = this.subscribers.get(channel);
      if (!current?.delete(onPayload) || current.size > 0) return;
      this.subscribers.delete(channel);
      if (!this.gone) await this.request({ op: 'unlisten', id: 0, channel });
    };
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1');
  }

  async close(): Promise<void> {
    if (this.gone) return;
    await this.request({ op: 'close', id: 0 });
    this.gone = new Error('the embedded store is closed');
    await this.worker.terminate();
  }

  private request(message: ToWorker): Promise<FromWorker> {
    if (this.gone) return Promise.reject(this.gone);
    const id = this.nextId++;
    message.id = id;
    return new Promise<FromWorker>((resolve, reject) => {
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage(message);
    });
  }

  private receive(m: FromWorker): void {
    if (m.op === 'notification') {
      for (const onPayload of this.subscribers.get(m.channel) ?? []) onPayload(m.payload);
      return;
    }
    if (m.op !== 'result' && m.op !== 'error' && m.op !== 'began') return;
    const waiting = this.pending.get(m.id);
    if (!waiting) return;
    this.pending.delete(m.id);
    if (this.pending.size === 0) this.worker.unref();
    if (m.op === 'error') waiting.reject(new PgliteError(m.error));
    else waiting.resolve(m);
  }

  private fail(err: Error): void {
    this.gone ??= err;
    for (const waiting of this.pending.values()) waiting.reject(err);
    this.pending.clear();
  }
}

function toResult<T>(m: FromWorker): QueryResult<T> {
  const r = m as Extract<FromWorker, { op: 'result' }>;
  return { rows: r.rows as T[], rowCount: r.rowCount };
}
