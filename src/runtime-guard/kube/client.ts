/**
 * How the runtime guard talks to the Kubernetes API: the standard client's configuration loading
 * (`loadFromCluster()` / `loadFromFile()`), API objects whose every request carries a time limit and the
 * cluster's stop signal, and readable errors.
 */
import {
  ApiException,
  createConfiguration,
  KubeConfig,
  ServerConfiguration,
  type Configuration,
} from '@kubernetes/client-node';
import type { ClusterEnvironment } from '../cluster.js';

/**
 * The cluster API could not be reached (or its configuration not loaded) at start. The caller reports the
 * replica inactive: "enabled but inactive on this replica (no cluster API access …)".
 */
export class ClusterUnavailableError extends Error {
  override readonly name = 'ClusterUnavailableError';
}

/** Background diagnostics; pino's logger fits. */
export interface ClusterLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export function loadKubeConfig(environment: ClusterEnvironment): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (environment.kind === 'in-cluster') kc.loadFromCluster();
    else {
      if (!environment.kubeconfigPath) throw new Error('no kubeconfig path given');
      kc.loadFromFile(environment.kubeconfigPath);
    }
  } catch (err) {
    const where = environment.kind === 'in-cluster' ? 'the in-cluster service account' : `the kubeconfig ${environment.kubeconfigPath ?? ''}`;
    throw new ClusterUnavailableError(`could not load the Kubernetes client configuration from ${where}: ${(err as Error).message}`);
  }
  if (!kc.getCurrentCluster()) {
    throw new ClusterUnavailableError('the Kubernetes client configuration names no current cluster');
  }
  return kc;
}

export type ApiClass<T> = new (configuration: Configuration) => T;

/**
 * An API object of the standard client whose requests are aborted after `timeoutMs` or when `stop` fires,
 * so a stalled API server never holds a caller (or the process) forever.
 */
export function makeApi<T>(kc: KubeConfig, api: ApiClass<T>, stop: AbortSignal, timeoutMs: number): T {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new ClusterUnavailableError('the Kubernetes client configuration names no current cluster');
  const configuration = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: kc },
    promiseMiddleware: [
      {
        pre: async (context) => {
          context.setSignal(AbortSignal.any([stop, AbortSignal.timeout(timeoutMs)]));
          return context;
        },
        post: async (response) => response,
      },
    ],
  });
  return new api(configuration);
}

/** The HTTP status of a failed API call, when the server answered at all. */
export function httpStatusOf(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const code = (err as { statusCode?: unknown; code?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

/** One line a person can act on: the status and the API server's own message, or the transport error. */
export function describeKubeError(err: unknown): string {
  if (err instanceof ApiException) {
    let message = '';
    const body: unknown = err.body;
    try {
      const parsed = (typeof body === 'string' ? JSON.parse(body) : body) as { message?: unknown } | null;
      if (parsed && typeof parsed.message === 'string') message = parsed.message;
    } catch {
      if (typeof body === 'string') message = body.slice(0, 200);
    }
    return `HTTP ${err.code}${message ? `: ${message}` : ''}`;
  }
  if (err instanceof Error) {
    const status = httpStatusOf(err);
    return status !== undefined ? `HTTP ${status}: ${err.message}` : err.message;
  }
  return String(err);
}

/** Seconds since the epoch, as the facts and the capability stamp them. */
export function unixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}

/** A promise that resolves after `ms`, or at once when `signal` fires; its timer never outlives a stop. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Passes an error on unless the same message was passed on less than `windowMs` ago. */
export function dedupeErrors(onError: (err: Error) => void, windowMs: number, now: () => number = Date.now): (err: Error) => void {
  const last = new Map<string, number>();
  return (err) => {
    const at = now();
    const seen = last.get(err.message);
    if (seen !== undefined && at - seen < windowMs) return;
    if (last.size > 1000) last.clear();
    last.set(err.message, at);
    onError(err);
  };
}
