/**
 * deploy/: every kustomization renders with `kubectl kustomize`, every rendered object validates against the
 * Kubernetes JSON schemas (kubernetes-models 4: Kubernetes 1.32's), the RuntimePolicy CRD's own openAPIV3Schema
 * validates the four RuntimePolicies Reins creates (ajv), and the Deployment is what the server reads: its command
 * is `npm start`'s, its env names what src/config reads, reins.yaml loads with that env, the shutdown timings match
 * the server's close grace. test/integration/deploy/rendered-deployment.test.ts starts the server from it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { Ajv } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { CLOSE_GRACE_MS } from '../../../src/app/server.js';
import { loadConfig } from '../../../src/config/config.js';
import { desiredRuntimePolicies, desiredRuntimePolicy, RUNTIME_POLICY } from '../../../src/runtime-guard/kube/runtime-policy.js';
import { find, findGenerated, kubectlMissing, REPO, render, RENDERINGS, type K8sObject } from '../../helpers/kustomize.js';

const skip = kubectlMissing() ?? false;
const pkg = JSON.parse(readFileSync(`${REPO}/package.json`, 'utf8')) as { scripts: Record<string, string> };

/** kubernetes-models' class for an object: `apps/v1` Deployment → kubernetes-models/apps/v1 Deployment. */
async function modelOf(o: K8sObject): Promise<(new (data: unknown) => { validate(): void }) | undefined> {
  const mod = (await import(`kubernetes-models/${o.apiVersion}`)) as Record<string, new (data: unknown) => { validate(): void }>;
  return mod[o.kind];
}

/** Labels a selector's matchLabels require all hold in `labels`. */
function selects(selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean {
  return Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);
}

const rendered = new Map<string, K8sObject[]>();
const objects = (r: (typeof RENDERINGS)[number]): K8sObject[] => {
  if (!rendered.has(r)) rendered.set(r, render(r));
  return rendered.get(r)!;
};

describe('deploy/: kubectl kustomize renders every kustomization', { skip }, () => {
  for (const r of RENDERINGS) {
    test(`${r}: every object validates against the Kubernetes schemas, in namespace reins`, async () => {
      const all = objects(r);
      assert.ok(all.length > 10, `${r} rendered ${all.length} objects`);
      for (const o of all) {
        const Model = await modelOf(o);
        assert.ok(Model, `${o.apiVersion} ${o.kind} has a kubernetes-models schema`);
        // kustomize wraps a long Secret value's base64 over lines (a literal block); the API server's decoder skips
        // the line breaks, the schema's `byte` format does not.
        const data = o.kind === 'Secret' && o.data ? { data: Object.fromEntries(Object.entries(o.data as Record<string, string>).map(([k, v]) => [k, v.replace(/\n/g, '')])) } : {};
        assert.doesNotThrow(() => new Model!({ ...o, ...data }).validate(), `${r}: ${o.kind}/${o.metadata.name}`);
        const clusterScoped = ['Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind);
        assert.equal(o.metadata.namespace, clusterScoped ? undefined : 'reins', `${o.kind}/${o.metadata.name}`);
      }
      const keys = all.map((o) => `${o.kind}/${o.metadata.name}`);
      assert.equal(new Set(keys).size, keys.length, 'no object twice');
    });

    test(`${r}: the Service, PDB, NetworkPolicies and HPA select what they mean to`, () => {
      const all = objects(r);
      const deployment = find(all, 'Deployment', 'reins');
      const pod = deployment.spec.template.metadata.labels;
      assert.ok(selects(deployment.spec.selector.matchLabels, pod));
      const service = find(all, 'Service', 'reins');
      assert.ok(selects(service.spec.selector, pod), 'the Service selects the Reins pods');
      const containerPorts = deployment.spec.template.spec.containers[0].ports.map((p: any) => p.name);
      for (const port of service.spec.ports) assert.ok(containerPorts.includes(port.targetPort), `Service port ${port.name} targets a named container port`);
      assert.ok(selects(find(all, 'PodDisruptionBudget', 'reins').spec.selector.matchLabels, pod));
      const ingress = find(all, 'NetworkPolicy', 'reins-ingress');
      assert.ok(selects(ingress.spec.podSelector.matchLabels, pod));
      assert.deepEqual(ingress.spec.ingress.flatMap((rule: any) => rule.ports.map((p: any) => p.port)).sort(), ['egress', 'http']);
      // The sensors reach the ingest API (http), and the Reins pods scrape the sensors' `metrics` port.
      const sensor = find(all, 'DaemonSet', 'reins-sensor');
      const sensorPod = sensor.spec.template.metadata.labels;
      assert.equal(sensorPod['app.kubernetes.io/name'], 'reins-sensor', 'the label Reins discovers sensors by');
      assert.ok(ingress.spec.ingress[0].from.some((peer: any) => peer.podSelector && selects(peer.podSelector.matchLabels, sensorPod)));
      const scrape = find(all, 'NetworkPolicy', 'reins-sensor-metrics');
      assert.ok(selects(scrape.spec.podSelector.matchLabels, sensorPod));
      assert.ok(scrape.spec.ingress[0].from.some((peer: any) => peer.podSelector && selects(peer.podSelector.matchLabels, pod)));
      assert.deepEqual(scrape.spec.ingress[0].ports.map((p: any) => p.port), ['metrics']);
      assert.ok(sensor.spec.template.spec.containers[0].ports.some((p: any) => p.name === 'metrics'));
      // One image for the server, the CLI and the sensor.
      assert.equal(sensor.spec.template.spec.containers[0].image, deployment.spec.template.spec.containers[0].image);
      assert.deepEqual(sensor.spec.template.spec.containers[0].command, ['reins-sensor']);
      for (const hpa of all.filter((o) => o.kind === 'HorizontalPodAutoscaler')) {
        assert.deepEqual(hpa.spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: 'reins' });
      }
    });

    test(`${r}: the Deployment runs npm start's command, restricted, with probes and a shutdown matched to the server's grace`, () => {
      const all = objects(r);
      const deployment = find(all, 'Deployment', 'reins');
      const spec = deployment.spec.template.spec;
      const [container] = spec.containers;
      assert.deepEqual(container.command, pkg.scripts.start!.split(' '), 'package.json "start" without npm');
      assert.equal(container.readinessProbe.httpGet.path, '/readyz');
      assert.equal(container.livenessProbe.httpGet.path, '/healthz');
      assert.equal(container.readinessProbe.httpGet.port, 'http');
      // preStop, then SIGTERM: the server's close grace, then the audit flush, inside the termination grace.
      const preStop = Number(container.lifecycle.preStop.exec.command[1]);
      assert.deepEqual(container.lifecycle.preStop.exec.command, ['sleep', String(preStop)]);
      assert.ok(spec.terminationGracePeriodSeconds >= preStop + CLOSE_GRACE_MS / 1000 + 5, `terminationGracePeriodSeconds ${spec.terminationGracePeriodSeconds}`);
      assert.equal(spec.terminationGracePeriodSeconds, 40);
      // The restricted Pod Security profile.
      assert.equal(spec.securityContext.runAsNonRoot, true);
      assert.equal(spec.securityContext.seccompProfile.type, 'RuntimeDefault');
      assert.equal(container.securityContext.allowPrivilegeEscalation, false);
      assert.equal(container.securityContext.readOnlyRootFilesystem, true);
      assert.deepEqual(container.securityContext.capabilities.drop, ['ALL']);
      assert.ok(container.resources.requests.cpu && container.resources.requests.memory && container.resources.limits.memory);
      assert.ok(spec.topologySpreadConstraints.length >= 1);
      assert.equal(spec.serviceAccountName, 'reins');
      find(all, 'ServiceAccount', 'reins');
    });

    test(`${r}: the env is what src/config reads, and reins.yaml loads with it`, () => {
      const all = objects(r);
      const deployment = find(all, 'Deployment', 'reins');
      const spec = deployment.spec.template.spec;
      const [container] = spec.containers;
      const configMapName = spec.volumes.find((v: any) => v.name === 'config').configMap.name;
      const configMap = find(all, 'ConfigMap', configMapName);
      const mount = container.volumeMounts.find((m: any) => m.name === 'config').mountPath;
      const env: Record<string, string> = {};
      for (const e of container.env) env[e.name] = e.value ?? `<from ${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}>`;
      assert.equal(env.REINS_CONFIG, `${mount}/reins.yaml`);
      const yaml = configMap.data['reins.yaml'] as string;
      // The variables the file's values refer to (its comments mention ${VAR} too).
      const strings = (v: unknown): string[] => (typeof v === 'string' ? [v] : v && typeof v === 'object' ? Object.values(v).flatMap(strings) : []);
      const referenced = strings(parseYaml(yaml)).flatMap((v) => [...v.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!));
      assert.ok(referenced.length > 0);
      const read = ['HOST', 'PORT', 'REINS_CONFIG', 'LOG_LEVEL', 'REINS_MIGRATE', 'DATABASE_URL', 'REINS_BOOTSTRAP_ADMIN_TOKEN', 'REINS_DATA_DIR'];
      for (const name of Object.keys(env)) assert.ok(read.includes(name) || referenced.includes(name), `${name}: read by src/config or reins.yaml`);
      for (const name of referenced) assert.ok(name in env, `reins.yaml's \${${name}} is in the container's env`);
      // Secrets come from Secret reins-secrets, never from a literal value.
      for (const e of container.env) if (/TOKEN|KEY|DATABASE_URL|SECRET/.test(e.name)) assert.ok(e.valueFrom?.secretKeyRef, `${e.name} from a Secret`);
      const config = loadConfig({ ...env, DATABASE_URL: 'postgres://reins@db.example:5432/reins', REINS_BOOTSTRAP_ADMIN_TOKEN: '' }, yaml);
      assert.equal(config.host, '0.0.0.0');
      assert.equal(config.port, Number(container.ports.find((p: any) => p.name === 'http').containerPort));
      assert.equal(config.egress?.port, Number(container.ports.find((p: any) => p.name === 'egress').containerPort));
      assert.equal(config.runtimeGuard.selfService, `reins/${find(all, 'Service', 'reins').metadata.name}`);
      assert.equal(config.migrations, r === 'production+migrate-job' ? 'off' : 'auto');
    });
  }

  test('replicas: base 2, dev 1 with a bundled PostgreSQL, production 3 with an HPA on CPU', () => {
    const replicas = (r: (typeof RENDERINGS)[number]) => find(objects(r), 'Deployment', 'reins').spec.replicas;
    assert.equal(replicas('base'), 2);
    assert.equal(replicas('overlays/dev'), 1);
    assert.equal(replicas('overlays/production'), 3);
    const dev = objects('overlays/dev');
    const postgres = find(dev, 'StatefulSet', 'reins-postgres');
    assert.ok(postgres.spec.volumeClaimTemplates.length === 1);
    const secrets = findGenerated(dev, 'Secret', 'reins-secrets');
    const container = find(dev, 'Deployment', 'reins').spec.template.spec.containers[0];
    const databaseUrl = container.env.find((e: any) => e.name === 'DATABASE_URL').valueFrom.secretKeyRef;
    assert.equal(databaseUrl.name, secrets.metadata.name, 'the Deployment reads the generated Secret');
    assert.match(Buffer.from(secrets.data.DATABASE_URL, 'base64').toString(), /@reins-postgres\.reins\.svc:5432\//);
    assert.ok(!objects('overlays/production').some((o) => o.kind === 'StatefulSet'), 'production brings no database');
    assert.ok(!objects('overlays/production').some((o) => o.kind === 'Secret'), 'production reads the Secret you create');
    const hpa = find(objects('overlays/production'), 'HorizontalPodAutoscaler', 'reins');
    assert.equal(hpa.spec.minReplicas, 3);
    assert.equal(hpa.spec.metrics[0].resource.name, 'cpu');
    const job = find(objects('production+migrate-job'), 'Job', 'reins-migrate');
    assert.deepEqual(job.spec.template.spec.containers[0].command, ['reins', 'migrate']);
  });
});

describe('deploy/base/runtime-policy-crd.yaml validates the four RuntimePolicies Reins creates (ajv)', { skip }, () => {
  const crd = () => find(objects('base'), 'CustomResourceDefinition', `${RUNTIME_POLICY.plural}.${RUNTIME_POLICY.group}`);
  const validator = () => {
    const version = crd().spec.versions.find((v: any) => v.name === RUNTIME_POLICY.version);
    // An OpenAPI v3 schema is JSON Schema with a few keywords more; undeclared fields are refused, as the API server prunes them.
    const strictObjects = (s: any): any => {
      if (!s || typeof s !== 'object') return s;
      const out: any = Array.isArray(s) ? s.map(strictObjects) : Object.fromEntries(Object.entries(s).map(([k, v]) => [k, strictObjects(v)]));
      if (!Array.isArray(s) && s.type === 'object' && s.properties && s.additionalProperties === undefined && s !== version.schema.openAPIV3Schema.properties.metadata) out.additionalProperties = false;
      return out;
    };
    return new Ajv({ strict: false, allErrors: true }).compile(strictObjects(version.schema.openAPIV3Schema));
  };

  test('the four, as desiredRuntimePolicies() writes them', () => {
    const validate = validator();
    const policies = desiredRuntimePolicies();
    assert.deepEqual(policies.map((p) => p.spec.family).sort(), ['dns', 'exec', 'network', 'open']);
    for (const p of policies) {
      assert.equal(p.apiVersion, `${RUNTIME_POLICY.group}/${RUNTIME_POLICY.version}`);
      assert.equal(p.kind, RUNTIME_POLICY.kind);
      assert.ok(validate(p), `${p.metadata.name}: ${JSON.stringify(validate.errors)}`);
    }
  });

  test('and refuses a mode, a family or a field outside the CRD', () => {
    const validate = validator();
    const p = desiredRuntimePolicy('network');
    assert.equal(validate({ ...p, spec: { ...p.spec, mode: 'audit' } }), false);
    assert.equal(validate({ ...p, spec: { ...p.spec, family: 'udp' } }), false);
    assert.equal(validate({ ...p, spec: { ...p.spec, surprise: 1 } }), false);
    assert.equal(validate({ ...p, spec: { ...p.spec, match: [{ ports: [70000] }] } }), false);
  });
});
