/**
 * A Reins replica as a real child process (`node --import tsx src/main.ts`, or any other argv), started the way a
 * container runs it: configured by its environment alone. Resolves once it logs that it listens; both output
 * streams are drained for its whole life (a full pipe would block its logging) and the last lines kept for errors.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { REPO } from './kustomize.js';

/** Generous: replicas start under tsx on a machine shared with other test runs. */
export const START_LIMIT_MS = 120_000;

export interface ReplicaProcess {
  proc: ChildProcess;
  url: string;
  /** The "reins is listening" log line. */
  listening: Record<string, unknown>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Every output line so far (JSON log lines and anything else). */
  lines: string[];
  output(): string;
}

export async function startReplicaProcess(name: string, env: NodeJS.ProcessEnv, argv: string[] = ['--import', 'tsx', 'src/main.ts']): Promise<ReplicaProcess> {
  const proc = spawn(process.execPath, argv, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  let listening: Record<string, unknown> = {};
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not listen within ${START_LIMIT_MS} ms:\n${lines.slice(-40).join('\n')}`)), START_LIMIT_MS);
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      lines.push(line);
      if (!line.includes('reins is listening')) return;
      clearTimeout(timer);
      listening = JSON.parse(line) as Record<string, unknown>;
      resolve(String(listening.url).replace('0.0.0.0', '127.0.0.1'));
    });
    createInterface({ input: proc.stderr! }).on('line', (line) => lines.push(line));
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${name} exited before listening:\n${lines.slice(-40).join('\n')}`));
    });
  });
  return { proc, url, listening, exited, lines, output: () => lines.slice(-60).join('\n') };
}

/** SIGTERM, then waits for the exit; nothing when it already ended. */
export async function stopReplicaProcess(replica: ReplicaProcess | null | undefined): Promise<void> {
  if (!replica || replica.proc.exitCode !== null || replica.proc.signalCode !== null) return;
  replica.proc.kill('SIGTERM');
  await replica.exited;
}

/** Runs a command to its end: `reins migrate` and the like. */
export function runToEnd(argv: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, argv, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    proc.once('error', reject);
    proc.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
