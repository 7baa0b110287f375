/**
 * Identity ids are `<namespace>/<name>`. The namespace follows Kubernetes namespace rules (a DNS label),
 * so an agent's id can name the workload it runs as; the name is a DNS subdomain-like word.
 */
const NAMESPACE = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const NAME = /^[a-z0-9](?:[a-z0-9._-]{0,251}[a-z0-9])?$/;

export interface IdentityIdParts {
  namespace: string;
  name: string;
}

/** Returns the parts, or null when `id` is not a valid identity id. */
export function parseIdentityId(id: string): IdentityIdParts | null {
  const slash = id.indexOf('/');
  if (slash < 0 || slash !== id.lastIndexOf('/')) return null;
  const namespace = id.slice(0, slash);
  const name = id.slice(slash + 1);
  if (!NAMESPACE.test(namespace) || !NAME.test(name)) return null;
  return { namespace, name };
}

export const IDENTITY_ID_RULE =
  'an identity id is <namespace>/<name>: lowercase letters, digits and "-" in the namespace (at most 63), ' +
  'lowercase letters, digits, ".", "_" and "-" in the name, each starting and ending with a letter or digit';
