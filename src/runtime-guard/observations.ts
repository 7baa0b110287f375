/** Grouping of raw observations for `GET /api/v1/runtime/workloads/{key}/observations`, by signal family. */
import type { Observation, ObservationFamily, ObservationItem } from './types.js';

export interface FamilyInfo {
  family: ObservationFamily;
  heading: string;
  needsBpfLsm: boolean;
  feedsBypassedDestinations: boolean;
}

/** The spec's table, in its order. */
export const OBSERVATION_FAMILIES: readonly FamilyInfo[] = [
  { family: 'dns', heading: 'Names resolved (DNS)', needsBpfLsm: false, feedsBypassedDestinations: true },
  { family: 'network', heading: 'Destinations reached (network)', needsBpfLsm: false, feedsBypassedDestinations: true },
  { family: 'open', heading: 'Paths opened (file)', needsBpfLsm: true, feedsBypassedDestinations: false },
  { family: 'exec', heading: 'Binaries executed (exec)', needsBpfLsm: true, feedsBypassedDestinations: false },
  { family: 'other', heading: 'Other observations', needsBpfLsm: false, feedsBypassedDestinations: false },
];

export interface ObservationGroup extends FamilyInfo {
  items: ObservationItem[];
}

export function toObservationItem(o: Observation): ObservationItem {
  return {
    rule: o.rule,
    behavior: o.behavior,
    subject: o.subject,
    destIP: o.destIP,
    destName: o.destName,
    count: o.count,
    node: o.node,
    podName: o.podName,
    namespace: o.namespace,
    result: o.result,
    mode: o.mode,
    observedAt: o.observedAt,
  };
}

/**
 * All five families in the spec's order, each with its items newest first. Empty families are kept so a
 * console can say why `open` and `exec` are empty (they need BPF-LSM) instead of hiding them.
 * An unknown family value lands in `other`.
 */
export function groupObservations(items: readonly Observation[]): ObservationGroup[] {
  const byFamily = new Map<ObservationFamily, Observation[]>(OBSERVATION_FAMILIES.map((f) => [f.family, []]));
  for (const item of items) (byFamily.get(item.family) ?? byFamily.get('other')!).push(item);
  return OBSERVATION_FAMILIES.map((info) => ({
    ...info,
    // Array.prototype.sort is stable: equal times keep their arrival order.
    items: [...byFamily.get(info.family)!].sort((a, b) => b.observedAt - a.observedAt).map(toObservationItem),
  }));
}
