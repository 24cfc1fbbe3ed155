// BM25 lexical retrieval, scored as Lucene's BM25Similarity (the model behind Pyserini/Anserini's
// BEIR baselines) over an inverted index held in typed arrays.
//
//   idf(t)     = ln(1 + (N − df + 0.5) / (df + 0.5))
//   score(t,d) = count(t in query) · idf(t) · tf / (tf + k1 · (1 − b + b · dl / avgdl))
//   score(d)   = Σ over distinct query terms
//
// N and avgdl count only documents that produced at least one token, as Lucene's
// CollectionStatistics.docCount does for a field; token-less documents (e.g. image-only) have no
// postings and are never returned. Lucene dropped the (k1 + 1) numerator factor in 8.0; it scales
// every score equally and does not change rankings, so it is left out here too.
//
// With `lossyLengths` (the default) scores reproduce Anserini's bit for bit, modulo analyzer
// differences: Lucene stores each document length in one byte (SmallFloat.intToByte4: exact up
// to 39, then 4 significant bits, i.e. ≤ 1/8 relative error, always rounding down) and scores with
// the decoded length, while avgdl comes from the exact sum of lengths. Lucene also computes in
// 32-bit floats (idf, avgdl and a 256-entry table of 1/(k1·(1 − b + b·dl/avgdl)), then
// weight − weight / (1 + tf · that), then a double sum cast to float); this mode emulates that
// with Math.fround so equal Lucene scores tie here too. With `lossyLengths: false` the textbook
// formula is evaluated in float64 with exact lengths.
//
// Languages: each document is analysed by its own language's analyzer (analyzers.ts: the document's
// `language`, else the shard's declared language, else English), and a query is analysed, for each
// document, by that document's analyzer: terms only match when both sides went through the same
// analysis. A query in another language than the document's first loses its own language's stop
// words (they mean nothing in the document's language and would only match noise). A corpus in one language (the common case, and every demo shard) is one analyzer and
// exactly the single-analyzer index; in a mixed corpus the documents of each language form a group,
// the query is analysed once per group and its terms score only that group's documents. All groups
// share one field, so N, avgdl and df are corpus-wide (a term two languages produce alike, such as
// a drug name, counts its documents in both).
import { ANALYZER_VERSION } from './analyzer';
import { analyzerIdForLanguage, dropQueryStopWords, getAnalyzer, type AnalyzerId } from './analyzers';
import { TopK } from './topk';
import type { Doc, ScoredDoc } from '../types';
import { byte4ToInt } from './lucene-norms';
import { docIdAt, docPosition, forEachPosting, termId, type Bm25Index, type Bm25Params } from './bm25-index';
import type { Bm25Doc } from './bm25-build';

export { byte4ToInt, intToByte4 } from './lucene-norms';
export {
  assemble,
  checkParams,
  DEFAULT_BM25_PARAMS,
  docIdAt,
  docPosition,
  termId,
  type Bm25Index,
  type Bm25Params,
} from './bm25-index';
export { Bm25Builder, buildBm25Index, type Bm25Doc, type BuildBm25Options } from './bm25-build';

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

function idfOf(params: Bm25Params, df: number, n: number): number {
  const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
  return params.lossyLengths ? fround(idf) : idf;
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
  const d = docPosition(index, docId);
  return d >= 0 && index.docLengths[d] > 0;
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
    else byTerm.set(term, { term, count: 1, id: termId(index, term) });
  }
  return [...byTerm.values()];
}

/** A term's weight for the query: count · idf (Lucene: BoostQuery(count) · idf, as float). */
function termWeight(index: Bm25Index, q: QueryTerm): { df: number; idf: number; weight: number } {
  const df = index.termDf[q.id];
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
  const { postingOffsets, postings } = index;
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
      const norms = index.norms;
      const lf = index.lengthFactors;
      // The postings' encoding (bm25-index.ts), decoded inline: v = 2·gap + (tf = 1), then tf ≠ 1.
      // Both fit 31 bits (fewer than 2^30 documents, lengths below 2^31), so int arithmetic is exact.
      let d = -1;
      for (let p = postingOffsets[q.id]; p < end;) {
        let byte = postings[p++];
        let v = byte & 127;
        for (let shift = 7; byte >= 128; shift += 7) v |= ((byte = postings[p++]) & 127) << shift;
        d += v >>> 1;
        let tf = 1;
        if ((v & 1) === 0) {
          byte = postings[p++];
          tf = byte & 127;
          for (let shift = 7; byte >= 128; shift += 7) tf |= ((byte = postings[p++]) & 127) << shift;
        }
        if (only >= 0 && docGroup[d] !== only) continue;
        if (mark[d] === 0) ((mark[d] = 1), (touched[nTouched++] = d));
        acc[d] += lossy
          ? fround(weight - fround(weight / fround(1 + fround(tf * lf[norms[d]]))))
          : (weight * tf) / (tf + lf[d]);
      }
    }
  }

  let excluded: Set<number> | null = null;
  if (opts.exclude) {
    for (const id of opts.exclude) {
      const d = docPosition(index, id);
      if (d >= 0) (excluded ??= new Set()).add(d);
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
  return top.drain().map((e) => ({ docId: docIdAt(index, e.index), score: e.score }));
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
  const d = docPosition(index, docId);
  if (d < 0) return null;
  const terms: Bm25TermExplanation[] = [];
  let total = 0;
  const analyzer = index.analyzers[index.docAnalyzer[d]];
  for (const q of queryTerms(index, queryText, analyzer, queryLanguage)) {
    if (q.id < 0) {
      terms.push({ term: q.term, queryCount: q.count, tf: 0, df: 0, idf: 0, score: 0 });
      continue;
    }
    const { df, idf, weight } = termWeight(index, q);
    // Scan the term's doc-ascending postings up to the document.
    let tf = 0;
    forEachPosting(index, q.id, (doc, f) => {
      if (doc === d) tf = f;
      return doc < d;
    });
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
