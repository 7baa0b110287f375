/** Every LLM provider kind Reins serves, by the `kind` of a `providers` entry (one file each). */
import type { ProviderKind } from '../../../config/config.js';
import { ANTHROPIC } from './anthropic.js';
import { AZURE_OPENAI } from './azure-openai.js';
import { BEDROCK } from './bedrock.js';
import { GEMINI } from './gemini.js';
import { OPENAI } from './openai.js';
import { OPENAI_COMPATIBLE } from './openai-compatible.js';
import type { LlmProvider } from './provider.js';

export const PROVIDERS: Readonly<Record<ProviderKind, LlmProvider>> = {
  openai: OPENAI,
  anthropic: ANTHROPIC,
  bedrock: BEDROCK,
  'openai-compatible': OPENAI_COMPATIBLE,
  'azure-openai': AZURE_OPENAI,
  gemini: GEMINI,
};

export type { CallFacts, Endpoint, GatewayAnswer, GatewayErrorKind, LlmProvider } from './provider.js';
