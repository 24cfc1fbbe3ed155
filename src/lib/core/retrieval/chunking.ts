// Long texts for dense retrieval: a text longer than the model's window is cut into overlapping
// windows of token ids (the last one aligned to the text's end), every window is embedded with the
// model's special tokens around it, and the chunk vectors are aggregated per text:
//   first — one truncated window (what every dense run did before chunking existed);
//   mean  — the mean of the chunk vectors, then the model's usual normalisation: one vector per text;
//   max   — every chunk is kept: a document's score is the best cosine over (query chunk, document
//           chunk) pairs. A long query is chunked too and takes its best-matching chunk (max-sim over
//           all pairs), not a mean query vector: the drill-down can then name the pair that matched.
// BM25 never chunks. Pure functions, no I/O.
import type { EmbedPart } from '../types';

export type ChunkAggregate = 'first' | 'mean' | 'max';

/** How texts longer than the model's window are embedded, as recorded on a run. */
export interface Chunking {
  aggregate: ChunkAggregate;
  /** Tokens shared by consecutive windows (the window slides by window − overlap). */
  overlap: number;
}

/** DEFAULT_CHUNK_OVERLAP: tokens shared by consecutive windows unless set otherwise. */
export const DEFAULT_CHUNK_OVERLAP = 32;

export const CHUNK_AGGREGATES: readonly ChunkAggregate[] = ['first', 'mean', 'max'];

/** Whether texts are cut into several windows (mean, max) rather than truncated (first). */
export function isChunked(
  c: Chunking | undefined,
): c is Chunking & { aggregate: Exclude<ChunkAggregate, 'first'> } {
  return !!c && c.aggregate !== 'first';
}

/** Checks a chunking setting; throws a RangeError naming the bad value. */
export function checkChunking(c: Chunking): Chunking {
  if (!CHUNK_AGGREGATES.includes(c.aggregate))
    throw new RangeError(`chunk aggregation must be first, mean or max, got ${String(c.aggregate)}`);
  if (!Number.isInteger(c.overlap) || c.overlap < 0)
    throw new RangeError(`chunk overlap must be a non-negative integer of tokens, got ${c.overlap}`);
  return c;
}

/** A window over a token sequence: positions start … end − 1. */
export interface TokenWindow {
  start: number;
  end: number;
}

/**
 * Windows over a sequence of `length` tokens (special tokens excluded), each at most `size` tokens.
 * A sequence that fits is one window. Otherwise windows start every `size − overlap` tokens while
 * they end before the sequence does, and a last window is aligned to the end (it may overlap its
 * predecessor by more than `overlap`). `first` keeps only the first window (truncation).
 * An empty sequence is one empty window (the model still sees its special tokens).
 */
export function chunkWindows(
  length: number,
  size: number,
  overlap: number,
  aggregate: ChunkAggregate = 'mean',
): TokenWindow[] {
  if (!Number.isInteger(length) || length < 0)
    throw new RangeError(`length must be a non-negative integer, got ${length}`);
  if (!Number.isInteger(size) || size < 1)
    throw new RangeError(`window size must be a positive integer, got ${size}`);
  if (!Number.isInteger(overlap) || overlap < 0 || overlap >= size)
    throw new RangeError(`overlap must be an integer from 0 to ${size - 1} (window ${size}), got ${overlap}`);
  if (length <= size || aggregate === 'first') return [{ start: 0, end: Math.min(length, size) }];
  const stride = size - overlap;
  const out: TokenWindow[] = [];
  for (let s = 0; s + size < length; s += stride) out.push({ start: s, end: s + size });
  out.push({ start: length - size, end: length });
  return out;
}

/**
 * Token ids of a window as the model takes them: the tokenizer's leading special tokens, the
 * prefix's tokens, the window's tokens, the trailing special tokens.
 */
export function frameWindow(
  ids: ArrayLike<number>,
  w: TokenWindow,
  frame: { head: readonly number[]; tail: readonly number[]; prefix: readonly number[] },
): number[] {
  const out = [...frame.head, ...frame.prefix];
  for (let i = w.start; i < w.end; i++) out.push(ids[i]);
  out.push(...frame.tail);
  return out;
}

/**
 * The special tokens a tokenizer puts around a text: `framed` is a probe text's ids with special
 * tokens, `bare` the same text's ids without; `bare` must occur in `framed` exactly once in order.
 */
export function specialFrame(
  framed: readonly number[],
  bare: readonly number[],
): { head: number[]; tail: number[] } {
  for (let i = 0; i + bare.length <= framed.length; i++)
    if (bare.every((t, j) => framed[i + j] === t))
      return { head: framed.slice(0, i), tail: framed.slice(i + bare.length) };
  throw new Error('the text without special tokens is not inside the text with them');
}

/** Content tokens per window: the model's maximum minus its special tokens and the prefix. */
export function windowSize(maxTokens: number, specialTokens: number, prefixTokens = 0): number {
  const size = maxTokens - specialTokens - prefixTokens;
  if (size < 1)
    throw new RangeError(
      `no room for text: ${maxTokens} tokens at most, ${specialTokens} special and ${prefixTokens} prefix tokens`,
    );
  return size;
}

/** Start of each text's rows from chunks-per-text counts (counts.length + 1 entries). */
export function chunkOffsets(counts: ArrayLike<number>): Uint32Array {
  const out = new Uint32Array(counts.length + 1);
  for (let i = 0; i < counts.length; i++) out[i + 1] = out[i] + counts[i];
  return out;
}

/** Row → text index from chunks-per-text counts. */
export function rowOwners(counts: ArrayLike<number>): Uint32Array {
  const offsets = chunkOffsets(counts);
  const out = new Uint32Array(offsets[counts.length]);
  for (let i = 0; i < counts.length; i++) out.fill(i, offsets[i], offsets[i + 1]);
  return out;
}

/**
 * One vector per text: the mean of its chunk rows (rows grouped by text, `counts[i]` rows for text
 * i), L2-normalised when `normalize` (the model's usual normalisation). A text without rows is zero.
 */
export function meanOfChunks(
  rows: Float32Array,
  counts: ArrayLike<number>,
  dim: number,
  normalize: boolean,
): Float32Array {
  const offsets = chunkOffsets(counts);
  const n = counts.length;
  if (rows.length !== offsets[n] * dim)
    throw new RangeError(`${rows.length / dim} rows for ${offsets[n]} chunks`);
  const out = new Float32Array(n * dim);
  const acc = new Float64Array(dim);
  for (let i = 0; i < n; i++) {
    const c = counts[i];
    if (c === 0) continue;
    acc.fill(0);
    for (let r = offsets[i]; r < offsets[i + 1]; r++)
      for (let j = 0; j < dim; j++) acc[j] += rows[r * dim + j];
    let s = 0;
    for (let j = 0; j < dim; j++) {
      acc[j] /= c;
      s += acc[j] * acc[j];
    }
    const scale = normalize && s > 0 ? 1 / Math.sqrt(s) : 1;
    for (let j = 0; j < dim; j++) out[i * dim + j] = acc[j] * scale;
  }
  return out;
}

/**
 * Per-document maximum of row scores (`rowDoc[r]` owns row r); NaN rows are ignored and a document
 * with no scored row is NaN. Updates `into` in place when given (several query chunks).
 */
export function maxPerDoc(
  rowScores: ArrayLike<number>,
  rowDoc: ArrayLike<number>,
  docs: number,
  into?: Float64Array,
): Float64Array {
  if (rowScores.length !== rowDoc.length)
    throw new RangeError(`${rowScores.length} row scores for ${rowDoc.length} rows`);
  const out = into ?? new Float64Array(docs).fill(NaN);
  for (let r = 0; r < rowScores.length; r++) {
    const s = rowScores[r];
    if (s !== s) continue;
    const d = rowDoc[r];
    const cur = out[d];
    if (cur !== cur || s > cur) out[d] = s;
  }
  return out;
}

/**
 * The best (query chunk, document chunk) pair by cosine: indices into the two row sets and the
 * cosine. Ties keep the earliest query chunk, then the earliest document chunk.
 */
export function bestChunkPair(
  query: Float32Array,
  doc: Float32Array,
  dim: number,
): { query: number; doc: number; cosine: number; all: number[][] } {
  const nq = query.length / dim;
  const nd = doc.length / dim;
  let best = { query: 0, doc: 0, cosine: NaN };
  const all: number[][] = [];
  for (let a = 0; a < nq; a++) {
    const row: number[] = [];
    for (let b = 0; b < nd; b++) {
      let s = 0;
      let qa = 0;
      let db = 0;
      for (let j = 0; j < dim; j++) {
        const x = query[a * dim + j];
        const y = doc[b * dim + j];
        s += x * y;
        qa += x * x;
        db += y * y;
      }
      const c = qa > 0 && db > 0 ? s / Math.sqrt(qa * db) : NaN;
      row.push(c);
      if (c === c && !(c <= best.cosine)) best = { query: a, doc: b, cosine: c };
    }
    all.push(row);
  }
  return { ...best, all };
}

/**
 * The chunking a run can use: max keeps several vectors per document, which only text-only tasks
 * and exact search support; elsewhere it falls back (mean for image tasks, exact search for HNSW)
 * and says so in `notes`.
 */
export function chunkingFor(
  settings: { chunking?: Chunking; ann?: unknown },
  plan: { queryParts: EmbedPart[]; docParts: EmbedPart[] },
  notes: string[] = [],
): { chunking?: Chunking; exact: boolean } {
  const c = settings.chunking;
  if (!isChunked(c)) return { exact: false };
  if (!plan.docParts.includes('text') && !plan.queryParts.includes('text')) return { exact: false };
  if (c.aggregate === 'max' && (plan.docParts.includes('image') || plan.queryParts.includes('image'))) {
    notes.push('averages text chunks (mean): max over chunks needs a text-only task');
    return { chunking: { ...c, aggregate: 'mean' }, exact: false };
  }
  if (c.aggregate === 'max' && settings.ann) {
    notes.push('searches exactly: max over chunks keeps several vectors per document, an HNSW index one');
    return { chunking: c, exact: true };
  }
  return { chunking: c, exact: false };
}

/** A run name / description suffix: "" for first (truncation, the default). */
export function describeChunking(c: Chunking | undefined): string {
  if (!isChunked(c)) return '';
  return c.aggregate === 'max'
    ? `chunks max-sim (overlap ${c.overlap})`
    : `chunks mean (overlap ${c.overlap})`;
}
