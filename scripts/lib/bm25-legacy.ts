// The BM25 build and search as they were before issue 18 item 3 (commit 46b113a): the whole corpus
// in memory, (term, doc, tf) triples for all of it, then a counting sort, a Map of terms and one of
// doc ids. Kept only so `npm run bench:bm25` can measure the compact build against it and check that
// both give the same scores to the bit; nothing in the app uses it.
import { ANALYZER_VERSION } from '../../src/lib/core/retrieval/analyzer';
import {
  analyzerIdForLanguage,
  dropQueryStopWords,
  getAnalyzer,
  loadAnalyzers,
  type AnalyzerId,
} from '../../src/lib/core/retrieval/analyzers';
import { throttle } from '../../src/lib/core/throttle';
import { TopK, compareUtf8 } from '../../src/lib/core/retrieval/topk';
import type { Doc, ProgressFn, ScoredDoc } from '../../src/lib/core/types';
import { byte4ToInt, intToByte4 } from '../../src/lib/core/retrieval/lucene-norms';

export { byte4ToInt, intToByte4 } from '../../src/lib/core/retrieval/lucene-norms';

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

/** The fields of a document BM25 reads; it indexes `title + " " + text`. */
export interface Bm25Doc {
  id: string;
  title: string;
  text: string;
  /** The document's language (ISO 639-1 tag); it picks the analyzer. */
  language?: string;
}

/** An in-memory BM25 index. Treat as read-only; persist with serializeBm25. */
export interface Bm25Index {
  readonly params: Readonly<Bm25Params>;
  /** Document ids in input order; a document's position here is its internal index. */
  readonly docIds: readonly string[];
  /** All documents given, including those without tokens. */
  readonly docCount: number;
  /** Documents with at least one token: BM25's N, and the only ones that can be returned. */
  readonly indexedDocCount: number;
  /** Sum of exact document lengths (tokens after stop-word removal). */
  readonly sumDocLength: number;
  /** Term → term id (ids are 0..termCount−1 in insertion order). */
  readonly terms: ReadonlyMap<string, number>;
  /** Postings of term t are at [postingOffsets[t], postingOffsets[t + 1]), doc-ascending. */
  readonly postingOffsets: Uint32Array;
  readonly postingDocs: Uint32Array;
  readonly postingTfs: Uint16Array | Uint32Array;
  /** Exact token count per document (0 = no tokens, not indexed). */
  readonly docLengths: Uint32Array;
  /** Lucene's one-byte length norm per document (SmallFloat.intToByte4 of the length). */
  readonly norms: Uint8Array;
  /** Doc id → internal index. */
  readonly docIndex: ReadonlyMap<string, number>;
  /** Position of each document's id in UTF-8 byte order (ties rank the larger id first). */
  readonly idRank: Uint32Array;
  /** Average document length over indexed documents, as used in scoring. */
  readonly avgdl: number;
  /** The analyzers used, one per document-language group (one for a single-language corpus). */
  readonly analyzers: readonly AnalyzerId[];
  /** Per document, its analyzer's position in `analyzers`. */
  readonly docAnalyzer: Uint8Array;
  /** lossy: float32 1/(k1·(1 − b + b·dl/avgdl)) per norm byte; exact: k1·(1 − b + b·dl/avgdl) per doc. */
  readonly lengthFactors: Float32Array | Float64Array;
}

/** Options of buildBm25Index. */
export interface BuildBm25Options {
  onProgress?: ProgressFn;
  /** Polled between documents; when it returns true the build throws an Error named 'AbortError'. */
  isCancelled?: () => boolean;
  /** The shard's declared document language, for documents without their own (default English). */
  language?: string;
}

/** Options of searchBm25. */
export interface SearchBm25Options {
  /** Document ids never returned (e.g. the query's own document). */
  exclude?: ReadonlySet<string> | readonly string[];
  /**
   * Analyse the query with this analyzer for every document instead of each document's own (an
   * experiment: query-language analysis against a corpus in another language; terms then only
   * match where both analyzers happen to agree).
   */
  queryAnalyzer?: AnalyzerId;
  /**
   * The query's language. Where it differs from a document group's, the query's own stop words are
   * removed before that group's analyzer reads it (analyzers.dropQueryStopWords).
   */
  queryLanguage?: string;
}

/** One query term's share of a document's score. */
export interface Bm25TermExplanation {
  term: string;
  /** Occurrences in the query (the term's weight multiplier). */
  queryCount: number;
  /** Occurrences in the document. */
  tf: number;
  /** Indexed documents containing the term (0 when not in the index). */
  df: number;
  /** 0 when the term is not in the index. */
  idf: number;
  score: number;
}

/** Why a document scored what it did for a query. */
export interface Bm25Explanation {
  docId: string;
  /** Equal to the score searchBm25 gives this document (0 when no query term matches). */
  score: number;
  /** Exact token count. */
  docLength: number;
  /** The length the formula used: the decoded one-byte norm when lossyLengths, else docLength. */
  scoredLength: number;
  avgdl: number;
  /** The analyzer that analysed this document and, for it, the query. */
  analyzer: AnalyzerId;
  /** One entry per distinct query term, in query order. */
  terms: Bm25TermExplanation[];
}

const fround = Math.fround;

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

function abortError(): Error {
  const e = new Error('BM25 indexing was cancelled');
  e.name = 'AbortError';
  return e;
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

function idfOf(params: Bm25Params, df: number, n: number): number {
  const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
  return params.lossyLengths ? fround(idf) : idf;
}

/** Derives everything that is computed from the stored arrays (shared by build and bm25-store's deserialize). */
export function assemble(
  params: Bm25Params,
  docIds: string[],
  terms: Map<string, number>,
  postingOffsets: Uint32Array,
  postingDocs: Uint32Array,
  postingTfs: Uint16Array | Uint32Array,
  docLengths: Uint32Array,
  analyzers: AnalyzerId[],
  docAnalyzer: Uint8Array,
): Bm25Index {
  const n = docIds.length;
  const docIndex = new Map<string, number>();
  for (let d = 0; d < n; d++) {
    if (docIndex.has(docIds[d])) throw new Error(`duplicate document id ${JSON.stringify(docIds[d])}`);
    docIndex.set(docIds[d], d);
  }
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => compareUtf8(docIds[a], docIds[b]));
  const idRank = new Uint32Array(n);
  order.forEach((d, r) => (idRank[d] = r));

  let sum = 0;
  let indexed = 0;
  const norms = new Uint8Array(n);
  for (let d = 0; d < n; d++) {
    sum += docLengths[d];
    if (docLengths[d] > 0) indexed++;
    norms[d] = intToByte4(docLengths[d]);
  }
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
    for (let d = 0; d < n; d++) lengthFactors[d] = k1 * (1 - b + (b * docLengths[d]) / avgdl);
  }
  return {
    params: Object.freeze({ ...params }),
    docIds,
    docCount: n,
    indexedDocCount: indexed,
    sumDocLength: sum,
    terms,
    postingOffsets,
    postingDocs,
    postingTfs,
    docLengths,
    norms,
    docIndex,
    idRank,
    avgdl,
    lengthFactors,
    analyzers: Object.freeze([...analyzers]),
    docAnalyzer,
  };
}

function grow(a: Uint32Array, need: number): Uint32Array {
  if (need <= a.length) return a;
  const b = new Uint32Array(Math.max(need, a.length * 2));
  b.set(a);
  return b;
}

/**
 * Builds a BM25 index over `title + " " + text` of each document. Yields to the event loop every
 * ~50 ms so a worker stays responsive, reports progress at most every 100 ms, and throws an Error
 * named 'AbortError' once `isCancelled()` returns true.
 */
export async function buildBm25Index(
  docs: readonly Bm25Doc[],
  params: Partial<Bm25Params> = DEFAULT_BM25_PARAMS,
  opts: BuildBm25Options = {},
): Promise<Bm25Index> {
  const p = checkParams(params);
  const total = docs.length;
  await loadAnalyzers(new Set(docs.map((d) => analyzerIdForLanguage(d.language || opts.language))));
  const report = throttle(opts.onProgress);
  const cancelled = opts.isCancelled ?? (() => false);

  const terms = new Map<string, number>();
  const docIds: string[] = new Array(total);
  const docLengths = new Uint32Array(total);
  const analyzers: AnalyzerId[] = [];
  const docAnalyzer = new Uint8Array(total);
  // Postings are first collected as (term, doc, tf) triples in document order, then counting-
  // sorted by term, which leaves every posting list doc-ascending.
  let tTerm: Uint32Array = new Uint32Array(1 << 16);
  let tDoc: Uint32Array = new Uint32Array(1 << 16);
  let tTf: Uint32Array = new Uint32Array(1 << 16);
  let nTriples = 0;
  let df: Uint32Array = new Uint32Array(1 << 12);
  let docTf: Uint32Array = new Uint32Array(1 << 12);
  const seen: number[] = [];

  let sliceStart = Date.now();
  report({ kind: 'index', done: 0, total });
  for (let d = 0; d < total; d++) {
    if ((d & 31) === 0) {
      if (cancelled()) throw abortError();
      if (Date.now() - sliceStart >= 50) {
        report({ kind: 'index', done: d, total });
        await yieldToEventLoop();
        if (cancelled()) throw abortError();
        sliceStart = Date.now();
      }
    }
    const doc = docs[d];
    docIds[d] = doc.id;
    const analyzerId = analyzerIdForLanguage(doc.language || opts.language);
    let group = analyzers.indexOf(analyzerId);
    if (group < 0) group = analyzers.push(analyzerId) - 1;
    docAnalyzer[d] = group;
    const tokens = getAnalyzer(analyzerId).analyze(`${doc.title ?? ''} ${doc.text ?? ''}`);
    docLengths[d] = tokens.length;
    for (const tok of tokens) {
      let id = terms.get(tok);
      if (id === undefined) {
        id = terms.size;
        terms.set(tok, id);
        df = grow(df, id + 1);
        docTf = grow(docTf, id + 1);
      }
      if (docTf[id]++ === 0) seen.push(id);
    }
    tTerm = grow(tTerm, nTriples + seen.length);
    tDoc = grow(tDoc, nTriples + seen.length);
    tTf = grow(tTf, nTriples + seen.length);
    for (const id of seen) {
      tTerm[nTriples] = id;
      tDoc[nTriples] = d;
      tTf[nTriples++] = docTf[id];
      df[id]++;
      docTf[id] = 0;
    }
    seen.length = 0;
  }
  if (cancelled()) throw abortError();

  const termCount = terms.size;
  const postingOffsets = new Uint32Array(termCount + 1);
  for (let t = 0; t < termCount; t++) postingOffsets[t + 1] = postingOffsets[t] + df[t];
  const cursor = postingOffsets.slice(0, termCount);
  const postingDocs = new Uint32Array(nTriples);
  let maxTf = 0;
  for (let i = 0; i < nTriples; i++) if (tTf[i] > maxTf) maxTf = tTf[i];
  const postingTfs = maxTf <= 0xffff ? new Uint16Array(nTriples) : new Uint32Array(nTriples);
  for (let i = 0; i < nTriples; i++) {
    const at = cursor[tTerm[i]]++;
    postingDocs[at] = tDoc[i];
    postingTfs[at] = tTf[i];
  }
  if (analyzers.length === 0) analyzers.push(analyzerIdForLanguage(opts.language));
  const index = assemble(
    p,
    docIds,
    terms,
    postingOffsets,
    postingDocs,
    postingTfs,
    docLengths,
    analyzers,
    docAnalyzer,
  );
  report({ kind: 'index', done: total, total });
  report.flush();
  return index;
}

/** A shard document as BM25 reads it: its `language` metadata (a string) picks the analyzer. */
export function bm25Doc(doc: Doc): Bm25Doc {
  const language = doc.meta?.language;
  return {
    id: doc.id,
    title: doc.title,
    text: doc.text,
    ...(typeof language === 'string' && language ? { language } : {}),
  };
}

/**
 * The analysis a build over these documents uses, as a cache-key part: the analyzer of each
 * document-language group in first-appearance order and the analyzer version, e.g. "english@2".
 */
export function bm25AnalyzerKey(docs: readonly Bm25Doc[], language?: string): string {
  const ids: AnalyzerId[] = [];
  for (const d of docs) {
    const id = analyzerIdForLanguage(d.language || language);
    if (!ids.includes(id)) ids.push(id);
  }
  if (ids.length === 0) ids.push(analyzerIdForLanguage(language));
  return `${ids.join('+')}@${ANALYZER_VERSION}`;
}

/** Whether the document produced any token (false for unknown ids); token-less documents are never returned. */
export function bm25HasTokens(index: Bm25Index, docId: string): boolean {
  const d = index.docIndex.get(docId);
  return d !== undefined && index.docLengths[d] > 0;
}

interface QueryTerm {
  term: string;
  count: number;
  /** -1 when the term is not in the index. */
  id: number;
}

/**
 * Distinct query terms (analysed by `analyzer`, after the stop words of the query's language when
 * that is another language's) in first-occurrence order, with their repeat counts.
 */
function queryTerms(
  index: Bm25Index,
  queryText: string,
  analyzer: AnalyzerId,
  queryLanguage?: string,
): QueryTerm[] {
  const byTerm = new Map<string, QueryTerm>();
  const text =
    queryLanguage && analyzerIdForLanguage(queryLanguage) !== analyzer
      ? dropQueryStopWords(queryText, queryLanguage)
      : queryText;
  for (const term of getAnalyzer(analyzer).analyze(text)) {
    const q = byTerm.get(term);
    if (q) q.count++;
    else byTerm.set(term, { term, count: 1, id: index.terms.get(term) ?? -1 });
  }
  return [...byTerm.values()];
}

/** A term's weight for the query: count · idf (Lucene: BoostQuery(count) · idf, as float). */
function termWeight(index: Bm25Index, q: QueryTerm): { df: number; idf: number; weight: number } {
  const df = index.postingOffsets[q.id + 1] - index.postingOffsets[q.id];
  const idf = idfOf(index.params, df, index.indexedDocCount);
  const weight = index.params.lossyLengths ? fround(fround(q.count) * idf) : q.count * idf;
  return { df, idf, weight };
}

/** One term's contribution for a document with term frequency tf. */
function termScore(index: Bm25Index, weight: number, tf: number, d: number): number {
  if (index.params.lossyLengths) {
    const normInverse = index.lengthFactors[index.norms[d]];
    return fround(weight - fround(weight / fround(1 + fround(tf * normInverse))));
  }
  return (weight * tf) / (tf + index.lengthFactors[d]);
}

interface Scratch {
  acc: Float64Array;
  touched: Uint32Array;
  mark: Uint8Array;
}
const scratchByIndex = new WeakMap<Bm25Index, Scratch>();

/**
 * Returns the k best documents for the query, best first. Ties are ordered by document id
 * descending in UTF-8 byte order, the order trec_eval uses, so ranks here equal trec_eval's.
 */
export function searchBm25(
  index: Bm25Index,
  queryText: string,
  k: number,
  opts: SearchBm25Options = {},
): ScoredDoc[] {
  const n = index.docCount;
  let s = scratchByIndex.get(index);
  if (!s) {
    s = { acc: new Float64Array(n), touched: new Uint32Array(n), mark: new Uint8Array(n) };
    scratchByIndex.set(index, s);
  }
  const { acc, touched, mark } = s;
  const { postingOffsets, postingDocs, postingTfs } = index;
  const lossy = index.params.lossyLengths;
  let nTouched = 0;

  // Term-at-a-time: one pass over each query term's postings into the accumulator. With several
  // document-language groups, the query is analysed once per group and each analysis scores only
  // its group's documents (group −1: a single group, no filter).
  const groups = index.analyzers;
  const docGroup = index.docAnalyzer;
  for (let g = 0; g < groups.length; g++) {
    const only = groups.length === 1 ? -1 : g;
    for (const q of queryTerms(index, queryText, opts.queryAnalyzer ?? groups[g], opts.queryLanguage)) {
      if (q.id < 0) continue;
      const { weight } = termWeight(index, q);
      const end = postingOffsets[q.id + 1];
      if (lossy) {
        const norms = index.norms;
        const cache = index.lengthFactors;
        for (let i = postingOffsets[q.id]; i < end; i++) {
          const d = postingDocs[i];
          if (only >= 0 && docGroup[d] !== only) continue;
          const sc = fround(weight - fround(weight / fround(1 + fround(postingTfs[i] * cache[norms[d]]))));
          if (mark[d] === 0) ((mark[d] = 1), (touched[nTouched++] = d));
          acc[d] += sc;
        }
      } else {
        const lf = index.lengthFactors;
        for (let i = postingOffsets[q.id]; i < end; i++) {
          const d = postingDocs[i];
          if (only >= 0 && docGroup[d] !== only) continue;
          const tf = postingTfs[i];
          if (mark[d] === 0) ((mark[d] = 1), (touched[nTouched++] = d));
          acc[d] += (weight * tf) / (tf + lf[d]);
        }
      }
    }
  }

  let excluded: Set<number> | null = null;
  if (opts.exclude) {
    for (const id of opts.exclude) {
      const d = index.docIndex.get(id);
      if (d !== undefined) (excluded ??= new Set()).add(d);
    }
  }
  const idRank = index.idRank;
  const top = new TopK(Math.max(0, Math.floor(k)), (a, b) => idRank[a] - idRank[b]);
  for (let i = 0; i < nTouched; i++) {
    const d = touched[i];
    // Lucene sums clause scores in a double and returns a float.
    const score = lossy ? fround(acc[d]) : acc[d];
    acc[d] = 0;
    mark[d] = 0;
    if (excluded?.has(d)) continue;
    top.push(score, d);
  }
  return top.drain().map((e) => ({ docId: index.docIds[e.index], score: e.score }));
}

/**
 * Per-term breakdown of a document's score for the query ("why this rank"); null for an unknown id.
 * `queryLanguage` must be what searchBm25 was given for the scores to agree.
 */
export function explainBm25(
  index: Bm25Index,
  queryText: string,
  docId: string,
  queryLanguage?: string,
): Bm25Explanation | null {
  const d = index.docIndex.get(docId);
  if (d === undefined) return null;
  const terms: Bm25TermExplanation[] = [];
  let total = 0;
  const analyzer = index.analyzers[index.docAnalyzer[d]];
  for (const q of queryTerms(index, queryText, analyzer, queryLanguage)) {
    if (q.id < 0) {
      terms.push({ term: q.term, queryCount: q.count, tf: 0, df: 0, idf: 0, score: 0 });
      continue;
    }
    const { df, idf, weight } = termWeight(index, q);
    // Binary search the doc in the term's doc-ascending postings.
    let lo = index.postingOffsets[q.id];
    let hi = index.postingOffsets[q.id + 1];
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (index.postingDocs[mid] < d) lo = mid + 1;
      else hi = mid;
    }
    const tf = lo < index.postingOffsets[q.id + 1] && index.postingDocs[lo] === d ? index.postingTfs[lo] : 0;
    const score = tf > 0 ? termScore(index, weight, tf, d) : 0;
    total += score;
    terms.push({ term: q.term, queryCount: q.count, tf, df, idf, score });
  }
  const lossy = index.params.lossyLengths;
  return {
    docId,
    score: lossy ? fround(total) : total,
    docLength: index.docLengths[d],
    scoredLength: lossy ? byte4ToInt(index.norms[d]) : index.docLengths[d],
    avgdl: index.avgdl,
    analyzer,
    terms,
  };
}
