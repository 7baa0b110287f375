/** The policy routes: CRUD, compile errors with positions, built-ins, the dry run, roles and audit. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { AUTONOMY_MODEL_CEILING, BUILT_IN_POLICIES, SUPERSEDED_BUILT_IN_VERSIONS } from '../../../src/policy/built-in-policies.js';
import { seedBuiltInPolicies } from '../../../src/policy/store.js';
import { Client, describeEachStore, developerWithToken, startTestReplica, ADMIN_TOKEN } from '../../helpers/harness.js';
import type { Replica } from '../../../src/app/server.js';

const policy = {
  name: 'deny-o1',
  kind: 'deny',
  appliesTo: ['llm'],
  match: "object.llm.model.startsWith('o1')",
  message: 'o1 models are retired here; use o4-mini.',
};

describeEachStore('policies API', ({ store }) => {
  let replica: Replica;
  let admin: Client;
  let viewer: Client;
  let developer: Client;
  before(async () => {
    replica = await startTestReplica(store());
    admin = new Client(replica.url, ADMIN_TOKEN);
    viewer = admin.with(await developerWithToken(admin, 'sec/viewer', 'viewer'));
    developer = admin.with(await developerWithToken(admin, 'eng/dev', 'developer'));
  });
  after(async () => replica.close());

  test('the four built-in Autonomy Governance policies ship enabled, first in evaluation order', async () => {
    const r = await admin.get('/api/v1/policies');
    assert.equal(r.status, 200);
    const names = r.body.items.map((p: any) => p.name);
    assert.deepEqual(names.slice(0, 4), BUILT_IN_POLICIES.map((p) => p.name));
    for (const p of r.body.items.slice(0, 4)) {
      assert.equal(p.builtIn, true);
      assert.equal(p.enabled, true);
    }
  });

  test('a built-in still as an earlier release shipped it is upgraded at start-up (audited); an edited one is left alone', async () => {
    const old = SUPERSEDED_BUILT_IN_VERSIONS[0]!;
    const setText = (match: string, message: string) =>
      replica.db.query('UPDATE policies SET match = $2, message = $3 WHERE name = $1', [old.name, match, message]);
    await setText(old.match, old.message);
    await seedBuiltInPolicies(replica.db);
    const upgraded = (await admin.get(`/api/v1/policies/${old.name}`)).body;
    assert.equal(upgraded.match, AUTONOMY_MODEL_CEILING.match);
    assert.equal(upgraded.message, AUTONOMY_MODEL_CEILING.message);
    const events = (await admin.get('/api/v1/audit-events?type=control&action=policy.upgrade')).body.items;
    assert.equal(events.length, 1);
    assert.equal(events[0].subject, old.name);
    const edited = old.match.replace('65536', '100000');
    await setText(edited, old.message);
    await seedBuiltInPolicies(replica.db);
    assert.equal((await admin.get(`/api/v1/policies/${old.name}`)).body.match, edited, "an admin's edit stays");
    await setText(AUTONOMY_MODEL_CEILING.match, AUTONOMY_MODEL_CEILING.message);
  });

  test('create, read, replace and delete a policy; every change is audited', async () => {
    const created = await admin.post('/api/v1/policies', policy);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body, { ...policy, enabled: true, builtIn: false });
    assert.equal((await admin.post('/api/v1/policies', policy)).status, 409);
    assert.deepEqual((await viewer.get('/api/v1/policies/deny-o1')).body, created.body);
    const replaced = await admin.put('/api/v1/policies/deny-o1', { ...policy, kind: 'audit', message: 'flag o1 use' });
    assert.equal(replaced.status, 200);
    assert.equal(replaced.body.kind, 'audit');
    assert.equal((await admin.put('/api/v1/policies/deny-o1', { ...policy, name: 'other' })).status, 400);
    assert.equal((await admin.put('/api/v1/policies/nope', { ...policy, name: 'nope' })).status, 404);
    assert.equal((await admin.delete('/api/v1/policies/deny-o1')).status, 200);
    assert.equal((await admin.get('/api/v1/policies/deny-o1')).status, 404);
    const events = (await admin.get('/api/v1/audit-events?type=control&identity=deny-o1')).body.items.map((e: any) => e.action);
    assert.deepEqual(events, ['policy.delete', 'policy.update', 'policy.create']);
  });

  test('a CEL expression that does not compile is refused with 400 naming its line and column', async () => {
    const r = await admin.post('/api/v1/policies', { ...policy, name: 'broken', match: "object.llm.model ==\n  'gpt-4o' &&& true" });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'invalid_policy');
    assert.equal(r.body.error.field, 'match');
    assert.equal(r.body.error.line, 2);
    assert.equal(typeof r.body.error.column, 'number');
    assert.match(r.body.error.message, /^match: line 2, column \d+/);
    const typo = await admin.post('/api/v1/policies', { ...policy, name: 'typo', match: "object.agent.autonomyTeir == 'T1'" });
    assert.equal(typo.status, 400);
    assert.match(typo.body.error.message, /autonomyTeir/);
    for (const [body, field] of [
      [{ ...policy, name: 'Bad Name' }, 'name'],
      [{ ...policy, appliesTo: [] }, 'appliesTo'],
      [{ ...policy, appliesTo: ['sql'] }, 'appliesTo'],
      [{ ...policy, kind: 'maybe' }, 'kind'],
      [{ ...policy, approvalWindowSeconds: 600 }, 'approvalWindowSeconds'],
      [{ ...policy, message: '' }, 'message'],
      [{ ...policy, builtIn: true }, 'builtIn'],
    ] as const) {
      const bad = await admin.post('/api/v1/policies', body);
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.match(bad.body.error.message, new RegExp(field), JSON.stringify(bad.body));
    }
  });

  test('built-ins can be edited and disabled, never deleted or un-built-in', async () => {
    const current = (await admin.get('/api/v1/policies/autonomy-egress-allowlist')).body;
    const del = await admin.delete('/api/v1/policies/autonomy-egress-allowlist');
    assert.equal(del.status, 409);
    assert.equal(del.body.error.code, 'built_in_policy');
    assert.match(del.body.error.message, /disable/);
    assert.equal((await admin.put('/api/v1/policies/autonomy-egress-allowlist', { ...current, builtIn: false })).status, 400);
    const off = await admin.put('/api/v1/policies/autonomy-egress-allowlist', { ...current, enabled: false });
    assert.equal(off.body.enabled, false);
    assert.equal(off.body.builtIn, true);
    assert.equal((await admin.put('/api/v1/policies/autonomy-egress-allowlist', current)).body.enabled, true);
  });

  test('the dry run answers the decision and each policy part, for each built-in at each tier', async () => {
    const cases: { object: Record<string, unknown>; expect: Record<string, string> }[] = [
      { object: { request: { type: 'llm' }, llm: { model: 'o3-pro' } }, expect: { T1: 'deny', T2: 'deny', T3: 'allow', T4: 'allow' } },
      { object: { request: { type: 'mcp' }, mcp: { tool: 'delete_repo', annotations: { readOnlyHint: false, destructiveHint: true } } }, expect: { T1: 'approve', T2: 'approve', T3: 'approve', T4: 'allow' } },
      { object: { request: { type: 'mcp' }, mcp: { tool: 'create_issue', annotations: { readOnlyHint: false, destructiveHint: false } } }, expect: { T1: 'approve', T2: 'allow', T3: 'allow', T4: 'allow' } },
      { object: { request: { type: 'mcp' }, mcp: { tool: 'read_file', annotations: { readOnlyHint: true } } }, expect: { T1: 'allow', T2: 'allow', T3: 'allow', T4: 'allow' } },
      { object: { request: { type: 'egress' }, egress: { host: 'evil.example.com', port: 443 } }, expect: { T1: 'deny', T2: 'deny', T3: 'allow', T4: 'allow' } },
      { object: { request: { type: 'egress' }, egress: { host: 'registry.npmjs.org', port: 443 } }, expect: { T1: 'allow', T2: 'allow', T3: 'allow', T4: 'allow' } },
    ];
    for (const c of cases) {
      for (const [tier, outcome] of Object.entries(c.expect)) {
        const r = await viewer.post('/api/v1/policies/evaluate', { object: { ...c.object, agent: { id: 'eng/bot', autonomyTier: tier } } });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.decision.outcome, outcome, `${JSON.stringify(c.object)} at ${tier}`);
        assert.equal(r.body.policies.length >= 4, true);
      }
    }
    const flagged = await viewer.post('/api/v1/policies/evaluate', { object: { request: { type: 'egress' }, agent: { autonomyTier: 'T4' }, egress: { host: 'api.example.com' } } });
    assert.equal(flagged.body.decision.audit, true);
    assert.deepEqual(flagged.body.decision.matched.map((m: any) => m.name), ['autonomy-audit-autonomous']);
  });

  test('the dry run takes a draft policy and exemptions, and names a bad sample field', async () => {
    const draft = { ...policy, name: 'draft-deny-o3', match: "object.llm.model == 'o3'" };
    const r = await viewer.post('/api/v1/policies/evaluate', { object: { llm: { model: 'o3' } }, policy: draft });
    assert.equal(r.body.decision.outcome, 'deny');
    assert.equal(r.body.decision.decidingPolicy.name, 'draft-deny-o3');
    assert.equal((await admin.get('/api/v1/policies/draft-deny-o3')).status, 404, 'a dry run stores nothing');
    const exempt = await viewer.post('/api/v1/policies/evaluate', {
      object: { llm: { model: 'o3-pro' }, agent: { autonomyTier: 'T1' } },
      exemptPolicies: ['autonomy-model-ceiling'],
    });
    assert.equal(exempt.body.decision.outcome, 'allow');
    assert.equal(exempt.body.policies.find((p: any) => p.name === 'autonomy-model-ceiling').result, 'exempt');
    const bad = await viewer.post('/api/v1/policies/evaluate', { object: { agent: { autonomyTier: 'T9' }, llm: {} } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'object.agent.autonomyTier');
  });

  test('roles: viewers read and dry-run, only admins change, developers are refused', async () => {
    assert.equal((await viewer.post('/api/v1/policies', { ...policy, name: 'by-viewer' })).status, 403);
    assert.equal((await viewer.delete('/api/v1/policies/autonomy-model-ceiling')).status, 403);
    assert.equal((await developer.get('/api/v1/policies')).status, 403);
    assert.equal((await admin.with(null).get('/api/v1/policies')).status, 401);
  });
});
