/**
 * Answers the gateway gives itself (refusals, missing credentials, unknown routes, an unreachable upstream),
 * in the client's own protocol so its SDK raises its usual error class and the tool shows the message.
 */
import type { ProviderName } from '../../config/config.js';

/** Why the gateway answers instead of the provider. */
export type GatewayErrorKind =
  | 'policy_denied'
  | 'model_not_allowed'
  | 'budget_exceeded'
  | 'unauthenticated'
  | 'unknown_route'
  | 'provider_not_configured'
  | 'upstream_unreachable'
  | 'body_too_large'
  | 'bad_request'
  | 'rate_limited'
  /** X-Reins-Agent names an agent the token's developer is not bound to (or no agent at all). */
  | 'agent_not_bound'
  | 'internal_error';

export interface GatewayAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const STATUS: Record<GatewayErrorKind, number> = {
  policy_denied: 403,
  model_not_allowed: 403,
  // Providers answer an exhausted quota with 429; x-should-retry: false keeps the SDK from retrying it.
  budget_exceeded: 429,
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
 * SDKs retry 408, 409, 429 and 5xx unless `x-should-retry` says otherwise. A refusal or a missing upstream
 * will not change on retry, so those say false; an unreachable upstream may recover, so it leaves retrying
 * to the SDK.
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

const OPENAI_TYPE: Record<GatewayErrorKind, string> = {
  policy_denied: 'permission_error',
  model_not_allowed: 'permission_error',
  budget_exceeded: 'insufficient_quota',
  unauthenticated: 'invalid_request_error',
  unknown_route: 'invalid_request_error',
  provider_not_configured: 'server_error',
  upstream_unreachable: 'server_error',
  body_too_large: 'invalid_request_error',
  bad_request: 'invalid_request_error',
  rate_limited: 'requests',
  agent_not_bound: 'permission_error',
  internal_error: 'server_error',
};

const OPENAI_CODE: Record<GatewayErrorKind, string> = {
  policy_denied: 'policy_denied',
  model_not_allowed: 'model_not_allowed',
  budget_exceeded: 'budget_exceeded',
  unauthenticated: 'invalid_api_key',
  unknown_route: 'unknown_url',
  provider_not_configured: 'provider_not_configured',
  upstream_unreachable: 'upstream_unreachable',
  body_too_large: 'request_too_large',
  bad_request: 'invalid_request',
  rate_limited: 'rate_limit_exceeded',
  agent_not_bound: 'agent_not_bound',
  internal_error: 'internal_error',
};

const ANTHROPIC_TYPE: Record<GatewayErrorKind, string> = {
  policy_denied: 'permission_error',
  model_not_allowed: 'permission_error',
  budget_exceeded: 'rate_limit_error',
  unauthenticated: 'authentication_error',
  unknown_route: 'not_found_error',
  provider_not_configured: 'api_error',
  upstream_unreachable: 'api_error',
  body_too_large: 'request_too_large',
  bad_request: 'invalid_request_error',
  rate_limited: 'rate_limit_error',
  agent_not_bound: 'permission_error',
  internal_error: 'api_error',
};

/** The AWS SDK builds its exception class from `x-amzn-errortype`. */
const BEDROCK_TYPE: Record<GatewayErrorKind, string> = {
  policy_denied: 'AccessDeniedException',
  model_not_allowed: 'AccessDeniedException',
  budget_exceeded: 'ServiceQuotaExceededException',
  unauthenticated: 'UnrecognizedClientException',
  unknown_route: 'UnknownOperationException',
  provider_not_configured: 'ServiceUnavailableException',
  upstream_unreachable: 'InternalServerException',
  body_too_large: 'ValidationException',
  bad_request: 'ValidationException',
  rate_limited: 'ThrottlingException',
  agent_not_bound: 'AccessDeniedException',
  internal_error: 'InternalServerException',
};

export function gatewayAnswer(provider: ProviderName, kind: GatewayErrorKind, message: string, status = statusFor(provider, kind)): GatewayAnswer {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (!RETRYABLE[kind]) headers['x-should-retry'] = 'false';
  switch (provider) {
    case 'openai':
      return { status, headers, body: JSON.stringify({ error: { message, type: OPENAI_TYPE[kind], param: null, code: OPENAI_CODE[kind] } }) };
    case 'anthropic':
      return { status, headers, body: JSON.stringify({ type: 'error', error: { type: ANTHROPIC_TYPE[kind], message } }) };
    case 'bedrock':
      headers['x-amzn-errortype'] = BEDROCK_TYPE[kind];
      return { status, headers, body: JSON.stringify({ message }) };
  }
}

function statusFor(provider: ProviderName, kind: GatewayErrorKind): number {
  // The AWS SDK retries every 429 as throttling and ignores x-should-retry; Bedrock itself answers an
  // exhausted quota with ServiceQuotaExceededException, a 400.
  if (provider === 'bedrock' && kind === 'budget_exceeded') return 400;
  return STATUS[kind];
}
