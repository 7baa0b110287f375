/**
 * Budget rules and model access through the real gateway: CRUD and validation, refusal messages that say
 * how to ask for more, and concurrent calls that cannot overspend by more than the calls already in flight.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { FAKE_USAGE } from '../../fakes/fake-providers.js';
import { agentWithKey, describeEachStore, developerWithToken, waitFor, WAIT_MS } from '../../helpers/harness.js';
import { llmEvent, openai, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';

// A model priced by config so that one fake chat call (11 input + 7 output tokens) costs exactly $0.0018.
const PRICED = 'budget-test-model';
const PRICE = { inputPerMTok: 100, outputPerMTok: 100 };
const CALL_COST = ((FAKE_USAGE.openaiChat.inputTokens + FAKE_USAGE.openaiChat.outputTokens) * 100) / 1e6;
// A model whose output is dear: with max_tokens 1 the pre-call estimate is far below the actual cost, so
// admission rests on spent + reserved alone and calls in flight really can run past the limit.
const DEAR = 'dear-output-model';
const DEAR_PRICE = { inputPerMTok: 1, outputPerMTok: 1000 };
const DEAR_COST = (FAKE_USAGE.openaiChat.inputTokens * 1 + FAKE_USAGE.openaiChat.outputTokens * 1000) / 1e6;

describeEachStore('gateway: budgets and model access', ({ store }) => {
  let w: GatewayWorld;
  before(async () => {
    w = await startGatewayWorld(store(), { prices: { [PRICED]: PRICE, [DEAR]: DEAR_PRICE } }, { fake: { delayMs: 40 } });
  });
  after(async () => w.close());

  test('budget rules: create, read, replace, delete, each change audited; bad input names the field', async () => {
    const body = { name: 'eng daily', scope: 'eng', pattern: 'claude-*', limitUsd: 25, period: 'day' };
    const created = await w.admin.post('/api/v1/budget-rules', body);
    assert.equal(created.status, 201);
    assert.match(created.body.id, /^br_/);
    assert.deepEqual({ ...created.body, id: undefined, createdAt: undefined, updatedAt: undefined }, { ...body, id: undefined, createdAt: undefined, updatedAt: undefined });
    const id = created.body.id;
    assert.equal((await w.admin.get(`/api/v1/budget-rules/${id}`)).body.limitUsd, 25);
    const replaced = await w.admin.put(`/api/v1/budget-rules/${id}`, { ...body, limitUsd: 40 });
    assert.equal(replaced.body.limitUsd, 40);
    assert.ok((await w.admin.get('/api/v1/budget-rules')).body.items.some((r: any) => r.id === id));

    for (const [bad, field] of [
      [{ ...body, scope: 'Eng Team' }, 'scope'],
      [{ ...body, limitUsd: -1 }, 'limitUsd'],
      [{ ...body, period: 'week' }, 'period'],
      [{ ...body, pattern: 'claude *' }, 'pattern'],
      [{ ...body, name: '' }, 'name'],
      [{ ...body, extra: 1 }, 'extra'],
    ] as const) {
      const r = await w.admin.post('/api/v1/budget-rules', bad);
      assert.equal(r.status, 400, JSON.stringify(bad));
      assert.match(r.body.error.message, new RegExp(field));
    }
    assert.equal((await w.admin.delete(`/api/v1/budget-rules/${id}`)).status, 200);
    assert.equal((await w.admin.get(`/api/v1/budget-rules/${id}`)).status, 404);
    const actions = (await w.admin.get('/api/v1/audit-events?type=control&limit=50')).body.items.map((e: any) => e.action);
    for (const action of ['budget_rule.create', 'budget_rule.update', 'budget_rule.delete']) assert.ok(actions.includes(action), action);
  });

  test('concurrent calls never overspend by more than the calls in flight, and over budget answers how to ask for a top-up', async () => {
    const key = await agentWithKey(w.admin, 'spend/racer');
    const limitUsd = 0.009; // five calls' worth
    const rule = await w.admin.post('/api/v1/budget-rules', { name: 'racer daily', scope: 'spend/racer', pattern: PRICED, limitUsd, period: 'day' });
    assert.equal(rule.status, 201);
    const client = openai(w.replica.url, key);
    const concurrency = 12;
    // max_tokens 1 keeps each reservation small (the ~85-byte body at 4 bytes a token and 1 output token: $0.0023,
    // a little above a call's real cost), so admission rests on spent + reserved < limit alone.
    const results = await Promise.allSettled(
      Array.from({ length: concurrency * 3 }, () => client.chat.completions.create({ model: PRICED, max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] })),
    );
    const admitted = results.filter((r) => r.status === 'fulfilled').length;
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    assert.ok(admitted >= 1 && refused.length >= 1, `admitted ${admitted}, refused ${refused.length}`);
    for (const r of refused) {
      assert.ok(r.reason instanceof OpenAI.APIError && r.reason.status === 402, String(r.reason));
      assert.match(r.reason.message, /racer daily.*used up.*budget top-up/);
      assert.equal(r.reason.headers?.get('x-should-retry'), 'false');
    }
    const settled = async () => {
      let usage: any;
      const found = await waitFor(async () => {
        usage = (await w.admin.get(`/api/v1/budget-rules/${rule.body.id}/usage`)).body.items[0];
        return usage && usage.reservedUsd === 0;
      }, 5000);
      assert.notEqual(found, -1, `reservations still held: ${JSON.stringify(usage)}`);
      return usage as { spentUsd: number; reservedUsd: number };
    };
    let usage = await settled();
    assert.ok(Math.abs(usage.spentUsd - admitted * CALL_COST) < 1e-9, `spent ${usage.spentUsd} for ${admitted} calls`);
    assert.ok(usage.spentUsd <= limitUsd + concurrency * CALL_COST, `overspent: ${usage.spentUsd} against ${limitUsd}`);
    // When every call reserved before any ended, the refusals counted reservations that ended below their estimate:
    // spent may stop short of the limit. One call at a time, calls pass until spent plus the next estimate reaches
    // the limit, and the next is refused whatever its size.
    let sequential = 0;
    for (;;) {
      const call = client.chat.completions.create({ model: PRICED, max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] });
      const outcome = await call.then(
        () => 'admitted' as const,
        (err: unknown) => err,
      );
      if (outcome !== 'admitted') {
        assert.ok(outcome instanceof OpenAI.APIError && outcome.status === 402, String(outcome));
        break;
      }
      sequential += 1;
      assert.ok(admitted + sequential <= 5, `admitted ${admitted} at once and ${sequential} one by one: more than the five calls the limit buys`);
    }
    usage = await settled();
    assert.ok(Math.abs(usage.spentUsd - (admitted + sequential) * CALL_COST) < 1e-9, `spent ${usage.spentUsd}`);
    assert.ok(usage.spentUsd + 2 * CALL_COST > limitUsd, `refused with ${usage.spentUsd} spent of ${limitUsd}: the next estimate fits`);
    const refusedEvent = await llmEvent(w.admin, (e) => e.outcome === 'refused', '&identity=spend%2Fracer');
    assert.equal(refusedEvent.data.refusal.reason, 'budget');
  });

  test('with estimates below the cost, overspend stays within what the calls in flight spend', async () => {
    const key = await agentWithKey(w.admin, 'spend/fleet');
    const limitUsd = 0.02;
    const rule = await w.admin.post('/api/v1/budget-rules', { name: 'fleet daily', scope: 'spend/fleet', pattern: '*', limitUsd, period: 'day' });
    const client = openai(w.replica.url, key);
    const workers = 8;
    let admitted = 0;
    // Each worker keeps one call in flight until it is refused: at most `workers` calls are ever in flight.
    await Promise.all(
      Array.from({ length: workers }, async () => {
        for (;;) {
          try {
            await client.chat.completions.create({ model: DEAR, max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] });
            admitted++;
          } catch (err) {
            assert.ok(err instanceof OpenAI.APIError && err.status === 402, String(err));
            return;
          }
        }
      }),
    );
    let usage: any;
    await waitFor(async () => {
      usage = (await w.admin.get(`/api/v1/budget-rules/${rule.body.id}/usage`)).body.items[0];
      return usage && usage.reservedUsd === 0;
    }, 3000);
    assert.ok(Math.abs(usage.spentUsd - admitted * DEAR_COST) < 1e-9);
    assert.ok(usage.spentUsd >= limitUsd, `the budget was not used up: ${usage.spentUsd}`);
    // A call's cost moves from reserved to spent as it completes, beside its answer's last bytes, not before them: a
    // worker's next call can be admitted while its previous one's settlement is still being written, its reservation
    // (the low estimate) still counted in flight. So at the last admission each worker held at most two calls'
    // reservations (on a loaded machine it happens: 11 calls spent 0.0771 in one run, where one each allows 0.0761).
    assert.ok(usage.spentUsd < limitUsd + 2 * workers * DEAR_COST, `overspent beyond the calls in flight: ${usage.spentUsd}`);
  });

  test('sequentially, a budget admits calls until spent reaches the limit, then refuses; other identities are unaffected', async () => {
    const key = await agentWithKey(w.admin, 'spend/steady');
    const bystander = await agentWithKey(w.admin, 'spend/bystander');
    await w.admin.post('/api/v1/budget-rules', { name: 'steady', scope: 'spend/steady', pattern: '*', limitUsd: 3 * CALL_COST - 1e-6, period: 'month' });
    const client = openai(w.replica.url, key);
    const call = () => client.chat.completions.create({ model: PRICED, max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] });
    for (let i = 0; i < 3; i++) await call();
    await assert.rejects(call(), /steady/);
    await openai(w.replica.url, bystander).chat.completions.create({ model: PRICED, max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] });
  });

  test('a model no price names is admitted under a budget and costed with the fallback, marked estimated (never refused for a missing price)', async () => {
    const key = await agentWithKey(w.admin, 'spend/unpriced');
    const client = openai(w.replica.url, key);
    await w.admin.post('/api/v1/budget-rules', { name: 'unpriced guard', scope: 'spend/unpriced', pattern: '*', limitUsd: 5, period: 'day' });
    const r = await client.chat.completions.create({ model: 'in-house-llm-7b', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(r.choices.length, 1);
    const event = await llmEvent(w.admin, (e) => e.data.model === 'in-house-llm-7b', '&identity=spend%2Funpriced');
    // No prices.default in this world: the dearest known standard OpenAI model's price (o1: $15 in, $60 out).
    const expected = (FAKE_USAGE.openaiChat.inputTokens * 15 + FAKE_USAGE.openaiChat.outputTokens * 60) / 1e6;
    assert.equal(event.end.data.costEstimated, true);
    assert.match(event.end.data.pricedAs, /^o1/);
    assert.ok(Math.abs(event.end.data.costUsd - expected) < 1e-9, `${event.end.data.costUsd} vs ${expected}`);
    assert.equal(event.end.data.budgetRules.length, 1, 'the budget counted it');
    await waitFor(async () => {
      const usage = (await w.admin.get('/api/v1/budget-rules')).body.items.find((rule: any) => rule.name === 'unpriced guard');
      const counted = (await w.admin.get(`/api/v1/budget-rules/${usage.id}/usage`)).body.items;
      return counted.length === 1 && Math.abs(counted[0].spentUsd - expected) < 1e-9 && counted[0].reservedUsd === 0;
    }, WAIT_MS);
    const spend = (await w.admin.get('/api/v1/spend?groupBy=identity&identity=spend%2Funpriced')).body.items[0];
    assert.equal(spend.estimatedRequests, 1);
    // A listed model's cost is not an estimate.
    await client.chat.completions.create({ model: PRICED, max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] });
    const listed = await llmEvent(w.admin, (e) => e.data.model === PRICED, '&identity=spend%2Funpriced');
    assert.equal(listed.end.data.costEstimated, false);
  });

  test('prices.default prices an unknown model when configured', async () => {
    const priced = await startGatewayWorld(store(), { prices: { default: { inputPerMTok: 1000, outputPerMTok: 1000 } } });
    try {
      const key = await agentWithKey(priced.admin, 'spend/fallback');
      await openai(priced.replica.url, key).chat.completions.create({ model: 'in-house-llm-7b', messages: [{ role: 'user', content: 'hi' }] });
      const event = await llmEvent(priced.admin, (e) => e.data.model === 'in-house-llm-7b', '&identity=spend%2Ffallback');
      assert.equal(event.end.data.pricedAs, 'prices.default');
      assert.equal(event.end.data.costEstimated, true);
      assert.ok(Math.abs(event.end.data.costUsd - ((FAKE_USAGE.openaiChat.inputTokens + FAKE_USAGE.openaiChat.outputTokens) * 1000) / 1e6) < 1e-9);
    } finally {
      await priced.close();
    }
  });

  test('the most specific scope binds: a personal rule replaces the namespace rule for that person', async () => {
    const pat = await developerWithToken(w.admin, 'team/lead', 'developer');
    await w.admin.post('/api/v1/budget-rules', { name: 'team zero', scope: 'team', pattern: '*', limitUsd: 0, period: 'day' });
    const other = await developerWithToken(w.admin, 'team/junior', 'developer');
    const ask = (token: string) => openai(w.replica.url, token).chat.completions.create({ model: PRICED, max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] });
    await assert.rejects(ask(pat), /team zero/);
    await w.admin.post('/api/v1/budget-rules', { name: 'lead allowance', scope: 'team/lead', pattern: '*', limitUsd: 1, period: 'day' });
    await ask(pat);
    await assert.rejects(ask(other), /team zero/);
  });

  test('spend per identity, per developer session and per day; developers see only their own', async () => {
    const pat = await developerWithToken(w.admin, 'spend/carol', 'developer');
    const client = (session: string) => openai(w.replica.url, pat, { 'X-Reins-Session': session });
    const ask = (session: string) => client(session).chat.completions.create({ model: PRICED, max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] });
    await ask('s-1');
    await ask('s-1');
    await ask('s-2');
    await llmEvent(w.admin, (e) => e.data.session === 's-2', '&identity=spend%2Fcarol');
    // Each call counts once although it has two events (its decision and its end): requests from the decisions,
    // tokens and cost from the ends. An end may trail its answer by a flush interval: read until all three are in.
    const expected = [
      ['s-1', 'spend/carol', 2, 22, 14],
      ['s-2', 'spend/carol', 1, 11, 7],
    ];
    let bySession: any[] = [];
    const rows = () => bySession.map((r: any) => [r.key, r.identity, r.requests, r.inputTokens, r.outputTokens]).sort();
    await waitFor(async () => {
      bySession = (await w.admin.get('/api/v1/spend?groupBy=session&identity=spend%2Fcarol')).body.items;
      return JSON.stringify(rows()) === JSON.stringify(expected);
    }, 15_000);
    assert.deepEqual(rows(), expected);
    assert.ok(Math.abs(bySession.find((r: any) => r.key === 's-1').costUsd - 2 * CALL_COST) < 1e-9);
    const byDay = (await w.admin.get('/api/v1/spend?groupBy=day&identity=spend%2Fcarol')).body.items;
    assert.deepEqual(byDay.map((r: any) => [r.key, r.requests]), [[new Date().toISOString().slice(0, 10), 3]]);
    const mine = w.admin.with(pat);
    assert.equal((await mine.get('/api/v1/spend')).body.items.length, 1);
    assert.equal((await mine.get('/api/v1/spend?identity=spend%2Fracer')).status, 403);
    assert.equal((await mine.get('/api/v1/spend?since=yesterday')).status, 400);
  });

  test('a session is scoped to its developer: the same X-Reins-Session value of two developers is two session budgets and two spend rows', async () => {
    const dave = await developerWithToken(w.admin, 'shared/dave', 'developer');
    const erin = await developerWithToken(w.admin, 'shared/erin', 'developer');
    // Less than one call: the first call of a session is admitted on its small estimate, the next is refused.
    const rule = await w.admin.post('/api/v1/budget-rules', { name: 'one call a session', scope: 'shared', pattern: '*', limitUsd: CALL_COST / 2, period: 'session' });
    assert.equal(rule.status, 201, JSON.stringify(rule.body));
    const ask = (pat: string) =>
      openai(w.replica.url, pat, { 'X-Reins-Session': 'same-value' }).chat.completions.create({ model: PRICED, max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] });
    await ask(dave);
    // Dave's session budget is used up once his call is settled.
    let refused = false;
    await waitFor(async () => {
      refused = await ask(dave).then(
        () => false,
        (err: Error) => /one call a session/.test(err.message),
      );
      return refused;
    }, 10_000, 50);
    assert.ok(refused, "Dave's session budget never ran out");
    // Erin sent the same session value: her session is her own, with its own budget.
    await ask(erin);
    await llmEvent(w.admin, (e) => e.data.session === 'same-value', '&identity=shared%2Ferin');
    const rows = (await w.admin.get('/api/v1/spend?groupBy=session&session=same-value')).body.items;
    assert.deepEqual(rows.map((r: any) => [r.key, r.identity]).sort(), [
      ['same-value', 'shared/dave'],
      ['same-value', 'shared/erin'],
    ]);
    assert.equal(rows.find((r: any) => r.identity === 'shared/erin').requests, 1);
    await w.admin.delete(`/api/v1/budget-rules/${rule.body.id}`);
  });

  test('model access: covered callers may use only their models; the refusal offers a model-access request', async () => {
    const key = await agentWithKey(w.admin, 'research/analyst');
    const client = openai(w.replica.url, key);
    const ask = (model: string) => client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    await ask('gpt-4o');
    const rule = await w.admin.post('/api/v1/model-access', { scope: 'research', models: ['gpt-4o-mini', 'claude-haiku-*'], description: 'cheap models only' });
    assert.equal(rule.status, 201);
    await ask('gpt-4o-mini');
    await assert.rejects(ask('gpt-4o'), (err: unknown) => {
      assert.ok(err instanceof OpenAI.PermissionDeniedError, String(err));
      assert.match(err.message, /may not use model gpt-4o .*allowed: gpt-4o-mini, claude-haiku-\*.*model_access/);
      return true;
    });
    // Another namespace is not covered.
    const outsider = await agentWithKey(w.admin, 'ops/outsider');
    await openai(w.replica.url, outsider).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    // Widening the rule applies to the next call.
    const widened = await w.admin.put(`/api/v1/model-access/${rule.body.id}`, { scope: 'research', models: ['gpt-4o*'] });
    assert.equal(widened.status, 200);
    await ask('gpt-4o');
    assert.equal((await w.admin.post('/api/v1/model-access', { scope: 'not a scope', models: ['x'] })).status, 400);
    assert.equal((await w.admin.post('/api/v1/model-access', { scope: 'research', models: [] })).status, 400);
    assert.equal((await w.admin.delete(`/api/v1/model-access/${rule.body.id}`)).status, 200);
  });
});
