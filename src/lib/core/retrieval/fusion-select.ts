// The top docs of a fused query in trec_eval's order (fusion-methods.ts), and the scratch arrays the
// methods score into. Pure: no DOM, no Node APIs.
import { compareBytes } from '../eval/metrics';
import type { ScoredDoc } from '../types';

// Scratch arrays reused from query to query (fused scores, kept flags, sort keys): every result is
// copied into the output's ScoredDoc objects before the next query overwrites them.
let scratchScores = new Float64Array(1024);
let scratchKeys = new Float64Array(1024);
let scratchKeep = new Uint8Array(1024);

/** Scratch fused scores and kept flags (all 1) for a query of `n` docs. */
export function scratch(n: number): { scores: Float64Array; keep: Uint8Array } {
  if (scratchScores.length < n) {
    const size = Math.max(n, 2 * scratchScores.length);
    scratchScores = new Float64Array(size);
    scratchKeep = new Uint8Array(size);
  }
  return { scores: scratchScores.subarray(0, n), keep: scratchKeep.subarray(0, n).fill(1) };
}

/** The k-th largest value of `a` (1 ≤ k ≤ a.length), by quickselect; reorders `a`. */
function kthLargest(a: Float64Array, k: number): number {
  const target = a.length - k; // its index in ascending order
  let lo = 0;
  let hi = a.length - 1;
  while (lo < hi) {
    // Median of three as the pivot, then a three-way partition: < pivot, = pivot, > pivot.
    const mid = (lo + hi) >> 1;
    const x = a[lo];
    const y = a[mid];
    const z = a[hi];
    const pivot = x < y ? (y < z ? y : x < z ? z : x) : x < z ? x : y < z ? z : y;
    let lt = lo;
    let gt = hi;
    let i = lo;
    while (i <= gt) {
      const v = a[i];
      if (v < pivot) {
        a[i++] = a[lt];
        a[lt++] = v;
      } else if (v > pivot) {
        a[i] = a[gt];
        a[gt--] = v;
      } else i++;
    }
    if (target < lt) hi = lt - 1;
    else if (target > gt) lo = gt + 1;
    else return pivot;
  }
  return a[target];
}

/**
 * The kept docs in trec_eval order (exactly `rankQuery`'s: fused score descending, compared as float32
 * with `float32`, NaN last, equal scores by docno descending), cut to `depth`. Works on indices and
 * makes objects for the returned docs only; a cut list is first selected (a heap for a short cut,
 * the depth-th largest score by quickselect for a long one), so only the kept docs are sorted. `unsorted`: the same
 * docs, in no particular order (for runs that `evaluate` orders again anyway).
 */
export function topDocs(
  ids: readonly string[],
  scores: Float64Array,
  keep: Uint8Array,
  depth: number,
  float32: boolean,
  unsorted = false,
): ScoredDoc[] {
  const n = ids.length;
  if (scratchKeys.length < n) scratchKeys = new Float64Array(Math.max(n, 2 * scratchKeys.length));
  const key = scratchKeys;
  let kept = 0;
  for (let i = 0; i < n; i++) {
    if (!keep[i]) continue;
    const s = scores[i];
    key[i] = Number.isNaN(s) ? -Infinity : float32 ? Math.fround(s) : s;
    kept++;
  }
  // before(x, y): x comes before y. Ids are unique in a query, so this is a strict total order.
  const before = (x: number, y: number): boolean => {
    if (key[x] !== key[y]) return key[x] > key[y];
    const nx = Number.isNaN(scores[x]);
    if (nx !== Number.isNaN(scores[y])) return !nx;
    return compareBytes(ids[x], ids[y]) > 0;
  };
  const cmp = (x: number, y: number) => (x === y ? 0 : before(x, y) ? -1 : 1);
  let idx: number[];
  if (kept > depth && 16 * depth <= kept) {
    // A short cut: a min-heap of the best `depth` so far (heap[0] comes last of them); most docs are
    // turned away by one comparison with its key.
    const heap: number[] = [];
    const down = (i: number) => {
      for (;;) {
        const l = 2 * i + 1;
        if (l >= heap.length) return;
        const c = l + 1 < heap.length && before(heap[l], heap[l + 1]) ? l + 1 : l;
        if (!before(heap[i], heap[c])) return;
        [heap[c], heap[i]] = [heap[i], heap[c]];
        i = c;
      }
    };
    for (let i = 0; i < n; i++) {
      if (!keep[i]) continue;
      if (heap.length < depth) {
        heap.push(i);
        for (let j = heap.length - 1; j > 0;) {
          const p = (j - 1) >> 1;
          if (!before(heap[p], heap[j])) break;
          [heap[p], heap[j]] = [heap[j], heap[p]];
          j = p;
        }
      } else if (key[i] >= key[heap[0]] && before(i, heap[0])) {
        heap[0] = i;
        down(0);
      }
    }
    idx = heap;
  } else if (kept > depth) {
    // A long cut: the depth-th largest key is the threshold; every doc above it is in, and the docs
    // tied at it are taken in rankQuery's order (NaN flag, then docno) until `depth` are in.
    const keys = new Float64Array(kept);
    for (let i = 0, j = 0; i < n; i++) if (keep[i]) keys[j++] = key[i];
    const threshold = kthLargest(keys, depth);
    const tied: number[] = [];
    idx = [];
    for (let i = 0; i < n; i++)
      if (!keep[i]) continue;
      else if (key[i] > threshold) idx.push(i);
      else if (key[i] === threshold) tied.push(i);
    tied.sort(cmp);
    for (let j = 0; idx.length < depth; j++) idx.push(tied[j]);
  } else {
    idx = [];
    for (let i = 0; i < n; i++) if (keep[i]) idx.push(i);
  }
  if (!unsorted) idx.sort(cmp);
  const out: ScoredDoc[] = [];
  for (let r = 0; r < idx.length && r < depth; r++) out.push({ docId: ids[idx[r]], score: scores[idx[r]] });
  return out;
}
