/**
 * The gateway reads a developer's grants on every call and never caches them: an exception exempts from one
 * policy, a model-access grant adds one model, a top-up adds budget, and removing a grant changes the very
 * next call. The approvals workflow supplies the real lookup; here a map stands in for its table.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { CallerGrants, GrantLookup } from '../../../src/approvals/grants.js';
import { describeEachStore, developerWithToken } from '../../helpers/harness.js';
import { anthropic, openai, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';

describeEachStore('gateway: grants change the next call', ({ store }) => {
  const held = new Map<string, CallerGrants>();
  const asked: string[] = [];
  const lookup: GrantLookup = {
    forDeveloper: (developerId) => {
      asked.push(developerId);
      return held.get(developerId) ?? { exemptPolicies: new Set(), extraModels: [], budgetTopUps: [] };
    },
  };
  let w: GatewayWorld;
  let pat: string;
  let other: string;
  before(async () => {
    w = await startGatewayWorld(store(), { prices: { 'granted-model': { inputPerMTok: 100, outputPerMTok: 100 } } }, { grants: lookup });
    pat = await developerWithToken(w.admin, 'eng/grace', 'developer');
    other = await developerWithToken(w.admin, 'eng/henry', 'developer');
  });
  after(async () => w.close());

  test('an exception exempts its holder from one policy, and stops counting once removed', async () => {
    const premium = (token: string) => anthropic(w.replica.url, token).messages.create({ model: 'o3-pro', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    await assert.rejects(premium(pat), /autonomy-model-ceiling/);
    held.set('eng/grace', { exemptPolicies: new Set(['autonomy-model-ceiling']), extraModels: [], budgetTopUps: [] });
    await premium(pat);
    await assert.rejects(premium(other), /autonomy-model-ceiling/, 'only the holder is exempt');
    held.delete('eng/grace');
    await assert.rejects(premium(pat), /autonomy-model-ceiling/);
    assert.ok(asked.filter((id) => id === 'eng/grace').length >= 3, 'asked on every call');
  });

  test('a model-access grant adds one model; a top-up raises the binding budget', async () => {
    await w.admin.post('/api/v1/model-access', { scope: 'eng', models: ['gpt-4o-mini'] });
    const ask = (model: string) => openai(w.replica.url, pat).chat.completions.create({ model, max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] });
    await assert.rejects(ask('granted-model'), /may not use model granted-model/);
    held.set('eng/grace', { exemptPolicies: new Set(), extraModels: ['granted-model'], budgetTopUps: [] });
    await ask('granted-model');

    await w.admin.post('/api/v1/budget-rules', { name: 'grace zero', scope: 'eng/grace', pattern: '*', limitUsd: 0, period: 'session' });
    await assert.rejects(ask('granted-model'), /grace zero/);
    held.set('eng/grace', { exemptPolicies: new Set(), extraModels: ['granted-model'], budgetTopUps: [{ ruleId: null, amountUsd: 1 }] });
    await ask('granted-model');
    held.set('eng/grace', { exemptPolicies: new Set(), extraModels: ['granted-model'], budgetTopUps: [] });
    await assert.rejects(ask('granted-model'), /grace zero/);
  });
});
