/**
 * A local fake Kubernetes API server for tests that drive the real `@kubernetes/client-node` client.
 *
 * It speaks the real wire shapes on 127.0.0.1 and a random port (plain HTTP, or TLS with the fixture
 * certificate in test/fixtures/tls), and writes a kubeconfig pointing at itself:
 *
 * - discovery: `/api`, `/api/v1`, `/apis`, `/apis/<group>`, `/apis/<group>/<version>`, `/version`. The
 *   RuntimePolicy group (`runtime.reins.dev/v1`) is listed only while `setCrdServed(true)`; ServiceCIDRs
 *   (`networking.k8s.io/v1`, Kubernetes 1.33+) unless `serviceCidrsServed: false` (an older API server: 404).
 * - list and watch (`?watch=true`, JSON lines `{type: ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, object}`) of every
 *   resource below, cluster-wide and per namespace, with `resourceVersion`, `allowWatchBookmarks`,
 *   `timeoutSeconds`, `labelSelector` and `fieldSelector` (equality). A watch from a resourceVersion older than
 *   the last `compact()` ends with 410 Gone: by default as kube-apiserver's watch cache does it (HTTP 200, one
 *   ERROR event carrying a `Status` with code 410, end of stream), or as an HTTP 410 (`expiredWatch: 'http'`).
 *   A watch without a resourceVersion (or `0`) starts with synthetic ADDED events for what exists.
 * - get / create / replace (PUT) / delete of every resource; a replace whose `metadata.resourceVersion` is stale
 *   answers 409 Conflict, a create of an existing name 409 AlreadyExists (what leader election relies on).
 * - SelfSubjectAccessReview (`authorization.k8s.io/v1`), answered per (group, resource, verb, namespace) from
 *   `denyAccess(...)`. A denied permission is also enforced: the matching request itself answers 403.
 *
 * Resources: pods, services, nodes, namespaces (v1); replicasets, deployments, statefulsets, daemonsets (apps/v1);
 * jobs, cronjobs (batch/v1); endpointslices (discovery.k8s.io/v1); servicecidrs (networking.k8s.io/v1, cluster-scoped); leases (coordination.k8s.io/v1);
 * customresourcedefinitions (apiextensions.k8s.io/v1); runtimepolicies (runtime.reins.dev/v1, cluster-scoped,
 * 404 while the CRD is not served).
 *
 * Faults: `failLists(true)` makes every list and watch answer 500 and ends the open watches (an API server that
 * lost its storage); `failDiscovery(true)` makes discovery answer 503; `stall(true)` holds every request and
 * every watch event until `stall(false)`; `gate(match)` holds matching requests until released (to line up
 * races, or to cut one client off: gates see the `Authorization` header, and `kubeconfigFor(token)` writes a
 * kubeconfig with a token of its own); `closeWatches()` ends open watches as a server-side timeout would;
 * `bookmark()` sends BOOKMARK events; `compact()` makes older resourceVersions expire. Every request is logged in
 * `requests` on arrival, its status filled in when answered.
 *
 *   const api = await startFakeKubeApi({ crdServed: true });
 *   api.upsert('pods', kube.pod({ namespace: 'eng', name: 'agent-1', ip: '10.244.1.1', owner: { kind: 'ReplicaSet', name: 'agent-7d4' } }));
 *   // point the client at api.kubeconfigPath (KUBECONFIG), … then: await api.close();
 *
 * Object builders for the usual test cluster are at the end of this file (`kube.pod(...)`, `kube.service(...)`, …).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify as toYaml } from 'yaml';
import { closable } from './closable.js';

// ---------------------------------------------------------------------------------------------------------
// Resources

export type FakeKubeResource =
  | 'pods'
  | 'services'
  | 'nodes'
  | 'namespaces'
  | 'replicasets'
  | 'deployments'
  | 'statefulsets'
  | 'daemonsets'
  | 'jobs'
  | 'cronjobs'
  | 'endpointslices'
  | 'servicecidrs'
  | 'leases'
  | 'customresourcedefinitions'
  | 'runtimepolicies';

interface ResourceDef {
  plural: FakeKubeResource;
  kind: string;
  /** '' for the core group. */
  group: string;
  version: string;
  namespaced: boolean;
  verbs: string[];
  shortNames?: string[];
}

const RW_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

/** The RuntimePolicy CRD the fake serves on demand (deploy/base/runtime-policy-crd.yaml defines the real one). */
export const FAKE_RUNTIME_POLICY = { group: 'runtime.reins.dev', version: 'v1', plural: 'runtimepolicies', kind: 'RuntimePolicy' } as const;

const RESOURCES: ResourceDef[] = [
  { plural: 'pods', kind: 'Pod', group: '', version: 'v1', namespaced: true, verbs: RW_VERBS, shortNames: ['po'] },
  { plural: 'services', kind: 'Service', group: '', version: 'v1', namespaced: true, verbs: RW_VERBS, shortNames: ['svc'] },
  { plural: 'nodes', kind: 'Node', group: '', version: 'v1', namespaced: false, verbs: RW_VERBS, shortNames: ['no'] },
  { plural: 'namespaces', kind: 'Namespace', group: '', version: 'v1', namespaced: false, verbs: RW_VERBS, shortNames: ['ns'] },
  { plural: 'replicasets', kind: 'ReplicaSet', group: 'apps', version: 'v1', namespaced: true, verbs: RW_VERBS, shortNames: ['rs'] },
  { plural: 'deployments', kind: 'Deployment', group: 'apps', version: 'v1', namespaced: true, verbs: RW_VERBS, shortNames: ['deploy'] },
  { plural: 'statefulsets', kind: 'StatefulSet', group: 'apps', version: 'v1', namespaced: true, verbs: RW_VERBS, shortNames: ['sts'] },
  { plural: 'daemonsets', kind: 'DaemonSet', group: 'apps', version: 'v1', namespaced: true, verbs: RW_VERBS, shortNames: ['ds'] },
  { plural: 'jobs', kind: 'Job', group: 'batch', version: 'v1', namespaced: true, verbs: RW_VERBS },
  { plural: 'cronjobs', kind: 'CronJob', group: 'batch', version: 'v1', namespaced: true, verbs: RW_VERBS, shortNames: ['cj'] },
  { plural: 'endpointslices', kind: 'EndpointSlice', group: 'discovery.k8s.io', version: 'v1', namespaced: true, verbs: RW_VERBS },
  { plural: 'servicecidrs', kind: 'ServiceCIDR', group: 'networking.k8s.io', version: 'v1', namespaced: false, verbs: RW_VERBS },
  { plural: 'leases', kind: 'Lease', group: 'coordination.k8s.io', version: 'v1', namespaced: true, verbs: RW_VERBS },
  {
    plural: 'customresourcedefinitions',
    kind: 'CustomResourceDefinition',
    group: 'apiextensions.k8s.io',
    version: 'v1',
    namespaced: false,
    verbs: RW_VERBS,
    shortNames: ['crd', 'crds'],
  },
  {
    plural: 'runtimepolicies',
    kind: FAKE_RUNTIME_POLICY.kind,
    group: FAKE_RUNTIME_POLICY.group,
    version: FAKE_RUNTIME_POLICY.version,
    namespaced: false,
    verbs: RW_VERBS,
  },
];

/** Groups with no stored resources of their own, listed in discovery all the same. */
const EXTRA_GROUP_RESOURCES: Record<string, Array<{ name: string; kind: string; namespaced: boolean; verbs: string[] }>> = {
  'authorization.k8s.io/v1': [
    { name: 'selfsubjectaccessreviews', kind: 'SelfSubjectAccessReview', namespaced: false, verbs: ['create'] },
    { name: 'selfsubjectrulesreviews', kind: 'SelfSubjectRulesReview', namespaced: false, verbs: ['create'] },
    { name: 'subjectaccessreviews', kind: 'SubjectAccessReview', namespaced: false, verbs: ['create'] },
  ],
};

const CRD_GROUP = FAKE_RUNTIME_POLICY.group;

function apiVersionOf(def: { group: string; version: string }): string {
  return def.group === '' ? def.version : `${def.group}/${def.version}`;
}

// ---------------------------------------------------------------------------------------------------------
// Public surface

/** A plain Kubernetes object as JSON. */
export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string;
    generateName?: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    resourceVersion?: string;
    uid?: string;
    creationTimestamp?: string;
    ownerReferences?: Array<{ apiVersion?: string; kind: string; name: string; uid?: string; controller?: boolean }>;
    [key: string]: unknown;
  };
  [key: string]: unknown;
};

export interface AccessAttributes {
  group: string;
  resource: string;
  verb: string;
  /** Omitted: every namespace (and cluster scope). */
  namespace?: string;
}

export interface FakeKubeRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  watch: boolean;
  status: number;
  /** The request's `Authorization` header, so tests can see the credential the client sent. */
  authorization: string;
  atMs: number;
}

export interface GateRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  /** The `Authorization` header (`Bearer <token>`). */
  authorization: string;
}

export interface RequestGate {
  /** Requests held so far (and not yet released). */
  readonly waiting: number;
  /** Resolves once at least `n` requests are held. */
  waitFor(n: number): Promise<void>;
  /** Lets the held requests (and every later one) through. */
  release(): void;
}

export interface FakeKubeApiOptions {
  /** Serve HTTPS with the fixture certificate; the kubeconfig then names the fixture CA. Default false. */
  tls?: boolean;
  /** Serve the RuntimePolicy CRD from the start. Default false. */
  crdServed?: boolean;
  /** Serve ServiceCIDRs (networking.k8s.io/v1, Kubernetes 1.33+). Default true; false answers 404 as an older API server. */
  serviceCidrsServed?: boolean;
  /** How a watch from a too-old resourceVersion fails. Default `event` (kube-apiserver's watch cache). */
  expiredWatch?: 'event' | 'http';
  /** Send a BOOKMARK to every watch that asked for them this often; 0 (default) only on `bookmark()`. */
  bookmarkIntervalMs?: number;
  /** The bearer token written into the kubeconfig. */
  token?: string;
}

export interface FakeKubeApi {
  /** `http://127.0.0.1:<port>` or `https://127.0.0.1:<port>`. */
  url: string;
  /** A kubeconfig file naming this server (removed by `close()`). */
  kubeconfigPath: string;
  /** Every request received so far, in order of arrival (`status` 0 while not answered yet). */
  requests: FakeKubeRequest[];
  /** Creates or replaces an object (fills kind, apiVersion, uid, resourceVersion); watchers see ADDED or MODIFIED. */
  upsert(resource: FakeKubeResource, object: KubeObject): KubeObject;
  /** Deletes an object; watchers see DELETED. False when it did not exist. */
  remove(resource: FakeKubeResource, namespace: string, name: string): boolean;
  get(resource: FakeKubeResource, namespace: string, name: string): KubeObject | undefined;
  list(resource: FakeKubeResource, namespace?: string): KubeObject[];
  /** The current (global) resourceVersion. */
  resourceVersion(): string;
  /** Whether the RuntimePolicy CRD is served (discovery, the CRD object, the runtimepolicies endpoints). */
  setCrdServed(served: boolean): void;
  /** Refuses a permission: SelfSubjectAccessReviews answer `allowed: false` and the request itself 403. */
  denyAccess(attributes: AccessAttributes): void;
  /** Grants everything again. */
  resetAccess(): void;
  failLists(fail: boolean): void;
  failDiscovery(fail: boolean): void;
  stall(stalled: boolean): void;
  gate(match: (req: GateRequest) => boolean): RequestGate;
  /** Another kubeconfig for this server with its own bearer token, so a test can tell clients apart (gates, log). */
  kubeconfigFor(token: string): string;
  /** Drops the event history: a watch from an older resourceVersion gets 410 Gone. */
  compact(): void;
  /** Ends every open watch normally (as a server-side `timeoutSeconds` does). */
  closeWatches(resource?: FakeKubeResource): void;
  /** Sends a BOOKMARK at the current resourceVersion to every open watch that allowed bookmarks; returns how many. */
  bookmark(resource?: FakeKubeResource): number;
  /** Open watches, optionally of one resource. */
  watchCount(resource?: FakeKubeResource): number;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------
// Selectors

type Requirement = { key: string; op: 'eq' | 'ne' | 'in' | 'notin' | 'exists' | '!exists'; values: string[] };

function splitTopLevel(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of selector) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  if (current.trim() !== '') parts.push(current);
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

function parseSelector(selector: string | null): Requirement[] {
  if (!selector) return [];
  return splitTopLevel(selector).map((part): Requirement => {
    let m = /^(\S+)\s+(in|notin)\s+\((.*)\)$/.exec(part);
    if (m) return { key: m[1]!, op: m[2] as 'in' | 'notin', values: m[3]!.split(',').map((v) => v.trim()) };
    m = /^([^!=\s]+)\s*(==|=|!=)\s*(.*)$/.exec(part);
    if (m) return { key: m[1]!, op: m[2] === '!=' ? 'ne' : 'eq', values: [m[3]!.trim()] };
    if (part.startsWith('!')) return { key: part.slice(1).trim(), op: '!exists', values: [] };
    return { key: part, op: 'exists', values: [] };
  });
}

function matches(requirements: Requirement[], lookup: (key: string) => string | undefined): boolean {
  return requirements.every((r) => {
    const v = lookup(r.key);
    switch (r.op) {
      case 'eq':
        return v === r.values[0];
      case 'ne':
        return v !== r.values[0];
      case 'in':
        return v !== undefined && r.values.includes(v);
      case 'notin':
        return v === undefined || !r.values.includes(v);
      case 'exists':
        return v !== undefined;
      case '!exists':
        return v === undefined;
    }
  });
}

function fieldOf(object: KubeObject, path: string): string | undefined {
  let at: unknown = object;
  for (const part of path.split('.')) {
    if (at === null || typeof at !== 'object') return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at === undefined || at === null ? undefined : String(at);
}

interface Filter {
  namespace: string | undefined;
  labels: Requirement[];
  fields: Requirement[];
}

function filterAccepts(filter: Filter, object: KubeObject): boolean {
  if (filter.namespace !== undefined && object.metadata.namespace !== filter.namespace) return false;
  return (
    matches(filter.labels, (k) => object.metadata.labels?.[k]) &&
    matches(filter.fields, (k) => fieldOf(object, k))
  );
}

// ---------------------------------------------------------------------------------------------------------
// The server

interface StoredEvent {
  rv: number;
  resource: FakeKubeResource;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: KubeObject;
  /** The object before a MODIFIED, so label-selected watches see it enter or leave their selection. */
  previous?: KubeObject;
}

interface Watcher {
  def: ResourceDef;
  filter: Filter;
  bookmarks: boolean;
  res: ServerResponse;
  /** Events written while stalled are held here. */
  held: string[];
  timer?: NodeJS.Timeout;
}

class HttpError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

function statusBody(code: number, reason: string, message: string, details?: Record<string, unknown>): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code };
}

const clone = <T>(v: T): T => structuredClone(v);

const FIXTURE_TLS = fileURLToPath(new URL('../fixtures/tls/', import.meta.url));

export async function startFakeKubeApi(options: FakeKubeApiOptions = {}): Promise<FakeKubeApi> {
  const tls = options.tls ?? false;
  const expiredWatch = options.expiredWatch ?? 'event';
  const token = options.token ?? 'fake-kube-token';

  let rv = 1000;
  /** Event history newer than `compactedRv`, for watches that resume from a resourceVersion. */
  const history: StoredEvent[] = [];
  let compactedRv = rv;
  const objects = new Map<FakeKubeResource, Map<string, KubeObject>>(RESOURCES.map((d) => [d.plural, new Map()]));
  const watchers = new Set<Watcher>();
  const requests: FakeKubeRequest[] = [];
  const denied: AccessAttributes[] = [];
  const gates: Array<{ match: (req: GateRequest) => boolean; held: Array<() => void>; open: boolean; waiters: Array<() => void> }> = [];
  let crdServed = options.crdServed ?? false;
  let listsFail = false;
  let discoveryFails = false;
  let stalled: { promise: Promise<void>; resume: () => void } | null = null;

  const defOf = (plural: string): ResourceDef | undefined => RESOURCES.find((d) => d.plural === plural);
  const keyOf = (namespace: string | undefined, name: string): string => `${namespace ?? ''}/${name}`;
  const serviceCidrsServed = options.serviceCidrsServed ?? true;
  const served = (def: ResourceDef): boolean => (def.group !== CRD_GROUP || crdServed) && (def.plural !== 'servicecidrs' || serviceCidrsServed);

  function isDenied(attrs: { group: string; resource: string; verb: string; namespace: string }): boolean {
    return denied.some(
      (d) =>
        d.group === attrs.group &&
        d.resource === attrs.resource &&
        d.verb === attrs.verb &&
        (d.namespace === undefined || d.namespace === attrs.namespace),
    );
  }

  // ---- storage and events

  function writeLine(w: Watcher, line: string): void {
    if (stalled) w.held.push(line);
    else w.res.write(line);
  }

  function dispatch(event: StoredEvent): void {
    for (const w of watchers) {
      if (w.def.plural !== event.resource) continue;
      const now = filterAccepts(w.filter, event.object);
      const before = event.previous ? filterAccepts(w.filter, event.previous) : false;
      let type: string | null = null;
      if (event.type === 'MODIFIED') type = now && before ? 'MODIFIED' : now ? 'ADDED' : before ? 'DELETED' : null;
      else if (now) type = event.type;
      if (type) writeLine(w, JSON.stringify({ type, object: event.object }) + '\n');
    }
  }

  function record(resource: FakeKubeResource, type: StoredEvent['type'], object: KubeObject, previous?: KubeObject): void {
    const event: StoredEvent = { rv: Number(object.metadata.resourceVersion), resource, type, object: clone(object), ...(previous ? { previous } : {}) };
    history.push(event);
    if (history.length > 10_000) {
      const dropped = history.splice(0, history.length - 10_000);
      compactedRv = dropped[dropped.length - 1]!.rv;
    }
    dispatch(event);
  }

  function store(def: ResourceDef, object: KubeObject, mode: 'create' | 'replace' | 'upsert'): KubeObject {
    const name = object.metadata.name;
    if (!name) throw new HttpError(422, 'Invalid', `${def.kind} "" is invalid: metadata.name: Required value`);
    const namespace = def.namespaced ? object.metadata.namespace : undefined;
    if (def.namespaced && !namespace) throw new HttpError(400, 'BadRequest', 'the namespace of the object does not match the request');
    const table = objects.get(def.plural)!;
    const key = keyOf(namespace, name);
    const existing = table.get(key);
    if (mode === 'create' && existing) {
      throw new HttpError(409, 'AlreadyExists', `${def.plural}${def.group ? '.' + def.group : ''} "${name}" already exists`, {
        name,
        group: def.group,
        kind: def.plural,
      });
    }
    if (mode === 'replace') {
      if (!existing) throw new HttpError(404, 'NotFound', `${def.plural}${def.group ? '.' + def.group : ''} "${name}" not found`, { name, group: def.group, kind: def.plural });
      const sent = object.metadata.resourceVersion;
      if (sent !== undefined && sent !== '' && sent !== existing.metadata.resourceVersion) {
        throw new HttpError(
          409,
          'Conflict',
          `Operation cannot be fulfilled on ${def.plural}${def.group ? '.' + def.group : ''} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
          { name, group: def.group, kind: def.plural },
        );
      }
    }
    rv++;
    const stored: KubeObject = clone({
      ...object,
      apiVersion: apiVersionOf(def),
      kind: def.kind,
      metadata: {
        ...object.metadata,
        name,
        ...(namespace ? { namespace } : {}),
        uid: existing?.metadata.uid ?? object.metadata.uid ?? randomUUID(),
        creationTimestamp: existing?.metadata.creationTimestamp ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        resourceVersion: String(rv),
      },
    });
    if (!def.namespaced) delete stored.metadata.namespace;
    table.set(key, stored);
    record(def.plural, existing ? 'MODIFIED' : 'ADDED', stored, existing);
    return clone(stored);
  }

  function destroy(def: ResourceDef, namespace: string | undefined, name: string): KubeObject | undefined {
    const table = objects.get(def.plural)!;
    const key = keyOf(def.namespaced ? namespace : undefined, name);
    const existing = table.get(key);
    if (!existing) return undefined;
    table.delete(key);
    rv++;
    const gone = clone({ ...existing, metadata: { ...existing.metadata, resourceVersion: String(rv) } });
    record(def.plural, 'DELETED', gone);
    return gone;
  }

  function crdObject(): KubeObject {
    return {
      metadata: { name: `${FAKE_RUNTIME_POLICY.plural}.${FAKE_RUNTIME_POLICY.group}` },
      spec: {
        group: FAKE_RUNTIME_POLICY.group,
        names: { kind: FAKE_RUNTIME_POLICY.kind, listKind: `${FAKE_RUNTIME_POLICY.kind}List`, plural: FAKE_RUNTIME_POLICY.plural, singular: 'runtimepolicy' },
        scope: 'Cluster',
        versions: [{ name: FAKE_RUNTIME_POLICY.version, served: true, storage: true }],
      },
      status: { conditions: [{ type: 'Established', status: 'True' }], acceptedNames: { kind: FAKE_RUNTIME_POLICY.kind, plural: FAKE_RUNTIME_POLICY.plural } },
    };
  }

  function setCrdServed(on: boolean): void {
    crdServed = on;
    const crds = defOf('customresourcedefinitions')!;
    if (on) store(crds, crdObject(), 'upsert');
    else {
      destroy(crds, undefined, `${FAKE_RUNTIME_POLICY.plural}.${FAKE_RUNTIME_POLICY.group}`);
      // Deleting a CRD deletes its objects.
      for (const obj of [...objects.get('runtimepolicies')!.values()]) destroy(defOf('runtimepolicies')!, undefined, obj.metadata.name!);
    }
  }

  // ---- discovery

  function groupVersions(): Map<string, { group: string; version: string }> {
    const out = new Map<string, { group: string; version: string }>();
    for (const d of RESOURCES) if (d.group !== '' && served(d)) out.set(`${d.group}/${d.version}`, { group: d.group, version: d.version });
    for (const gv of Object.keys(EXTRA_GROUP_RESOURCES)) {
      const [group, version] = gv.split('/') as [string, string];
      out.set(gv, { group, version });
    }
    return out;
  }

  function apiGroup(group: string): Record<string, unknown> | undefined {
    const versions = [...groupVersions().values()].filter((gv) => gv.group === group);
    if (versions.length === 0) return undefined;
    const list = versions.map((v) => ({ groupVersion: `${v.group}/${v.version}`, version: v.version }));
    return { name: group, versions: list, preferredVersion: list[0] };
  }

  function resourceList(group: string, version: string): Record<string, unknown> | undefined {
    const gv = group === '' ? version : `${group}/${version}`;
    const defs = RESOURCES.filter((d) => d.group === group && d.version === version && served(d));
    const extra = EXTRA_GROUP_RESOURCES[gv] ?? [];
    if (defs.length === 0 && extra.length === 0) return undefined;
    return {
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: gv,
      resources: [
        ...defs.map((d) => ({
          name: d.plural,
          singularName: d.kind.toLowerCase(),
          namespaced: d.namespaced,
          kind: d.kind,
          verbs: d.verbs,
          ...(d.shortNames ? { shortNames: d.shortNames } : {}),
        })),
        ...extra.map((e) => ({ name: e.name, singularName: e.kind.toLowerCase(), namespaced: e.namespaced, kind: e.kind, verbs: e.verbs })),
      ],
    };
  }

  function discovery(path: string): Record<string, unknown> | undefined {
    if (path === '/version') return { major: '1', minor: '31', gitVersion: 'v1.31.0-fake', platform: 'linux/amd64' };
    if (path === '/api') {
      return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1:6443' }] };
    }
    if (path === '/api/v1') return resourceList('', 'v1');
    if (path === '/apis') {
      const groups = new Set([...groupVersions().values()].map((gv) => gv.group));
      return { kind: 'APIGroupList', apiVersion: 'v1', groups: [...groups].map((g) => apiGroup(g)) };
    }
    const m = /^\/apis\/([^/]+)(?:\/([^/]+))?$/.exec(path);
    if (m) {
      if (m[2] === undefined) {
        const g = apiGroup(m[1]!);
        return g ? { kind: 'APIGroup', apiVersion: 'v1', ...g } : undefined;
      }
      return resourceList(m[1]!, m[2]);
    }
    return undefined;
  }

  // ---- routing

  interface Target {
    def: ResourceDef;
    namespace: string | undefined;
    name: string | undefined;
  }

  function parseResourcePath(path: string): Target | 'ssar' | undefined {
    const segments = path.split('/').filter((s) => s !== '').map(decodeURIComponent);
    let group: string;
    let version: string;
    let rest: string[];
    if (segments[0] === 'api' && segments.length >= 3) {
      group = '';
      version = segments[1]!;
      rest = segments.slice(2);
    } else if (segments[0] === 'apis' && segments.length >= 4) {
      group = segments[1]!;
      version = segments[2]!;
      rest = segments.slice(3);
    } else return undefined;
    if (group === 'authorization.k8s.io' && version === 'v1' && rest.length === 1 && rest[0] === 'selfsubjectaccessreviews') return 'ssar';
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const def = RESOURCES.find((d) => d.group === group && d.version === version && d.plural === rest[0]);
    if (!def || rest.length > 2) return undefined;
    if (namespace !== undefined && !def.namespaced) return undefined;
    return { def, namespace, name: rest[1] };
  }

  function verbOf(method: string, target: Target, watch: boolean): string {
    if (method === 'GET') return watch ? 'watch' : target.name ? 'get' : 'list';
    if (method === 'POST') return 'create';
    if (method === 'PUT') return 'update';
    if (method === 'PATCH') return 'patch';
    return target.name ? 'delete' : 'deletecollection';
  }

  async function readJson(req: IncomingMessage): Promise<KubeObject> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    try {
      const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as KubeObject;
      if (parsed === null || typeof parsed !== 'object') throw new Error('not an object');
      parsed.metadata ??= {};
      return parsed;
    } catch {
      throw new HttpError(400, 'BadRequest', 'the request body is not a JSON object');
    }
  }

  function filterFrom(target: Target, query: URLSearchParams): Filter {
    return { namespace: target.namespace, labels: parseSelector(query.get('labelSelector')), fields: parseSelector(query.get('fieldSelector')) };
  }

  function listBody(target: Target, query: URLSearchParams): Record<string, unknown> {
    const filter = filterFrom(target, query);
    const isCustom = target.def.group === CRD_GROUP;
    const items = [...objects.get(target.def.plural)!.values()]
      .filter((o) => filterAccepts(filter, o))
      .sort((a, b) => keyOf(a.metadata.namespace, a.metadata.name!).localeCompare(keyOf(b.metadata.namespace, b.metadata.name!)))
      .map((o) => {
        const item = clone(o);
        // Lists of built-in resources carry kind and apiVersion only at the top; custom resources keep them.
        if (!isCustom) {
          delete item.kind;
          delete item.apiVersion;
        }
        return item;
      });
    return { kind: `${target.def.kind}List`, apiVersion: apiVersionOf(target.def), metadata: { resourceVersion: String(rv) }, items };
  }

  function startWatch(target: Target, query: URLSearchParams, res: ServerResponse): void {
    const from = query.get('resourceVersion') ?? '';
    const filter = filterFrom(target, query);
    const resume = from !== '' && from !== '0';
    if (resume && Number(from) < compactedRv) {
      const message = `too old resource version: ${from} (${compactedRv})`;
      if (expiredWatch === 'http') throw new HttpError(410, 'Expired', message);
      res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      res.end(JSON.stringify({ type: 'ERROR', object: statusBody(410, 'Expired', message) }) + '\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    const w: Watcher = { def: target.def, filter, bookmarks: query.get('allowWatchBookmarks') === 'true', res, held: [] };
    watchers.add(w);
    const stop = (): void => {
      if (w.timer) clearTimeout(w.timer);
      watchers.delete(w);
    };
    res.on('close', stop);
    const timeoutSeconds = Number(query.get('timeoutSeconds') ?? '0');
    if (timeoutSeconds > 0) {
      w.timer = setTimeout(() => {
        stop();
        res.end();
      }, timeoutSeconds * 1000);
    }
    if (!resume) {
      for (const o of objects.get(target.def.plural)!.values()) {
        if (filterAccepts(filter, o)) writeLine(w, JSON.stringify({ type: 'ADDED', object: o }) + '\n');
      }
    } else {
      for (const e of history) {
        if (e.resource !== target.def.plural || e.rv <= Number(from)) continue;
        const now = filterAccepts(filter, e.object);
        const before = e.previous ? filterAccepts(filter, e.previous) : false;
        let type: string | null = null;
        if (e.type === 'MODIFIED') type = now && before ? 'MODIFIED' : now ? 'ADDED' : before ? 'DELETED' : null;
        else if (now) type = e.type;
        if (type) writeLine(w, JSON.stringify({ type, object: e.object }) + '\n');
      }
    }
  }

  function sendBookmark(w: Watcher): boolean {
    if (!w.bookmarks) return false;
    writeLine(w, JSON.stringify({ type: 'BOOKMARK', object: { kind: w.def.kind, apiVersion: apiVersionOf(w.def), metadata: { resourceVersion: String(rv) } } }) + '\n');
    return true;
  }

  async function handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname;
    const query = url.searchParams;
    const watch = query.get('watch') === 'true' || query.get('watch') === '1';

    if (req.method === 'GET' && (path === '/api' || path === '/apis' || path === '/version' || /^\/api\/v1$/.test(path) || /^\/apis\/[^/]+(\/[^/]+)?$/.test(path))) {
      if (discoveryFails) throw new HttpError(503, 'ServiceUnavailable', 'the server is currently unable to handle the request');
      const body = discovery(path);
      if (!body) throw new HttpError(404, 'NotFound', 'the server could not find the requested resource');
      return sendJson(res, 200, body);
    }

    const target = parseResourcePath(path);
    if (!target) throw new HttpError(404, 'NotFound', 'the server could not find the requested resource');

    if (target === 'ssar') {
      if (req.method !== 'POST') throw new HttpError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
      const body = await readJson(req);
      const spec = (body.spec ?? {}) as { resourceAttributes?: Partial<AccessAttributes> };
      const ra = spec.resourceAttributes ?? {};
      const allowed = !isDenied({ group: ra.group ?? '', resource: ra.resource ?? '', verb: ra.verb ?? '', namespace: ra.namespace ?? '' });
      return sendJson(res, 201, {
        kind: 'SelfSubjectAccessReview',
        apiVersion: 'authorization.k8s.io/v1',
        metadata: { creationTimestamp: null },
        spec,
        status: allowed ? { allowed: true, reason: 'allowed by the fake API server' } : { allowed: false, reason: 'denied by the test' },
      });
    }

    const { def } = target;
    if (!served(def)) throw new HttpError(404, 'NotFound', 'the server could not find the requested resource');
    const verb = verbOf(req.method ?? 'GET', target, watch);
    if (isDenied({ group: def.group, resource: def.plural, verb, namespace: target.namespace ?? '' })) {
      throw new HttpError(
        403,
        'Forbidden',
        `${def.plural}${def.group ? '.' + def.group : ''} is forbidden: User "system:serviceaccount:reins:reins" cannot ${verb} resource "${def.plural}" in API group "${def.group}"${target.namespace ? ` in the namespace "${target.namespace}"` : ' at the cluster scope'}`,
      );
    }

    if ((verb === 'list' || verb === 'watch') && listsFail) {
      throw new HttpError(500, 'InternalError', 'Internal error occurred: etcdserver: request timed out');
    }
    switch (verb) {
      case 'watch':
        return startWatch(target, query, res);
      case 'list':
        return sendJson(res, 200, listBody(target, query));
      case 'get': {
        const found = objects.get(def.plural)!.get(keyOf(def.namespaced ? target.namespace : undefined, target.name!));
        if (!found) throw new HttpError(404, 'NotFound', `${def.plural}${def.group ? '.' + def.group : ''} "${target.name}" not found`, { name: target.name, group: def.group, kind: def.plural });
        return sendJson(res, 200, found);
      }
      case 'create': {
        const body = await readJson(req);
        if (def.namespaced) {
          if (body.metadata.namespace && body.metadata.namespace !== target.namespace) {
            throw new HttpError(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
          }
          body.metadata.namespace = target.namespace;
        }
        if (!body.metadata.name && body.metadata.generateName) body.metadata.name = `${body.metadata.generateName}${randomUUID().slice(0, 5)}`;
        delete body.metadata.resourceVersion;
        return sendJson(res, 201, store(def, body, 'create'));
      }
      case 'update': {
        const body = await readJson(req);
        if (body.metadata.name !== target.name) throw new HttpError(400, 'BadRequest', 'the name of the object does not match the name on the URL');
        if (def.namespaced) body.metadata.namespace = target.namespace;
        return sendJson(res, 200, store(def, body, 'replace'));
      }
      case 'delete': {
        const gone = destroy(def, target.namespace, target.name!);
        if (!gone) throw new HttpError(404, 'NotFound', `${def.plural}${def.group ? '.' + def.group : ''} "${target.name}" not found`, { name: target.name, group: def.group, kind: def.plural });
        return sendJson(res, 200, gone);
      }
      default:
        throw new HttpError(405, 'MethodNotAllowed', `the fake API server does not implement ${verb}`);
    }
  }

  function sendJson(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  async function onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const entry: FakeKubeRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      watch: url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1',
      status: 0,
      authorization: req.headers.authorization ?? '',
      atMs: Date.now(),
    };
    // Logged on arrival (a watch stays open); `status` is filled in when the answer starts.
    requests.push(entry);
    const originalWriteHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
    res.writeHead = ((...args: unknown[]) => {
      entry.status = args[0] as number;
      return originalWriteHead(...args);
    }) as ServerResponse['writeHead'];
    try {
      for (const g of gates) {
        if (!g.open && g.match({ method: entry.method, path: url.pathname, query: url.searchParams, authorization: entry.authorization })) {
          await new Promise<void>((resolve) => {
            g.held.push(resolve);
            for (const w of g.waiters.splice(0)) w();
          });
        }
      }
      while (stalled) await stalled.promise;
      await handle(req, res, url);
    } catch (err) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof HttpError) sendJson(res, err.code, statusBody(err.code, err.reason, err.message, err.details));
      else sendJson(res, 500, statusBody(500, 'InternalError', String(err)));
    }
  }

  const server: Server = tls
    ? createHttpsServer(
        { cert: readFileSync(join(FIXTURE_TLS, 'server.pem')), key: readFileSync(join(FIXTURE_TLS, 'server-key.pem')) },
        (req, res) => void onRequest(req, res),
      )
    : createHttpServer((req, res) => void onRequest(req, res));
  const closeServer = closable(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;

  const bookmarkTimer =
    options.bookmarkIntervalMs && options.bookmarkIntervalMs > 0
      ? setInterval(() => {
          for (const w of watchers) sendBookmark(w);
        }, options.bookmarkIntervalMs)
      : undefined;
  bookmarkTimer?.unref();

  const dir = mkdtempSync(join(tmpdir(), 'fake-kube-'));
  let kubeconfigs = 0;
  function writeKubeconfig(bearer: string): string {
    const path = join(dir, `kubeconfig-${kubeconfigs++}`);
    writeFileSync(
      path,
      toYaml({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'fake',
            cluster: tls ? { server: url, 'certificate-authority': join(FIXTURE_TLS, 'ca.pem') } : { server: url, 'insecure-skip-tls-verify': true },
          },
        ],
        users: [{ name: 'fake', user: { token: bearer } }],
        contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'fake', namespace: 'default' } }],
        'current-context': 'fake',
        preferences: {},
      }),
    );
    return path;
  }
  const kubeconfigPath = writeKubeconfig(token);

  if (crdServed) setCrdServed(true);

  return {
    url,
    kubeconfigPath,
    kubeconfigFor: writeKubeconfig,
    requests,
    upsert(resource, object) {
      const def = defOf(resource)!;
      return store(def, clone({ ...object, metadata: { ...object.metadata, resourceVersion: undefined } }), 'upsert');
    },
    remove(resource, namespace, name) {
      return destroy(defOf(resource)!, namespace, name) !== undefined;
    },
    get(resource, namespace, name) {
      const def = defOf(resource)!;
      const found = objects.get(resource)!.get(keyOf(def.namespaced ? namespace : undefined, name));
      return found ? clone(found) : undefined;
    },
    list(resource, namespace) {
      return [...objects.get(resource)!.values()].filter((o) => namespace === undefined || o.metadata.namespace === namespace).map(clone);
    },
    resourceVersion: () => String(rv),
    setCrdServed,
    denyAccess(attributes) {
      denied.push({ ...attributes });
    },
    resetAccess() {
      denied.length = 0;
    },
    failLists(fail) {
      listsFail = fail;
      if (fail) {
        for (const w of [...watchers]) {
          watchers.delete(w);
          if (w.timer) clearTimeout(w.timer);
          // An API server losing its storage drops watches abruptly.
          w.res.destroy();
        }
      }
    },
    failDiscovery(fail) {
      discoveryFails = fail;
    },
    stall(on) {
      if (on && !stalled) {
        let resume!: () => void;
        const promise = new Promise<void>((r) => (resume = r));
        stalled = { promise, resume };
      } else if (!on && stalled) {
        const s = stalled;
        stalled = null;
        s.resume();
        for (const w of watchers) for (const line of w.held.splice(0)) w.res.write(line);
      }
    },
    gate(match) {
      const g = { match, held: [] as Array<() => void>, open: false, waiters: [] as Array<() => void> };
      gates.push(g);
      return {
        get waiting() {
          return g.held.length;
        },
        async waitFor(n) {
          while (g.held.length < n) await new Promise<void>((r) => g.waiters.push(r));
        },
        release() {
          g.open = true;
          for (const r of g.held.splice(0)) r();
          gates.splice(gates.indexOf(g), 1);
        },
      };
    },
    compact() {
      history.length = 0;
      compactedRv = rv;
    },
    closeWatches(resource) {
      for (const w of [...watchers]) {
        if (resource && w.def.plural !== resource) continue;
        watchers.delete(w);
        if (w.timer) clearTimeout(w.timer);
        w.res.end();
      }
    },
    bookmark(resource) {
      let n = 0;
      for (const w of watchers) if ((!resource || w.def.plural === resource) && sendBookmark(w)) n++;
      return n;
    },
    watchCount(resource) {
      return [...watchers].filter((w) => !resource || w.def.plural === resource).length;
    },
    async close() {
      if (bookmarkTimer) clearInterval(bookmarkTimer);
      if (stalled) {
        const s = stalled;
        stalled = null;
        s.resume();
      }
      for (const g of gates) for (const r of g.held.splice(0)) r();
      for (const w of watchers) {
        if (w.timer) clearTimeout(w.timer);
        w.res.destroy();
      }
      watchers.clear();
      await closeServer();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Object builders (plain JSON, as `kubectl get -o json` shows them)

type Owner = { kind: string; name: string; apiVersion?: string; controller?: boolean };

const OWNER_API_VERSIONS: Record<string, string> = {
  ReplicaSet: 'apps/v1',
  Deployment: 'apps/v1',
  StatefulSet: 'apps/v1',
  DaemonSet: 'apps/v1',
  Job: 'batch/v1',
  CronJob: 'batch/v1',
  Node: 'v1',
};

function ownerRefs(owner: Owner | undefined): KubeObject['metadata']['ownerReferences'] {
  if (!owner) return undefined;
  return [
    {
      apiVersion: owner.apiVersion ?? OWNER_API_VERSIONS[owner.kind] ?? 'v1',
      kind: owner.kind,
      name: owner.name,
      uid: randomUUID(),
      controller: owner.controller ?? true,
    },
  ];
}

export interface PodSpecInput {
  namespace: string;
  name: string;
  ip?: string;
  ips?: string[];
  node?: string;
  labels?: Record<string, string>;
  owner?: Owner;
  containers?: Array<{ name: string; image?: string; ports?: Array<{ name?: string; containerPort: number }> }>;
  /** Init containers; `restartPolicy: 'Always'` makes one a native sidecar. */
  initContainers?: Array<{ name: string; image?: string; restartPolicy?: string }>;
  phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
}

export const kube = {
  pod(p: PodSpecInput): KubeObject {
    const ip = p.ip ?? '';
    const ips = p.ips ?? (ip ? [ip] : []);
    return {
      metadata: { name: p.name, namespace: p.namespace, labels: p.labels ?? {}, ...(p.owner ? { ownerReferences: ownerRefs(p.owner) } : {}) },
      spec: {
        nodeName: p.node ?? 'node-a',
        containers: (p.containers ?? [{ name: 'app' }]).map((c) => ({ name: c.name, image: c.image ?? `example/${c.name}:1`, ...(c.ports ? { ports: c.ports } : {}) })),
        ...(p.initContainers
          ? { initContainers: p.initContainers.map((c) => ({ name: c.name, image: c.image ?? `example/${c.name}:1`, ...(c.restartPolicy ? { restartPolicy: c.restartPolicy } : {}) })) }
          : {}),
      },
      status: { phase: p.phase ?? 'Running', ...(ip ? { podIP: ip } : {}), podIPs: ips.map((a) => ({ ip: a })) },
    };
  },
  service(s: { namespace: string; name: string; clusterIP?: string; clusterIPs?: string[]; labels?: Record<string, string>; selector?: Record<string, string> }): KubeObject {
    const clusterIPs = s.clusterIPs ?? (s.clusterIP ? [s.clusterIP] : []);
    return {
      metadata: { name: s.name, namespace: s.namespace, labels: s.labels ?? {} },
      spec: { clusterIP: clusterIPs[0] ?? 'None', clusterIPs: clusterIPs.length > 0 ? clusterIPs : ['None'], selector: s.selector ?? {}, ports: [{ port: 443, protocol: 'TCP' }], type: 'ClusterIP' },
    };
  },
  /** An EndpointSlice of a Service: `endpoints` are addresses, optionally with the pod behind them. */
  endpointSlice(e: {
    namespace: string;
    service: string;
    name?: string;
    endpoints: Array<{ address: string; pod?: string; node?: string }>;
  }): KubeObject {
    return {
      metadata: { name: e.name ?? `${e.service}-abcde`, namespace: e.namespace, labels: { 'kubernetes.io/service-name': e.service, 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' } },
      addressType: 'IPv4',
      endpoints: e.endpoints.map((ep) => ({
        addresses: [ep.address],
        conditions: { ready: true },
        ...(ep.pod ? { targetRef: { kind: 'Pod', name: ep.pod, namespace: e.namespace } } : {}),
        ...(ep.node ? { nodeName: ep.node } : {}),
      })),
      ports: [{ port: 443, protocol: 'TCP' }],
    };
  },
  node(n: { name: string; addresses: string[] }): KubeObject {
    return {
      metadata: { name: n.name, labels: { 'kubernetes.io/hostname': n.name } },
      status: { addresses: [...n.addresses.map((a, i) => ({ type: i === 0 ? 'InternalIP' : 'ExternalIP', address: a })), { type: 'Hostname', address: n.name }] },
    };
  },
  replicaSet(r: { namespace: string; name: string; owner?: Owner }): KubeObject {
    return { metadata: { name: r.name, namespace: r.namespace, ...(r.owner ? { ownerReferences: ownerRefs(r.owner) } : {}) }, spec: { replicas: 1 } };
  },
  job(j: { namespace: string; name: string; owner?: Owner }): KubeObject {
    return { metadata: { name: j.name, namespace: j.namespace, ...(j.owner ? { ownerReferences: ownerRefs(j.owner) } : {}) }, spec: {} };
  },
  cronJob(c: { namespace: string; name: string }): KubeObject {
    return { metadata: { name: c.name, namespace: c.namespace }, spec: { schedule: '*/5 * * * *' } };
  },
  /** A Deployment, StatefulSet or DaemonSet (`replicas` 0: scaled to zero). */
  workload(w: { kind: 'Deployment' | 'StatefulSet' | 'DaemonSet'; namespace: string; name: string; replicas?: number }): KubeObject {
    const selector = { matchLabels: { app: w.name } };
    const template = { metadata: { labels: { app: w.name } }, spec: { containers: [{ name: 'app', image: `example/${w.name}:1` }] } };
    return {
      metadata: { name: w.name, namespace: w.namespace, labels: { app: w.name } },
      spec: w.kind === 'DaemonSet' ? { selector, template } : { replicas: w.replicas ?? 1, selector, template, ...(w.kind === 'StatefulSet' ? { serviceName: w.name } : {}) },
    };
  },
  /** A ServiceCIDR (cluster-scoped; `kubernetes` is the one kube-apiserver creates from its flags). */
  serviceCidr(c: { name: string; cidrs: string[] }): KubeObject {
    return { metadata: { name: c.name }, spec: { cidrs: c.cidrs }, status: { conditions: [{ type: 'Ready', status: 'True', reason: '', message: 'Kubernetes Service CIDR is ready', lastTransitionTime: new Date().toISOString() }] } };
  },
  lease(l: { namespace: string; name: string; holder: string; durationSeconds?: number; renewTime?: Date }): KubeObject {
    const micro = (d: Date): string => d.toISOString().replace(/Z$/, '000Z');
    return {
      metadata: { name: l.name, namespace: l.namespace },
      spec: {
        holderIdentity: l.holder,
        leaseDurationSeconds: l.durationSeconds ?? 15,
        acquireTime: micro(l.renewTime ?? new Date()),
        renewTime: micro(l.renewTime ?? new Date()),
        leaseTransitions: 0,
      },
    };
  },
};
