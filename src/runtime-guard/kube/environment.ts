/**
 * Whether this process runs in (or against) a cluster, decided before anything is started: the spec's
 * "not running in a cluster" reason comes from here. The client's own loaders make the same choice.
 */
import { readFileSync, statSync } from 'node:fs';
import { delimiter } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { ClusterEnvironment } from '../cluster.js';

/** Where Kubernetes mounts a pod's service-account token (the client's `loadFromCluster()` reads it there). */
export const SERVICE_ACCOUNT_TOKEN_PATH = '/var/run/secrets/kubernetes.io/serviceaccount/token';

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function readText(path: string): string {
  return readFileSync(path, 'utf8');
}

/** The kubeconfig's current context names a cluster with a server: the client can use it as is. */
function namesACluster(text: string): boolean {
  try {
    const kc = new KubeConfig();
    kc.loadFromString(text);
    return kc.getCurrentContext() !== '' && Boolean(kc.getCurrentCluster()?.server);
  } catch {
    return false;
  }
}

/**
 * In a pod: `KUBERNETES_SERVICE_HOST` set and the service-account token mounted. Else the first file of
 * `KUBECONFIG` (a path list, as kubectl reads it) whose current context names a cluster. Else null.
 */
export function detectClusterEnvironment(
  env: Readonly<Record<string, string | undefined>>,
  fileExists: (path: string) => boolean = isFile,
  readFile: (path: string) => string = readText,
): ClusterEnvironment | null {
  if (env.KUBERNETES_SERVICE_HOST && fileExists(SERVICE_ACCOUNT_TOKEN_PATH)) return { kind: 'in-cluster' };
  const paths = (env.KUBECONFIG ?? '').split(delimiter).filter((p) => p !== '');
  for (const path of paths) {
    if (!fileExists(path)) continue;
    let text: string;
    try {
      text = readFile(path);
    } catch {
      continue;
    }
    if (namesACluster(text)) return { kind: 'kubeconfig', kubeconfigPath: path };
  }
  return null;
}
