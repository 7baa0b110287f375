/**
 * Runs one of the real coding tools (Claude Code, Codex CLI) as a developer would, non-interactively, on the
 * Node 22 of test/outside-clients, with a home of its own in a temp folder so nothing of the machine's user
 * (config, credentials, sessions) is read or written. The run is bounded by the process's exit: a generous limit
 * turns a hang into a failure that shows what the tool printed.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { outsideClientEnv } from '../../helpers/outside-clients.js';

/** Long enough for a loaded two-core machine (a run takes about a second alone); only a hang reaches it. */
export const CLIENT_RUN_MS = 120_000;

export interface ClientRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The tool's environment: the test runner's, without anything that would point the tool elsewhere or change how
 * Node runs it (provider keys and URLs of the machine, proxies, the runner's Node options), plus `extra`.
 */
export function clientEnv(home: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = outsideClientEnv();
  for (const key of Object.keys(env)) {
    if (/^(ANTHROPIC|CLAUDE|OPENAI|CODEX)_|^(https?|all|no)_proxy$|^NODE_(OPTIONS|TEST_CONTEXT)$/i.test(key)) delete env[key];
  }
  // Temp files too (Claude Code keeps some under $TMPDIR/claude-<uid>), so the test leaves nothing behind.
  return { ...env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), TMPDIR: home, NO_PROXY: '127.0.0.1,localhost', ...extra };
}

/** A fresh temp folder for a tool's home and working directory; removed by the returned function. */
export async function tempHome(prefix: string): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), `reins-${prefix}-`));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export function runClient(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<ClientRun> {
  return new Promise((resolve, reject) => {
    // Its own process group, so a hang is ended with every process the tool started.
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const timer = setTimeout(() => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      reject(new Error(`${command} ${args.join(' ')} did not exit within ${CLIENT_RUN_MS / 1000} s\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, CLIENT_RUN_MS);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The message a failed run's assertion shows: everything the tool said. */
export function described(run: ClientRun): string {
  return `exit ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`;
}
