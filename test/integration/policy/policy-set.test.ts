/**
 * The compiled policy set a replica evaluates against (src/policy/policy-set.ts): a re-read that finds nothing
 * changed keeps the very same set, so the gateway's decision memo (keyed to the set's identity) survives the periodic
 * re-read; a change gives a new set, with unchanged policies still compiled once.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PolicySet } from '../../../src/policy/policy-set.js';
import { createPolicy, seedBuiltInPolicies } from '../../../src/policy/store.js';
import { SYSTEM_CLI } from '../../../src/shared/actor.js';
import type { Db } from '../../../src/store/db.js';
import { migrate } from '../../../src/store/migrate.js';
import { openStore } from '../../../src/store/open.js';
import { describeEachStore } from '../../helpers/harness.js';

describeEachStore('the compiled policy set across re-reads', ({ store }) => {
  let db: Db;
  let set: PolicySet;
  const errors: Error[] = [];
  before(async () => {
    const s = store();
    db = s.db ?? (await openStore({ kind: 'postgres', url: s.url! }));
    await migrate(db);
    await seedBuiltInPolicies(db);
    set = new PolicySet(db, { refreshSeconds: 3600, listen: false, onError: (err) => errors.push(err) });
    await set.start();
  });
  after(async () => {
    await set.stop();
    if (!store().db) await db.close();
  });

  test('a re-read with nothing changed keeps the same set; a change gives a new one, its unchanged policies the same objects', async () => {
    const first = set.policies;
    assert.ok(first.length > 0, 'the built-in policies are there');
    await set.reload();
    assert.equal(set.policies, first, 'the same set after a re-read that changed nothing');

    await createPolicy(db, SYSTEM_CLI, {
      name: 'no-friday-deploys',
      kind: 'deny',
      appliesTo: ['egress'],
      match: 'object.egress.host == "deploy.example.com"',
      message: 'Not on Fridays.',
      enabled: true,
      builtIn: false,
    });
    await set.reload();
    const second = set.policies;
    assert.notEqual(second, first, 'a new set once a policy was added');
    assert.equal(second.length, first.length + 1);
    for (const p of first) assert.ok(second.includes(p), `${p.policy.name} was not compiled again`);
    assert.ok(Object.isFrozen(second));
    assert.deepEqual(errors, [], 'every policy compiled');

    await set.reload();
    assert.equal(set.policies, second, 'and that set stays while nothing changes');
  });
});
