import { EventEmitter } from 'node:events';
import { Worker } from 'node:worker_threads';
import { lockDataDir, type DataDirLock } from './data-dir-lock.js';
import type { Db, ListenOptions, QueryResult, Queryable } from './db.js';
import type { CheckpointOptions } from './pglite-checkpoints.js';
import type { FromWorker, SerializedError, ToWorker, WorkerOptions } from './pglite-protocol.js';
import { storableParams } from './storable.js';

/** The engine's end of the messages, as PgliteDb sees it: a worker thread, or the engine on this thread. */
type Endpoint = EventEmitter & {
  postMessage(message: ToWorker): void;
  ref(): void;
  unref(): void;
  terminate(): Promise<number>;
};

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

/**
 * The engine (pglite-worker.ts's `serve`) on this thread, for a process that answers no calls while it queries (the
 * CLI): no thread to start, nor a second copy of PGlite's module graph to load there. Messages pass as they would
 * between threads, one turn of the event loop later, so both endpoints behave alike.
 */
async function startInProcess(options: WorkerOptions): Promise<Endpoint> {
  const { serve, serializeError } = await import('./pglite-worker.js');
  const endpoint = new EventEmitter();
  let engine: ((m: ToWorker) => void) | null = null;
  const port = {
    postMessage: (m: FromWorker) => void setImmediate(() => endpoint.emit('message', m)),
    on: (_event: 'message', listener: (m: ToWorker) => void) => void (engine = listener),
  };
  serve(port, options).catch((err: unknown) => port.postMessage({ op: 'failed', error: serializeError(err) }));
  return Object.assign(endpoint, {
    postMessage: (m: ToWorker) => void setImmediate(() => engine?.(m)),
    ref() {},
    unref() {},
    terminate: async () => 0,
  });
}

export interface PgliteOpenOptions {
  /** Run PGlite on this thread instead of a worker thread (the CLI: quicker to start, nothing else to answer). */
  inProcess?: boolean;
  /** When the store checkpoints (pglite-checkpoints.ts); tests make it sooner. */
  checkpoints?: CheckpointOptions;
  /**
   * In memory only: start from this data directory, a tar file as PGlite's `dumpDataDir` writes it, instead of
   * creating a database (initdb in WebAssembly: about 7 s of CPU here, against 2 to load one). The test suite's
   * stores start from one that is already migrated (test/helpers/pglite-template.ts).
   */
  loadDataDir?: string;
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
 * itself serializes queries and transactions, as it did in-process; LISTEN/NOTIFY works in-process. The CLI,
 * which answers no calls, runs the same engine on its own thread (`inProcess`). A directory is one process's
 * (data-dir-lock.ts).
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

  private constructor(
    private readonly worker: Endpoint,
    private readonly lock: DataDirLock | null,
  ) {
    worker.on('message', (m: FromWorker) => this.receive(m));
    worker.on('error', (err) => this.fail(new Error(`the embedded store's thread failed: ${err.message}`)));
    worker.on('exit', (code) => this.fail(new Error(`the embedded store's thread exited (code ${code})`)));
    worker.unref();
  }

  /**
   * Opens the store. An on-disk directory is locked first (data-dir-lock.ts): it belongs to one process, and a
   * second opener gets a DataDirLockedError instead of a copy of the data nobody else sees.
   */
  static async open(dataDir: string | 'memory', options: PgliteOpenOptions = {}): Promise<PgliteDb> {
    // Refused before the directory is locked: nothing to release.
    if (options.loadDataDir !== undefined && dataDir !== 'memory') throw new Error('loadDataDir: only an in-memory store starts from a dumped data directory');
    const lock = dataDir === 'memory' ? null : lockDataDir(dataDir);
    try {
      const workerOptions: WorkerOptions = {
        dataDir,
        ...(options.checkpoints ? { checkpoints: options.checkpoints } : {}),
        ...(options.loadDataDir !== undefined ? { loadDataDir: options.loadDataDir } : {}),
      };
      const worker = options.inProcess ? await startInProcess(workerOptions) : startWorker(workerOptions);
      await PgliteDb.ready(worker);
      return new PgliteDb(worker, lock);
    } catch (err) {
      lock?.release();
      throw err;
    }
  }

  private static ready(worker: Endpoint): Promise<void> {
    return new Promise<void>((resolve, reject) => {
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

  /** One process and one connection: no other replica judges this one's liveness, so no lane of its own is needed. */
  get liveness(): Queryable {
    return this;
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1');
  }

  async close(): Promise<void> {
    if (this.gone) return this.lock?.release();
    try {
      await this.request({ op: 'close', id: 0 });
      this.gone = new Error('the embedded store is closed');
      await this.worker.terminate();
    } finally {
      this.lock?.release();
    }
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
