/**
 * Scopes of budget and model-access rules: `*` (everyone), a namespace (`eng`) or an identity id
 * (`eng/alice`). A scope covers an identity when it is `*`, the identity's namespace, or the identity.
 */
import { parseIdentityId } from '../../identity/ids.js';

const NAMESPACE = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** Null when valid, else what is wrong. */
export function scopeProblem(scope: string): string | null {
  if (scope === '*' || NAMESPACE.test(scope) || parseIdentityId(scope) !== null) return null;
  return 'scope must be "*", a namespace such as "eng", or an identity id such as "eng/alice"';
}

/** Whether a scope covers an identity: `*`, its namespace, or the identity itself. */
export function scopeCoversIdentity(scope: string, identityId: string): boolean {
  if (scope === '*' || scope === identityId) return true;
  const slash = identityId.indexOf('/');
  return slash > 0 && scope === identityId.slice(0, slash);
}
