/** The embedded store directory's lock: one holder, stale locks of gone processes taken over. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { DataDirLockedError, LOCK_FILE, lockDataDir, type LockHolder } from '../../../src/store/data-dir-lock.js';

const root = mkdtempSync(join(tmpdir(), 'reins-lock-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = () => join(root, `d${(n += 1)}`);

function writeLock(dir: string, holder: Partial<LockHolder>): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: 1, start: null, host: hostname(), since: '2026-01-01T00:00:00.000Z', ...holder }));
}

/** A pid no process has: a child that has ended. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

test('a lock is taken, refused to a second opener while held, and released', () => {
  const dir = freshDir();
  const lock = lockDataDir(dir);
  const recorded = JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')) as LockHolder;
  assert.equal(recorded.pid, process.pid);
  assert.equal(recorded.host, hostname());
  assert.throws(() => lockDataDir(dir), (err: unknown) => err instanceof DataDirLockedError && err.message.includes(`process ${process.pid}`));
  lock.release();
  assert.equal(existsSync(join(dir, LOCK_FILE)), false);
  lockDataDir(dir).release();
});

test("a lock whose process is gone (killed with -9) is taken over", async () => {
  const dir = freshDir();
  writeLock(dir, { pid: await deadPid() });
  const lock = lockDataDir(dir);
  assert.equal((JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')) as LockHolder).pid, process.pid);
  lock.release();
});

test('a live process holding the lock is refused; its pid reused by another process is not', { skip: !existsSync('/proc/self/stat') && 'needs /proc' }, () => {
  const dir = freshDir();
  // The parent process (the test runner) is alive; the lock records its true start time, then a wrong one.
  const start = readFileSync(`/proc/${process.ppid}/stat`, 'utf8');
  const ticks = start.slice(start.lastIndexOf(')') + 2).split(' ')[19]!;
  writeLock(dir, { pid: process.ppid, start: ticks });
  assert.throws(() => lockDataDir(dir), DataDirLockedError);
  writeLock(dir, { pid: process.ppid, start: String(Number(ticks) + 1) });
  lockDataDir(dir).release();
});

test("this process's own pid in a lock it does not hold is a previous run's (a restarted container)", () => {
  const dir = freshDir();
  writeLock(dir, { pid: process.pid, start: null });
  lockDataDir(dir).release();
});

test('a lock from another host, or an unreadable one, is refused and names the file to delete', () => {
  const dir = freshDir();
  writeLock(dir, { pid: 4242, host: 'elsewhere.example' });
  assert.throws(() => lockDataDir(dir), (err: unknown) => err instanceof DataDirLockedError && /on host elsewhere\.example/.test(err.message) && err.message.includes(join(dir, LOCK_FILE)));
  writeFileSync(join(dir, LOCK_FILE), 'not json');
  assert.throws(() => lockDataDir(dir), (err: unknown) => err instanceof DataDirLockedError && /unreadable: delete it/.test(err.message));
});
