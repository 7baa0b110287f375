/**
 * Starts Reins replicas whose providers are the local fake providers, and builds the real SDK clients
 * pointed at Reins, as a developer's tool would be configured.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { Config } from '../../src/config/config.js';
import type { GrantLookup } from '../../src/approvals/grants.js';
import type { Replica } from '../../src/app/server.js';
import { startFakeProviders, type FakeOptions, type FakeProviders } from '../fakes/fake-providers.js';
import { ADMIN_TOKEN, Client, startTestReplica, WAIT_MS, waitFor, type TestStore } from './harness.js';

export const PROVIDER_KEY = 'sk-provider-key-held-by-reins';

export function providersAt(origin: string): Config['providers'] {
  const settings = { baseUrl: origin, apiKey: PROVIDER_KEY };
  return { openai: { kind: 'openai', ...settings }, anthropic: { kind: 'anthropic', ...settings }, bedrock: { kind: 'bedrock', ...settings, region: 'us-east-1' } };
}

export interface GatewayWorld {
  fake: FakeProviders;
  replica: Replica;
  admin: Client;
  close(): Promise<void>;
}

export async function startGatewayWorld(
  store: TestStore,
  overrides: Partial<Config> = {},
  options: { fake?: FakeOptions; listen?: boolean; grants?: GrantLookup; providers?: (fakeOrigin: string) => Config['providers'] } = {},
): Promise<GatewayWorld> {
  const fake = await startFakeProviders(options.fake);
  let replica: Replica;
  try {
    replica = await startTestReplica(store, { providers: (options.providers ?? providersAt)(fake.origin), ...overrides }, {
      ...(options.listen === undefined ? {} : { listen: options.listen }),
      ...(options.grants ? { grants: options.grants } : {}),
    });
  } catch (err) {
    // A replica that failed to start must not leave the fake listening: the file would never exit.
    await fake.close();
    throw err;
  }
  return {
    fake,
    replica,
    admin: new Client(replica.url, ADMIN_TOKEN),
    async close() {
      // The fake closes even when the replica's close fails, so a failure is reported, not turned into a hang.
      try {
        await replica.close();
      } finally {
        await fake.close();
      }
    },
  };
}

export function openai(url: string, key: string, headers: Record<string, string> = {}): OpenAI {
  return new OpenAI({ baseURL: `${url}/llm/openai/v1`, apiKey: key, maxRetries: 0, defaultHeaders: headers });
}

export function anthropic(url: string, key: string, headers: Record<string, string> = {}): Anthropic {
  return new Anthropic({ baseURL: `${url}/llm/anthropic`, apiKey: key, maxRetries: 0, defaultHeaders: headers });
}

/**
 * The newest LLM call whose decision event (`llm.request`) satisfies `match`, as one view: the decision's fields with
 * its end event's (`llm.request_end`, same callId) laid over them once that is written (`outcome`, and `data` usage,
 * cost, status, end), waiting for the batched writer. `decision` and `end` are the two events as recorded (`end` is
 * null for a call refused at once: its one event holds the outcome).
 */
export async function llmEvent(admin: Client, match: (event: any) => boolean, query = ''): Promise<any> {
  let found: any;
  await waitFor(async () => {
    const items: any[] = (await admin.get(`/api/v1/audit-events?type=llm&limit=200${query}`)).body.items;
    const decision = items.find((e) => e.action === 'llm.request' && match(e));
    if (decision === undefined) return false;
    if (decision.data.end !== undefined) {
      found = { ...decision, decision, end: null };
      return true;
    }
    const end = items.find((e) => e.action === 'llm.request_end' && e.data.callId === decision.data.callId);
    if (end === undefined) return false;
    found = { ...decision, outcome: end.outcome, data: { ...decision.data, ...end.data }, decision, end };
    return true;
  }, WAIT_MS, 20);
  if (!found) throw new Error(`no llm call matched within ${WAIT_MS / 1000} s${query ? ` (${query})` : ''}`);
  return found;
}
