/**
 * Starts real Reins replicas on a real store for integration tests, and a small HTTP client.
 */
import { after, before, describe } from 'node:test';
import type { FastifyServerOptions } from 'fastify';
import { loadConfig, type Config } from '../../src/config/config.js';
import type { GrantLookup } from '../../src/approvals/grants.js';
import { startReplica, type Replica } from '../../src/app/server.js';
import type { Db } from '../../src/store/db.js';
import { PgliteDb } from '../../src/store/pglite.js';
import { createAdmin } from '../../src/identity/bootstrap.js';
import { migratedTemplate } from './pglite-template.js';
import { freshPostgresDatabase, postgresReachable, storeKinds, type StoreKind } from './stores.js';

export const ADMIN_TOKEN = 'test-bootstrap-admin-token-0123456789';

export interface TestStore {
  kind: StoreKind;
  /** For PostgreSQL: the fresh database's URL. */
  url?: string;
  /** For PGlite: the one in-process database every replica of this store shares. */
  db?: Db;
  close(): Promise<void>;
}

/**
 * A fresh store of `kind`. The embedded one starts migrated, from the run's template (pglite-template.ts), unless
 * `empty` (a suite that applies the migrations itself, step by step); a replica started on it finds nothing to
 * migrate, as on a store it has run on before.
 */
export async function openTestStore(kind: StoreKind, options: { empty?: boolean } = {}): Promise<TestStore> {
  if (kind === 'postgres') {
    const { url, drop } = await freshPostgresDatabase();
    return { kind, url, close: drop };
  }
  const db = await PgliteDb.open('memory', options.empty ? {} : { loadDataDir: await migratedTemplate() });
  return { kind, db, close: () => db.close() };
}

export function testConfigFor(store: TestStore, overrides: Partial<Config> = {}, env: Record<string, string> = {}): Config {
  const base = loadConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    REINS_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
    ...(store.kind === 'postgres' ? { DATABASE_URL: store.url! } : { REINS_DATA_DIR: 'memory' }),
    ...env,
  });
  // Every test calls from 127.0.0.1, many of them with bad credentials on purpose: the failed-credential throttle
  // (20 a minute by default) would answer them 429. Suites about the throttle set their own limit.
  base.http = { ...base.http, failedAuthLimit: 1_000_000 };
  return { ...base, ...overrides };
}

export async function startTestReplica(
  store: TestStore,
  overrides: Partial<Config> = {},
  options: { listen?: boolean; logger?: FastifyServerOptions['logger']; grants?: GrantLookup } = {},
): Promise<Replica> {
  const config = testConfigFor(store, overrides);
  return startReplica(config, { logger: false, ...(store.db ? { db: store.db } : {}), ...options });
}

/*
 * Known before any suite is declared: a suite body must register its tests synchronously. (An async describe that
 * awaited this first registered the tests of every later suite in the file under the first PostgreSQL suite.)
 */
const postgresUsable = storeKinds().includes('postgres') ? await postgresReachable() : false;

/**
 * `body` once per store (both unless `--store` narrows it). `only` keeps one of them: a suite split into one file per
 * store, so that each half has the runner's whole per-file time limit (the real coding tools take seconds a run).
 * Each gets a fresh store, closed after the suite; `emptyStore`: an embedded one not yet migrated (openTestStore).
 */
export function describeEachStore(
  name: string,
  body: (ctx: { store: () => TestStore; kind: StoreKind }) => void,
  only?: StoreKind,
  options: { emptyStore?: boolean } = {},
): void {
  for (const kind of storeKinds().filter((k) => only === undefined || k === only)) {
    describe(`${name} [${kind}]`, () => {
      if (kind === 'postgres' && !postgresUsable) return;
      let store: TestStore | null = null;
      before(async () => {
        store = await openTestStore(kind, { empty: options.emptyStore === true });
      });
      body({
        kind,
        store: () => {
          if (!store) throw new Error('store not open yet');
          return store;
        },
      });
      // Registered after the body's own hooks: `after` hooks run in order, and replicas close before their store.
      after(async () => {
        await store?.close();
      });
    });
  }
}

export interface Answer<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface RequestOptions {
  token?: string | null;
  headers?: Record<string, string>;
  /** A raw body; sent as is with the given content type. */
  raw?: string;
  contentType?: string;
}

export class Client {
  constructor(
    readonly baseUrl: string,
    readonly token: string | null = null,
  ) {}

  with(token: string | null): Client {
    return new Client(this.baseUrl, token);
  }

  async request<T = any>(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<Answer<T>> {
    const token = options.token === undefined ? this.token : options.token;
    const headers: Record<string, string> = { ...options.headers };
    if (token) headers.authorization = `Bearer ${token}`;
    let payload: string | undefined;
    if (options.raw !== undefined) {
      payload = options.raw;
      headers['content-type'] = options.contentType ?? 'application/json';
    } else if (body !== undefined) {
      payload = JSON.stringify(body);
      headers['content-type'] = 'application/json';
    }
    const res = await fetch(new URL(path, this.baseUrl), { method, headers, ...(payload !== undefined ? { body: payload } : {}) });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: res.status, body: parsed as T, headers: res.headers };
  }

  get<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('GET', path, undefined, options);
  }
  post<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>('POST', path, body, options);
  }
  put<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>('PUT', path, body, options);
  }
  delete<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('DELETE', path, undefined, options);
  }
}

export const enc = encodeURIComponent;

/**
 * Creates an admin identity and its first personal access token the way `reins admin create` does (the CLI, an
 * operator with the store): through the API an admin cannot mint a personal token for another admin.
 */
export async function adminWithToken(db: Db, id: string): Promise<string> {
  return (await createAdmin(db, id, 'test')).token;
}

/** Creates a developer identity with a role and returns its personal access token (admins: `adminWithToken`). */
export async function developerWithToken(admin: Client, id: string, role: 'viewer' | 'developer'): Promise<string> {
  const created = await admin.post('/api/v1/identities', { id, kind: 'developer', role });
  if (created.status !== 201) throw new Error(`create ${id}: ${created.status} ${JSON.stringify(created.body)}`);
  const minted = await admin.post('/api/v1/tokens', { identityId: id, name: 'test' });
  if (minted.status !== 201) throw new Error(`mint for ${id}: ${minted.status}`);
  return minted.body.token as string;
}

export async function agentWithKey(admin: Client, id: string): Promise<string> {
  const created = await admin.post('/api/v1/identities', { id, kind: 'agent' });
  if (created.status !== 201) throw new Error(`create ${id}: ${created.status} ${JSON.stringify(created.body)}`);
  const minted = await admin.post('/api/v1/tokens', { identityId: id, name: 'test' });
  return minted.body.token as string;
}

/**
 * The limit for waits on something that will happen (an audit event written by the batched writer, a change
 * seen by another replica, a webhook delivered). Generous on purpose: a wait that succeeds returns as soon as
 * its condition holds, so the limit costs nothing on a quiet machine, and a loaded one (two cores shared by
 * several test runs) may need tens of seconds for what takes milliseconds alone. Waits that must find that
 * something does NOT happen pass their own short limit.
 */
export const WAIT_MS = 30_000;

/** Polls until `check` returns true or the deadline passes; returns the elapsed milliseconds, or -1. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, intervalMs = 10): Promise<number> {
  const start = Date.now();
  while (Date.now() - start <= timeoutMs) {
    if (await check()) return Date.now() - start;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  return -1;
}
