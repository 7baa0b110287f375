/**
 * Kubernetes label selectors, as a RuntimePolicy's `spec.namespaceSelector` holds one for the Namespaces it covers.
 * Kept apart from policies.ts so the adapter's hot path loads no Kubernetes client.
 */

/** A Kubernetes label selector (the CRD's `namespaceSelector` without `excludeNamespaces`). */
export interface LabelSelector {
  matchLabels: Record<string, string>;
  matchExpressions: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values: string[] }[];
}

/** Whether the selector selects every namespace (no labels, no expressions). */
export function selectsEverything(selector: LabelSelector): boolean {
  return Object.keys(selector.matchLabels).length === 0 && selector.matchExpressions.length === 0;
}

/** Kubernetes' label selector semantics: every matchLabels pair and every expression hold. */
export function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels)) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    switch (e.operator) {
      case 'In':
        if (!has || !e.values.includes(labels[e.key]!)) return false;
        break;
      case 'NotIn':
        if (has && e.values.includes(labels[e.key]!)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
    }
  }
  return true;
}

