// The BM25 index's data: compact typed arrays only (no Map, no per-document or per-term string),
// so a million documents fit a tab's memory budget. Shared by the build (bm25-build.ts), search
// (bm25.ts) and persistence (bm25-store.ts).
//
//   terms      sorted by UTF-8 bytes, packed in one Uint8Array with Uint32 offsets (binary search)
//   doc ids    packed UTF-8 in input order with Uint32 offsets, plus the id order (ties, lookup)
//   postings   per term, doc-ascending, as variable-length integers in one Uint8Array:
//              v = 2·gap + (tf = 1 ? 1 : 0), then tf itself when it is not 1, where gap is the
//              distance from the term's previous document (from −1 for the first posting)
import type { AnalyzerId } from './analyzers';
import { byte4ToInt, intToByte4 } from './lucene-norms';

/** BM25 parameters; Anserini's BEIR defaults are k1 = 0.9, b = 0.4 with Lucene's lossy lengths. */
export interface Bm25Params {
  k1: number;
  b: number;
  /** Score with Lucene's one-byte document lengths and float32 arithmetic (matches Anserini). */
  lossyLengths: boolean;
}

/** Anserini/Pyserini's BM25 defaults for BEIR. */
export const DEFAULT_BM25_PARAMS: Readonly<Bm25Params> = Object.freeze({
  k1: 0.9,
  b: 0.4,
  lossyLengths: true,
});

/** Bm25Params with defaults filled in, checked (also by bm25-store when it reads a header). */
export function checkParams(p: Partial<Bm25Params> | undefined): Bm25Params {
  const params = { ...DEFAULT_BM25_PARAMS, ...p };
  if (typeof params.k1 !== 'number' || !Number.isFinite(params.k1) || params.k1 < 0)
    throw new RangeError(`BM25 k1 must be a non-negative finite number, got ${params.k1}`);
  if (typeof params.b !== 'number' || !(params.b >= 0 && params.b <= 1))
    throw new RangeError(`BM25 b must be within [0, 1], got ${params.b}`);
  if (typeof params.lossyLengths !== 'boolean') throw new TypeError('BM25 lossyLengths must be a boolean');
  return { k1: params.k1, b: params.b, lossyLengths: params.lossyLengths };
}

/** Strings packed as UTF-8: string i is bytes[offsets[i], offsets[i + 1]). */
export interface PackedStrings {
  readonly bytes: Uint8Array;
  readonly offsets: Uint32Array;
}

/** The stored arrays of an index, what the build produces and bm25-store persists. */
export interface Bm25Arrays {
  /** Document ids in input order; a document's position is its internal index. */
  docIds: PackedStrings;
  /** Terms in UTF-8 byte order; a term's position is its id. */
  terms: PackedStrings;
  /** Indexed documents containing each term (its number of postings). */
  termDf: Uint32Array;
  /** Postings of term t are the bytes [postingOffsets[t], postingOffsets[t + 1]) of `postings`. */
  postingOffsets: Uint32Array;
  postings: Uint8Array;
  /** Exact token count per document (0 = no tokens, not indexed). */
  docLengths: Uint32Array;
  /** The analyzers used, one per document-language group (one for a single-language corpus). */
  analyzers: AnalyzerId[];
  /** The language tags (as given, '' for none) whose documents each analyzer group holds. */
  groupLanguages: string[][];
  /** Per document, its analyzer's position in `analyzers`. */
  docAnalyzer: Uint8Array;
}

/** An in-memory BM25 index. Treat as read-only; persist with serializeBm25. */
export interface Bm25Index extends Readonly<Bm25Arrays> {
  readonly params: Readonly<Bm25Params>;
  /** All documents given, including those without tokens. */
  readonly docCount: number;
  /** Documents with at least one token: BM25's N, and the only ones that can be returned. */
  readonly indexedDocCount: number;
  /** Sum of exact document lengths (tokens after stop-word removal). */
  readonly sumDocLength: number;
  readonly termCount: number;
  /** Total (term, document) pairs. */
  readonly postingCount: number;
  /** Lucene's one-byte length norm per document (SmallFloat.intToByte4 of the length). */
  readonly norms: Uint8Array;
  /** Position of each document's id in UTF-8 byte order (ties rank the larger id first). */
  readonly idRank: Uint32Array;
  /** The documents in id order (idRank's inverse), for looking an id up by binary search. */
  readonly byRank: Uint32Array;
  /** Average document length over indexed documents, as used in scoring. */
  readonly avgdl: number;
  /** lossy: float32 1/(k1·(1 − b + b·dl/avgdl)) per norm byte; exact: k1·(1 − b + b·dl/avgdl) per doc. */
  readonly lengthFactors: Float32Array | Float64Array;
}

const fround = Math.fround;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Compares string i of `a` with `key` (UTF-8 bytes) in byte order. */
function compareAt(a: PackedStrings, i: number, key: Uint8Array): number {
  const from = a.offsets[i];
  const len = a.offsets[i + 1] - from;
  const n = Math.min(len, key.length);
  const bytes = a.bytes;
  for (let j = 0; j < n; j++) {
    const x = bytes[from + j] - key[j];
    if (x !== 0) return x;
  }
  return len - key.length;
}

/** Compares strings i and j of `a` in UTF-8 byte order (the order of topk.compareUtf8). */
export function comparePacked(a: PackedStrings, i: number, j: number): number {
  const bytes = a.bytes;
  const fi = a.offsets[i];
  const fj = a.offsets[j];
  const li = a.offsets[i + 1] - fi;
  const lj = a.offsets[j + 1] - fj;
  const n = Math.min(li, lj);
  for (let k = 0; k < n; k++) {
    const x = bytes[fi + k] - bytes[fj + k];
    if (x !== 0) return x;
  }
  return li - lj;
}

/** String i of a packed table. */
export function packedAt(a: PackedStrings, i: number): string {
  return decoder.decode(a.bytes.subarray(a.offsets[i], a.offsets[i + 1]));
}

/** Position of `key` in a table sorted by `order` (order[r] = the string at rank r), or -1. */
function searchSorted(a: PackedStrings, order: Uint32Array | null, count: number, key: string): number {
  const k = encoder.encode(key);
  let lo = 0;
  let hi = count;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareAt(a, order ? order[mid] : mid, k);
    if (c === 0) return order ? order[mid] : mid;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

/** The term's id, or -1 when it is not in the index. */
export function termId(index: Bm25Index, term: string): number {
  return searchSorted(index.terms, null, index.termCount, term);
}

/** The internal index of a document id, or -1 when it is not in the index. */
export function docPosition(index: Bm25Index, id: string): number {
  return searchSorted(index.docIds, index.byRank, index.docCount, id);
}

/** The id of the document at internal index d. */
export function docIdAt(index: Bm25Index, d: number): string {
  return packedAt(index.docIds, d);
}

/** Bytes of the variable-length encoding of a non-negative integer (< 2^53). */
export function varintLength(v: number): number {
  let n = 1;
  while (v >= 128) ((v = Math.floor(v / 128)), n++);
  return n;
}

/** Writes v at `at`, returns the position after it. */
export function writeVarint(out: Uint8Array, at: number, v: number): number {
  while (v >= 128) {
    out[at++] = (v % 128) | 128;
    v = Math.floor(v / 128);
  }
  out[at++] = v;
  return at;
}

/**
 * Calls fn(doc, tf) for each posting of term t, in document order. Stops early (returning false)
 * when fn returns false.
 */
export function forEachPosting(
  index: Pick<Bm25Index, 'postings' | 'postingOffsets'>,
  t: number,
  fn: (doc: number, tf: number) => boolean | void,
): boolean {
  const bytes = index.postings;
  let p = index.postingOffsets[t];
  const end = index.postingOffsets[t + 1];
  let d = -1;
  while (p < end) {
    let b = bytes[p++];
    let v = b & 127;
    for (let scale = 128; b >= 128; scale *= 128) v += ((b = bytes[p++]) & 127) * scale;
    const one = v % 2;
    d += (v - one) / 2;
    let tf = 1;
    if (one === 0) {
      b = bytes[p++];
      tf = b & 127;
      for (let scale = 128; b >= 128; scale *= 128) tf += ((b = bytes[p++]) & 127) * scale;
    }
    if (fn(d, tf) === false) return false;
  }
  return true;
}

/**
 * Derives everything that is computed from the stored arrays (shared by the build and bm25-store's
 * deserialize). Throws on a duplicate document id.
 */
export function assemble(params: Bm25Params, a: Bm25Arrays): Bm25Index {
  const n = a.docLengths.length;
  // Id order by UTF-8 bytes; ids already in order (the common case) need no sort.
  let byRank: Uint32Array;
  let sorted = true;
  for (let d = 1; d < n && sorted; d++) if (comparePacked(a.docIds, d - 1, d) >= 0) sorted = false;
  if (sorted) byRank = Uint32Array.from({ length: n }, (_, i) => i);
  else byRank = new Uint32Array(n).map((_, i) => i).sort((x, y) => comparePacked(a.docIds, x, y));
  const idRank = new Uint32Array(n);
  for (let r = 0; r < n; r++) {
    if (r > 0 && comparePacked(a.docIds, byRank[r - 1], byRank[r]) === 0)
      throw new Error(`duplicate document id ${JSON.stringify(packedAt(a.docIds, byRank[r]))}`);
    idRank[byRank[r]] = r;
  }

  let sum = 0;
  let indexed = 0;
  const norms = new Uint8Array(n);
  for (let d = 0; d < n; d++) {
    sum += a.docLengths[d];
    if (a.docLengths[d] > 0) indexed++;
    norms[d] = intToByte4(a.docLengths[d]);
  }
  let postingCount = 0;
  for (let t = 0; t < a.termDf.length; t++) postingCount += a.termDf[t];
  const { k1, b } = params;
  let avgdl: number;
  let lengthFactors: Float32Array | Float64Array;
  if (params.lossyLengths) {
    avgdl = fround(indexed ? sum / indexed : 0);
    // Lucene's per-norm cache, float by float: 1f / (k1 * ((1 - b) + b * len / avgdl)), where
    // len is itself a float (LENGTH_TABLE), which matters above 2^24 tokens.
    const k1f = fround(k1);
    const bf = fround(b);
    const oneMinusB = fround(1 - bf);
    lengthFactors = new Float32Array(256);
    for (let i = 0; i < 256; i++) {
      const rel = fround(fround(bf * fround(byte4ToInt(i))) / avgdl);
      lengthFactors[i] = fround(1 / fround(k1f * fround(oneMinusB + rel)));
    }
  } else {
    avgdl = indexed ? sum / indexed : 0;
    lengthFactors = new Float64Array(n);
    for (let d = 0; d < n; d++) lengthFactors[d] = k1 * (1 - b + (b * a.docLengths[d]) / avgdl);
  }
  return {
    ...a,
    params: Object.freeze({ ...params }),
    analyzers: Object.freeze([...a.analyzers]) as AnalyzerId[],
    groupLanguages: a.groupLanguages.map((g) => [...g]),
    docCount: n,
    indexedDocCount: indexed,
    sumDocLength: sum,
    termCount: a.termDf.length,
    postingCount,
    norms,
    idRank,
    byRank,
    avgdl,
    lengthFactors,
  };
}
