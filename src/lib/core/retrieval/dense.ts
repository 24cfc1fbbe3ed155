// Exact dense retrieval over a corpus embedding matrix, and the two multimodal fusions M3Retrieve
// compares: score fusion (a weighted sum of a text and an image similarity per document) and
// feature fusion (one query vector made from the text and image query vectors). Ranking ties are
// broken as trec_eval does: equal scores rank the larger document id (UTF-8 byte order) first.
import { TopK, compareUtf8 } from './topk';
import type { ScoredDoc } from '../types';
import { maxPerDoc } from './chunking';

export type DenseMetric = 'cosine' | 'ip';

/** A corpus matrix ready for search. */
export interface DenseIndex {
  /** Row-major (docs × dim); row i is docIds[i]. Never copied: the caller must not mutate it. */
  vectors: Float32Array;
  dim: number;
  docIds: string[];
  /** L2 norm of every row (0 for rows without a vector). */
  norms: Float64Array;
  /** 1 for rows that have a vector (not listed as missing and not all zero). */
  present: Uint8Array;
  /** Rank of each row's id in UTF-8 order, for trec_eval's tie order. */
  idRank: Uint32Array;
  docIndex: Map<string, number>;
}

/** L2 norm of each of the `n` rows of a row-major matrix, and 1 where a row is not all zero. */
function rowNorms(
  vectors: Float32Array,
  dim: number,
  n: number,
): { norms: Float64Array; present: Uint8Array } {
  const norms = new Float64Array(n);
  const present = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let j = i * dim, end = j + dim; j < end; j++) s += vectors[j] * vectors[j];
    norms[i] = Math.sqrt(s);
    present[i] = s > 0 ? 1 : 0;
  }
  return { norms, present };
}

/**
 * Wraps a (docs × dim) matrix. `missing`: ids of documents without a vector (their rows are never
 * returned); all-zero rows are treated the same way.
 */
export function createDenseIndex(
  vectors: Float32Array,
  dim: number,
  docIds: string[],
  opts: { missing?: Iterable<string> } = {},
): DenseIndex {
  if (!Number.isInteger(dim) || dim <= 0) throw new RangeError(`dim must be a positive integer, got ${dim}`);
  const n = docIds.length;
  if (vectors.length !== n * dim)
    throw new RangeError(`matrix has ${vectors.length} values, expected ${n} documents × ${dim}`);
  const docIndex = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    if (docIndex.has(docIds[i])) throw new Error(`duplicate document id ${JSON.stringify(docIds[i])}`);
    docIndex.set(docIds[i], i);
  }
  const { norms, present } = rowNorms(vectors, dim, n);
  for (const id of opts.missing ?? []) {
    const i = docIndex.get(id);
    if (i !== undefined) present[i] = 0;
  }
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => compareUtf8(docIds[a], docIds[b]));
  const idRank = new Uint32Array(n);
  order.forEach((d, r) => (idRank[d] = r));
  return { vectors, dim, docIds, norms, present, idRank, docIndex };
}

function norm(v: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i] * v[i];
  return Math.sqrt(s);
}

/** A copy of `v` scaled to unit length (a zero vector stays zero). */
export function l2normalize(v: ArrayLike<number>): Float32Array {
  const out = Float32Array.from(v);
  const n = norm(v);
  if (n > 0) for (let i = 0; i < out.length; i++) out[i] = v[i] / n;
  return out;
}

/**
 * Similarity of the query to every document: inner product, or cosine (inner product over both
 * norms). NaN for documents without a vector and for every document when the query is zero under cosine.
 * Accumulates in double precision.
 */
export function scoreAll(
  index: DenseIndex,
  query: ArrayLike<number>,
  metric: DenseMetric = 'cosine',
): Float64Array {
  const { vectors, dim, norms, present } = index;
  if (query.length !== dim) throw new RangeError(`query has ${query.length} dimensions, the index ${dim}`);
  const n = index.docIds.length;
  const out = new Float64Array(n);
  const qn = metric === 'cosine' ? norm(query) : 1;
  for (let i = 0; i < n; i++) {
    if (present[i] === 0 || qn === 0) {
      out[i] = NaN;
      continue;
    }
    let s = 0;
    const off = i * dim;
    for (let j = 0; j < dim; j++) s += query[j] * vectors[off + j];
    out[i] = metric === 'cosine' ? s / (qn * norms[i]) : s;
  }
  return out;
}

/**
 * The k best documents of a score list aligned with `index.docIds`, best first, trec_eval tie
 * order; NaN scores and `exclude`d ids are skipped.
 */
export function topKOfScores(
  index: Pick<DenseIndex, 'docIds' | 'idRank' | 'docIndex'>,
  scores: ArrayLike<number>,
  k: number,
  exclude?: Iterable<string>,
): ScoredDoc[] {
  const n = index.docIds.length;
  if (scores.length !== n) throw new RangeError(`${scores.length} scores for ${n} documents`);
  let excluded: Set<number> | null = null;
  for (const id of exclude ?? []) {
    const d = index.docIndex.get(id);
    if (d !== undefined) (excluded ??= new Set()).add(d);
  }
  const idRank = index.idRank;
  const top = new TopK(Math.max(0, Math.floor(k)), (a, b) => idRank[a] - idRank[b]);
  for (let i = 0; i < n; i++) {
    if (excluded?.has(i)) continue;
    top.push(scores[i], i); // NaN is ignored by TopK
  }
  return top.drain().map((e) => ({ docId: index.docIds[e.index], score: e.score }));
}

export interface DenseSearchOptions {
  metric?: DenseMetric;
  /** Document ids removed from the ranking (a query's exclude_ids). */
  exclude?: Iterable<string>;
}

/** Exact top-k by cosine (default) or inner product. */
export function searchDense(
  index: DenseIndex,
  query: ArrayLike<number>,
  k: number,
  opts: DenseSearchOptions = {},
): ScoredDoc[] {
  return topKOfScores(index, scoreAll(index, query, opts.metric), k, opts.exclude);
}

/**
 * Score fusion: `alpha * text + (1 - alpha) * image` per document, over two score lists aligned
 * with the same documents. A document missing from one list (NaN) gets 0 from it; missing from both, NaN.
 */
export function fuseScores(text: ArrayLike<number>, image: ArrayLike<number>, alpha: number): Float64Array {
  if (text.length !== image.length)
    throw new RangeError(`score lists differ in length: ${text.length} text, ${image.length} image`);
  if (!(alpha >= 0 && alpha <= 1)) throw new RangeError(`alpha must be in [0, 1], got ${alpha}`);
  const out = new Float64Array(text.length);
  for (let i = 0; i < text.length; i++) {
    const t = text[i];
    const v = image[i];
    const tMissing = t !== t;
    const vMissing = v !== v;
    out[i] = tMissing && vMissing ? NaN : alpha * (tMissing ? 0 : t) + (1 - alpha) * (vMissing ? 0 : v);
  }
  return out;
}

/**
 * Score-fused search: cosine of the text query against the text-part index and of the image query
 * against the image-part index (same documents, same order), fused with `alpha`, then top-k.
 */
export function searchScoreFusion(
  textIndex: DenseIndex,
  imageIndex: DenseIndex,
  queryText: ArrayLike<number>,
  queryImage: ArrayLike<number>,
  alpha: number,
  k: number,
  opts: DenseSearchOptions = {},
): ScoredDoc[] {
  sameDocs(textIndex, imageIndex);
  const fused = fuseScores(
    scoreAll(textIndex, queryText, opts.metric),
    scoreAll(imageIndex, queryImage, opts.metric),
    alpha,
  );
  return topKOfScores(textIndex, fused, k, opts.exclude);
}

/**
 * Feature fusion: L2-normalise(normalise(qText) + normalise(qImage)), one vector in the shared
 * space of a CLIP/SigLIP model (both inputs must have the same dimension).
 */
export function fuseFeatures(queryText: ArrayLike<number>, queryImage: ArrayLike<number>): Float32Array {
  if (queryText.length !== queryImage.length)
    throw new RangeError(`text query has ${queryText.length} dimensions, image query ${queryImage.length}`);
  const a = l2normalize(queryText);
  const b = l2normalize(queryImage);
  for (let i = 0; i < a.length; i++) a[i] += b[i];
  return l2normalize(a);
}

/** Feature-fused search: one query vector from text + image, searched in one index. */
export function searchFeatureFusion(
  index: DenseIndex,
  queryText: ArrayLike<number>,
  queryImage: ArrayLike<number>,
  k: number,
  opts: DenseSearchOptions = {},
): ScoredDoc[] {
  return searchDense(index, fuseFeatures(queryText, queryImage), k, opts);
}

function sameDocs(a: DenseIndex, b: DenseIndex): void {
  if (a.docIds.length !== b.docIds.length || a.docIds.some((id, i) => id !== b.docIds[i]))
    throw new Error('the text and image indexes must list the same documents in the same order');
}

/**
 * Several vectors per document (the chunks of long texts, `max` aggregation): row r of `vectors`
 * belongs to document `rowDoc[r]`; a document scores the best cosine over its rows.
 */
export interface ChunkedDenseIndex {
  /** The rows, searched as a plain index whose "documents" are rows (their ids are row numbers). */
  rows: Pick<DenseIndex, 'vectors' | 'dim' | 'norms' | 'present'> & { docIds: string[] };
  rowDoc: Uint32Array;
  /** The documents: ids, trec_eval tie order, id → position. */
  docs: Pick<DenseIndex, 'docIds' | 'idRank' | 'docIndex'>;
}

/**
 * Wraps a (rows × dim) matrix of chunk vectors with its row → document mapping (`rowDoc[r]` is an
 * index into `docIds`). Rows of `missing` documents and all-zero rows are never scored.
 */
export function createChunkedIndex(
  vectors: Float32Array,
  dim: number,
  rowDoc: Uint32Array,
  docIds: string[],
  opts: { missing?: Iterable<string> } = {},
): ChunkedDenseIndex {
  if (!Number.isInteger(dim) || dim <= 0) throw new RangeError(`dim must be a positive integer, got ${dim}`);
  const n = rowDoc.length;
  if (vectors.length !== n * dim)
    throw new RangeError(`matrix has ${vectors.length} values, expected ${n} rows × ${dim}`);
  for (const d of rowDoc)
    if (d >= docIds.length) throw new RangeError(`row of document ${d}, but there are ${docIds.length}`);
  // The document side: a zero-width index gives ids, tie ranks and positions.
  const docs = createDenseIndex(new Float32Array(docIds.length), 1, docIds);
  const missing = new Set<number>();
  for (const id of opts.missing ?? []) {
    const i = docs.docIndex.get(id);
    if (i !== undefined) missing.add(i);
  }
  const { norms, present } = rowNorms(vectors, dim, n);
  for (let r = 0; r < n; r++) if (missing.has(rowDoc[r])) present[r] = 0;
  const rowIds = Array.from({ length: n }, (_, r) => String(r));
  return {
    rows: { vectors, dim, norms, present, docIds: rowIds },
    rowDoc,
    docs: { docIds: docs.docIds, idRank: docs.idRank, docIndex: docs.docIndex },
  };
}

/**
 * Per-document score for a query given as one or more rows (its chunks, `queryRows` = m × dim):
 * the maximum over every (query row, document row) pair of the similarity; NaN for documents
 * without rows.
 */
export function scoreAllChunked(
  index: ChunkedDenseIndex,
  queryRows: Float32Array,
  metric: DenseMetric = 'cosine',
): Float64Array {
  const dim = index.rows.dim;
  if (queryRows.length === 0 || queryRows.length % dim !== 0)
    throw new RangeError(`query has ${queryRows.length} values, not a multiple of ${dim}`);
  const out = new Float64Array(index.docs.docIds.length).fill(NaN);
  const rowIndex = index.rows as DenseIndex;
  for (let a = 0; a < queryRows.length / dim; a++) {
    const s = scoreAll(rowIndex, queryRows.subarray(a * dim, (a + 1) * dim), metric);
    maxPerDoc(s, index.rowDoc, out.length, out);
  }
  return out;
}

/** Exact top-k documents by their best chunk (max over query chunks × document chunks), trec_eval tie order. */
export function searchDenseChunked(
  index: ChunkedDenseIndex,
  queryRows: Float32Array,
  k: number,
  opts: DenseSearchOptions = {},
): ScoredDoc[] {
  return topKOfScores(index.docs, scoreAllChunked(index, queryRows, opts.metric), k, opts.exclude);
}
