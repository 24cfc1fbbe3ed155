// HNSW search: queries without exclusions in one engine call, the others one by one (short
// exclusion lists over-fetched and dropped, long ones skipped inside the graph search); scores
// replaced by exact float inner products unless asked not to.
import * as Comlink from 'comlink';
import type { KnnBatch } from './hnsw-engine';
import {
  checkK,
  emptyResult,
  exactScore,
  normalizeRows,
  type KnnResult,
  type Matrix,
} from '../../src/lib/core/retrieval/exact';
import { TopK } from '../../src/lib/core/retrieval/topk';
import { asMatrix, requireOpen } from './session';
import type { Open, SearchOptions, SearchResult } from './types';

/** OVERFETCH_MAX: exclusion lists up to this long are over-fetched; longer ones are skipped in the graph. */
export const OVERFETCH_MAX = 64;

/**
 * HNSW top-k for each query (n × dim, row-major), in one engine call for the queries without
 * exclusions. A query with up to OVERFETCH_MAX exclusions asks hnswlib for k + |exclude| and drops
 * them (the k best allowed documents are among those); a longer list is skipped inside the graph
 * search (the engine marks those nodes deleted for that one search).
 */
export function search(
  queries: Float32Array,
  k: number,
  efSearch?: number,
  opts: SearchOptions = {},
): SearchResult {
  const o = requireOpen();
  const q = asMatrix(o.space === 'cosine' ? queries.slice() : queries, o.vectors.dim, 'queries');
  if (o.space === 'cosine') normalizeRows(q);
  const ef = efSearch ?? o.efSearch;
  const t0 = performance.now();
  const result = hnswSearch(o, q, k, ef, opts);
  const ms = performance.now() - t0;
  // The worker gives up these buffers: the caller owns them after the transfer.
  return Comlink.transfer({ result, efSearch: ef, ms }, [result.indices.buffer, result.scores.buffer]);
}

/** HNSW top-k of the rows of `q` in the open index `o` at `ef` (the search call's work). */
export function hnswSearch(o: Open, q: Matrix, k: number, ef: number, opts: SearchOptions): KnnResult {
  const { n, dim } = o.vectors;
  const nq = q.n;
  const result = emptyResult(nq, checkK(k));
  if (k === 0 || n === 0) return result;
  o.index.setEf(ef);
  const rescore = opts.rescore ?? true;
  /** Query i's hits from row `row` (`width` wide) of a batch, less `drop`, re-ranked into the top k. */
  const take = (i: number, b: KnnBatch, row: number, width: number, drop: Set<number> | null) => {
    const top = new TopK(k, o.tieBreak);
    for (let j = 0; j < b.counts[row]; j++) {
      const d = b.labels[row * width + j];
      if (drop?.has(d)) continue;
      // 'ip' distance is 1 − q·d in float32.
      top.push(rescore ? exactScore(o.vectors, d, q, i) : Math.fround(1 - b.distances[row * width + j]), d);
    }
    const hits = top.drain();
    hits.forEach((h, j) => {
      result.indices[i * k + j] = h.index;
      result.scores[i * k + j] = h.score;
    });
    result.counts[i] = hits.length;
  };
  const kk = Math.min(k, n);
  const ex = opts.exclude;
  const plain: number[] = [];
  for (let i = 0; i < nq; i++) if (!ex?.[i]?.length) plain.push(i);
  // Queries without exclusions: one call for all of them.
  if (plain.length) {
    let rows = q.data;
    if (plain.length < nq) {
      rows = new Float32Array(plain.length * dim);
      plain.forEach((i, r) => rows.set(q.data.subarray(i * dim, (i + 1) * dim), r * dim));
    }
    const b = o.index.search(rows, kk);
    plain.forEach((i, r) => take(i, b, r, kk, null));
  }
  // The others, one by one. A short list: over-fetch k + |exclusions| and drop them (the k best
  // allowed are among those). A long one: the engine skips the excluded nodes during the search.
  if (ex)
    for (let i = 0; i < nq; i++) {
      if (!ex[i]?.length) continue;
      const drop = new Set(ex[i]);
      const v = q.data.subarray(i * dim, (i + 1) * dim);
      if (drop.size <= OVERFETCH_MAX) {
        const width = Math.min(k + drop.size, n);
        take(i, o.index.search(v, width), 0, width, drop);
      } else take(i, o.index.searchExcluding(v, kk, Int32Array.from(drop)), 0, kk, null);
    }
  return result;
}
