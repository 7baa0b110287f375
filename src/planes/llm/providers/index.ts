/** Every LLM provider Reins serves, by the name in `/llm/<provider>` and the configuration (one file each). */
import type { ProviderName } from '../../../config/config.js';
import { ANTHROPIC } from './anthropic.js';
import { BEDROCK } from './bedrock.js';
import { OPENAI } from './openai.js';
import type { LlmProvider } from './provider.js';

export const PROVIDERS: Readonly<Record<ProviderName, LlmProvider>> = { openai: OPENAI, anthropic: ANTHROPIC, bedrock: BEDROCK };

export type { CallFacts, Endpoint, GatewayAnswer, GatewayErrorKind, LlmProvider } from './provider.js';
