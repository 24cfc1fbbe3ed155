// The pure half of the compact vector store (workers/compact-store.ts): int8 codes of every row in
// memory (n × P bytes, P = dim rounded up to 16: 384 MB at 1M × 384), scanned in full for each
// query, and exact rescoring of the best R candidates from the float32 rows kept outside the tab's
// memory (OPFS). The quantiser is ivf.ts's (per-dimension scales s_d = max |x_d| / 127, codes
// clamp(round(x_d / s_d))), and so is the int8 score of a row, Σ_d (q_d·s_d)·c_d; here the query
// side q_d·s_d is itself rounded to integers (one scale per query, QMAX levels), so that a row's
// score is an exact integer sum that the wasm SIMD kernel (workers/int8-kernel.ts) and the JS
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
 * The rows of the `R` highest integer scores among `scores[0 … n − 1]` (ties: the lower row), not in
 * `exclude`; returned in ascending row order (the order the rows are then read in).
 */
export function topCandidates(
  scores: Int32Array,
  n: number,
  R: number,
  exclude?: ReadonlySet<number> | null,
): Int32Array {
  // A min-heap of the R best (score, row) seen, the worst at the root: lower score, or on equal
  // scores the higher row. Rows arrive in ascending order, so a newcomer that only ties the root is
  // worse than it and is skipped with one comparison (the common case over a million rows).
  const hs = new Int32Array(R);
  const hr = new Int32Array(R);
  let size = 0;
  const worse = (i: number, j: number) => hs[i] < hs[j] || (hs[i] === hs[j] && hr[i] > hr[j]);
  const swap = (i: number, j: number) => {
    const ts = hs[i];
    hs[i] = hs[j];
    hs[j] = ts;
    const tr = hr[i];
    hr[i] = hr[j];
    hr[j] = tr;
  };
  for (let r = 0; r < n; r++) {
    const sc = scores[r];
    if (size === R && sc <= hs[0]) continue;
    if (R === 0 || exclude?.has(r)) continue;
    if (size < R) {
      let i = size++;
      hs[i] = sc;
      hr[i] = r;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!worse(i, p)) break;
        swap(i, p);
        i = p;
      }
    } else {
      hs[0] = sc;
      hr[0] = r;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        if (l >= size) break;
        const c = l + 1 < size && worse(l + 1, l) ? l + 1 : l;
        if (!worse(c, i)) break;
        swap(i, c);
        i = c;
      }
    }
  }
  return hr.slice(0, size).sort();
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
