/** What an identity is, and what a change to one announces (Channels.identity) to every replica's caches. */
import type { Tier } from './tiers.js';

export type IdentityKind = 'agent' | 'developer';

/** The payload of Channels.identity: what changed and at which revision. */
export interface IdentityChange {
  id: string;
  op: 'upsert' | 'delete';
  kind?: IdentityKind;
  tier: Tier | null;
  /** An agent's owners as of this revision; absent from a sender that does not know them (the cache keeps its own). */
  owners?: string[];
  revision: string;
}

/**
 * A verb's answer plus the change it announced, so the replica that made it applies it to its own caches at
 * once instead of waiting for its own NOTIFY.
 */
export interface Changed<T> {
  value: T;
  change: IdentityChange;
}
