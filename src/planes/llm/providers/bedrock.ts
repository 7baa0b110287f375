import { int, isObject, type GatewayErrorKind, type LlmProvider } from './provider.js';

/** The actions of `/model/{modelId}/{action}`. */
const ACTIONS: Record<string, { stream: boolean; metered: boolean }> = {
  invoke: { stream: false, metered: true },
  'invoke-with-response-stream': { stream: true, metered: true },
  converse: { stream: false, metered: true },
  'converse-stream': { stream: true, metered: true },
  'count-tokens': { stream: false, metered: false },
};

const MODEL_ROUTE = /^\/model\/([^/]+)\/([a-z-]+)$/;

/** The AWS SDK builds its exception class from `x-amzn-errortype`. */
const TYPE: Record<GatewayErrorKind, string> = {
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

/** The two model families whose native routes are held (the spec's "two model families"): Anthropic Claude and Amazon Nova. */
const HOLDABLE_MODEL = /(^|[.:/])(anthropic\.claude|amazon\.nova)/;

/** Amazon Bedrock: the model and the action are in the path; errors are `x-amzn-errortype` + `{message}`. */
export const BEDROCK: LlmProvider = {
  matchEndpoint: (method, path) => {
    const m = MODEL_ROUTE.exec(path);
    const action = m ? ACTIONS[m[2]!] : undefined;
    if (!m || !action || method !== 'POST') return null;
    let model: string;
    try {
      model = decodeURIComponent(m[1]!);
    } catch {
      return null;
    }
    return { metered: action.metered, pathModel: model, pathStream: action.stream };
  },
  title: 'Amazon Bedrock runtime',
  routes: '/model/{modelId}/invoke, invoke-with-response-stream, converse, converse-stream, count-tokens',
  apiKeyHeader: null,
  // Bedrock API keys are bearer tokens; SigV4 signing with IAM credentials is not built yet.
  credential: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  callFacts: (endpoint, b) => {
    const inference = isObject(b.inferenceConfig) ? b.inferenceConfig : {};
    const titan = isObject(b.textGenerationConfig) ? b.textGenerationConfig : {};
    return {
      model: endpoint.pathModel ?? null,
      stream: endpoint.pathStream ?? false,
      // Converse and Nova use inferenceConfig; native bodies: Anthropic/Mistral max_tokens, Llama max_gen_len, Titan.
      maxTokens: int(inference.maxTokens, inference.max_new_tokens, b.max_tokens, b.max_gen_len, titan.maxTokenCount),
    };
  },
  policyRoute: (path) => MODEL_ROUTE.exec(path)?.[2] ?? path.replace(/^\//, ''),
  // Invoke and invoke-with-response-stream of the two families only; their Converse routes and other families are
  // refused outright by an approve policy.
  unholdable: (route, model) =>
    (route === 'invoke' || route === 'invoke-with-response-stream') && HOLDABLE_MODEL.test(model)
      ? null
      : 'this Bedrock route cannot be held: only invoke and invoke-with-response-stream of Anthropic Claude and Amazon Nova models ' +
        'are parked for approval; other models and the Converse API are refused.',
  sse: { keepAlive: null, error: (body) => `data: ${body}\n\n` },
  errorBody: (kind, message, headers) => {
    headers['x-amzn-errortype'] = TYPE[kind];
    return JSON.stringify({ message });
  },
  // The AWS SDK retries every 429 as throttling and ignores x-should-retry; Bedrock itself answers an exhausted
  // quota with ServiceQuotaExceededException, a 400.
  statusFor: (kind) => (kind === 'budget_exceeded' ? 400 : undefined),
};
