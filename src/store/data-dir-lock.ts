/**
 * The embedded store's directory belongs to one process at a time. PGlite has no lock of its own: two processes
 * opening one directory each see their own copy, and whatever one of them writes the other never sees and may
 * overwrite (a CLI `identity create` next to a running server reported success and was lost at its restart).
 * Every opener of an on-disk PGlite directory (the server and the CLI, through `PgliteDb.open`) takes this lock
 * first; `memory` and PostgreSQL need none.
 *
 * Node offers no OS-level file lock without a dependency, so the lock is a file, `<dir>/reins.lock`, holding the
 * holder's pid, the kernel's start time of that process and the host name. It is created atomically (written
 * under a private name, then hard-linked to its place, which fails if the place is taken) and removed on close,
 * on exit and on SIGINT/SIGTERM/SIGHUP when nothing else handles them. A holder killed with -9 leaves it behind:
 * the next opener takes a lock over when its holder is gone. Gone means, on the same host: no process has the pid
 * (`process.kill(pid, 0)`), or the process that has it started at another time than the one recorded (the pid was
 * reused; the start time is read from /proc, so this check needs Linux, elsewhere a live pid counts as the holder),
 * or the pid is this process's own and this process does not hold the lock (a container restarted with the same
 * pid). A lock written on another host (a shared network directory) cannot be checked from here and counts as
 * held; the message names the file to delete once that host no longer runs Reins on the directory.
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';

export const LOCK_FILE = 'reins.lock';

/** Who holds a directory, as its lock file records it. */
export interface LockHolder {
  pid: number;
  /** The process's start time in clock ticks since boot (Linux /proc/<pid>/stat), or null where unknown. */
  start: string | null;
  host: string;
  /** When the lock was taken, ISO 8601. */
  since: string;
}

export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    readonly lockFile: string,
    readonly holder: LockHolder | null,
  ) {
    const who = holder ? `process ${holder.pid}${holder.host !== hostname() ? ` on host ${holder.host}` : ''}, since ${holder.since}` : 'another process';
    const remote = holder && holder.host !== hostname() ? `; if that host no longer runs Reins on it, delete ${lockFile}` : '';
    const damaged = holder ? '' : `; the lock file is unreadable: delete it if no Reins process uses the directory`;
    super(`the embedded store ${dataDir} is in use by ${who} (lock ${lockFile})${remote}${damaged}`);
    this.name = 'DataDirLockedError';
  }
}

export interface DataDirLock {
  readonly lockFile: string;
  /** Removes the lock file if it is still this lock's. Idempotent. */
  release(): void;
}

/** The start time of a process (field 22 of /proc/<pid>/stat), or null where /proc is not there. */
function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces or parentheses: count from the last `)`.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the pid exists and belongs to another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const held = new Map<string, DataDirLock>();

function stale(holder: LockHolder, lockFile: string): boolean {
  if (holder.host !== hostname()) return false;
  if (holder.pid === process.pid) return !held.has(lockFile);
  if (!alive(holder.pid)) return true;
  const start = processStart(holder.pid);
  return holder.start !== null && start !== null && start !== holder.start;
}

function parse(raw: string): LockHolder | null {
  try {
    const h = JSON.parse(raw) as LockHolder;
    return Number.isInteger(h.pid) && h.pid > 0 && typeof h.host === 'string' ? h : null;
  } catch {
    return null;
  }
}

function readRaw(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Creates `file` with `content` unless it exists: complete from its first moment, so a reader never sees it half written. */
function createComplete(file: string, content: string): boolean {
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, content);
  try {
    linkSync(temp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    unlinkSync(temp);
  }
}

function removeIfStill(file: string, content: string): void {
  if (readRaw(file) === content) unlinkSync(file);
}

/**
 * Removes a stale lock, under a second lock file so that two openers finding the same stale lock do not both
 * take it (one could otherwise delete the other's fresh lock). A takeover guard left by a crash is itself stale.
 */
function takeOver(lockFile: string, staleContent: string, mine: string): void {
  const guard = `${lockFile}.takeover`;
  if (!createComplete(guard, mine)) {
    const raw = readRaw(guard);
    const holder = raw === null ? null : parse(raw);
    if (raw !== null && (holder === null || stale(holder, guard))) removeIfStill(guard, raw);
    return; // the caller tries again
  }
  try {
    removeIfStill(lockFile, staleContent);
  } finally {
    removeIfStill(guard, mine);
  }
}

let exitHooks = false;

function releaseAll(): void {
  for (const lock of [...held.values()]) lock.release();
}

/**
 * Released on exit, and on a signal nobody else handles (the CLI): the lock's own listener would otherwise keep the
 * process from ending, so it re-raises the signal once the lock is gone. Where the process handles the signal
 * itself (the server's graceful shutdown), the lock goes when that closes the store.
 */
function installExitHooks(): void {
  if (exitHooks) return;
  exitHooks = true;
  process.on('exit', releaseAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      if (process.listenerCount(signal) > 1) return;
      releaseAll();
      process.off(signal, onSignal);
      process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
}

/** Takes the lock on an embedded store directory (created if missing), or throws DataDirLockedError. */
export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const lockFile = join(dataDir, LOCK_FILE);
  if (held.has(lockFile)) throw new DataDirLockedError(dataDir, lockFile, parse(readRaw(lockFile) ?? ''));
  const mine = JSON.stringify({ pid: process.pid, start: processStart(process.pid), host: hostname(), since: new Date().toISOString() } satisfies LockHolder);
  for (let attempt = 0; attempt < 5; attempt += 1) {
    if (createComplete(lockFile, mine)) {
      installExitHooks();
      let released = false;
      const lock: DataDirLock = {
        lockFile,
        release() {
          if (released) return;
          released = true;
          held.delete(lockFile);
          try {
            removeIfStill(lockFile, mine);
          } catch {
            // The directory went away: nothing left to release.
          }
        },
      };
      held.set(lockFile, lock);
      return lock;
    }
    const raw = readRaw(lockFile);
    if (raw === null) continue; // released meanwhile
    const holder = parse(raw);
    // An unreadable lock file is not half written (it appears complete): a holder's, damaged. Only a stale one goes.
    if (holder === null || !stale(holder, lockFile)) throw new DataDirLockedError(dataDir, lockFile, holder);
    takeOver(lockFile, raw, mine);
  }
  throw new DataDirLockedError(dataDir, lockFile, parse(readRaw(lockFile) ?? ''));
}
