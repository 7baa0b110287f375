/** The names of a governed call's two audit events, which every reader that counts calls relies on. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CALL_DECISION_ACTIONS, CALL_END_ACTIONS, endActionOf, isCallDecision, isCallEnd, newCallId } from '../../../src/audit/call-events.js';

test('each decision action has one end action, and no action is both', () => {
  assert.deepEqual(CALL_DECISION_ACTIONS, ['llm.request', 'mcp.tool_call', 'egress.request', 'egress.connect']);
  assert.deepEqual(CALL_END_ACTIONS, ['llm.request_end', 'mcp.tool_call_end', 'egress.request_end', 'egress.connect_end']);
  for (const action of CALL_DECISION_ACTIONS) {
    assert.equal(isCallDecision(action), true);
    assert.equal(isCallEnd(action), false);
    assert.equal(isCallEnd(endActionOf(action)), true);
    assert.equal(isCallDecision(endActionOf(action)), false);
  }
  for (const control of ['identity.tier_set', 'held_call.approve', 'session.end']) {
    assert.equal(isCallDecision(control), false);
    assert.equal(isCallEnd(control), false);
  }
});

test('call ids are unique without any coordination between replicas', () => {
  const ids = new Set(Array.from({ length: 1000 }, newCallId));
  assert.equal(ids.size, 1000);
});
