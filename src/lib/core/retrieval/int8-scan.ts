// The pure half of the compact vector store (workers/index/compact-store.ts): int8 codes of every row in
// memory (n × P bytes, P = dim rounded up to 16: 384 MB at 1M × 384), scanned in full for each
// query, and exact rescoring of the best R candidates from the float32 rows kept outside the tab's
// memory (OPFS). The quantiser is ivf.ts's (per-dimension scales s_d = max |x_d| / 127, codes
// clamp(round(x_d / s_d))), and so is the int8 score of a row, Σ_d (q_d·s_d)·c_d; here the query
// side q_d·s_d is itself rounded to integers (one scale per query, QMAX levels), so that a row's
// score is an exact integer sum that the wasm SIMD kernel (workers/kernels/int8-kernel.ts) and the JS
// reference below compute identically. Ranking by that integer is ranking by
// Σ_d (q_d·s_d)·c_d up to the query's rounding, which the rescoring of R ≫ k candidates absorbs.
import { encodeValue, quantiserScales } from './ivf';
import { TopK, type TieBreak } from './topk';

/** Row width of the codes: dim rounded up to a multiple of 16 (one 128-bit lane of int8), zero-padded. */
export function int8Width(dim: number): number {
  return Math.ceil(dim / 16) * 16;
}

/**
 * Largest query code for rows P wide: P · 127 · QMAX must stay below 2³¹ (the kernel's int32 sums
 * cannot overflow), and int16 holds it. 32,767 for every P up to 516.
 */
export function queryQmax(P: number): number {
  return Math.min(32_767, Math.floor((2 ** 31 - 1) / (P * 127)));
}

/** Running per-dimension max |x_d| over rows that arrive in batches (the first pass of a build). */
export class ScaleAccumulator {
  readonly maxAbs: Float32Array;
  rows = 0;
  constructor(readonly dim: number) {
    this.maxAbs = new Float32Array(dim);
  }
  /** Takes `rows` (m × dim, row-major) into the maxima. */
  observe(rows: Float32Array): void {
    const { dim, maxAbs } = this;
    if (rows.length % dim !== 0) throw new RangeError(`${rows.length} values is not a multiple of ${dim}`);
    for (let o = 0; o < rows.length; o += dim)
      for (let j = 0; j < dim; j++) {
        const a = Math.abs(rows[o + j]);
        if (a > maxAbs[j]) maxAbs[j] = a;
      }
    this.rows += rows.length / dim;
  }
  /** ivf.ts's scales of every row observed: quantiserScales of the one row of maxima gives the same s_d. */
  scales(): Float32Array {
    return quantiserScales(this.maxAbs, 1, this.dim);
  }
}

/**
 * int8 codes of `rows` (m × dim) at `scales` into `out`, row i at byte (at + i) · P, the padding
 * zeroed (ivf.ts's encodeValue per value).
 */
export function encodeRows(
  rows: Float32Array,
  dim: number,
  scales: Float32Array,
  out: Int8Array,
  at: number,
): void {
  const P = int8Width(dim);
  const m = rows.length / dim;
  for (let i = 0; i < m; i++) {
    const o = i * dim;
    const c = (at + i) * P;
    for (let j = 0; j < dim; j++) out[c + j] = encodeValue(rows[o + j], scales[j]);
    for (let j = dim; j < P; j++) out[c + j] = 0;
  }
}

/**
 * Integer query codes: qs_d = q_d · s_d (ivf.ts's scoreList), rounded at one scale t = max |qs_d| /
 * QMAX into `out` (P wide, padding zeroed). Returns t (0 for an all-zero query): the int8 score of a
 * row is then ≈ t · Σ_d out_d · c_d.
 */
export function quantiseQuery(
  q: Float32Array,
  qo: number,
  dim: number,
  scales: Float32Array,
  out: Int16Array,
): number {
  const P = int8Width(dim);
  const qmax = queryQmax(P);
  let max = 0;
  for (let j = 0; j < dim; j++) max = Math.max(max, Math.abs(q[qo + j] * scales[j]));
  const t = max > 0 ? max / qmax : 0;
  for (let j = 0; j < dim; j++)
    out[j] = t > 0 ? Math.max(-qmax, Math.min(qmax, Math.round((q[qo + j] * scales[j]) / t))) : 0;
  out.fill(0, dim, P);
  return t;
}

/**
 * The reference scan: Σ_d qc_d · codes[r·P + d] for rows first … first + count − 1 into
 * `out[0 … count − 1]`. The wasm kernel must give the same integers.
 */
export function scanJs(
  codes: Int8Array,
  first: number,
  count: number,
  P: number,
  qc: Int16Array,
  out: Int32Array,
): void {
  for (let r = 0; r < count; r++) {
    const o = (first + r) * P;
    let s = 0;
    for (let j = 0; j < P; j++) s += qc[j] * codes[o + j];
    out[r] = s;
  }
}

/**
 * The `R` highest integer scores seen, with their rows (ties: the lower row), offered block by
 * block in ascending row order (so a scan can select from each block of scores while it is still
 * in cache, without a score array over every row).
 *
 * A buffer of up to 4R (score, row) pairs in row order and a threshold: a score enters only above
 * the threshold (one comparison per row, the common case over a million rows); when the buffer is
 * full it is cut to the best R, and the threshold becomes the R-th best score. A later row that
 * only ties the threshold is worse than every row kept at it (rows arrive in ascending order), so
 * strict comparison is exact.
 */
export class CandidateHeap {
  private readonly bs: Int32Array;
  private readonly br: Int32Array;
  private size = 0;
  private threshold = -(2 ** 31);
  private pruned = false;

  constructor(readonly R: number) {
    const cap = Math.max(4 * R, 1024);
    this.bs = new Int32Array(cap);
    this.br = new Int32Array(cap);
  }

  /** Rows first … first + count − 1 with `scores[0 … count − 1]`, those in `exclude` skipped. */
  offer(scores: Int32Array, count: number, first: number, exclude?: ReadonlySet<number> | null): void {
    if (this.R === 0) return;
    const { bs, br } = this;
    const cap = bs.length;
    let size = this.size;
    let thr = this.threshold;
    // Until the first cut every score enters (ties at −2³¹ included).
    let open = !this.pruned;
    for (let o = 0; o < count; o++) {
      const sc = scores[o];
      if (sc <= thr && !(open && sc === thr)) continue;
      const r = first + o;
      if (exclude?.has(r)) continue;
      bs[size] = sc;
      br[size] = r;
      if (++size === cap) {
        this.size = size;
        this.cut();
        size = this.size;
        thr = this.threshold;
        open = false;
      }
    }
    this.size = size;
  }

  /** Cuts the buffer to its best R, in row order; the threshold becomes the R-th best score. */
  private cut(): void {
    const { bs, br, R } = this;
    const size = this.size;
    if (size <= R) return;
    const sorted = bs.slice(0, size).sort();
    const v = sorted[size - R];
    let above = 0;
    for (let i = size - R + 1; i < size; i++) if (sorted[i] > v) above++;
    // All scores above v stay, and the lowest rows among those equal to v (the buffer is in row order).
    let ties = R - above;
    let w = 0;
    for (let i = 0; i < size; i++) {
      const sc = bs[i];
      if (sc > v || (sc === v && ties-- > 0)) {
        bs[w] = sc;
        br[w] = br[i];
        w++;
      }
    }
    this.size = w;
    this.threshold = v;
    this.pruned = true;
  }

  /** The rows kept, in ascending row order, and their scores in the same order. */
  result(): { rows: Int32Array; scores: Int32Array } {
    this.cut();
    return { rows: this.br.slice(0, this.size), scores: this.bs.slice(0, this.size) };
  }
}

/**
 * The rows of the `R` highest integer scores among `scores[0 … n − 1]` (ties: the lower row), not in
 * `exclude`; returned in ascending row order (the order the rows are then read in).
 */
export function topCandidates(
  scores: Int32Array,
  n: number,
  R: number,
  exclude?: ReadonlySet<number> | null,
): Int32Array {
  const heap = new CandidateHeap(R);
  heap.offer(scores, n, 0, exclude);
  return heap.result().rows;
}

/**
 * Exact top-k from the candidates' float32 rows (`rows`: candidates.length × dim, in the
 * candidates' order), with exactScore's arithmetic (float64 sum in index order, rounded to float32)
 * and the corpus's tie order: the same scores, and for candidates that hold the true top k the same
 * ids, as exact search over the full matrix.
 */
export function rescoreCandidates(
  q: Float32Array,
  qo: number,
  dim: number,
  candidates: Int32Array,
  rows: Float32Array,
  k: number,
  tieBreak: TieBreak,
): { index: number; score: number }[] {
  const top = new TopK(k, tieBreak);
  for (let i = 0; i < candidates.length; i++) {
    let s = 0;
    for (let j = 0, o = i * dim; j < dim; j++) s += q[qo + j] * rows[o + j];
    top.push(Math.fround(s), candidates[i]);
  }
  return top.drain();
}
