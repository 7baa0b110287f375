/**
 * Answers the gateway gives itself (refusals, missing credentials, unknown routes, an unreachable upstream),
 * in the client's own protocol so its SDK raises its usual error class and the tool shows the message.
 */
import type { ProviderName } from '../../config/config.js';
import { PROVIDERS, type GatewayAnswer, type GatewayErrorKind } from './providers/index.js';

export type { GatewayAnswer, GatewayErrorKind } from './providers/index.js';

const STATUS: Record<GatewayErrorKind, number> = {
  policy_denied: 403,
  model_not_allowed: 403,
  // 402, not the 429 a provider answers an exhausted quota with: the Vercel AI SDK and LangChain decide by status
  // alone and retry every 429 whatever x-should-retry says, and none of the SDKs retries a 402 (docs/gateway.md).
  budget_exceeded: 402,
  unauthenticated: 401,
  unknown_route: 404,
  provider_not_configured: 503,
  upstream_unreachable: 502,
  body_too_large: 413,
  bad_request: 400,
  rate_limited: 429,
  agent_not_bound: 403,
  internal_error: 500,
};

/**
 * The OpenAI and Anthropic SDKs retry 408, 409, 429 and 5xx unless `x-should-retry` says otherwise; the Vercel AI
 * SDK, LangChain and the AWS SDK decide by status (and error code) alone. So a refusal, which will not change on
 * retry, answers a status none of them retries (400, 401, 402, 403, 404, 413) and says false; an unreachable
 * upstream may recover, so it leaves retrying to the SDK. Per SDK: docs/gateway.md, "Refusals are not retried".
 */
const RETRYABLE: Record<GatewayErrorKind, boolean> = {
  policy_denied: false,
  model_not_allowed: false,
  budget_exceeded: false,
  unauthenticated: false,
  unknown_route: false,
  provider_not_configured: false,
  upstream_unreachable: true,
  body_too_large: false,
  bad_request: false,
  // Too many failed keys from this address: the SDK may retry after Retry-After, when the window is over.
  rate_limited: true,
  agent_not_bound: false,
  internal_error: true,
};

/** `policyRoute` (`responses`, `messages`, …) when the answer is for a call on a known route: a provider may answer differently there. */
export function gatewayAnswer(provider: ProviderName, kind: GatewayErrorKind, message: string, status?: number, policyRoute = ''): GatewayAnswer {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (!RETRYABLE[kind]) headers['x-should-retry'] = 'false';
  const body = PROVIDERS[provider].errorBody(kind, message, headers);
  return { status: status ?? statusFor(provider, kind, policyRoute), headers, body };
}

function statusFor(provider: ProviderName, kind: GatewayErrorKind, policyRoute: string): number {
  return PROVIDERS[provider].statusFor?.(kind, policyRoute) ?? STATUS[kind];
}
