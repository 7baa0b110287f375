/**
 * The replica's in-memory copy of the last day of stored observations, compact enough to answer a 24-hour
 * reconciliation over a million rows without reading them from the store per request.
 *
 * Every field but `count` and `observedAt` is interned as one tuple (pods reach the same few destinations over
 * and over, so a day of rows has far fewer distinct tuples than rows); each row is then three numbers in typed
 * arrays: tuple id, observedAt, count. A tuple is itself a pair of numbers: its group (the fields the engine reads:
 * family, namespace, pod name and address, destination name and address, behavior) and its rest (node, rule,
 * subject, result, mode), each interned by its key string. No object per tuple: at 20,000 workloads a day holds a
 * million tuples, and as objects with their keys they were 400 MB of the heap every full collection marks.
 *
 * For the engine, each group of `dns` or `network` is one engine slot: rows that differ only in rule, subject,
 * result, mode or node land in one slot. For a window the rows are summed per slot (counts added, observedAt a time of the slot's
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

/**
 * A tuple's key is two strings: its group (the fields the engine reads) and the rest. The store builds the same two
 * keys in SQL from these columns, joined with U+0001, which no stored field contains (ingest replaces control
 * characters).
 */
export const GROUP_KEY_COLUMNS = ['family', 'namespace', 'pod_name', 'pod_ip', 'dest_ip', 'dest_name', 'behavior'] as const;
export const REST_KEY_COLUMNS = ['node', 'rule', 'subject', 'result', 'mode'] as const;

/** The fields the engine reads, besides count and observedAt: one engine slot per distinct group (dns, network). */
function groupKey(o: ObservationTuple): string {
  return `${o.family}\u0001${o.namespace}\u0001${o.podName}\u0001${o.podIP}\u0001${o.destIP}\u0001${o.destName}\u0001${o.behavior}`;
}

function restKey(o: ObservationTuple): string {
  return `${o.node}\u0001${o.rule}\u0001${o.subject}\u0001${o.result}\u0001${o.mode}`;
}

/** The tuple of a group key and a rest key (the keys' fields, in GROUP_KEY_COLUMNS and REST_KEY_COLUMNS order). */
function tupleOfKeys(group: string, rest: string): ObservationTuple {
  const g = group.split('\u0001');
  const r = rest.split('\u0001');
  return {
    family: g[0] as ObservationFamily,
    namespace: g[1] ?? '',
    podName: g[2] ?? '',
    podIP: g[3] ?? '',
    destIP: g[4] ?? '',
    destName: g[5] ?? '',
    behavior: g[6] ?? '',
    node: r[0] ?? '',
    rule: r[1] ?? '',
    subject: r[2] ?? '',
    result: r[3] ?? '',
    mode: r[4] ?? '',
  };
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

/**
 * A string of its own, for a key the index keeps. The table tail hands over keys that are views into the text of a
 * whole batch of rows (observation-store.ts reads 20,000 rows as one string and slices it in place, so that a row's
 * keys cost no copy), and V8 keeps a view's whole text alive as long as the view: a kept key is copied once, when
 * first seen.
 */
function ownCopy(s: string): string {
  return Buffer.from(s, 'utf8').toString('utf8');
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

/** Where a (group, rest) pair starts its probe in the tuples' hash table (`mask` = its size - 1). */
function pairHash(group: number, rest: number, mask: number): number {
  // Both numbers multiplied by odd constants, then the high bits folded down (murmur3's finaliser): ids are dense,
  // and the low bits of a product alone depend only on the low bits of the id.
  let h = Math.imul(group, 0x9e3779b1) ^ Math.imul(rest + 1, 0x85ebca77);
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  return h & mask;
}

export class ObservationIndex {
  /** @param compactAfterDead dead rows below which the arrays are never compacted (tests set 0 to compact often) */
  constructor(private readonly compactAfterDead = 1024) {}

  /*
   * Tuples are pairs of numbers: a group (the engine's fields) and a rest (node, rule, subject, result, mode), each
   * interned by its key string. A day at 20,000 workloads holds about a million tuples but a third as many groups and
   * a few thousand rests: kept as objects and 150-character keys, the tuples were half the replica's heap, which the
   * collector marks on every full collection (bench/reconciliation). Pairs live in typed arrays and an
   * open-addressing table, which the collector does not trace.
   */
  private groupKeys: string[] = [];
  private groupByKey = new Map<string, number>();
  /** Group -> its engine slot, NO_SLOT for families the engine does not read. */
  private groupSlot = new Uint32Array(1024);
  private restKeys: string[] = [];
  private restByKey = new Map<string, number>();
  private tupleGroup = new Uint32Array(1024);
  private tupleRest = new Uint32Array(1024);
  private tupleTotal = 0;
  /** Open addressing, linear probing: tuple id + 1, 0 for an empty place; at most half full. */
  private tupleTable = new Int32Array(2048);
  /** One reusable observation per engine slot: `aggregate` writes its count and observedAt. */
  private slots: Observation[] = [];
  /**
   * Engine slots per pod (namespace, pod name, pod address), in order of the pods' first appearance: `aggregate` hands
   * out a pod's observations one after the other, so the engine finds the pod once per run of them.
   */
  private podSlots: number[][] = [];
  private podSlotsByKey = new Map<string, number[]>();
  /** The slots' field values, shared between slots. */
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

  /**
   * The group of a key, interned (with its engine slot) on first sight; `rest` gives the slot its other fields.
   * `owned`: the key is one the index kept before (collectTuples), no view to copy.
   */
  private group(found: string, rest: string, owned = false): number {
    const known = this.groupByKey.get(found);
    if (known !== undefined) return known;
    const key = owned ? found : ownCopy(found);
    const id = this.groupKeys.length;
    this.groupKeys.push(key);
    this.groupByKey.set(key, id);
    if (id >= this.groupSlot.length) this.groupSlot = grown(this.groupSlot, this.groupSlot.length * 2);
    const family = key.slice(0, key.indexOf('\u0001'));
    let slot = NO_SLOT;
    if (FEEDS_ENGINE.has(family as ObservationFamily)) {
      const t = tupleOfKeys(key, rest);
      slot = this.slots.length;
      this.slots.push(
        engineSlot({
          rule: this.intern(t.rule),
          behavior: this.intern(t.behavior),
          subject: this.intern(t.subject),
          destIP: this.intern(t.destIP),
          destName: this.intern(t.destName),
          node: this.intern(t.node),
          podName: this.intern(t.podName),
          podIP: this.intern(t.podIP),
          namespace: this.intern(t.namespace),
          result: this.intern(t.result),
          mode: this.intern(t.mode),
          family: t.family,
        }),
      );
      if (slot >= this.slotTotal.length) {
        this.slotTotal = grown(this.slotTotal, this.slotTotal.length * 2);
        this.slotRows = grown(this.slotRows, this.slotRows.length * 2);
        this.slotLatest = grown(this.slotLatest, this.slotLatest.length * 2);
      }
      const podKey = `${t.namespace}\u0001${t.podName}\u0001${t.podIP}`;
      let ofPod = this.podSlotsByKey.get(podKey);
      if (!ofPod) {
        this.podSlotsByKey.set(podKey, (ofPod = []));
        this.podSlots.push(ofPod);
      }
      ofPod.push(slot);
    }
    this.groupSlot[id] = slot;
    return id;
  }

  private rest(found: string, owned = false): number {
    let id = this.restByKey.get(found);
    if (id === undefined) {
      const key = owned ? found : ownCopy(found);
      id = this.restKeys.length;
      this.restKeys.push(key);
      this.restByKey.set(key, id);
    }
    return id;
  }

  /** The tuple of a (group, rest) pair, added on first sight. */
  private tuple(group: number, rest: number): number {
    const table = this.tupleTable;
    const mask = table.length - 1;
    let at = pairHash(group, rest, mask);
    for (;;) {
      const entry = table[at]!;
      if (entry === 0) break;
      if (this.tupleGroup[entry - 1] === group && this.tupleRest[entry - 1] === rest) return entry - 1;
      at = (at + 1) & mask;
    }
    const id = this.tupleTotal++;
    if (id >= this.tupleGroup.length) {
      const size = this.tupleGroup.length * 2;
      this.tupleGroup = grown(this.tupleGroup, size);
      this.tupleRest = grown(this.tupleRest, size);
      this.tupleRows = grown(this.tupleRows, size);
    }
    this.tupleGroup[id] = group;
    this.tupleRest[id] = rest;
    this.tupleRows[id] = 0;
    table[at] = id + 1;
    if (this.tupleTotal * 2 > table.length) this.rehash(table.length * 2);
    return id;
  }

  private rehash(size: number): void {
    const table = new Int32Array(size);
    const mask = size - 1;
    for (let id = 0; id < this.tupleTotal; id++) {
      let at = pairHash(this.tupleGroup[id]!, this.tupleRest[id]!, mask);
      while (table[at] !== 0) at = (at + 1) & mask;
      table[at] = id + 1;
    }
    this.tupleTable = table;
  }

  add(o: Observation): void {
    this.addKeyed(groupKey(o), restKey(o), o.count, o.observedAt);
  }

  /**
   * A row given by its two keys (GROUP_KEY_COLUMNS and REST_KEY_COLUMNS joined with U+0001, as the store builds them
   * in SQL): a row of a known tuple costs two map lookups and a probe, and no object.
   */
  addKeyed(group: string, rest: string, count: number, observedAt: number): void {
    // The rest first: a new group's slot takes its fields from the rest key as kept (a copy of its own, see ownCopy).
    const restId = this.rest(rest);
    this.push(this.tuple(this.group(group, this.restKeys[restId]!), restId), count, observedAt);
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
    this.rowSlot[this.length] = this.groupSlot[this.tupleGroup[tupleId]!]!;
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
    // Per tuple: undefined not asked yet, null does not match, else its fields (built from its keys once).
    const asked: Array<ObservationTuple | null | undefined> = new Array(this.tupleTotal);
    const out: Observation[] = [];
    for (let i = 0; i < this.length; i++) {
      const at = this.observedAt[i]!;
      if (at < start || at > end) continue;
      const t = this.tupleOf[i]!;
      if (t === DEAD) continue;
      let tuple = asked[t];
      if (tuple === undefined) {
        const fields = tupleOfKeys(this.groupKeys[this.tupleGroup[t]!]!, this.restKeys[this.tupleRest[t]!]!);
        asked[t] = tuple = matches(fields) ? fields : null;
      }
      if (tuple === null) continue;
      out.push({ ...tuple, count: this.counts[i]!, observedAt: at });
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
    if (this.liveTuples * 2 < this.tupleTotal) this.collectTuples();
  }

  /**
   * Interns the tuples that still have rows anew (their slots, pods and strings with them) and renumbers the rows'
   * tuples and slots; the rows stay where they are, so the period lists stay valid. Called on a compacted index.
   */
  private collectTuples(): void {
    const oldGroupKeys = this.groupKeys;
    const oldRestKeys = this.restKeys;
    const oldGroup = this.tupleGroup;
    const oldRest = this.tupleRest;
    const oldRows = this.tupleRows;
    const oldTotal = this.tupleTotal;
    this.groupKeys = [];
    this.groupByKey = new Map();
    this.groupSlot = new Uint32Array(1024);
    this.restKeys = [];
    this.restByKey = new Map();
    this.tupleGroup = new Uint32Array(1024);
    this.tupleRest = new Uint32Array(1024);
    this.tupleRows = new Uint32Array(1024);
    this.tupleTotal = 0;
    this.tupleTable = new Int32Array(2048);
    this.slots = [];
    this.podSlots = [];
    this.podSlotsByKey = new Map();
    this.strings = new Map();
    this.slotTotal = new Float64Array(1024);
    this.slotRows = new Uint32Array(1024);
    this.slotLatest = new Float64Array(1024);
    const renumbered = new Uint32Array(oldTotal);
    for (let t = 0; t < oldTotal; t++) {
      if (oldRows[t] === 0) continue;
      const rest = oldRestKeys[oldRest[t]!]!;
      const id = this.tuple(this.group(oldGroupKeys[oldGroup[t]!]!, rest, true), this.rest(rest, true));
      renumbered[t] = id;
      this.tupleRows[id] = oldRows[t]!;
    }
    this.liveTuples = this.tupleTotal;
    for (let i = 0; i < this.length; i++) {
      const t = renumbered[this.tupleOf[i]!]!;
      this.tupleOf[i] = t;
      const slot = this.groupSlot[this.tupleGroup[t]!]!;
      this.rowSlot[i] = slot;
      if (slot === NO_SLOT) continue;
      const at = this.observedAt[i]!;
      this.slotTotal[slot] = this.slotTotal[slot]! + this.counts[i]!;
      this.slotRows[slot] = this.slotRows[slot]! + 1;
      if (this.slotRows[slot] === 1 || at > this.slotLatest[slot]!) this.slotLatest[slot] = at;
    }
  }
}
