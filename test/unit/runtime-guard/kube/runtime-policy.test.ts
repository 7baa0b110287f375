import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseAllDocuments, parse } from 'yaml';
import { requiredPermissions } from '../../../../src/runtime-guard/kube/capability.js';
import {
  desiredRuntimePolicies,
  desiredRuntimePolicy,
  EXCLUDED_NAMESPACES,
  hasDrifted,
  MANAGED_BY_LABEL,
  RUNTIME_POLICY,
} from '../../../../src/runtime-guard/kube/runtime-policy.js';

const deploy = (file: string): string => readFileSync(new URL(`../../../../deploy/base/${file}`, import.meta.url), 'utf8');

interface Schema {
  type?: string;
  enum?: unknown[];
  required?: string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  minimum?: number;
  maximum?: number;
}

/**
 * The structural-schema checks the API server applies to a custom object: types, enums, bounds, required
 * fields, and no undeclared field (the server would prune it, and the controller would see drift forever).
 */
function violations(value: unknown, schema: Schema, path = ''): string[] {
  const out: string[] = [];
  const typeOk =
    schema.type === undefined ||
    (schema.type === 'object' && typeof value === 'object' && value !== null && !Array.isArray(value)) ||
    (schema.type === 'array' && Array.isArray(value)) ||
    (schema.type === 'string' && typeof value === 'string') ||
    (schema.type === 'boolean' && typeof value === 'boolean') ||
    (schema.type === 'integer' && Number.isInteger(value));
  if (!typeOk) return [`${path}: not ${schema.type}`];
  if (schema.enum && !schema.enum.includes(value)) out.push(`${path}: ${String(value)} not in ${schema.enum.join('|')}`);
  if (typeof value === 'number' && schema.minimum !== undefined && value < schema.minimum) out.push(`${path}: below minimum`);
  if (typeof value === 'number' && schema.maximum !== undefined && value > schema.maximum) out.push(`${path}: above maximum`);
  if (Array.isArray(value) && schema.items) value.forEach((v, i) => out.push(...violations(v, schema.items!, `${path}[${i}]`)));
  if (schema.type === 'object' && typeof value === 'object' && value !== null) {
    const obj = value as Record<string, unknown>;
    for (const r of schema.required ?? []) if (!(r in obj)) out.push(`${path}.${r}: required`);
    for (const [k, v] of Object.entries(obj)) {
      const declared = schema.properties?.[k] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
      if (declared) out.push(...violations(v, declared, `${path}.${k}`));
      else if (schema.properties || schema.additionalProperties === false) out.push(`${path}.${k}: not declared (would be pruned)`);
    }
  }
  return out;
}

describe('the observation RuntimePolicies', () => {
  test('one monitor-mode policy per family except other, in the spec order', () => {
    const policies = desiredRuntimePolicies();
    assert.deepEqual(policies.map((p) => p.spec.family), ['dns', 'network', 'open', 'exec']);
    assert.ok(policies.every((p) => p.spec.mode === 'monitor'));
    assert.equal(new Set(policies.map((p) => p.metadata.name)).size, 4);
  });

  test('every namespace is covered except kube-system and kube-public', () => {
    for (const p of desiredRuntimePolicies()) {
      assert.deepEqual(p.spec.namespaceSelector, { excludeNamespaces: ['kube-system', 'kube-public'] });
      assert.deepEqual([...EXCLUDED_NAMESPACES], ['kube-system', 'kube-public']);
    }
  });

  test('the network policy is a deny-all match with no allow list, so in-cluster traffic is reported', () => {
    const network = desiredRuntimePolicy('network');
    assert.deepEqual(network.spec.match, [{ cidrs: ['0.0.0.0/0'] }]);
    assert.equal('allow' in network.spec, false);
  });

  test('open and exec are marked as needing BPF-LSM nodes; dns and network are not', () => {
    const needs = Object.fromEntries(desiredRuntimePolicies().map((p) => [p.spec.family, p.spec.requiresBpfLsm]));
    assert.deepEqual(needs, { dns: false, network: false, open: true, exec: true });
  });

  test('every policy carries the managed-by label that marks it as Reins\'s', () => {
    for (const p of desiredRuntimePolicies()) assert.equal(p.metadata.labels[MANAGED_BY_LABEL], 'reins');
  });

  test('drift: a changed spec or a removed label; other labels and metadata are not drift', () => {
    const desired = desiredRuntimePolicy('dns');
    const stored = JSON.parse(JSON.stringify({ ...desired, metadata: { ...desired.metadata, resourceVersion: '7', uid: 'x' } }));
    assert.equal(hasDrifted(stored, desired), false);
    assert.equal(hasDrifted({ ...stored, metadata: { ...stored.metadata, labels: { ...stored.metadata.labels, team: 'sec' } } }, desired), false);
    assert.equal(hasDrifted({ ...stored, spec: { ...stored.spec, mode: 'enforce' } }, desired), true);
    assert.equal(hasDrifted({ ...stored, spec: { ...stored.spec, allow: [{ cidrs: ['10.0.0.0/8'] }] } }, desired), true);
    assert.equal(hasDrifted({ ...stored, metadata: { ...stored.metadata, labels: {} } }, desired), true);
    assert.equal(hasDrifted({ metadata: stored.metadata }, desired), true);
  });
});

describe('deploy/base/runtime-policy-crd.yaml', () => {
  const crd = parse(deploy('runtime-policy-crd.yaml'));

  test('names the group, version, kind, plural and scope the code uses', () => {
    assert.equal(crd.kind, 'CustomResourceDefinition');
    assert.equal(crd.metadata.name, `${RUNTIME_POLICY.plural}.${RUNTIME_POLICY.group}`);
    assert.equal(crd.spec.group, RUNTIME_POLICY.group);
    assert.equal(crd.spec.scope, RUNTIME_POLICY.scope);
    assert.equal(crd.spec.names.kind, RUNTIME_POLICY.kind);
    assert.equal(crd.spec.names.plural, RUNTIME_POLICY.plural);
    assert.equal(crd.spec.names.singular, RUNTIME_POLICY.singular);
    assert.deepEqual(crd.spec.versions.map((v: { name: string; served: boolean; storage: boolean }) => [v.name, v.served, v.storage]), [[RUNTIME_POLICY.version, true, true]]);
  });

  test('its schema accepts the four policies as they are, without pruning a field', () => {
    const schema = crd.spec.versions[0].schema.openAPIV3Schema as Schema;
    for (const p of desiredRuntimePolicies()) assert.deepEqual(violations(p, schema), [], p.metadata.name);
  });

  test('its schema refuses a mode or a family outside the spec', () => {
    const schema = crd.spec.versions[0].schema.openAPIV3Schema as Schema;
    const p = desiredRuntimePolicy('dns');
    assert.notDeepEqual(violations({ ...p, spec: { ...p.spec, mode: 'audit' } }, schema), []);
    assert.notDeepEqual(violations({ ...p, spec: { ...p.spec, family: 'other' } }, schema), []);
    assert.notDeepEqual(violations({ ...p, spec: { ...p.spec, undeclared: true } }, schema), []);
  });
});

describe('deploy/base/rbac.yaml', () => {
  test('grants exactly the permissions the start-up access review checks', () => {
    const docs = parseAllDocuments(deploy('rbac.yaml')).map((d) => d.toJS());
    const granted: string[] = [];
    for (const doc of docs) {
      if (doc.kind !== 'ClusterRole' && doc.kind !== 'Role') continue;
      const namespace = doc.kind === 'Role' ? doc.metadata.namespace : '';
      for (const rule of doc.rules) {
        for (const group of rule.apiGroups) for (const resource of rule.resources) for (const verb of rule.verbs) granted.push(`${group}|${resource}|${verb}|${namespace}`);
      }
    }
    const required = requiredPermissions('reins').map((p) => `${p.group}|${p.resource}|${p.verb}|${p.namespace}`);
    assert.deepEqual(granted.sort(), [...new Set(required)].sort());
  });
});
