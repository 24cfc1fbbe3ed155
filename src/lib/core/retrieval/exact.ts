// Exact (brute-force) dense retrieval: the ground truth every approximate index is measured against.
// Pure TypeScript over typed arrays: runs the same in Node tests, workers and the page.
//
// Layout: a matrix is row-major, `data[row * dim + j]`, one row per document or query. Scores are
// inner products (cosine when rows are L2-normalised: see normalizeRows). Each score is accumulated
// in float64 and rounded to float32 before ranking, so two documents whose float32 scores are equal
// are ordered by the tie-break (never by invisible float64 digits), exactly as a consumer that
// re-sorts the stored float32 scores trec_eval's way would order them.
//
// Tie order: score descending, then the TieBreak over document indices. trecTieBreak(ids) gives
// trec_eval's order (equal scores: document id descending in UTF-8 byte order); the default puts
// the lower document index first.
import { TopK, compareUtf8, type TieBreak } from './topk';

/** A row-major float32 matrix: `n` rows of `dim` values. */
export interface Matrix {
  data: Float32Array;
  n: number;
  dim: number;
}

/** Top-k results of many queries, flattened: row q holds `counts[q]` hits at `q * k …`, best first. */
export interface KnnResult {
  /** Row stride (the k asked for). */
  k: number;
  /** Number of queries. */
  nq: number;
  /** Document indices; -1 past `counts[q]`. */
  indices: Int32Array;
  /** Scores (higher is better); -Infinity past `counts[q]`. */
  scores: Float32Array;
  /** Hits actually returned per query (fewer than k when the corpus minus exclusions is smaller). */
  counts: Uint32Array;
}

/** Per-query excluded document indices (a query's own image, known duplicates…). */
export type Exclusions = ReadonlyArray<ArrayLike<number> | null | undefined>;

export interface ExactOptions {
  k: number;
  /** Order of equal scores; default: lower document index first. */
  tieBreak?: TieBreak;
  /** `exclude[q]`: document indices never returned for query q. */
  exclude?: Exclusions;
  /** QUERY_TILE override: queries per cache tile. */
  queryTile?: number;
  /** DOC_TILE override: documents per cache tile. */
  docTile?: number;
}

/** QUERY_TILE: queries kept hot per tile (64 × 384 floats = 96 KiB, an L2-sized working set). */
export const QUERY_TILE = 64;
/** DOC_TILE: documents scored per tile against the query tile (256 × 384 floats = 384 KiB). */
export const DOC_TILE = 256;

/** Lower document index first among equal scores (TopK's own default). */
export const indexTieBreak: TieBreak = (a, b) => b - a;

/**
 * trec_eval's order among equal scores: document id descending in UTF-8 byte order (trec_eval sorts
 * by score, then docno with strcmp, both descending). Precomputes a rank per index once.
 */
export function trecTieBreak(docIds: readonly string[]): TieBreak {
  const order = Array.from(docIds.keys()).sort((a, b) => compareUtf8(docIds[a], docIds[b]));
  const rank = new Uint32Array(docIds.length);
  order.forEach((d, r) => (rank[d] = r));
  return (a, b) => rank[a] - rank[b];
}

/** Checks a matrix's shape against its data; returns it. */
export function matrix(data: Float32Array, n: number, dim: number): Matrix {
  if (!Number.isInteger(n) || n < 0 || !Number.isInteger(dim) || dim <= 0)
    throw new RangeError(`bad matrix shape (${n}, ${dim})`);
  if (data.length !== n * dim)
    throw new RangeError(`matrix (${n}, ${dim}) needs ${n * dim} values, got ${data.length}`);
  return { data, n, dim };
}

/** L2-normalises every row in place (zero rows stay zero); returns the same matrix. */
export function normalizeRows(m: Matrix): Matrix {
  const { data, n, dim } = m;
  for (let r = 0; r < n; r++) {
    const o = r * dim;
    let s = 0;
    for (let j = 0; j < dim; j++) s += data[o + j] * data[o + j];
    if (s > 0) {
      const inv = 1 / Math.sqrt(s);
      for (let j = 0; j < dim; j++) data[o + j] *= inv;
    }
  }
  return m;
}

/** A result with no hits yet: ids −1, scores −∞, counts 0. */
export function emptyResult(nq: number, k: number): KnnResult {
  return {
    k,
    nq,
    indices: new Int32Array(nq * k).fill(-1),
    scores: new Float32Array(nq * k).fill(-Infinity),
    counts: new Uint32Array(nq),
  };
}

/** k itself when it is a non-negative integer; throws otherwise. */
export function checkK(k: number): number {
  if (!Number.isInteger(k) || k < 0) throw new RangeError(`k must be a non-negative integer, got ${k}`);
  return k;
}

function exclusionSets(exclude: Exclusions | undefined, nq: number): (Set<number> | null)[] {
  const out: (Set<number> | null)[] = new Array(nq).fill(null);
  if (!exclude) return out;
  for (let q = 0; q < nq; q++) {
    const e = exclude[q];
    if (e && e.length > 0) out[q] = new Set(Array.from(e));
  }
  return out;
}

function drainInto(out: KnnResult, q: number, top: TopK): void {
  const hits = top.drain();
  const o = q * out.k;
  for (let i = 0; i < hits.length; i++) {
    out.indices[o + i] = hits[i].index;
    out.scores[o + i] = hits[i].score;
  }
  out.counts[q] = hits.length;
}

/**
 * Scores a tile: `out[(q - q0) * stride + (d - d0)] = Q[q] · D[d]` for q in [q0, q1), d in [d0, d1).
 * Register-blocked four queries × two documents (each loaded value is used 2–4 times), float64
 * accumulation, stored as float32 (that store is the rounding described above). `Q` is padded to a
 * multiple of four rows; rows of the padding are scored and ignored.
 */
function scoreTileF32(
  D: Float32Array,
  Q: Float32Array,
  dim: number,
  q0: number,
  q1: number,
  d0: number,
  d1: number,
  out: Float32Array,
  stride: number,
): void {
  for (let q = q0; q < q1; q += 4) {
    const a = q * dim;
    const b = a + dim;
    const c = b + dim;
    const e = c + dim;
    const r0 = (q - q0) * stride - d0;
    const r1 = r0 + stride;
    const r2 = r1 + stride;
    const r3 = r2 + stride;
    let d = d0;
    for (; d + 1 < d1; d += 2) {
      const o = d * dim;
      const p = o + dim;
      let s0 = 0,
        s1 = 0,
        s2 = 0,
        s3 = 0,
        t0 = 0,
        t1 = 0,
        t2 = 0,
        t3 = 0;
      for (let j = 0; j < dim; j++) {
        const x = D[o + j];
        const y = D[p + j];
        const qa = Q[a + j];
        const qb = Q[b + j];
        const qc = Q[c + j];
        const qd = Q[e + j];
        s0 += qa * x;
        s1 += qb * x;
        s2 += qc * x;
        s3 += qd * x;
        t0 += qa * y;
        t1 += qb * y;
        t2 += qc * y;
        t3 += qd * y;
      }
      out[r0 + d] = s0;
      out[r1 + d] = s1;
      out[r2 + d] = s2;
      out[r3 + d] = s3;
      out[r0 + d + 1] = t0;
      out[r1 + d + 1] = t1;
      out[r2 + d + 1] = t2;
      out[r3 + d + 1] = t3;
    }
    if (d < d1) {
      const o = d * dim;
      let s0 = 0,
        s1 = 0,
        s2 = 0,
        s3 = 0;
      for (let j = 0; j < dim; j++) {
        const x = D[o + j];
        s0 += Q[a + j] * x;
        s1 += Q[b + j] * x;
        s2 += Q[c + j] * x;
        s3 += Q[e + j] * x;
      }
      out[r0 + d] = s0;
      out[r1 + d] = s1;
      out[r2 + d] = s2;
      out[r3 + d] = s3;
    }
  }
}

/** scoreTileF32 over int8 codes; `rowScale` (per-vector scales) multiplies each document's scores. */
function scoreTileI8(
  D: Int8Array,
  Q: Float32Array,
  dim: number,
  q0: number,
  q1: number,
  d0: number,
  d1: number,
  out: Float32Array,
  stride: number,
  rowScale: Float32Array | null,
): void {
  for (let q = q0; q < q1; q += 4) {
    const a = q * dim;
    const b = a + dim;
    const c = b + dim;
    const e = c + dim;
    const r0 = (q - q0) * stride - d0;
    const r1 = r0 + stride;
    const r2 = r1 + stride;
    const r3 = r2 + stride;
    for (let d = d0; d < d1; d++) {
      const o = d * dim;
      let s0 = 0,
        s1 = 0,
        s2 = 0,
        s3 = 0;
      for (let j = 0; j < dim; j++) {
        const x = D[o + j];
        s0 += Q[a + j] * x;
        s1 += Q[b + j] * x;
        s2 += Q[c + j] * x;
        s3 += Q[e + j] * x;
      }
      const f = rowScale === null ? 1 : rowScale[d];
      out[r0 + d] = s0 * f;
      out[r1 + d] = s1 * f;
      out[r2 + d] = s2 * f;
      out[r3 + d] = s3 * f;
    }
  }
}

/**
 * Drives the tiles: for each query tile × document tile, `score` fills the scratch block, then
 * every query's heap takes the tile's scores (skipping its exclusions).
 */
function runTiles(
  nq: number,
  n: number,
  queryTile: number,
  docTile: number,
  tops: TopK[],
  ex: (Set<number> | null)[],
  score: (q0: number, q1: number, d0: number, d1: number, out: Float32Array, stride: number) => void,
): void {
  const qt4 = Math.max(4, Math.ceil(queryTile / 4) * 4);
  const scratch = new Float32Array(qt4 * docTile);
  for (let q0 = 0; q0 < nq; q0 += qt4) {
    const qEnd = Math.min(nq, q0 + qt4);
    const q1 = q0 + Math.ceil((qEnd - q0) / 4) * 4;
    for (let d0 = 0; d0 < n; d0 += docTile) {
      const d1 = Math.min(n, d0 + docTile);
      score(q0, q1, d0, d1, scratch, docTile);
      for (let q = q0; q < qEnd; q++) {
        const top = tops[q];
        const e = ex[q];
        const r = (q - q0) * docTile - d0;
        for (let d = d0; d < d1; d++) {
          if (e !== null && e.has(d)) continue;
          top.push(scratch[r + d], d);
        }
      }
    }
  }
}

function selectors(nq: number, k: number, tieBreak: TieBreak): TopK[] {
  return Array.from({ length: nq }, () => new TopK(k, tieBreak));
}

function finish(tops: TopK[], k: number): KnnResult {
  const out = emptyResult(tops.length, k);
  tops.forEach((t, q) => drainInto(out, q, t));
  return out;
}

/** Pads a query matrix to a multiple of four rows (the kernels read four queries at a time). */
function padQueries(data: Float32Array, nq: number, dim: number): Float32Array {
  const rows = Math.ceil(nq / 4) * 4;
  if (rows === nq) return data;
  const out = new Float32Array(rows * dim);
  out.set(data.subarray(0, nq * dim));
  return out;
}

/**
 * Exact top-k by inner product for every query: blocked dot products, one bounded heap per query,
 * ties by `tieBreak`, optional per-query exclusions. Memory beyond the inputs: O(nq · k).
 */
export function exactSearch(docs: Matrix, queries: Matrix, opts: ExactOptions): KnnResult {
  const k = checkK(opts.k);
  if (docs.dim !== queries.dim)
    throw new RangeError(`query dimension ${queries.dim} differs from document dimension ${docs.dim}`);
  const { n, dim } = docs;
  const nq = queries.n;
  const tops = selectors(nq, k, opts.tieBreak ?? indexTieBreak);
  if (k === 0 || n === 0 || nq === 0) return finish(tops, k);
  const D = docs.data;
  const Q = padQueries(queries.data, nq, dim);
  runTiles(
    nq,
    n,
    opts.queryTile ?? QUERY_TILE,
    opts.docTile ?? DOC_TILE,
    tops,
    exclusionSets(opts.exclude, nq),
    (q0, q1, d0, d1, out, stride) => scoreTileF32(D, Q, dim, q0, q1, d0, d1, out, stride),
  );
  return finish(tops, k);
}

/** The exact score of one (query row, document row) pair, rounded to float32 like exactSearch's. */
export function exactScore(docs: Matrix, d: number, queries: Matrix, q: number): number {
  const dim = docs.dim;
  const o = d * dim;
  const p = q * dim;
  let s = 0;
  for (let j = 0; j < dim; j++) s += queries.data[p + j] * docs.data[o + j];
  return Math.fround(s);
}

// ---------------------------------------------------------------------------------------------
// Int8 scalar quantization

/**
 * How int8 codes are scaled (symmetric, zero maps to zero, code = round(x / scale) in [-127, 127]):
 * - `per-dimension`: one scale per column, max |x[·, j]| / 127. Best when dimensions have different
 *   ranges (typical of embedding models); the query absorbs the scales: score = Σ (q_j·s_j)·c_j.
 * - `per-vector`: one scale per row, max |x[i, ·]| / 127. Robust to rows of different norms
 *   (unnormalised inner-product models); score = s_i · Σ q_j·c_ij.
 */
export type Int8Scheme = 'per-dimension' | 'per-vector';

export interface Int8Matrix {
  codes: Int8Array;
  n: number;
  dim: number;
  scheme: Int8Scheme;
  /** `dim` scales (per-dimension) or `n` scales (per-vector). */
  scales: Float32Array;
}

/** Quantizes a float matrix to int8 codes (one byte per value, plus the scales). */
export function quantizeInt8(m: Matrix, scheme: Int8Scheme = 'per-dimension'): Int8Matrix {
  const { data, n, dim } = m;
  const codes = new Int8Array(n * dim);
  const scales = new Float32Array(scheme === 'per-dimension' ? dim : n);
  if (scheme === 'per-dimension') {
    for (let i = 0; i < n; i++)
      for (let j = 0; j < dim; j++) scales[j] = Math.max(scales[j], Math.abs(data[i * dim + j]));
    for (let j = 0; j < dim; j++) scales[j] = scales[j] / 127;
    for (let i = 0; i < n; i++)
      for (let j = 0; j < dim; j++) {
        const s = scales[j];
        codes[i * dim + j] = s > 0 ? Math.max(-127, Math.min(127, Math.round(data[i * dim + j] / s))) : 0;
      }
  } else {
    for (let i = 0; i < n; i++) {
      const o = i * dim;
      let mx = 0;
      for (let j = 0; j < dim; j++) mx = Math.max(mx, Math.abs(data[o + j]));
      const s = mx / 127;
      scales[i] = s;
      for (let j = 0; j < dim; j++)
        codes[o + j] = s > 0 ? Math.max(-127, Math.min(127, Math.round(data[o + j] / s))) : 0;
    }
  }
  return { codes, n, dim, scheme, scales };
}

/** Float rows back from int8 codes (for error measurements). */
export function dequantizeInt8(q: Int8Matrix): Matrix {
  const { codes, n, dim, scales } = q;
  const data = new Float32Array(n * dim);
  for (let i = 0; i < n; i++)
    for (let j = 0; j < dim; j++)
      data[i * dim + j] = codes[i * dim + j] * (q.scheme === 'per-dimension' ? scales[j] : scales[i]);
  return { data, n, dim };
}

/**
 * Top-k over int8 codes with float queries (asymmetric: only the corpus is quantized). Scores are
 * approximations of the float inner products; pair with rescore() for exact final scores.
 */
export function searchInt8(docs: Int8Matrix, queries: Matrix, opts: ExactOptions): KnnResult {
  const k = checkK(opts.k);
  if (docs.dim !== queries.dim)
    throw new RangeError(`query dimension ${queries.dim} differs from document dimension ${docs.dim}`);
  const { n, dim, codes, scales } = docs;
  const nq = queries.n;
  const tops = selectors(nq, k, opts.tieBreak ?? indexTieBreak);
  if (k === 0 || n === 0 || nq === 0) return finish(tops, k);
  const Q = padQueries(queries.data, nq, dim).slice();
  const perDim = docs.scheme === 'per-dimension';
  // Per-dimension scales fold into the queries once; per-vector scales multiply each row's scores.
  if (perDim)
    for (let r = 0; r < Q.length / dim; r++) for (let j = 0; j < dim; j++) Q[r * dim + j] *= scales[j];
  const rowScale = perDim ? null : scales;
  runTiles(
    nq,
    n,
    opts.queryTile ?? QUERY_TILE,
    opts.docTile ?? DOC_TILE * 4,
    tops,
    exclusionSets(opts.exclude, nq),
    (q0, q1, d0, d1, out, stride) => scoreTileI8(codes, Q, dim, q0, q1, d0, d1, out, stride, rowScale),
  );
  return finish(tops, k);
}

// ---------------------------------------------------------------------------------------------
// Binary (sign) quantization

/** One bit per dimension (1 when the value is > 0), packed little-endian into 32-bit words. */
export interface BinaryMatrix {
  bits: Uint32Array;
  n: number;
  dim: number;
  /** Words per row: ceil(dim / 32). */
  words: number;
}

/** Sign-quantizes rows: 32× smaller than float32. */
export function quantizeBinary(m: Matrix): BinaryMatrix {
  const { data, n, dim } = m;
  const words = Math.ceil(dim / 32);
  const bits = new Uint32Array(n * words);
  for (let i = 0; i < n; i++)
    for (let j = 0; j < dim; j++) if (data[i * dim + j] > 0) bits[i * words + (j >>> 5)] |= 1 << (j & 31);
  return { bits, n, dim, words };
}

/** Set bits of a 32-bit word (SWAR; JS has no popcount instruction). */
export function popcount32(x: number): number {
  x = x - ((x >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

/**
 * Top-k by Hamming distance between sign codes. The score is `dim - 2·hamming` (agreements minus
 * disagreements, in [-dim, dim]): higher is better, and it is an integer, so ties are common and are
 * ordered by the tie-break. Pair with rescore() for exact final scores.
 */
export function searchHamming(docs: BinaryMatrix, queries: BinaryMatrix, opts: ExactOptions): KnnResult {
  const k = checkK(opts.k);
  if (docs.dim !== queries.dim)
    throw new RangeError(`query dimension ${queries.dim} differs from document dimension ${docs.dim}`);
  const { n, words, bits, dim } = docs;
  const nq = queries.n;
  const tops = selectors(nq, k, opts.tieBreak ?? indexTieBreak);
  if (k === 0 || n === 0 || nq === 0) return finish(tops, k);
  const ex = exclusionSets(opts.exclude, nq);
  const qb = queries.bits;
  const docTile = opts.docTile ?? DOC_TILE * 16;
  for (let dt = 0; dt < n; dt += docTile) {
    const dEnd = Math.min(n, dt + docTile);
    for (let q = 0; q < nq; q++) {
      const e = ex[q];
      const top = tops[q];
      const a = q * words;
      for (let d = dt; d < dEnd; d++) {
        const o = d * words;
        let h = 0;
        for (let w = 0; w < words; w++) h += popcount32(qb[a + w] ^ bits[o + w]);
        if (e !== null && e.has(d)) continue;
        top.push(dim - 2 * h, d);
      }
    }
  }
  return finish(tops, k);
}

// ---------------------------------------------------------------------------------------------
// Rescoring

/** What rescore() needs to compute exact scores: the float corpus and the float queries. */
export interface ExactData {
  docs: Matrix;
  queries: Matrix;
}

/**
 * Exact re-scoring: recomputes the float score of each query's candidates (the top-R of an
 * approximate search: int8, binary, HNSW, GPU) and returns the exact top-k among them, in the same
 * tie order as exactSearch. Candidates equal to -1 and repeats are skipped; exclusions are honoured.
 */
export function rescore(
  candidates: KnnResult,
  exact: ExactData,
  opts: { k: number; tieBreak?: TieBreak; exclude?: Exclusions },
): KnnResult {
  const k = checkK(opts.k);
  const { docs, queries } = exact;
  if (queries.n !== candidates.nq)
    throw new RangeError(`${candidates.nq} candidate lists for ${queries.n} queries`);
  const ex = exclusionSets(opts.exclude, candidates.nq);
  const tieBreak = opts.tieBreak ?? indexTieBreak;
  const out = emptyResult(candidates.nq, k);
  const seen = new Set<number>();
  for (let q = 0; q < candidates.nq; q++) {
    const top = new TopK(k, tieBreak);
    const o = q * candidates.k;
    seen.clear();
    for (let i = 0; i < candidates.counts[q]; i++) {
      const d = candidates.indices[o + i];
      if (d < 0 || d >= docs.n || seen.has(d) || ex[q]?.has(d)) continue;
      seen.add(d);
      top.push(exactScore(docs, d, queries, q), d);
    }
    drainInto(out, q, top);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Evaluation helpers and memory

/** Mean over queries of |approx top-k ∩ exact top-k| / min(k, exact count): recall@k of an ANN run. */
export function recallAtK(approx: KnnResult, exact: KnnResult, k: number): number {
  if (approx.nq !== exact.nq) throw new RangeError(`${approx.nq} approximate lists vs ${exact.nq} exact`);
  if (exact.nq === 0) return 1;
  let sum = 0;
  let counted = 0;
  for (let q = 0; q < exact.nq; q++) {
    const want = Math.min(k, exact.counts[q]);
    if (want === 0) continue;
    const truth = new Set<number>();
    for (let i = 0; i < want; i++) truth.add(exact.indices[q * exact.k + i]);
    let hit = 0;
    const got = Math.min(k, approx.counts[q]);
    for (let i = 0; i < got; i++) if (truth.has(approx.indices[q * approx.k + i])) hit++;
    sum += hit / want;
    counted++;
  }
  return counted === 0 ? 1 : sum / counted;
}

/** Bytes held by a matrix, a quantized matrix or a result. */
export function memoryBytes(x: Matrix | Int8Matrix | BinaryMatrix | KnnResult): number {
  if ('codes' in x) return x.codes.byteLength + x.scales.byteLength;
  if ('bits' in x) return x.bits.byteLength;
  if ('indices' in x) return x.indices.byteLength + x.scores.byteLength + x.counts.byteLength;
  return x.data.byteLength;
}

/**
 * Bytes an exact search needs, before allocating anything: the corpus in the given representation,
 * the queries (float32, padded to four rows) and the per-query heaps and results (≈ 28 bytes per
 * hit). For deciding whether a corpus fits (1M × 384 is 1.5 GiB in float32, 384 MiB in int8).
 */
export function estimateExactBytes(
  n: number,
  dim: number,
  nq: number,
  k: number,
  representation: 'float32' | 'int8' | 'binary' = 'float32',
): number {
  const corpus =
    representation === 'float32'
      ? n * dim * 4
      : representation === 'int8'
        ? n * dim + dim * 4
        : n * Math.ceil(dim / 32) * 4;
  const queryRows = Math.ceil(nq / 4) * 4;
  return corpus + queryRows * dim * 4 + nq * k * (16 + 8 + 4);
}

// ---------------------------------------------------------------------------------------------
// Seeded synthetic workload

/** Options of clusteredVectors(). The defaults behave like sentence embeddings for ANN purposes. */
export interface ClusteredOptions {
  /** Gaussian clusters (default 50). */
  clusters?: number;
  /** Rank of each cluster's own subspace, the data's intrinsic dimension (default 64). */
  rank?: number;
  /** Isotropic noise, relative to the unit-variance cluster centres (default 1). */
  noise?: number;
  seed?: number;
}

/** mulberry32: a small seeded PRNG with uniform output in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Seeded clustered vectors, L2-normalised: row = centre_c + U_c·z + noise·e, with `clusters` random
 * centres, a random rank-`rank` basis per cluster, z and e standard normal. Uniform random vectors
 * are the wrong benchmark for HNSW (every method's recall collapses, ≈ 0.15 at 384-d); real
 * embeddings have a low intrinsic dimension, which the per-cluster subspaces give. The same seed
 * always gives the same matrix; `generator` returns further rows (queries) from the same clusters.
 */
export function clusteredVectors(
  dim: number,
  opts: ClusteredOptions = {},
): { generate: (n: number) => Matrix } {
  const clusters = opts.clusters ?? 50;
  const rank = opts.rank ?? 64;
  const noise = opts.noise ?? 1;
  const rand = mulberry32(opts.seed ?? 1);
  let spare: number | null = null;
  const gauss = () => {
    if (spare !== null) {
      const s = spare;
      spare = null;
      return s;
    }
    let u = 0;
    while (u === 0) u = rand();
    const v = rand();
    const r = Math.sqrt(-2 * Math.log(u));
    spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  };
  const centres = Float32Array.from({ length: clusters * dim }, gauss);
  const scale = 1 / Math.sqrt(rank);
  // bases[c] is dim × rank, row-major.
  const bases = Float32Array.from({ length: clusters * dim * rank }, () => gauss() * scale);
  const z = new Float64Array(rank);
  return {
    generate(n: number): Matrix {
      const data = new Float32Array(n * dim);
      for (let i = 0; i < n; i++) {
        const c = Math.floor(rand() * clusters);
        for (let r = 0; r < rank; r++) z[r] = gauss();
        const o = i * dim;
        const b0 = c * dim * rank;
        for (let j = 0; j < dim; j++) {
          let s = centres[c * dim + j] + noise * gauss();
          const b = b0 + j * rank;
          for (let r = 0; r < rank; r++) s += bases[b + r] * z[r];
          data[o + j] = s;
        }
      }
      return normalizeRows({ data, n, dim });
    },
  };
}
