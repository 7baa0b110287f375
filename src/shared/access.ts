/**
 * Who may call what, enforced in one place. Every /api route declares `config.access`; a route that
 * forgets is refused at start-up, so nothing is reachable by accident.
 *
 *   public                      no credential needed
 *   { roles: [...] }            a developer identity (personal access token or console session) with one of these roles
 *   sensor                      a runtime sensor token
 *   gateway                     the data plane: the gateway authenticates the caller in the client's own
 *                               protocol (Bearer or x-api-key, answered in the provider's error shape)
 */
import type { Role } from './actor.js';

export type Access = 'public' | 'sensor' | 'gateway' | { roles: readonly Role[] };

export const ANY_DEVELOPER: Access = { roles: ['admin', 'viewer', 'developer'] };
export const ADMIN: Access = { roles: ['admin'] };
/** The read side of the console: admins and viewers. */
export const READERS: Access = { roles: ['admin', 'viewer'] };

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
  }
}
