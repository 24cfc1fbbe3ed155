// The wasm exact path: candidates from the int16 (or float32) SIMD kernel of the HNSW engine, each
// rescored exactly and ranked with the JS reference's tie-break; a query whose cut is too close to
// call is redone by the float32 kernel, then by plain JS. Identical to exactSearch().
import { WasmMatrix, hnswModule, type Candidates } from './hnsw-engine';
import {
  checkK,
  emptyResult,
  exactScore,
  exactSearch,
  type Exclusions,
  type KnnResult,
  type Matrix,
} from '../../src/lib/core/retrieval/exact';
import { TopK } from '../../src/lib/core/retrieval/topk';
import type { Open, WasmExactStats, WasmKernel } from './types';

/** WASM_QUERY_BLOCK: queries per kernel pass (bounds the candidate buffers). */
const WASM_QUERY_BLOCK = 256;
/** WASM_MARGIN: candidates kept beyond k, so that near-ties at the cut rarely need another pass. */
const WASM_MARGIN = 16;

/**
 * Exact top-k through the wasm kernels, identical to exactSearch(). Each query's candidates come
 * from the int16 kernel (twice the multiply-adds per instruction); every candidate is rescored with
 * exactScore() and ranked with the same TopK and tie-break. The candidates are complete, so the
 * answer exact, when the kernel's cut plus its error bound stays below the k-th exact score. A query
 * that fails the check gets a float32 pass (a far tighter bound), and one that fails that too is
 * recomputed by the JS path. Each step is counted.
 */
export async function wasmExact(
  o: Open,
  q: Matrix,
  k: number,
  exclude: Exclusions | undefined,
  kernel: WasmKernel,
): Promise<{ result: KnnResult; stats: WasmExactStats }> {
  const { n, dim } = o.vectors;
  const nq = q.n;
  const result = emptyResult(nq, checkK(k));
  const stats: WasmExactStats = { candidatesPerQuery: 0, float32Queries: 0, cpuFallbackQueries: 0 };
  if (k === 0 || n === 0 || nq === 0) return { result, stats };
  const w = (o.wasmDocs ??= WasmMatrix.upload(await hnswModule(), o.vectors.data, dim));
  const maxNorm = (o.maxNorm ??= maxRowNorm(o.vectors));
  const qNorm = (i: number) => {
    let s = 0;
    for (let j = 0; j < dim; j++) s += q.data[i * dim + j] ** 2;
    return Math.sqrt(s);
  };
  /**
   * Ranks query i's candidates (row r of c); false when the cut is too close to call: a document
   * left out scored at most `cut` approximately, so at most cut + bound exactly.
   */
  const settle = (i: number, c: Candidates, r: number, bound: (cut: number) => number): boolean => {
    const ex = exclude?.[i]?.length ? new Set(Array.from(exclude[i]!)) : null;
    const top = new TopK(k, o.tieBreak);
    let cut = Infinity;
    for (let j = 0; j < c.kp; j++) {
      const d = c.index[r * c.kp + j];
      cut = Math.min(cut, c.score[r * c.kp + j]);
      if (ex?.has(d)) continue;
      top.push(exactScore(o.vectors, d, q, i), d);
    }
    const hits = top.drain();
    if (c.kp < n) {
      const kth = hits.length === k ? hits[k - 1].score : -Infinity;
      if (!(bound(cut) < kth)) return false;
    }
    hits.forEach((h, j) => {
      result.indices[i * k + j] = h.index;
      result.scores[i * k + j] = h.score;
    });
    result.counts[i] = hits.length;
    return true;
  };
  /** The rows of `ids` as one matrix, and the widest candidate list they need. */
  const gather = (ids: number[], margin: number) => {
    const rows = new Float32Array(ids.length * dim);
    let maxEx = 0;
    ids.forEach((i, r) => {
      rows.set(q.data.subarray(i * dim, (i + 1) * dim), r * dim);
      maxEx = Math.max(maxEx, exclude?.[i]?.length ?? 0);
    });
    return { rows, kp: Math.min(n, k + margin + maxEx) };
  };
  const all = Array.from({ length: nq }, (_, i) => i);
  let pending: number[] = kernel === 'float32' ? all : [];
  for (let b0 = 0; kernel === 'int16' && b0 < nq; b0 += WASM_QUERY_BLOCK) {
    const ids = all.slice(b0, b0 + WASM_QUERY_BLOCK);
    const { rows, kp } = gather(ids, WASM_MARGIN);
    stats.candidatesPerQuery = Math.max(stats.candidatesPerQuery, kp);
    const c = w.candidatesI16(rows, kp);
    ids.forEach((i, r) => {
      // Float rounding of the kernel's products and of exactScore: a few ulps of ‖q‖ · max‖d‖.
      const slack = 8 * 2 ** -24 * qNorm(i) * maxNorm;
      if (!settle(i, c, r, (cut) => cut + c.bound[r] + slack)) pending.push(i);
    });
  }
  if (pending.length) {
    stats.float32Queries = pending.length;
    const retry = pending;
    pending = [];
    for (let b0 = 0; b0 < retry.length; b0 += WASM_QUERY_BLOCK) {
      const ids = retry.slice(b0, b0 + WASM_QUERY_BLOCK);
      // A retry keeps more candidates: its cut was close to the k-th score.
      const { rows, kp } = gather(ids, kernel === 'float32' ? WASM_MARGIN : 4 * WASM_MARGIN);
      stats.candidatesPerQuery = Math.max(stats.candidatesPerQuery, kp);
      const c = w.candidatesF32(rows, kp);
      ids.forEach((i, r) => {
        const eps = 2 * dim * 2 ** -22 * qNorm(i) * maxNorm;
        if (!settle(i, c, r, (cut) => cut + eps)) pending.push(i);
      });
    }
  }
  if (pending.length) {
    stats.cpuFallbackQueries = pending.length;
    const { rows } = gather(pending, 0);
    const cpu = exactSearch(
      o.vectors,
      { data: rows, n: pending.length, dim },
      { k, tieBreak: o.tieBreak, exclude: exclude ? pending.map((i) => exclude[i]) : undefined },
    );
    pending.forEach((i, r) => {
      result.indices.set(cpu.indices.subarray(r * k, (r + 1) * k), i * k);
      result.scores.set(cpu.scores.subarray(r * k, (r + 1) * k), i * k);
      result.counts[i] = cpu.counts[r];
    });
  }
  return { result, stats };
}

/** The largest row norm of a matrix (the kernels' error bounds scale with it). */
function maxRowNorm(m: Matrix): number {
  let max = 0;
  for (let r = 0; r < m.n; r++) {
    let s = 0;
    for (let j = 0; j < m.dim; j++) s += m.data[r * m.dim + j] ** 2;
    max = Math.max(max, Math.sqrt(s));
  }
  return max;
}
