/**
 * The four built-in Autonomy Governance policies. They read only the agent's tier
 * (`object.agent.autonomyLevel`, 1 for T1 to 4 for T4) and fields of the request, so changing an
 * agent's tier alone changes the outcome of its next call. The store ships them with
 * `builtIn: true`: an admin may edit or disable them, never delete them. docs/policies.md has
 * the outcome per tier.
 */
import type { Policy } from './compile-policy.js';

/**
 * Hosts that T1-T2 agents may reach through the egress proxy: source hosting and package
 * registries, which coding agents need. AI provider hosts are deliberately absent: model
 * traffic belongs on the LLM routes, where the model policies apply. Admins change the list by
 * editing the list literal in the policy's `match`.
 */
export const DEFAULT_EGRESS_ALLOW_LIST: readonly string[] = [
  'github.com',
  'api.github.com',
  'codeload.github.com',
  'objects.githubusercontent.com',
  'raw.githubusercontent.com',
  'registry.npmjs.org',
  'pypi.org',
  'files.pythonhosted.org',
  'proxy.golang.org',
  'sum.golang.org',
  'crates.io',
  'index.crates.io',
  'static.crates.io',
];

/**
 * Substrings of the model ids held back from T1-T2 agents: OpenAI's premium reasoning models (priced 10-40 times
 * their standard siblings, and running for minutes per call) and the deep-research models, which search the web and
 * act for minutes on their own. No mainstream client sends one by default (Claude Code's default is Opus, Codex
 * CLI's a GPT-5 Codex model, the Vercel AI SDK and Cursor-style clients the model their user names), so the ceiling
 * never refuses a tool as it ships. GPT-5 pro models (`gpt-5-pro`, `gpt-5.2-pro`, …) are matched by a clause of
 * their own, since `-pro` alone would also catch other vendors' standard models (`gemini-2.5-pro`).
 */
export const DEFAULT_CEILING_MODEL_MARKERS: readonly string[] = ['o1-pro', 'o3-pro', 'deep-research'];

function shipped(policy: Omit<Policy, 'enabled' | 'builtIn'>): Readonly<Policy> {
  return Object.freeze({ ...policy, enabled: true, builtIn: true });
}

/** A CEL list literal of strings, one item per line when `multiline`, for admins to edit. */
function celStringList(items: readonly string[], multiline: boolean): string {
  const quoted = items.map((item) => `'${item}'`);
  return multiline ? `[\n  ${quoted.join(',\n  ')}\n]` : `[${quoted.join(', ')}]`;
}

export const AUTONOMY_TOOL_APPROVAL: Readonly<Policy> = shipped({
  name: 'autonomy-tool-approval',
  kind: 'approve',
  appliesTo: ['mcp'],
  // A tool the server does not annotate counts as not read-only and destructive: those are
  // MCP's own defaults, and the cautious reading of silence.
  match: [
    '!object.mcp.annotations.readOnlyHint && (',
    '  object.agent.autonomyLevel == 1 ||',
    '  (object.agent.autonomyLevel < 4 && object.mcp.annotations.destructiveHint)',
    ')',
  ].join('\n'),
  message:
    'Waiting for approval: at autonomy tier T1 every tool call that can change data, and at tiers T1 to T3 every ' +
    'tool call that can delete or overwrite data, needs an admin to approve it (Security > Approvals). ' +
    "To stop these holds, ask an admin to raise the agent's autonomy tier or request an exception to autonomy-tool-approval.",
});

export const AUTONOMY_EGRESS_ALLOWLIST: Readonly<Policy> = shipped({
  name: 'autonomy-egress-allowlist',
  kind: 'deny',
  appliesTo: ['egress'],
  match: `object.agent.autonomyLevel <= 2 && !(object.egress.host in ${celStringList(DEFAULT_EGRESS_ALLOW_LIST, true)})`,
  message:
    'Blocked: agents at autonomy tier T1 or T2 may connect only to the hosts on the allow-list of policy ' +
    "autonomy-egress-allowlist. Ask an admin to add this host to that list, or to raise the agent's autonomy tier.",
});

export const AUTONOMY_MODEL_CEILING: Readonly<Policy> = shipped({
  name: 'autonomy-model-ceiling',
  kind: 'deny',
  appliesTo: ['llm'],
  // The ceiling judges the model, never the request's max_tokens: clients send their model's whole output limit as
  // max_tokens by default (Claude Code 64,000; the Vercel AI SDK's Anthropic provider up to 128,000), so a token
  // ceiling refused tools as they ship while saying nothing about risk. Cost is the budget rules' to govern.
  // An approved model-access request for the model lifts it (object.llm.modelAccessGranted), as its message says.
  match: [
    'object.agent.autonomyLevel <= 2 && !object.llm.modelAccessGranted && (',
    `  ${celStringList(DEFAULT_CEILING_MODEL_MARKERS, false)}.exists(marker, object.llm.model.contains(marker)) ||`,
    "  (object.llm.model.contains('gpt-5') && object.llm.model.contains('-pro'))",
    ')',
  ].join('\n'),
  message:
    'Denied: at autonomy tier T1 or T2 this model is above the ceiling (the premium reasoning models o1-pro, o3-pro ' +
    'and GPT-5 pro, and the deep-research models). Use a standard model of the same family, or request model access ' +
    'for this model in Reins (console Security > Approvals, POST /api/v1/access-requests with type model_access, or ' +
    "the request tool of the reins MCP server): once it is approved, the model passes this policy. An admin may " +
    "also raise the agent's autonomy tier.",
});

export const AUTONOMY_AUDIT_AUTONOMOUS: Readonly<Policy> = shipped({
  name: 'autonomy-audit-autonomous',
  kind: 'audit',
  appliesTo: ['mcp', 'egress'],
  // Every call is audited anyway; this flags for review the actions that T3-T4 agents take with
  // no person in the loop. LLM requests are left out: they act on nothing by themselves, and
  // flagging the bulk of the traffic would bury the actions that matter.
  match: [
    'object.agent.autonomyLevel >= 3 && (',
    "  object.request.type == 'egress' || !object.mcp.annotations.readOnlyHint",
    ')',
  ].join('\n'),
  message:
    'Flagged for review: an agent at autonomy tier T3 or T4 acted without a person in the loop (a tool call that ' +
    "can change data, or an outbound connection). Nothing to do unless it looks wrong; lower the agent's tier to " +
    'require approvals.',
});

/**
 * Earlier shipped versions of the built-in policies (`match` and `message`, as released): a store still holding
 * one of them word for word has never been edited, so start-up moves it to the current version (audited as
 * `policy.upgrade`); a built-in an admin changed is left as they made it.
 */
export const SUPERSEDED_BUILT_IN_VERSIONS: readonly { name: string; match: string; message: string }[] = Object.freeze([
  {
    // The first version: it refused Opus (Claude Code's default model) and max_tokens above 65,536 (the
    // Vercel AI SDK's default) at T1-T2, and its "request model access" remedy did not lift it.
    name: 'autonomy-model-ceiling',
    match: [
      'object.agent.autonomyLevel <= 2 && (',
      "  ['opus', 'o1-pro', 'o3-pro'].exists(family, object.llm.model.contains(family)) ||",
      "  (object.llm.model.contains('gpt-5') && object.llm.model.contains('-pro')) ||",
      '  object.llm.maxTokens > 65536',
      ')',
    ].join('\n'),
    message:
      'Denied: at autonomy tier T1 or T2 this model is above the ceiling (Opus, o1-pro, o3-pro and GPT-5 pro models, ' +
      'or more than 65536 output tokens). Use a smaller model or a lower max tokens, ' +
      'or request model access in Reins (console Security > Approvals, or the request tool of the reins MCP server).',
  },
]);

export const BUILT_IN_POLICIES: readonly Readonly<Policy>[] = Object.freeze([
  AUTONOMY_TOOL_APPROVAL,
  AUTONOMY_EGRESS_ALLOWLIST,
  AUTONOMY_MODEL_CEILING,
  AUTONOMY_AUDIT_AUTONOMOUS,
]);
