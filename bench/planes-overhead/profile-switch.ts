/**
 * profile.ts's switch inside a server child: with BENCH_CPU_PROFILE_DIR set, SIGUSR2 starts V8's sampling profiler
 * (an in-process inspector session) and the next SIGUSR2 stops it and writes the profile into that directory.
 * Each prints a line on stdout: {"profile":"started"}, then {"profile":"<path>"}. Without the variable, nothing.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

export async function installProfileSwitch(name: string): Promise<void> {
  const dir = process.env.BENCH_CPU_PROFILE_DIR;
  if (!dir) return;
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) => session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))));
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: Number(process.env.BENCH_CPU_PROFILE_INTERVAL_US ?? 100) });
  let running = false;
  process.on('SIGUSR2', () => {
    running = !running;
    if (running) {
      void post('Profiler.start').then(() => process.stdout.write(`${JSON.stringify({ profile: 'started' })}\n`));
      return;
    }
    void post('Profiler.stop').then((result) => {
      const path = `${dir}/${name}-${process.pid}-${Date.now()}.cpuprofile`;
      writeFileSync(path, JSON.stringify((result as { profile: unknown }).profile));
      process.stdout.write(`${JSON.stringify({ profile: path })}\n`);
    });
  });
}
