// Reranking a run with a cross-encoder: the top N documents of each query are reordered by the
// reranker's scores, the rest keep their order below them. Pure: no DOM, no I/O; the scores come
// from a callback (the encoder worker in the app, anything in tests).
//
// Score scheme (what the new run stores, so that trec_eval's re-sorting gives exactly this order):
//
// 1. Each query's documents are put in trec_eval order first (score descending, equal scores by docno
//    descending: rankQuery), and the first N are the candidates.
// 2. The candidates that have a text are scored; they form the reranked block, sorted by the reranker
//    score descending, equal scores in trec_eval's tie order (docno descending). They keep the
//    reranker score itself, so trec_eval sorts the block exactly that way.
// 3. Everything else keeps its previous order after the block: the candidates without a text (no
//    such document in the shard, or an empty one), then the documents below N. Their scores are the
//    previous ones shifted by one constant so that the first of them lands at floor(m) − 1, where
//    m is the lowest reranker score of the query. A constant shift keeps equal scores equal (their
//    docno order is the previous order, since that order was trec_eval's) and distinct scores in
//    the same order, unless floating-point rounding merges two of them; that is checked, and if it
//    happens (or a previous score is not finite) the rest get consecutive integers instead:
//    floor(m) − 1, floor(m) − 2, … in their previous order (for |m| beyond 2^53, where integers
//    are no longer exact, the next doubles below m instead).
// 4. A query whose text is empty, or none of whose candidates has a text, is kept as it was.
//
// Every output list is therefore its own trec_eval order: rankQuery(list) returns it unchanged.
import { compareBytes, rankQuery } from '../eval/metrics';
import type { Doc, Run, ScoredDoc } from '../types';

/** The text a document is reranked by (BEIR: title, a space, text), as it is embedded. */
export function pairText(d: Pick<Doc, 'title' | 'text'>): string {
  return [d.title, d.text]
    .filter((s) => s && s.trim())
    .join(' ')
    .trim();
}

/**
 * The start of a text up to its `maxWords`-th word (maximal run of non-whitespace characters holding
 * at least one letter, digit, punctuation or symbol). A tokenizer that splits at Unicode whitespace
 * gives every such word at least one token, so a text truncated at `maxWords` tokens tokenizes the
 * same from the clipped text: the tokenizer then skips the (possibly long) remainder.
 */
export function clipWords(text: string, maxWords: number): string {
  if (maxWords < 1) return '';
  const word = /[^\p{White_Space}]+/gu;
  let counted = 0;
  for (let m = word.exec(text); m; m = word.exec(text)) {
    if (/[\p{L}\p{N}\p{P}\p{S}]/u.test(m[0]) && ++counted === maxWords)
      return text.slice(0, m.index + m[0].length);
  }
  return text;
}

/** A document to score against a query. */
export interface RerankCandidate {
  docId: string;
  text: string;
}

/**
 * Scores one query's candidates: one finite number per candidate, in the same order (higher = more
 * relevant). May reject (e.g. when the job is cancelled); the whole rerank then rejects.
 */
export type PairScorer = (
  query: { id: string; text: string },
  candidates: RerankCandidate[],
) => Promise<ArrayLike<number>>;

export interface RerankOptions {
  /** How many documents of each query (in trec_eval order) are reranked; an integer ≥ 1. */
  topN: number;
  /** A query's text; empty or missing → the query is kept as it was. */
  queryText: (queryId: string) => string | null | undefined;
  /** A document's text; empty or missing → the document is not scored and goes below the block. */
  docText: (docId: string) => string | null | undefined;
  score: PairScorer;
  /** After each query: pairs scored so far of the total. */
  onProgress?: (done: number, total: number) => void;
}

/** One query's part of a rerank. */
export interface RerankItem {
  queryId: string;
  queryText: string;
  /** The query's documents in trec_eval order. */
  ranked: ScoredDoc[];
  /** The top-N documents with a text, in trec_eval order: what gets scored. */
  candidates: RerankCandidate[];
}

export interface RerankPlan {
  items: RerankItem[];
  /** Pairs to score (sum of candidates). */
  pairs: number;
  /** Queries kept as they were because they have no text. */
  queriesWithoutText: string[];
  /** Top-N documents not scored because they have no text (kept below the block). */
  docsWithoutText: number;
}

export interface RerankResult {
  run: Run;
  pairs: number;
  queriesWithoutText: string[];
  docsWithoutText: number;
}

function checkTopN(topN: number): void {
  if (!Number.isInteger(topN) || topN < 1) throw new RangeError(`top N must be an integer ≥ 1, got ${topN}`);
}

/** What a rerank of `run` would score, query by query (run order). */
export function planRerank(
  run: Run,
  topN: number,
  queryText: RerankOptions['queryText'],
  docText: RerankOptions['docText'],
): RerankPlan {
  checkTopN(topN);
  const items: RerankItem[] = [];
  const queriesWithoutText: string[] = [];
  let pairs = 0;
  let docsWithoutText = 0;
  for (const [queryId, list] of run) {
    const ranked = rankQuery(list);
    const text = (queryText(queryId) ?? '').trim();
    if (!text) {
      queriesWithoutText.push(queryId);
      items.push({ queryId, queryText: '', ranked, candidates: [] });
      continue;
    }
    const candidates: RerankCandidate[] = [];
    for (const d of ranked.slice(0, topN)) {
      const t = (docText(d.docId) ?? '').trim();
      if (t) candidates.push({ docId: d.docId, text: t });
      else docsWithoutText++;
    }
    pairs += candidates.length;
    items.push({ queryId, queryText: text, ranked, candidates });
  }
  return { items, pairs, queriesWithoutText, docsWithoutText };
}

/**
 * One query's reranked list (see the scheme at the top of this file). `ranked` must be in trec_eval
 * order (rankQuery); `scores` maps the scored top-N documents to their reranker scores (finite).
 * Top-N documents absent from `scores` go below the block. Without any scored document the list is
 * returned as it was.
 */
export function rerankList(
  ranked: readonly ScoredDoc[],
  topN: number,
  scores: ReadonlyMap<string, number>,
): ScoredDoc[] {
  checkTopN(topN);
  const head = ranked.slice(0, topN);
  const block: ScoredDoc[] = [];
  const rest: ScoredDoc[] = [];
  for (const d of head) {
    const s = scores.get(d.docId);
    if (s === undefined) rest.push(d);
    else {
      if (!Number.isFinite(s))
        throw new RangeError(`reranker score of document '${d.docId}' is not a finite number: ${s}`);
      block.push({ docId: d.docId, score: s });
    }
  }
  if (block.length === 0) return ranked.map((d) => ({ ...d }));
  for (let i = topN; i < ranked.length; i++) rest.push(ranked[i]);
  // trec_eval's order on the reranker scores: descending, ties by docno descending.
  block.sort((a, b) => b.score - a.score || compareBytes(b.docId, a.docId));
  const lowest = block[block.length - 1].score;
  // floor(m) − 1, or the next double below m where m is too large for integers to be exact.
  const start = Math.min(Math.floor(lowest) - 1, nextDown(lowest));
  return [...block, ...shiftBelow(rest, start, lowest)];
}

/** The largest double below a finite x. */
function nextDown(x: number): number {
  if (x === 0) return -Number.MIN_VALUE;
  const f = new Float64Array([x]);
  const bits = new BigInt64Array(f.buffer);
  bits[0] += x > 0 ? -1n : 1n;
  return f[0];
}

/**
 * The rest of a list, previous order kept, with scores below `below`: shifted by a constant so the
 * first is `start`, or consecutive integers from `start` down when the shift would change the order.
 */
function shiftBelow(rest: readonly ScoredDoc[], start: number, below: number): ScoredDoc[] {
  if (rest.length === 0) return [];
  const shift = start - rest[0].score;
  const shifted = rest.map((d) => ({ docId: d.docId, score: d.score + shift }));
  let exact = Number.isFinite(shift) && shifted[0].score < below;
  for (let i = 0; exact && i < shifted.length; i++) {
    const s = shifted[i].score;
    if (!Number.isFinite(s)) exact = false;
    else if (i > 0) {
      const prev = shifted[i - 1].score;
      // Strictly lower, or equal where the previous scores were equal (their docno order is kept).
      exact = s < prev || (s === prev && rest[i].score === rest[i - 1].score);
    }
  }
  if (exact) return shifted;
  const out: ScoredDoc[] = [];
  let prev = Infinity;
  for (let i = 0; i < rest.length; i++) {
    // start − i, kept strictly decreasing even where integers are no longer exact.
    prev = Math.min(start - i, i === 0 ? start : nextDown(prev));
    out.push({ docId: rest[i].docId, score: prev });
  }
  return out;
}

/**
 * Reranks the top N of every query of `run` with `score`, query by query (run order). Returns the
 * new run (every list in its own trec_eval order) and what could not be scored.
 */
export async function rerankRun(run: Run, opts: RerankOptions): Promise<RerankResult> {
  const plan = planRerank(run, opts.topN, opts.queryText, opts.docText);
  const out: Run = new Map();
  let done = 0;
  opts.onProgress?.(0, plan.pairs);
  for (const item of plan.items) {
    if (item.candidates.length === 0) {
      out.set(item.queryId, rerankList(item.ranked, opts.topN, new Map()));
      continue;
    }
    const got = await opts.score({ id: item.queryId, text: item.queryText }, item.candidates);
    if (got.length !== item.candidates.length)
      throw new Error(
        `the reranker returned ${got.length} scores for ${item.candidates.length} documents of query '${item.queryId}'`,
      );
    const scores = new Map<string, number>();
    item.candidates.forEach((c, i) => scores.set(c.docId, got[i]));
    out.set(item.queryId, rerankList(item.ranked, opts.topN, scores));
    done += item.candidates.length;
    opts.onProgress?.(done, plan.pairs);
  }
  return {
    run: out,
    pairs: plan.pairs,
    queriesWithoutText: plan.queriesWithoutText,
    docsWithoutText: plan.docsWithoutText,
  };
}
