/**
 * The Kubernetes manifests as a cluster would receive them: `kubectl kustomize` (Debian's kubectl, which embeds
 * kustomize) renders an overlay of deploy/ into objects. Without kubectl the tests that need it skip with the
 * reason; under CI=1 they fail (`.ci/run` installs it).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const DEPLOY = join(REPO, 'deploy');

/** The kustomizations a user applies: the base, the two overlays, and production with the migrate-Job component. */
export const RENDERINGS = ['base', 'overlays/dev', 'overlays/production', 'production+migrate-job'] as const;
export type Rendering = (typeof RENDERINGS)[number];

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: any;
  [key: string]: any;
}

/**
 * Why kubectl cannot render here, or null when it can. The overlays use Kustomize components and `labels`: kubectl
 * 1.27 or later (Kustomize v5); Debian bookworm's own kubernetes-client (1.20, Kustomize v2) is too old.
 */
export function kubectlMissing(): string | null {
  const r = spawnSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
  let reason: string | null = null;
  if (r.status !== 0) reason = 'kubectl not installed (package kubectl; .ci/run installs it)';
  else {
    const minor = Number.parseInt((JSON.parse(r.stdout) as { clientVersion?: { minor?: string } }).clientVersion?.minor ?? '0', 10);
    if (!(minor >= 27)) reason = `kubectl 1.${minor} is too old to render deploy/ (1.27 or later: Kustomize v5)`;
  }
  if (reason && process.env.CI) throw new Error(reason);
  return reason;
}

function kustomize(dir: string): string {
  return execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
}

/** Renders one of RENDERINGS into its objects. */
export function render(rendering: Rendering): K8sObject[] {
  let text: string;
  if (rendering === 'production+migrate-job') {
    // An overlay of the user's own: production plus the component, as deploy/README.md shows (kustomize wants relative paths).
    const dir = mkdtempSync(join(tmpdir(), 'reins-kustomize-'));
    try {
      writeFileSync(
        join(dir, 'kustomization.yaml'),
        JSON.stringify({
          apiVersion: 'kustomize.config.k8s.io/v1beta1',
          kind: 'Kustomization',
          resources: [relative(dir, join(DEPLOY, 'overlays/production'))],
          components: [relative(dir, join(DEPLOY, 'components/migrate-job'))],
        }),
      );
      text = kustomize(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  } else {
    text = kustomize(join(DEPLOY, rendering));
  }
  return parseAllDocuments(text)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

export function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} among ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found;
}

/** A generated object's name carries a content hash (`reins-config-5k8f…`): found by its prefix. */
export function findGenerated(objects: K8sObject[], kind: string, prefix: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && (o.metadata.name === prefix || o.metadata.name.startsWith(`${prefix}-`)) && !o.metadata.name.slice(prefix.length + 1).includes('-'));
  if (!found) throw new Error(`no ${kind} ${prefix}-<hash>`);
  return found;
}
