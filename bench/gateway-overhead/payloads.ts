/**
 * The one request every target is measured with, and the answer the fake upstream gives to it.
 * Both are fixed byte strings so that no target pays for serialising them and every run compares the same bytes.
 */

/** The provider key the fake upstream expects; the client sends it except to Reins, which injects it. */
export const UPSTREAM_KEY = 'sk-fake-bench-0000000000000000';

export const REQUEST_BODY = JSON.stringify({
  model: 'gpt-4o-mini',
  messages: [
    { role: 'system', content: 'You are a helpful assistant. Answer in one short sentence.' },
    { role: 'user', content: 'What is the capital of France?' },
  ],
  max_tokens: 64,
  temperature: 0,
});

/** A non-streaming chat.completion as OpenAI returns it for the request above, `usage` included. */
export const COMPLETION_BODY = JSON.stringify({
  id: 'chatcmpl-BenchR3ins0000000000000000001',
  object: 'chat.completion',
  created: 1_763_700_000,
  model: 'gpt-4o-mini-2024-07-18',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'The capital of France is Paris.', refusal: null, annotations: [] },
      logprobs: null,
      finish_reason: 'stop',
    },
  ],
  usage: {
    prompt_tokens: 27,
    completion_tokens: 8,
    total_tokens: 35,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  },
  service_tier: 'default',
  system_fingerprint: 'fp_bench00001',
});

/** What a client needs to reach one target: the full URL and its headers besides content-type. */
export interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
}

/** Checks that a target answered the benchmark request the way the fake upstream answers it. */
export function looksLikeTheCompletion(status: number, body: string): string | null {
  if (status !== 200) return `status ${status}: ${body.slice(0, 300)}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return `not JSON: ${body.slice(0, 300)}`;
  }
  const p = parsed as { object?: unknown; usage?: { total_tokens?: unknown }; choices?: unknown };
  if (p.object !== 'chat.completion' || p.usage?.total_tokens !== 35 || !Array.isArray(p.choices)) {
    return `not the fake upstream's completion: ${body.slice(0, 300)}`;
  }
  return null;
}
