import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseIdentityId } from '../../../src/shared/ids.js';
import { resolveTier } from '../../../src/identity/tiers.js';

test('identity ids are <namespace>/<name>', () => {
  for (const ok of ['eng/alice', 'default/admin', 'a/b', 'team-1/agent.v2', 'ns/name_with_underscore', `${'n'.repeat(63)}/x`]) {
    assert.ok(parseIdentityId(ok), ok);
  }
  for (const bad of ['', 'alice', '/alice', 'eng/', 'eng/alice/x', 'Eng/alice', 'eng/Alice', 'eng /alice', '-eng/a', 'eng-/a', 'eng/a-', `${'n'.repeat(64)}/x`, 'eng/a b', 'eng%2Falice']) {
    assert.equal(parseIdentityId(bad), null, bad);
  }
  assert.deepEqual(parseIdentityId('eng/alice'), { namespace: 'eng', name: 'alice' });
});

test('an agent with no explicit assignment resolves to T2; levels follow the tier', () => {
  assert.deepEqual(resolveTier(null), { autonomyTier: 'T2', autonomyLevel: 2, explicit: false });
  assert.deepEqual(resolveTier(undefined), { autonomyTier: 'T2', autonomyLevel: 2, explicit: false });
  assert.deepEqual(resolveTier('T1'), { autonomyTier: 'T1', autonomyLevel: 1, explicit: true });
  assert.deepEqual(resolveTier('T4'), { autonomyTier: 'T4', autonomyLevel: 4, explicit: true });
});
