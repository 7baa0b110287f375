/** The messages between `PgliteDb` (main thread) and the embedded store's worker thread (pglite-worker.ts). */
import type { CheckpointOptions } from './pglite-checkpoints.js';

export interface WorkerOptions {
  dataDir: string | 'memory';
  /** When the store's thread checkpoints (pglite-checkpoints.ts); its defaults when absent. */
  checkpoints?: CheckpointOptions;
  /** An in-memory store starts from this data directory, a tar file as PGlite's dumpDataDir writes it (PgliteOpenOptions). */
  loadDataDir?: string;
}

/** Each request carries an id; the worker answers it with `result`, `error` or (for `begin`) `began`. */
export type ToWorker =
  | { op: 'query'; id: number; sql: string; params: unknown[]; tx?: number }
  | { op: 'begin'; id: number }
  | { op: 'end'; id: number; tx: number; commit: boolean }
  | { op: 'listen'; id: number; channel: string }
  | { op: 'unlisten'; id: number; channel: string }
  | { op: 'close'; id: number };

export type FromWorker =
  | { op: 'ready' }
  | { op: 'failed'; error: SerializedError }
  | { op: 'result'; id: number; rows: unknown[]; rowCount: number }
  | { op: 'error'; id: number; error: SerializedError }
  | { op: 'began'; id: number; tx: number }
  | { op: 'notification'; channel: string; payload: string };

/** A PostgreSQL error's message and the DatabaseError fields worth keeping across the thread boundary. */
export interface SerializedError {
  message: string;
  code?: string;
  severity?: string;
  detail?: string;
  hint?: string;
  constraint?: string;
  table?: string;
  column?: string;
  schema?: string;
  where?: string;
  position?: string;
}
