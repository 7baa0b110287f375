/**
 * The replica's in-memory copy of the last day of stored observations, compact enough to answer a 24-hour
 * reconciliation over a million rows without reading them from the store per request.
 *
 * Every field but `count` and `observedAt` is interned as one tuple (pods reach the same few destinations over
 * and over, so a day of rows has far fewer distinct tuples than rows); each row is then three numbers in typed
 * arrays: tuple id, observedAt, count. Field values are interned too, so tuples share their strings.
 *
 * For the engine, tuples are grouped once more by the fields the engine reads (family, namespace, pod name and
 * address, destination name and address, behavior): rows that differ only in rule, subject, result, mode or node
 * land in one engine slot. For a window the rows are summed per slot (counts added, observedAt a time of the slot's
 * inside the window: its latest row's when that is known without a scan, else the window's end). The engine counts
 * events and reads observedAt only to keep a row inside the window, so it answers the same for the sums as for the
 * rows (test/unit/runtime-guard/observation-index.property.test.ts).
 *
 * Summing a window without reading every row: each slot keeps the totals of all its rows, and the rows are listed
 * per five minutes ("period") of observedAt. A window sums the rows of the periods it covers, or starts from the
 * totals and takes away the rows of the periods outside it, whichever reads fewer rows; only the rows of the two
 * boundary periods are checked one by one. A 24-hour window over an index that keeps 24 h 5 min reads about one row
 * in a hundred. (Hours were read first: the two boundary hours alone were a twelfth of the day's rows, 450,000 reads
 * at 5,000,000 rows.)
 *
 * Eviction follows the same period lists: a row that ages out is taken off its slot's totals and its tuple's count
 * and marked dead where it lies, so dropping a minute of rows costs that minute's rows, not the day's. The arrays
 * are compacted only once half their rows are dead (a few typed-array passes), and the tuples, slots and strings
 * are rebuilt only once half the tuples have no row left (pods replaced by a rollout). Rebuilding everything on
 * every eviction held a replica with three million rows for 20 CPU seconds once a minute.
 */
import type { Observation, ObservationFamily, ReconciliationWindow } from './types.js';

/** An observation without the two numbers that vary from row to row. */
export type ObservationTuple = Omit<Observation, 'count' | 'observedAt'>;

const NO_SLOT = 0xffffffff;
/** `tupleOf` of a dead row (evicted, not yet compacted away). */
const DEAD = 0xffffffff;
const BUCKET_SECONDS = 300;
const FEEDS_ENGINE: ReadonlySet<ObservationFamily> = new Set(['dns', 'network']);

/** The tuple's fields in key order, as store columns: the store builds the same key in SQL. */
export const TUPLE_KEY_COLUMNS = [
  'family',
  'namespace',
  'pod_name',
  'pod_ip',
  'dest_ip',
  'dest_name',
  'behavior',
  'node',
  'rule',
  'subject',
  'result',
  'mode',
] as const;

/** Fields joined with U+0001, which no stored field contains (ingest replaces control characters). */
function tupleKey(o: ObservationTuple): string {
  return `${engineKey(o)}\u0001${o.node}\u0001${o.rule}\u0001${o.subject}\u0001${o.result}\u0001${o.mode}`;
}

/** The fields the engine reads, besides count and observedAt. */
function engineKey(o: ObservationTuple): string {
  return `${o.family}\u0001${o.namespace}\u0001${o.podName}\u0001${o.podIP}\u0001${o.destIP}\u0001${o.destName}\u0001${o.behavior}`;
}

/**
 * A slot's observation, every field written in one literal: all slots then share one hidden class, so the engine's
 * reads of them stay monomorphic. (Built with a spread, each slot got a map of its own and some fell back to
 * dictionary mode, which made every field read of the engine's first pass several times slower.) `count` and
 * `observedAt` start as doubles, the representation `aggregate` writes.
 */
function engineSlot(t: ObservationTuple): Observation {
  return {
    rule: t.rule,
    behavior: t.behavior,
    subject: t.subject,
    destIP: t.destIP,
    destName: t.destName,
    count: 0.5,
    node: t.node,
    podName: t.podName,
    podIP: t.podIP,
    namespace: t.namespace,
    result: t.result,
    mode: t.mode,
    observedAt: 0.5,
    family: t.family,
  };
}

function grown<T extends Uint32Array<ArrayBuffer> | Int32Array<ArrayBuffer> | Float64Array<ArrayBuffer>>(a: T, size: number): T {
  const b = new (a.constructor as new (n: number) => T)(size);
  b.set(a);
  return b;
}

/** The rows (their positions) observed in one period (BUCKET_SECONDS), every family. */
interface Bucket {
  rows: Int32Array<ArrayBuffer>;
  length: number;
}

export class ObservationIndex {
  /** @param compactAfterDead dead rows below which the arrays are never compacted (tests set 0 to compact often) */
  constructor(private readonly compactAfterDead = 1024) {}

  private tuples: ObservationTuple[] = [];
  private byKey = new Map<string, number>();
  /** Tuple id -> engine slot, NO_SLOT for families the engine does not read. */
  private slotOf = new Uint32Array(1024);
  /** One reusable observation per engine slot: `aggregate` writes its count and observedAt. */
  private slots: Observation[] = [];
  private slotByKey = new Map<string, number>();
  /**
   * Engine slots per pod (namespace, pod name, pod address), in order of the pods' first appearance: `aggregate` hands
   * out a pod's observations one after the other, so the engine finds the pod once per run of them.
   */
  private podSlots: number[][] = [];
  private podSlotsByKey = new Map<string, number[]>();
  private strings = new Map<string, string>();
  private tupleOf = new Uint32Array(1024);
  /** The row's engine slot (its tuple's), kept per row so that `aggregate` reads one array, not two. */
  private rowSlot = new Uint32Array(1024);
  private observedAt = new Float64Array(1024);
  private counts = new Uint32Array(1024);
  private length = 0;
  /** Rows among the first `length` that were evicted and not yet compacted away. */
  private dead = 0;
  /** Per tuple, its rows held; a tuple with none stays interned until `collectTuples`. */
  private tupleRows = new Uint32Array(1024);
  private liveTuples = 0;
  private oldest = Infinity;
  /** Per engine slot, over every row held: counts summed, rows, latest observedAt. */
  private slotTotal = new Float64Array(1024);
  private slotRows = new Uint32Array(1024);
  private slotLatest = new Float64Array(1024);
  /**
   * `aggregate`'s working arrays and its answer, kept from one call to the next: at 5,000,000 rows they are 20 MB a
   * call (the sums and row counts per slot, the list of slots), and allocated afresh they pushed the replica into
   * full collections of a heap that holds the day's index. The answer is rewritten by the next call (its slot
   * objects already were).
   */
  private scratchSums = new Float64Array(0);
  private scratchRows = new Uint32Array(0);
  private scratchLatest = new Float64Array(0);
  private readonly answer: Observation[] = [];
  /** Period (observedAt / BUCKET_SECONDS, floored) -> its rows. */
  private buckets = new Map<number, Bucket>();

  /** Rows held. */
  get size(): number {
    return this.length - this.dead;
  }

  /** Distinct tuples with a row held. */
  get tupleCount(): number {
    return this.liveTuples;
  }

  /** Distinct observations the engine can be handed (dns and network tuples, up to the fields it ignores). */
  get engineSlotCount(): number {
    return this.slots.length;
  }

  /** The earliest observedAt held (Infinity when empty). */
  get oldestObservedAt(): number {
    return this.oldest;
  }

  private intern(s: string): string {
    const known = this.strings.get(s);
    if (known !== undefined) return known;
    this.strings.set(s, s);
    return s;
  }

  private addTuple(o: ObservationTuple, key: string): number {
    const id = this.tuples.length;
    const tuple: ObservationTuple = {
      rule: this.intern(o.rule),
      behavior: this.intern(o.behavior),
      subject: this.intern(o.subject),
      destIP: this.intern(o.destIP),
      destName: this.intern(o.destName),
      node: this.intern(o.node),
      podName: this.intern(o.podName),
      podIP: this.intern(o.podIP),
      namespace: this.intern(o.namespace),
      result: this.intern(o.result),
      mode: this.intern(o.mode),
      family: o.family,
    };
    this.tuples.push(tuple);
    this.byKey.set(key, id);
    if (id >= this.slotOf.length) {
      this.slotOf = grown(this.slotOf, this.slotOf.length * 2);
      this.tupleRows = grown(this.tupleRows, this.tupleRows.length * 2);
    }
    this.tupleRows[id] = 0;
    let slot = NO_SLOT;
    if (FEEDS_ENGINE.has(tuple.family)) {
      const ek = engineKey(tuple);
      const known = this.slotByKey.get(ek);
      if (known !== undefined) {
        slot = known;
      } else {
        slot = this.slots.length;
        this.slots.push(engineSlot(tuple));
        if (slot >= this.slotTotal.length) {
          this.slotTotal = grown(this.slotTotal, this.slotTotal.length * 2);
          this.slotRows = grown(this.slotRows, this.slotRows.length * 2);
          this.slotLatest = grown(this.slotLatest, this.slotLatest.length * 2);
        }
        this.slotByKey.set(ek, slot);
        const podKey = `${tuple.namespace}\u0001${tuple.podName}\u0001${tuple.podIP}`;
        let ofPod = this.podSlotsByKey.get(podKey);
        if (!ofPod) {
          this.podSlotsByKey.set(podKey, (ofPod = []));
          this.podSlots.push(ofPod);
        }
        ofPod.push(slot);
      }
    }
    this.slotOf[id] = slot;
    return id;
  }

  add(o: Observation): void {
    const key = tupleKey(o);
    this.push(this.byKey.get(key) ?? this.addTuple(o, key), o.count, o.observedAt);
  }

  /**
   * A row given by its tuple key (`tupleKeyColumns` joined with U+0001, as the store can build it in SQL): a row
   * of a known tuple costs one map lookup and no object. Fields never contain U+0001 (ingest replaces control
   * characters).
   */
  addKeyed(key: string, count: number, observedAt: number): void {
    let tupleId = this.byKey.get(key);
    if (tupleId === undefined) {
      const f = key.split('\u0001');
      const tuple: ObservationTuple = {
        family: f[0] as ObservationFamily,
        namespace: f[1]!,
        podName: f[2]!,
        podIP: f[3]!,
        destIP: f[4]!,
        destName: f[5]!,
        behavior: f[6]!,
        node: f[7]!,
        rule: f[8]!,
        subject: f[9]!,
        result: f[10]!,
        mode: f[11]!,
      };
      tupleId = this.addTuple(tuple, key);
    }
    this.push(tupleId, count, observedAt);
  }

  private push(tupleId: number, count: number, observedAt: number): void {
    if (this.length === this.tupleOf.length) {
      const size = this.length * 2;
      this.tupleOf = grown(this.tupleOf, size);
      this.rowSlot = grown(this.rowSlot, size);
      this.observedAt = grown(this.observedAt, size);
      this.counts = grown(this.counts, size);
    }
    this.tupleOf[this.length] = tupleId;
    this.rowSlot[this.length] = this.slotOf[tupleId]!;
    this.observedAt[this.length] = observedAt;
    this.counts[this.length] = count;
    this.length += 1;
    if (this.tupleRows[tupleId] === 0) this.liveTuples += 1;
    this.tupleRows[tupleId] = this.tupleRows[tupleId]! + 1;
    this.recordRow(this.length - 1);
  }

  /** The row in its period's list and, for the engine's families, in its slot's totals. */
  private recordRow(row: number): void {
    const at = this.observedAt[row]!;
    if (at < this.oldest) this.oldest = at;
    const period = Math.floor(at / BUCKET_SECONDS);
    let bucket = this.buckets.get(period);
    if (!bucket) this.buckets.set(period, (bucket = { rows: new Int32Array(256), length: 0 }));
    if (bucket.length === bucket.rows.length) bucket.rows = grown(bucket.rows, bucket.length * 2);
    bucket.rows[bucket.length++] = row;
    const slot = this.rowSlot[row]!;
    if (slot === NO_SLOT) return;
    this.slotTotal[slot] = this.slotTotal[slot]! + this.counts[row]!;
    this.slotRows[slot] = this.slotRows[slot]! + 1;
    if (this.slotRows[slot] === 1 || at > this.slotLatest[slot]!) this.slotLatest[slot] = at;
  }

  /**
   * The engine's input for a window: one observation per engine slot with a row inside it, its count the sum of
   * those rows' counts and its observedAt the latest of them. Only `dns` and `network`, the families the engine
   * reads; bounds inclusive, as the engine's.
   *
   * The objects and the array are the index's own and are rewritten by the next call: hand them to the engine in the same
   * synchronous step, and keep nothing of them.
   */
  aggregate(window: ReconciliationWindow): readonly Observation[] {
    const { windowStartUnix: start, windowEndUnix: end } = window;
    const slotCount = this.slots.length;
    const firstPeriod = Math.floor(start / BUCKET_SECONDS);
    const lastPeriod = Math.floor(end / BUCKET_SECONDS);
    let inside = 0;
    let outside = 0;
    for (const [period, bucket] of this.buckets) {
      if (period >= firstPeriod && period <= lastPeriod) inside += bucket.length;
      else outside += bucket.length;
    }
    const { rowSlot, observedAt, counts } = this;
    let sums: Float64Array;
    let rows: Uint32Array;
    /** Per slot, its latest row inside the window when known (`exact`), else taken from the totals below. */
    let latest: Float64Array;
    const exact = outside >= inside;
    if (this.scratchSums.length < slotCount) {
      const size = Math.max(slotCount, Math.ceil(this.scratchSums.length * 1.5));
      this.scratchSums = new Float64Array(size);
      this.scratchRows = new Uint32Array(size);
      this.scratchLatest = new Float64Array(size);
    }
    if (exact) {
      // Few rows inside (a short window): sum them.
      sums = this.scratchSums.fill(0, 0, slotCount);
      rows = this.scratchRows.fill(0, 0, slotCount);
      latest = this.scratchLatest.fill(0, 0, slotCount);
      for (const [period, bucket] of this.buckets) {
        if (period < firstPeriod || period > lastPeriod) continue;
        const edge = period === firstPeriod || period === lastPeriod;
        const list = bucket.rows;
        for (let j = 0; j < bucket.length; j++) {
          const i = list[j]!;
          const at = observedAt[i]!;
          if (edge && (at < start || at > end)) continue;
          const slot = rowSlot[i]!;
          if (slot === NO_SLOT) continue;
          if (rows[slot] === 0 || at > latest[slot]!) latest[slot] = at;
          rows[slot] = rows[slot]! + 1;
          sums[slot] = sums[slot]! + counts[i]!;
        }
      }
    } else {
      // Most rows inside (the 24-hour window): the totals, less the rows outside.
      sums = this.scratchSums;
      sums.set(this.slotTotal.subarray(0, slotCount));
      rows = this.scratchRows;
      rows.set(this.slotRows.subarray(0, slotCount));
      latest = this.slotLatest;
      for (const [period, bucket] of this.buckets) {
        const edge = period === firstPeriod || period === lastPeriod;
        if (!edge && period >= firstPeriod && period <= lastPeriod) continue;
        const list = bucket.rows;
        for (let j = 0; j < bucket.length; j++) {
          const i = list[j]!;
          const at = observedAt[i]!;
          if (edge && at >= start && at <= end) continue;
          const slot = rowSlot[i]!;
          if (slot === NO_SLOT) continue;
          rows[slot] = rows[slot]! - 1;
          sums[slot] = sums[slot]! - counts[i]!;
        }
      }
    }
    // Pod by pod (the engine's answer does not depend on the order; its first pass is faster this way).
    const out = this.answer;
    out.length = 0;
    for (const ofPod of this.podSlots) {
      for (let j = 0; j < ofPod.length; j++) {
        const slot = ofPod[j]!;
        if (rows[slot] === 0) continue;
        const o = this.slots[slot]!;
        o.count = sums[slot]!;
        // From the totals, the slot's latest row may lie outside the window: any time inside it answers the same.
        const at = latest[slot]!;
        o.observedAt = exact || (at >= start && at <= end) ? at : end;
        out.push(o);
      }
    }
    return out;
  }

  /** The rows of the window, as stored, whose tuple `matches` (asked once per tuple), every family. */
  select(window: ReconciliationWindow, matches: (tuple: ObservationTuple) => boolean): Observation[] {
    const { windowStartUnix: start, windowEndUnix: end } = window;
    // 0 not asked yet, 1 matches, 2 does not.
    const verdict = new Uint8Array(this.tuples.length);
    const out: Observation[] = [];
    for (let i = 0; i < this.length; i++) {
      const at = this.observedAt[i]!;
      if (at < start || at > end) continue;
      const t = this.tupleOf[i]!;
      if (t === DEAD) continue;
      let v = verdict[t]!;
      if (v === 0) verdict[t] = v = matches(this.tuples[t]!) ? 1 : 2;
      if (v === 2) continue;
      out.push({ ...this.tuples[t]!, count: this.counts[i]!, observedAt: at });
    }
    return out;
  }

  /**
   * Drops the rows observed before `cutoffUnix`, reading only the periods that hold them; the tuples, slots and
   * strings nothing uses any more go once they are half of all (see the top of this file).
   */
  evictBefore(cutoffUnix: number): number {
    if (this.oldest >= cutoffUnix) return 0;
    const cutoffPeriod = Math.floor(cutoffUnix / BUCKET_SECONDS);
    const { observedAt } = this;
    let dropped = 0;
    for (const [period, bucket] of this.buckets) {
      if (period > cutoffPeriod) continue;
      const list = bucket.rows;
      let kept = 0;
      for (let j = 0; j < bucket.length; j++) {
        const i = list[j]!;
        if (observedAt[i]! < cutoffUnix) {
          this.kill(i);
          dropped += 1;
        } else {
          list[kept++] = i;
        }
      }
      // Deleting the entry being visited is allowed while iterating a Map.
      if (kept === 0) this.buckets.delete(period);
      else bucket.length = kept;
    }
    this.dead += dropped;
    this.oldest = this.earliestHeld();
    if (this.dead > this.compactAfterDead && this.dead * 2 > this.length) this.compact();
    return dropped;
  }

  /** Takes the row off its slot's totals and its tuple's count, and marks it dead in place. */
  private kill(row: number): void {
    const slot = this.rowSlot[row]!;
    if (slot !== NO_SLOT) {
      this.slotTotal[slot] = this.slotTotal[slot]! - this.counts[row]!;
      this.slotRows[slot] = this.slotRows[slot]! - 1;
    }
    const t = this.tupleOf[row]!;
    this.tupleRows[t] = this.tupleRows[t]! - 1;
    if (this.tupleRows[t] === 0) this.liveTuples -= 1;
    this.tupleOf[row] = DEAD;
    this.rowSlot[row] = NO_SLOT;
    this.observedAt[row] = -Infinity;
    this.counts[row] = 0;
  }

  /** The earliest observedAt of the rows held: the earliest period's list holds it. */
  private earliestHeld(): number {
    let first = Infinity;
    for (const period of this.buckets.keys()) if (period < first) first = period;
    const bucket = this.buckets.get(first);
    if (!bucket) return Infinity;
    let earliest = Infinity;
    for (let j = 0; j < bucket.length; j++) {
      const at = this.observedAt[bucket.rows[j]!]!;
      if (at < earliest) earliest = at;
    }
    return earliest;
  }

  /** Moves the live rows together, in their order, and renumbers the period lists; then collects tuples if due. */
  private compact(): void {
    const newPosition = new Int32Array(this.length);
    let kept = 0;
    for (let i = 0; i < this.length; i++) {
      const t = this.tupleOf[i]!;
      if (t === DEAD) continue;
      // In place: `kept` never overtakes `i`.
      this.tupleOf[kept] = t;
      this.rowSlot[kept] = this.rowSlot[i]!;
      this.observedAt[kept] = this.observedAt[i]!;
      this.counts[kept] = this.counts[i]!;
      newPosition[i] = kept;
      kept += 1;
    }
    this.length = kept;
    this.dead = 0;
    for (const bucket of this.buckets.values()) {
      for (let j = 0; j < bucket.length; j++) bucket.rows[j] = newPosition[bucket.rows[j]!]!;
    }
    if (this.liveTuples * 2 < this.tuples.length) this.collectTuples();
  }

  /**
   * Interns the tuples that still have rows anew (their slots, pods and strings with them) and renumbers the rows'
   * tuples and slots; the rows stay where they are, so the period lists stay valid. Called on a compacted index.
   */
  private collectTuples(): void {
    const oldTuples = this.tuples;
    const oldRows = this.tupleRows;
    this.tuples = [];
    this.byKey = new Map();
    this.slotOf = new Uint32Array(1024);
    this.tupleRows = new Uint32Array(1024);
    this.slots = [];
    this.slotByKey = new Map();
    this.podSlots = [];
    this.podSlotsByKey = new Map();
    this.strings = new Map();
    this.slotTotal = new Float64Array(1024);
    this.slotRows = new Uint32Array(1024);
    this.slotLatest = new Float64Array(1024);
    const renumbered = new Uint32Array(oldTuples.length);
    for (let t = 0; t < oldTuples.length; t++) {
      if (oldRows[t] === 0) continue;
      const tuple = oldTuples[t]!;
      const id = this.addTuple(tuple, tupleKey(tuple));
      renumbered[t] = id;
      this.tupleRows[id] = oldRows[t]!;
    }
    this.liveTuples = this.tuples.length;
    for (let i = 0; i < this.length; i++) {
      const t = renumbered[this.tupleOf[i]!]!;
      this.tupleOf[i] = t;
      const slot = this.slotOf[t]!;
      this.rowSlot[i] = slot;
      if (slot === NO_SLOT) continue;
      const at = this.observedAt[i]!;
      this.slotTotal[slot] = this.slotTotal[slot]! + this.counts[i]!;
      this.slotRows[slot] = this.slotRows[slot]! + 1;
      if (this.slotRows[slot] === 1 || at > this.slotLatest[slot]!) this.slotLatest[slot] = at;
    }
  }
}
