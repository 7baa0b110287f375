/**
 * A Fastify app that registers only the LLM gateway, with simple hooks: one fixed Reins token, a policy that
 * refuses the model "forbidden-model", and a record of every completed call. Upstreams are the fake providers.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { Config } from '../../src/config/config.js';
import type { AddressInfo } from 'node:net';
import { refusalMessage } from '../../src/governance/policy-refusal.js';
import { LlmGateway, registerLlmGateway } from '../../src/planes/llm/routes.js';
import type { CallResult, GatewayCaller, GatewayDecision, LlmCall } from '../../src/planes/llm/types.js';
import { startFakeProviders, type FakeProviders } from './fake-providers.js';

export const CLIENT_TOKEN = 'reins_agent_test_token_0123456789';
export const PROVIDER_KEY = 'sk-provider-key-held-by-reins';
export const DENY_POLICY = { policyName: 'approved-models', message: 'forbidden-model is not on the approved model list' };

export interface Harness {
  /** The gateway's origin, e.g. http://127.0.0.1:PORT */
  url: string;
  fake: FakeProviders;
  app: FastifyInstance;
  decided: LlmCall[];
  completed: { call: LlmCall; result: CallResult }[];
  /** Resolves once `n` calls have been reported complete (the report follows the last byte). */
  completions(n: number): Promise<{ call: LlmCall; result: CallResult }[]>;
  close(): Promise<void>;
}

export async function startGateway(options: { withoutProviders?: boolean; upstreamOrigin?: string; more?: Config['providers'] } = {}): Promise<Harness> {
  const fake = await startFakeProviders();
  const decided: LlmCall[] = [];
  const completed: { call: LlmCall; result: CallResult }[] = [];
  const app = Fastify({ logger: false });
  const settings = { baseUrl: options.upstreamOrigin ?? fake.origin, apiKey: PROVIDER_KEY };
  const gateway = new LlmGateway({
    providers: options.withoutProviders
      ? {}
      : { openai: { kind: 'openai', ...settings }, anthropic: { kind: 'anthropic', ...settings }, bedrock: { kind: 'bedrock', ...settings, region: 'us-east-1' }, ...options.more },
    hooks: {
      authenticate: async ({ secret }): Promise<GatewayCaller | null> => (secret === CLIENT_TOKEN ? { tokenId: 'tok_test', identityId: 'agent-test' } : null),
      decide: async (call): Promise<GatewayDecision> => {
        decided.push(call);
        return call.model === 'forbidden-model'
          ? { outcome: 'deny', reason: 'policy', message: refusalMessage(DENY_POLICY.policyName, DENY_POLICY.message) }
          : { outcome: 'allow' };
      },
      completed: (call, result) => {
        completed.push({ call, result });
      },
    },
  }, app.log);
  // Through Fastify's routes (hijacked): the replica tests cover the server's fast path.
  registerLlmGateway(app, gateway);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    fake,
    app,
    decided,
    completed,
    async completions(n) {
      // Generous: returns as soon as the n-th report is in; a loaded machine may take seconds.
      const started = Date.now();
      while (completed.length < n && Date.now() - started < 30_000) await new Promise((r) => setTimeout(r, 5));
      return completed;
    },
    async close() {
      await app.close();
      await fake.close();
    },
  };
}

/** What a test asserts of every forwarded request: Reins' provider key went up, the client's token did not. */
export function credentialsSeenUpstream(fake: FakeProviders): string[] {
  return fake.hits.flatMap((h) => [h.headers.authorization, h.headers['x-api-key']].filter((v): v is string => typeof v === 'string'));
}
