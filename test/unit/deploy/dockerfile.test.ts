/**
 * The Dockerfile, linted by what it must agree with (hadolint is not available; no image builder can run here, see
 * deploy/README.md "The image"): its build runs package.json's scripts, its command is `npm start`'s, `reins` and
 * `reins-sensor` are the package's bin entries, the runtime holds what they load (the migrations included, read
 * from src/store/migrations), it runs non-root without a HEALTHCHECK, and `ig` is the release the sensor is built for.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { loadConfig as loadSensorConfig } from '../../../src/sensor/config.js';
import { REPO } from '../../helpers/kustomize.js';

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  from: string;
  name: string | null;
  steps: Instruction[];
}

/** The Dockerfile's instructions (continuation lines joined, comments dropped), by stage. */
function parseDockerfile(text: string): { args: Map<string, string>; stages: Stage[] } {
  const lines = text.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const line of lines) {
    const [, op, rest] = /^(\w+)\s+(.*)$/.exec(line) ?? [];
    if (!op || rest === undefined) throw new Error(`not an instruction: ${line}`);
    if (op === 'FROM') {
      const [, image, name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest)!;
      stages.push({ from: image!.replace(/\$\{(\w+)\}/g, (_m, n: string) => args.get(n) ?? ''), name: name ?? null, steps: [] });
    } else if (op === 'ARG' && stages.length === 0) {
      const [name, value] = rest.split('=');
      args.set(name!, value ?? '');
    } else {
      if (stages.length === 0) throw new Error(`${op} before FROM`);
      stages.at(-1)!.steps.push({ op, args: rest });
    }
  }
  return { args, stages };
}

const dockerfile = parseDockerfile(readFileSync(`${REPO}/Dockerfile`, 'utf8'));
const pkg = JSON.parse(readFileSync(`${REPO}/package.json`, 'utf8')) as { scripts: Record<string, string>; bin: Record<string, string>; engines: { node: string } };
const stage = (name: string) => dockerfile.stages.find((s) => s.name === name)!;
const runs = (s: Stage) => s.steps.filter((i) => i.op === 'RUN').map((i) => i.args).join(' && ');

describe('Dockerfile', () => {
  test('multi-stage: build on the full Node 20 image, run on the slim one', () => {
    assert.deepEqual(dockerfile.stages.map((s) => s.name), ['build', 'ig', 'runtime']);
    assert.match(stage('build').from, /^node:20\.\d+-bookworm$/);
    assert.match(stage('runtime').from, /^node:20\.\d+-bookworm-slim$/);
    assert.ok(pkg.engines.node.startsWith('>=20'), 'the image runs the Node line package.json asks for');
  });

  test('the build stage runs the package\'s own install and build, and keeps only production dependencies', () => {
    const build = runs(stage('build'));
    assert.match(build, /npm ci\b/);
    assert.match(build, /npm run build\b/);
    assert.ok(pkg.scripts.build, 'package.json has a build script');
    assert.match(build, /npm prune --omit=dev/);
  });

  test('the runtime\'s command is npm start\'s, without npm; no HEALTHCHECK (Kubernetes probes)', () => {
    const runtime = stage('runtime');
    const cmd = runtime.steps.filter((i) => i.op === 'CMD');
    assert.equal(cmd.length, 1);
    assert.deepEqual(JSON.parse(cmd[0]!.args), pkg.scripts.start!.split(' '));
    assert.ok(!dockerfile.stages.some((s) => s.steps.some((i) => i.op === 'HEALTHCHECK')));
    assert.ok(!runtime.steps.some((i) => i.op === 'ENTRYPOINT'), 'the command is replaced whole: reins, reins-sensor');
  });

  test('the runtime holds what the commands load, and puts the bin entries on PATH', () => {
    const runtime = stage('runtime');
    const copied = runtime.steps.filter((i) => i.op === 'COPY').map((i) => i.args.split(/\s+/).filter((a) => !a.startsWith('--')));
    const sources = copied.map((c) => c.slice(0, -1).join(' '));
    for (const wanted of ['/src/dist', '/src/bin', '/src/node_modules', '/src/package.json /src/package-lock.json', '/src/src/store/migrations']) {
      assert.ok(sources.includes(wanted), `COPY ${wanted}`);
    }
    // src/store/migrate.ts reads ../../src/store/migrations from dist/store.
    assert.match(readFileSync(`${REPO}/src/store/migrate.ts`, 'utf8'), /new URL\('\.\.\/\.\.\/src\/store\/migrations\/', import\.meta\.url\)/);
    const workdir = runtime.steps.find((i) => i.op === 'WORKDIR')!.args;
    for (const [name, target] of Object.entries(pkg.bin)) {
      assert.ok(existsSync(`${REPO}/${target}`), target);
      assert.match(runs(runtime), new RegExp(`ln -s ${workdir}/${target.replace(/\./g, '\\.')} /usr/local/bin/${name}\\b`), `${name} on PATH`);
    }
  });

  test('non-root, and an environment a container needs', () => {
    const runtime = stage('runtime');
    const user = runtime.steps.filter((i) => i.op === 'USER').at(-1)!.args;
    assert.match(user, /^[1-9]\d*(:[1-9]\d*)?$/, 'a numeric non-root user (runAsNonRoot can check it)');
    const env = runtime.steps.filter((i) => i.op === 'ENV').map((i) => i.args).join(' ');
    assert.match(env, /HOST=0\.0\.0\.0/);
    assert.match(env, /REINS_DATA_DIR=\/var\/lib\/reins/, 'the embedded store outside the (read-only) application directory');
    assert.match(env, /IG_PATH=\/usr\/bin\/ig/);
  });

  test('ig is the Inspektor Gadget release the sensor is built against, from the project\'s GitHub release', () => {
    const ig = stage('ig');
    const version = ig.steps.find((i) => i.op === 'ARG' && i.args.startsWith('IG_VERSION='))!.args.split('=')[1];
    const sensorDefault = loadSensorConfig({ REINS_URL: 'http://r', REINS_SENSOR_TOKEN: 't', NODE_NAME: 'n' }, { replays: [], once: false }).ig.version;
    assert.equal(version, sensorDefault);
    // IG_URL: the release on GitHub unless a mirror is named (a build without GitHub).
    const url = ig.steps.find((i) => i.op === 'ARG' && i.args.startsWith('IG_URL='))!.args.slice('IG_URL='.length);
    assert.equal(url, 'https://github.com/inspektor-gadget/inspektor-gadget/releases/download/${IG_VERSION}/ig-linux-${TARGETARCH}-${IG_VERSION}.tar.gz');
    assert.equal(ig.steps.find((i) => i.op === 'ADD')!.args, '${IG_URL} /tmp/ig.tar.gz');
    assert.ok(stage('runtime').steps.some((i) => i.op === 'COPY' && /--from=ig \/usr\/local\/bin\/ig \/usr\/bin\/ig/.test(i.args)));
  });

  test('.dockerignore keeps dependencies, builds and tests out, and everything the build reads in', () => {
    const ignored = readFileSync(`${REPO}/.dockerignore`, 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
    for (const out of ['node_modules', 'dist', '.git', 'test', '.reins-data']) assert.ok(ignored.includes(out), out);
    for (const needed of ['src', 'console', 'bin', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json']) {
      assert.ok(existsSync(`${REPO}/${needed}`), needed);
      assert.ok(!ignored.some((p) => p === needed || needed.startsWith(`${p}/`)), `${needed} is in the build context`);
    }
  });
});
