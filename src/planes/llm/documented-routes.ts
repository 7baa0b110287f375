/**
 * The LLM gateway's routes as the OpenAPI document lists them: each provider's endpoints one by one, with their
 * path parameters, rather than the catch-all `/llm/<provider>/*` Fastify serves them through (OpenAPI has no
 * wildcard paths, and a client generated from the document needs real ones). Every row must be served by its
 * provider's `matchEndpoint` (test/unit/planes/llm-documented-routes.test.ts); a provider added to `ProviderName`
 * does not typecheck until it has rows here. A named upstream of another kind is listed
 * under its own name with the kind's rows (operationId suffixed with the name).
 */
import type { ProviderKind } from '../../config/config.js';

export interface DocumentedRoute {
  method: 'GET' | 'POST' | 'DELETE';
  /** After `/llm/<provider>`, OpenAPI style (`{modelId}`). */
  path: string;
  /** The OpenAPI operationId. */
  operationId: string;
  summary: string;
}

export const DOCUMENTED_ROUTES: Readonly<Record<ProviderKind, readonly DocumentedRoute[]>> = {
  openai: [
    { method: 'POST', path: '/v1/chat/completions', operationId: 'openaiCreateChatCompletion', summary: 'OpenAI Chat Completions' },
    { method: 'POST', path: '/v1/completions', operationId: 'openaiCreateCompletion', summary: 'OpenAI Completions (legacy)' },
    { method: 'POST', path: '/v1/embeddings', operationId: 'openaiCreateEmbedding', summary: 'OpenAI Embeddings' },
    { method: 'POST', path: '/v1/responses', operationId: 'openaiCreateResponse', summary: 'OpenAI Responses API' },
    { method: 'GET', path: '/v1/responses/{responseId}', operationId: 'openaiGetResponse', summary: 'Retrieve a stored response' },
    { method: 'DELETE', path: '/v1/responses/{responseId}', operationId: 'openaiDeleteResponse', summary: 'Delete a stored response' },
    { method: 'POST', path: '/v1/responses/{responseId}/cancel', operationId: 'openaiCancelResponse', summary: 'Cancel a background response' },
    { method: 'GET', path: '/v1/responses/{responseId}/input_items', operationId: 'openaiListResponseInputItems', summary: "A stored response's input items" },
    { method: 'GET', path: '/v1/models', operationId: 'openaiListModels', summary: 'OpenAI models' },
    { method: 'GET', path: '/v1/models/{model}', operationId: 'openaiGetModel', summary: 'One OpenAI model' },
  ],
  'openai-compatible': [
    { method: 'POST', path: '/v1/chat/completions', operationId: 'openaiCompatibleCreateChatCompletion', summary: 'Chat Completions (OpenAI-compatible server)' },
    { method: 'POST', path: '/v1/completions', operationId: 'openaiCompatibleCreateCompletion', summary: 'Completions (OpenAI-compatible server)' },
    { method: 'POST', path: '/v1/embeddings', operationId: 'openaiCompatibleCreateEmbedding', summary: 'Embeddings (OpenAI-compatible server)' },
    { method: 'GET', path: '/v1/models', operationId: 'openaiCompatibleListModels', summary: 'Models (OpenAI-compatible server)' },
  ],
  'azure-openai': [
    { method: 'POST', path: '/openai/deployments/{deployment}/chat/completions', operationId: 'azureCreateChatCompletion', summary: 'Azure OpenAI Chat Completions (deployment)' },
    { method: 'POST', path: '/openai/deployments/{deployment}/completions', operationId: 'azureCreateCompletion', summary: 'Azure OpenAI Completions (deployment)' },
    { method: 'POST', path: '/openai/deployments/{deployment}/embeddings', operationId: 'azureCreateEmbedding', summary: 'Azure OpenAI Embeddings (deployment)' },
    { method: 'POST', path: '/openai/v1/chat/completions', operationId: 'azureV1CreateChatCompletion', summary: 'Azure OpenAI v1 Chat Completions' },
    { method: 'POST', path: '/openai/v1/responses', operationId: 'azureV1CreateResponse', summary: 'Azure OpenAI v1 Responses' },
    { method: 'GET', path: '/openai/v1/models', operationId: 'azureV1ListModels', summary: 'Azure OpenAI v1 models' },
  ],
  // Gemini names the method after the model in one path segment (`models/gemini-2.5-pro:generateContent`), which
  // neither OpenAPI nor Fastify can split: the segment is one parameter, `{modelAction}`.
  gemini: [
    { method: 'POST', path: '/v1beta/models/{modelAction}', operationId: 'geminiModelAction', summary: 'Gemini generateContent, streamGenerateContent, countTokens (v1beta)' },
    { method: 'POST', path: '/v1/models/{modelAction}', operationId: 'geminiV1ModelAction', summary: 'Gemini generateContent, streamGenerateContent, countTokens (v1)' },
    { method: 'GET', path: '/v1beta/models', operationId: 'geminiListModels', summary: 'Gemini models' },
  ],
  anthropic: [
    { method: 'POST', path: '/v1/messages', operationId: 'anthropicCreateMessage', summary: 'Anthropic Messages (Claude Code posts /v1/messages?beta=true)' },
    { method: 'POST', path: '/v1/messages/count_tokens', operationId: 'anthropicCountTokens', summary: 'Anthropic token counting' },
    { method: 'GET', path: '/v1/models', operationId: 'anthropicListModels', summary: 'Anthropic models' },
    { method: 'GET', path: '/v1/models/{model}', operationId: 'anthropicGetModel', summary: 'One Anthropic model' },
  ],
  bedrock: [
    { method: 'POST', path: '/model/{modelId}/invoke', operationId: 'bedrockInvokeModel', summary: 'Bedrock InvokeModel' },
    { method: 'POST', path: '/model/{modelId}/invoke-with-response-stream', operationId: 'bedrockInvokeModelWithResponseStream', summary: 'Bedrock InvokeModelWithResponseStream' },
    { method: 'POST', path: '/model/{modelId}/converse', operationId: 'bedrockConverse', summary: 'Bedrock Converse' },
    { method: 'POST', path: '/model/{modelId}/converse-stream', operationId: 'bedrockConverseStream', summary: 'Bedrock ConverseStream' },
    { method: 'POST', path: '/model/{modelId}/count-tokens', operationId: 'bedrockCountTokens', summary: 'Bedrock CountTokens' },
  ],
};

/** `/v1/models/{model}` as Fastify writes it: `/v1/models/:model`. */
export function fastifyPath(path: string): string {
  return path.replace(/\{([^}]+)\}/g, ':$1');
}
