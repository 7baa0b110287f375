/**
 * BPF-LSM on this node: the `open` and `exec` families need it (spec "Observation item"). The kernel lists its
 * active security modules, comma-separated, in `/sys/kernel/security/lsm` (the host's, mounted into the pod).
 */
import { readFile } from 'node:fs/promises';

export interface LsmState {
  bpfLsm: 'available' | 'unavailable' | 'unknown';
  reason: string;
}

export async function readBpfLsm(path: string): Promise<LsmState> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    return { bpfLsm: 'unknown', reason: `cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? String(err)}): open and exec cannot be observed` };
  }
  const modules = text.trim().split(',').map((m) => m.trim()).filter(Boolean);
  return modules.includes('bpf')
    ? { bpfLsm: 'available', reason: `bpf listed in ${path}` }
    : { bpfLsm: 'unavailable', reason: `bpf not listed in ${path} (${modules.join(',') || 'empty'}): boot the node with lsm=...,bpf to observe open and exec` };
}
