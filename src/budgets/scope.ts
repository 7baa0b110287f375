/**
 * Scopes of budget and model-access rules: `*` (everyone), a namespace (`eng`) or an identity id
 * (`eng/alice`). Coverage is `scopeCovers` of budget-rules.ts, shared by both kinds of rule.
 */
import { IDENTITY_ID_RULE } from '../shared/ids.js';
import { isScope } from './budget-rules.js';

/** Null when valid, else what is wrong. A namespace follows the identity id's namespace rule. */
export function scopeProblem(scope: string): string | null {
  if (isScope(scope)) return null;
  return `scope must be "*", a namespace such as "eng", or an identity id such as "eng/alice"; ${IDENTITY_ID_RULE}`;
}
