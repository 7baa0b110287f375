/**
 * The LLM gateway's contract with the rest of Reins: what a governed call looks like, and the hooks the
 * policy engine, audit writer and metering fill in. The forwarding layer knows nothing of identities,
 * policies or storage; it asks these hooks.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Config, ProviderKind } from '../../config/config.js';
import type { FailedAuthGate } from '../../shared/failed-auth.js';

/** The least the gateway needs of a caller; the authenticate hook may return a richer object (see the generics). */
export interface GatewayCaller {
  tokenId: string;
  identityId: string | null;
}

/** What `authenticate` is given: the Reins secret the client sent as its provider key, and the headers
 * (for `X-Reins-Session` / `X-Reins-Agent`). */
export interface GatewayCredential {
  secret: string;
  provider: ProviderKind;
  /** The upstream's name (`/llm/<name>`). */
  upstream: string;
  headers: IncomingHttpHeaders;
}

export interface LlmCall<C = GatewayCaller> {
  caller: C;
  /** The upstream's kind: its wire protocol (`openai`, `gemini`, …); policies see it as `object.llm.provider`. */
  provider: ProviderKind;
  /** The upstream's configured name (`/llm/<name>`); policies see it as `object.llm.upstream`. */
  upstream: string;
  /** The client's path after `/llm/<name>`, query included, exactly as sent (e.g. `/v1/messages?beta=true`). */
  route: string;
  model: string | null;
  stream: boolean;
  maxTokens: number | null;
  /** The request body parsed as JSON, or null when there is none or it is not JSON. */
  body: unknown;
  /** Size of the raw request body, for the pre-call cost estimate. */
  bodyBytes: number;
  /** Whether the endpoint generates (and so consumes tokens): false for token counting and model listings. */
  metered: boolean;
  /** Why Reins refuses the body itself (JSON nested deeper than MAX_JSON_DEPTH; `body` is then null): `decide` refuses it. */
  bodyProblem?: string | undefined;
}

/**
 * Why the gateway refuses a call itself: a policy, the caller's model access, a budget, a bad Reins header, an
 * X-Reins-Agent the token's developer is not bound to, a credential revoked while its held call waited.
 */
export type RefusalReason = 'policy' | 'approval_required' | 'model_access' | 'budget' | 'rate_limit' | 'bad_request' | 'agent_not_bound' | 'credential_revoked';

export type GatewayDecision =
  /** `upstreamHeaders`: added to (and replacing) the client's headers upstream: Reins' trace context (`traceparent`). */
  | { outcome: 'allow'; upstreamHeaders?: Readonly<Record<string, string>> }
  /** `message` is the whole sentence the person sees: which policy or rule, its message, what they can do. */
  | { outcome: 'deny'; reason: RefusalReason; message: string; status?: number; retryAfterSeconds?: number };

export interface TokenUsage {
  /** Input tokens neither read from nor written to the prompt cache. */
  inputTokens: number;
  outputTokens: number;
  /** Present when the prompt cache was read (Anthropic, Bedrock, OpenAI's cached tokens). */
  cacheReadTokens?: number;
  /** Present when the prompt cache was written (Anthropic, Bedrock). */
  cacheWriteTokens?: number;
  /** True when the server sent no usage and the gateway counted the tokens itself (OpenAI-compatible servers). */
  estimated?: boolean;
}

/**
 * How a governed call ended. `forwarded`: the upstream answered (any status, streamed to the end);
 * `refused`: a policy denied it; `upstream_unreachable`: no answer from the provider (the client got 502);
 * `client_aborted`: the client went away before the answer was complete (usage is what streamed so far).
 */
export type CallEnd = 'forwarded' | 'refused' | 'upstream_unreachable' | 'client_aborted';

export interface CallResult {
  status: number;
  end: CallEnd;
  usage?: TokenUsage;
  /** The model the provider's answer names (`model` in its body or stream; Azure: the deployment's model), when it names one. */
  responseModel?: string;
  durationMs: number;
}

export interface DecideEvents {
  onHeld?: () => void;
}

export interface GatewayHooks<C = GatewayCaller> {
  /**
   * The caller a Reins secret belongs to, or null when it is unknown, revoked or expired. A value, not a promise,
   * when nothing had to be read (a cached credential): the gateway then goes on in the same tick.
   */
  authenticate(credential: GatewayCredential): C | null | Promise<C | null>;
  /**
   * `events.onHeld` is called when the call is parked for a person's decision (the gateway keeps the client alive).
   * A value, not a promise, when every step decided without waiting (the common case).
   */
  decide(call: LlmCall<C>, events?: DecideEvents): GatewayDecision | Promise<GatewayDecision>;
  /** Called exactly once per decided call, after the last byte went to the client (or it went away). Must not throw. */
  completed(call: LlmCall<C>, result: CallResult): void;
}

export interface LlmGatewayDeps<C = GatewayCaller> {
  providers: Config['providers'];
  hooks: GatewayHooks<C>;
  /** How often a held streaming call is pinged (default 10 s). */
  heldKeepAliveMs?: number;
  /** Failed Reins keys counted per client address; past the limit, 429 in the provider's shape. */
  failedAuth?: FailedAuthGate;
}
