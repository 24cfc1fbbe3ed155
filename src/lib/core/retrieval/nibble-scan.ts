// The compact vector store's two-pass scan (workers/index/compact-store.ts), pure half. The int8 codes of
// int8-scan.ts (c_d in −127 … 127, ivf.ts's quantiser) are kept split into two planes of 4-bit
// nibbles, the same 384 MB at 1M × 384:
//
//   high plane  u_d = (c_d >> 4) + 8   (0 … 15: the code's top four bits, offset to unsigned)
//   low plane   l_d = c_d & 15         (0 … 15)                so that c_d = 16 · (u_d − 8) + l_d.
//
// A query first scans the high plane of every row (half the bytes of the int8 codes): the score
// A = Σ_d q_d · u_d is a 4-bit coarse score (16 · A, less a constant per query, is the int8 score
// with each code's low bits dropped). Its best `candidates` rows then get B = Σ_d q_d · l_d from the
// low plane, which makes Σ_d q_d · c_d = 16 · A + B − 128 · Σ_d q_d exactly: int8-scan's score of
// those rows (with the query rounded to nibbleQmax levels). The best R of them are rescored from
// the float32 rows as before, so scores stay exact and ids are exact search's whenever the true
// top k survive both cuts (recall@10 against exact: `npm run bench:vectors`).
//
// Layout, chosen for the wasm SIMD kernel (workers/kernels/nibble-kernel.ts): dimensions in groups of 32,
// one 16-byte lane per group and plane; byte i of group g holds dimension 32g + i in its low four
// bits and 32g + 16 + i in its high four bits. A plane row is W = 16 · ⌈dim / 32⌉ bytes (192 at
// 384), padded with code 0 (u = 8, l = 0, against query code 0).
import { encodeValue } from './ivf';

/** Best rows of the 4-bit first pass that get their full int8 score (the second pass). */
export const FIRST_PASS_CANDIDATES = 2000;

/** Bytes of one row in one plane: 16 per group of 32 dimensions. */
export function nibbleWidth(dim: number): number {
  return Math.ceil(dim / 32) * 16;
}

/** Where dimension d's nibble sits in a plane row: byte and shift (0: low four bits, 4: high). */
export function nibbleAt(d: number): { byte: number; shift: 0 | 4 } {
  const g = d >> 5;
  const i = d & 31;
  return { byte: 16 * g + (i & 15), shift: i < 16 ? 0 : 4 };
}

/**
 * The two planes of `rows` (m × dim) at `scales` into `hi` and `lo`, row i at byte (at + i) · W,
 * padding as code 0. The codes are int8-scan's encodeRows codes (ivf.ts's encodeValue).
 */
export function encodeNibbleRows(
  rows: Float32Array,
  dim: number,
  scales: Float32Array,
  hi: Uint8Array,
  lo: Uint8Array,
  at: number,
): void {
  const W = nibbleWidth(dim);
  const m = rows.length / dim;
  // One row's codes, padded with code 0 to whole groups, then packed two per byte.
  const c = new Int8Array(2 * W);
  for (let i = 0; i < m; i++) {
    const o = i * dim;
    for (let d = 0; d < dim; d++) c[d] = encodeValue(rows[o + d], scales[d]);
    const base = (at + i) * W;
    for (let g = 0; g < W; g += 16)
      for (let b = 0; b < 16; b++) {
        const x = c[2 * g + b];
        const y = c[2 * g + 16 + b];
        hi[base + g + b] = ((x >> 4) + 8) | (((y >> 4) + 8) << 4);
        lo[base + g + b] = (x & 15) | ((y & 15) << 4);
      }
  }
}

/** Row r's int8 code of dimension d, read back from the planes (c = 16 · (u − 8) + l). */
export function nibbleCode(hi: Uint8Array, lo: Uint8Array, W: number, r: number, d: number): number {
  const { byte, shift } = nibbleAt(d);
  const u = (hi[r * W + byte] >> shift) & 15;
  const l = (lo[r * W + byte] >> shift) & 15;
  return 16 * (u - 8) + l;
}

/**
 * Largest query code for plane rows W bytes wide: the relaxed kernel sums each int16 lane over
 * 4 products of at most 15 · qmax per group of 32 dimensions, W / 16 groups, which must stay within
 * 32,767; and an int8 holds it. 45 at 384 dimensions, 127 up to 96.
 */
export function nibbleQmax(W: number): number {
  return Math.min(127, Math.floor(32_767 / (4 * (W / 16) * 15)));
}

/**
 * Query codes for the planes: q_d · s_d (ivf.ts's scoreList) rounded at one scale t = max |q_d ·
 * s_d| / qmax into `out` (2W long, padding zeroed), qmax = nibbleQmax(W). Returns t (0 for an
 * all-zero query).
 */
export function quantiseQueryNibbles(
  q: Float32Array,
  qo: number,
  dim: number,
  scales: Float32Array,
  out: Int8Array,
): number {
  const qmax = nibbleQmax(nibbleWidth(dim));
  let max = 0;
  for (let j = 0; j < dim; j++) max = Math.max(max, Math.abs(q[qo + j] * scales[j]));
  const t = max > 0 ? max / qmax : 0;
  for (let j = 0; j < dim; j++)
    out[j] = t > 0 ? Math.max(-qmax, Math.min(qmax, Math.round((q[qo + j] * scales[j]) / t))) : 0;
  out.fill(0, dim);
  return t;
}

/**
 * The reference scan of one plane: Σ_d q_d · nibble_d for rows first … first + count − 1 into
 * `out[0 … count − 1]` (q: 2W int8 query codes). The wasm kernels must give the same integers.
 */
export function scanNibblesJs(
  plane: Uint8Array,
  first: number,
  count: number,
  W: number,
  q: Int8Array,
  out: Int32Array,
): void {
  for (let r = 0; r < count; r++) {
    const o = (first + r) * W;
    let s = 0;
    for (let b = 0; b < W; b++) {
      const v = plane[o + b];
      const d = 2 * (b & ~15) + (b & 15);
      s += q[d] * (v & 15) + q[d + 16] * (v >> 4);
    }
    out[r] = s;
  }
}

/**
 * The int8 scores of candidate rows from their two plane sums: 16 · A + B (the query's constant
 * −128 · Σ q_d left out: the order is what counts). Written over `a`.
 */
export function combinePlanes(a: Int32Array, b: Int32Array, count: number): Int32Array {
  for (let i = 0; i < count; i++) a[i] = 16 * a[i] + b[i];
  return a;
}
