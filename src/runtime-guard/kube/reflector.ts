/**
 * One resource kept in memory by list + watch, on the standard client's typed list calls and its `Watch`.
 *
 * The client's `ListWatch` informer is not used because the cluster facts need what it hides: every
 * BOOKMARK (to stamp freshness on an idle cluster), the moment a list or a watch fails (facts become
 * incomplete until the next successful list), a relist after any watch error, and a deadline on a watch
 * that stopped ending (a stalled API server). Objects are reduced by `transform` on arrival, so the
 * cache holds only the few fields the runtime guard reads.
 */
import type { Agent } from 'node:http';
import { isDeepStrictEqual } from 'node:util';
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import { describeKubeError, httpStatusOf, sleep } from './client.js';

/** The shape of an object in a list or a watch event, as far as the reflector needs it. */
export interface ObjectMeta {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

export interface ListPage<O> {
  items: O[];
  metadata?: { resourceVersion?: string; _continue?: string; continue?: string };
}

export interface ReflectorOptions<O extends ObjectMeta, F> {
  /** For messages: `pods`, `services`, … */
  name: string;
  kc: KubeConfig;
  /** The watch path, e.g. `/api/v1/pods`. */
  path: string;
  /** One page of the list (the typed client call), resumed with `continueToken`. */
  listPage(continueToken: string | undefined, limit: number): Promise<ListPage<O>>;
  transform(object: O): F;
  /** The store changed (an object added, changed or deleted, or a relist). */
  onChange(): void;
  /** The cache was confirmed current with the API server: a list, a watch event, a bookmark, a clean watch end. */
  onFresh(atMs: number): void;
  /** A list or watch failed; the reflector is not healthy until its next successful list. */
  onError(err: Error): void;
  /** Before an object is dropped by a DELETED event or a relist; `onChange` follows. */
  onDelete?(key: string, fact: F): void;
  /** Server-side watch timeout; a watch still open `watchGraceMs` after it is treated as stalled. */
  watchTimeoutSeconds: number;
  watchGraceMs: number;
  /** Backoff after a failure: doubles from `retryMinMs` up to `retryMaxMs`. */
  retryMinMs: number;
  retryMaxMs: number;
  pageSize?: number;
  now?: () => number;
  /**
   * A resource the API server may not serve (ServiceCIDR before Kubernetes 1.33): a list answered 404 is no failure,
   * the reflector holds nothing (`served` false) and lists again after this long. Absent: a 404 is a failure.
   */
  notServedRetryMs?: number;
}

/**
 * `next`, with what equals the held `known` taken from it: `known` itself when nothing changed, else, for an object,
 * `next` with each top-level field equal to `known`'s replaced by `known`'s (a pod whose phase changed keeps its fact
 * object). Consumers compare facts by identity (the classifier's memo), so an unchanged object must stay the same one.
 */
export function keepUnchanged<F>(known: F | undefined, next: F): F {
  if (known === undefined) return next;
  if (isDeepStrictEqual(known, next)) return known;
  if (typeof known !== 'object' || typeof next !== 'object' || known === null || next === null || Array.isArray(next)) return next;
  const merged = { ...next } as Record<string, unknown>;
  for (const key of Object.keys(merged)) {
    const held = (known as Record<string, unknown>)[key];
    if (held !== undefined && isDeepStrictEqual(held, merged[key])) merged[key] = held;
  }
  return merged as F;
}

/** A watch that stayed up this long worked, whatever ended it. */
const WATCH_WORKED_MS = 10_000;

type WatchEnd = { kind: 'ended' } | { kind: 'expired' } | { kind: 'error'; err: Error } | { kind: 'stopped' };

export function objectKey(object: ObjectMeta): string {
  return `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}

/**
 * A KubeConfig for the client's `Watch` that remembers the HTTP agent of each request it configures, so a
 * watch whose response never started can still be torn down (`Watch` hands out its AbortController only
 * once response headers arrived).
 */
function trackedConfig(kc: KubeConfig): { config: KubeConfig; destroy(): void } {
  const agents = new Set<Agent>();
  let destroyed = false;
  const config = Object.create(kc) as KubeConfig;
  config.applyToFetchOptions = async (opts) => {
    const init = await kc.applyToFetchOptions(opts);
    // Torn down while the options were being built: the request must not go out at all.
    if (destroyed) throw new Error('the watch was cancelled before it started');
    const agent = init.agent as Agent | undefined;
    if (agent && typeof agent === 'object' && typeof agent.destroy === 'function') agents.add(agent);
    return init;
  };
  return {
    config,
    destroy: () => {
      destroyed = true;
      for (const agent of agents) agent.destroy();
      agents.clear();
    },
  };
}

export class Reflector<O extends ObjectMeta, F> {
  readonly items = new Map<string, F>();
  /** Bumped on every change to `items`. */
  version = 0;
  /** A list succeeded at least once. */
  synced = false;
  /** A list succeeded and no list or watch failed since. */
  healthy = false;
  /** False while the API server answers 404 for an optional resource (`notServedRetryMs`). */
  served = true;
  private resourceVersion = '';
  private readonly stopController = new AbortController();
  private cancelWatch: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private readonly now: () => number;
  private readonly syncWaiters: Array<() => void> = [];

  constructor(private readonly o: ReflectorOptions<O, F>) {
    this.now = o.now ?? Date.now;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Resolves after the first successful list (or on stop). */
  whenSynced(): Promise<void> {
    if (this.synced || this.stopController.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    this.cancelWatch?.();
    for (const resolve of this.syncWaiters.splice(0)) resolve();
    await this.loop;
  }

  private get stopped(): boolean {
    return this.stopController.signal.aborted;
  }

  private async run(): Promise<void> {
    // The backoff resets only once a watch worked: a list that succeeds while every watch fails (list
    // granted, watch not) must not turn into a full relist every second.
    let backoff = this.o.retryMinMs;
    const pause = async (): Promise<void> => {
      await sleep(backoff, this.stopController.signal);
      backoff = Math.min(backoff * 2, this.o.retryMaxMs);
    };
    while (!this.stopped) {
      if (this.resourceVersion === '') {
        try {
          await this.list();
        } catch (err) {
          if (this.stopped) return;
          if (this.o.notServedRetryMs !== undefined && httpStatusOf(err) === 404) {
            this.notServed();
            await sleep(this.o.notServedRetryMs, this.stopController.signal);
            continue;
          }
          this.fail(new Error(`listing ${this.o.name} failed: ${describeKubeError(err)}`));
          await pause();
          continue;
        }
      }
      // stop() may have come while the list's answer was already in: no watch may start after it, since
      // nothing would cancel it and stop() would wait for the server to end it.
      if (this.stopped) return;
      const startedAt = this.now();
      const end = await this.watchOnce();
      if (end.kind === 'stopped' || this.stopped) return;
      const lasted = this.now() - startedAt >= WATCH_WORKED_MS;
      if (end.kind === 'ended' || lasted) backoff = this.o.retryMinMs;
      if (end.kind === 'expired') {
        // 410 Gone: the resourceVersion is too old to resume from; a relist is routine, not a failure.
        this.resourceVersion = '';
        if (!lasted) await pause();
        continue;
      }
      if (end.kind === 'error') {
        this.fail(new Error(`watching ${this.o.name} failed: ${end.err.message}`));
        this.resourceVersion = '';
        await pause();
        continue;
      }
      // A clean end (the server's timeout): resume at once, unless watches keep ending at once.
      if (this.now() - startedAt < 1000) await sleep(this.o.retryMinMs, this.stopController.signal);
    }
  }

  /** An optional resource the API server does not serve: nothing is held, which is a complete answer. */
  private notServed(): void {
    this.served = false;
    if (this.items.size > 0) {
      this.items.clear();
      this.version++;
      this.o.onChange();
    }
    this.healthy = true;
    if (!this.synced) {
      this.synced = true;
      for (const resolve of this.syncWaiters.splice(0)) resolve();
    }
    this.o.onFresh(this.now());
  }

  private fail(err: Error): void {
    this.healthy = false;
    this.o.onError(err);
  }

  private async list(): Promise<void> {
    const fresh = new Map<string, F>();
    let continueToken: string | undefined;
    let resourceVersion = '';
    // A relist (after every watch error or expiry) mostly finds what is held: those objects stay as they were.
    let changed = false;
    do {
      const page = await this.o.listPage(continueToken, this.o.pageSize ?? 500);
      for (const object of page.items ?? []) {
        const key = objectKey(object);
        const known = this.items.get(key);
        const kept = keepUnchanged(known, this.o.transform(object));
        if (kept !== known) changed = true;
        fresh.set(key, kept);
      }
      resourceVersion = page.metadata?.resourceVersion ?? '';
      continueToken = page.metadata?._continue ?? page.metadata?.continue ?? undefined;
      if (continueToken === '') continueToken = undefined;
    } while (continueToken !== undefined && !this.stopped);
    if (this.stopped) return;
    if (this.o.onDelete) {
      for (const [key, fact] of this.items) if (!fresh.has(key)) this.o.onDelete(key, fact);
    }
    if (fresh.size !== this.items.size) changed = true;
    this.items.clear();
    for (const [key, fact] of fresh) this.items.set(key, fact);
    this.resourceVersion = resourceVersion;
    if (changed || !this.synced) this.version++;
    this.healthy = true;
    this.served = true;
    if (!this.synced) {
      this.synced = true;
      for (const resolve of this.syncWaiters.splice(0)) resolve();
    }
    this.o.onChange();
    this.o.onFresh(this.now());
  }

  private watchOnce(): Promise<WatchEnd> {
    if (this.stopped) return Promise.resolve({ kind: 'stopped' });
    return new Promise<WatchEnd>((resolve) => {
      const tracked = trackedConfig(this.o.kc);
      let controller: AbortController | undefined;
      let settled = false;
      let expired = false;
      let streamError: Error | undefined;
      const finish = (end: WatchEnd): void => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        this.cancelWatch = undefined;
        controller?.abort();
        tracked.destroy();
        resolve(end);
      };
      const deadline = setTimeout(
        () => finish({ kind: 'error', err: new Error(`the watch did not end within ${this.o.watchTimeoutSeconds} s of its timeout: the API server stalled`) }),
        this.o.watchTimeoutSeconds * 1000 + this.o.watchGraceMs,
      );
      this.cancelWatch = () => finish({ kind: 'stopped' });

      const onEvent = (type: string, object: O & { code?: number; message?: string }): void => {
        if (settled) return;
        switch (type) {
          case 'ADDED':
          case 'MODIFIED': {
            // Most updates change nothing the cache keeps (a pod's status conditions, a resync): the held object and
            // the version stay, so the cluster facts and everything built on them stay too.
            const key = objectKey(object);
            const known = this.items.get(key);
            const kept = keepUnchanged(known, this.o.transform(object));
            if (kept === known) break;
            this.items.set(key, kept);
            this.version++;
            this.o.onChange();
            break;
          }
          case 'DELETED': {
            const key = objectKey(object);
            const known = this.items.get(key);
            if (known !== undefined) {
              this.o.onDelete?.(key, known);
              this.items.delete(key);
              this.version++;
              this.o.onChange();
            }
            break;
          }
          case 'BOOKMARK':
            break;
          case 'ERROR':
            if (object.code === 410) expired = true;
            else streamError = new Error(`the API server sent an error: ${object.code ?? ''} ${object.message ?? ''}`.trim());
            return;
          default:
            return;
        }
        const rv = object.metadata?.resourceVersion;
        if (rv) this.resourceVersion = rv;
        this.o.onFresh(this.now());
      };

      const onDone = (err: unknown): void => {
        if (settled) return;
        if (expired || httpStatusOf(err) === 410) return finish({ kind: 'expired' });
        if (err) return finish({ kind: 'error', err: new Error(describeKubeError(err)) });
        if (streamError) return finish({ kind: 'error', err: streamError });
        // The server ended the watch at its timeout: everything it had was delivered.
        this.o.onFresh(this.now());
        finish({ kind: 'ended' });
      };

      new Watch(tracked.config)
        .watch(
          this.o.path,
          { resourceVersion: this.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: this.o.watchTimeoutSeconds },
          onEvent,
          onDone,
        )
        .then((c) => {
          controller = c;
          if (settled) c.abort();
        })
        .catch((err: unknown) => finish({ kind: 'error', err: new Error(describeKubeError(err)) }));
    });
  }
}
