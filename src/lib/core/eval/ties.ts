// Tied scores in a run: which documents share a score, how many queries have a tie near the top, and
// how far each measure can move when the ties are broken another way. trec_eval breaks ties by document
// id (descending byte order, metrics.ts rankQuery), an accident of naming: renaming documents can move a
// query's nDCG from 1 to 0.63 (trec_eval issue #22). Pure: runs in the stats worker and in Node tests.
import { evaluate, rankQuery, type EvalOptions, type EvalResult, type RankOptions } from './metrics';
import { scoreKey, tieGroups, type TieOrder } from './tie-groups';
import { infApTieOrder } from './ties-infap';
import type { Qrels, Run, ScoredDoc } from '../types';

export { scoresTie, tieGroups, type TieGroup, type TieOrder } from './tie-groups';

/** TIE_TOP_K: "a tie in the top 10" is a tie that touches ranks 1..10. */
export const TIE_TOP_K = 10;

/**
 * Whether a document ranked 1..k (trec_eval's order) shares its score with another retrieved document,
 * inside the top k or just below it. Either can change a measure at k or above it when the tie is
 * broken another way. Sorts the scores only: no ranking is built.
 */
export function hasTieInTop(docs: readonly ScoredDoc[], k = TIE_TOP_K, opts: RankOptions = {}): boolean {
  if (scratch.length < docs.length) scratch = new Float64Array(Math.max(docs.length, 2 * scratch.length));
  let n = 0;
  let nans = 0;
  for (const d of docs) {
    if (Number.isNaN(d.score)) nans++;
    else scratch[n++] = scoreKey(d.score, opts);
  }
  const sorted = scratch.subarray(0, n).sort();
  // Ascending: rank r (1-based) is sorted[n - r]. A tie is two equal neighbours, the higher in the top k.
  for (let r = 1; r <= Math.min(k, n - 1); r++) if (sorted[n - r] === sorted[n - r - 1]) return true;
  // NaN scores rank last and tie each other.
  return nans >= 2 && n < k;
}

/** Scratch space for hasTieInTop's scores (one query at a time). */
let scratch = new Float64Array(1024);

/** The queries (of `queryIds`) whose top k holds a tie, in `queryIds`' order. */
export function queriesWithTies(
  run: Run,
  queryIds: Iterable<string>,
  k = TIE_TOP_K,
  opts: RankOptions = {},
): string[] {
  const out: string[] = [];
  for (const q of queryIds) if (hasTieInTop(run.get(q) ?? [], k, opts)) out.push(q);
  return out;
}

/**
 * A query's ranking with every tie broken best-first (relevant first, higher grade first) or worst-first
 * (the reverse), documents of the same grade in trec_eval's order; documents not in the qrels count as
 * grade -1, below judged non-relevant ones. Scores and their order are otherwise untouched; -M is not
 * applied here (a cut must come after the tie-break, as in trec_eval).
 */
export function breakTies(
  docs: readonly ScoredDoc[],
  judged: ReadonlyMap<string, number> | undefined,
  order: TieOrder,
  opts: RankOptions = {},
): ScoredDoc[] {
  const ranked = rankQuery(docs, { float32Ties: opts.float32Ties });
  const grade = (d: ScoredDoc) => {
    const g = judged?.get(d.docId);
    return g === undefined || g < 0 ? -1 : g;
  };
  const sign = order === 'best' ? -1 : 1;
  const out = ranked.slice();
  for (const g of tieGroups(ranked, opts)) {
    // Stable sort: equal grades keep trec_eval's order.
    const group = out.slice(g.from - 1, g.to).sort((a, b) => sign * (grade(a) - grade(b)));
    out.splice(g.from - 1, group.length, ...group);
  }
  return out;
}

/**
 * The run with its ties broken `order`-first: each query's documents get the scores n, n-1, …, 1 in
 * that order, so that trec_eval (or `evaluate`) ranks them exactly so.
 */
export function tieOrderedRun(run: Run, qrels: Qrels, order: TieOrder, opts: RankOptions = {}): Run {
  const out: Run = new Map();
  for (const [q, docs] of run) {
    const ordered = breakTies(docs, qrels.get(q), order, opts);
    out.set(
      q,
      ordered.map((d, i) => ({ ...d, score: ordered.length - i })),
    );
  }
  return out;
}

/** Each measure over the run with ties broken best-first and worst-first: its range over tie orders. */
export interface TieRange {
  best: EvalResult;
  worst: EvalResult;
}

/**
 * Measures whose best and worst over tie orders are the grade orders' values with the ends swapped: they
 * count unjudged documents (absent from the qrels or negative), which the best order puts last in a tie
 * and the worst first. So `best` holds their lowest value and `worst` their highest.
 */
export const REVERSED_RANGE_FAMILIES: readonly string[] = ['unj', 'rbp_resid'];

/**
 * `evaluate` on the run with its ties broken best-first and worst-first: each measure's range over tie
 * orders, the trec_eval order's value included.
 * - nDCG, recall, P, success, MAP, MRR, R-prec, bpref, GMAP, interpolated precision, and the other
 *   measures that only grow when a more relevant document moves up: the grade orders (`breakTies`) give
 *   the highest and lowest values any tie order gives.
 * - infAP: its own orders (ties-infap.ts), because with pooled-but-unjudged documents (qrels value < 0)
 *   infAP can grow when such a document moves above a relevant one. Its `best` and `worst` are its
 *   highest and lowest values over tie orders (groups above INFAP_DP_MAX_STATES aside), each from a
 *   different order than the other measures'.
 * - unj_k and rbp_resid (REVERSED_RANGE_FAMILIES): `best` is the lowest value and `worst` the highest.
 * - Judged@k and, with -M cutting a tie, num_nonrel_judged_ret count judged documents, not relevant ones:
 *   their best and worst need not be extremes.
 * tests/unit/ties.test.ts checks every golden value against these ranges, and infAP's against every tie
 * order of small runs.
 */
export function tieRange(
  qrels: Qrels,
  run: Run,
  measures: readonly string[],
  opts: EvalOptions = {},
): TieRange {
  const evalOpts: EvalOptions = { ...opts, float32Ties: false };
  const range: TieRange = {
    best: evaluate(qrels, tieOrderedRun(run, qrels, 'best', opts), measures, evalOpts),
    worst: evaluate(qrels, tieOrderedRun(run, qrels, 'worst', opts), measures, evalOpts),
  };
  if (measures.includes('infAP')) {
    for (const order of ['best', 'worst'] as const) {
      const ordered: Run = new Map();
      for (const [q, docs] of run) {
        const o = infApTieOrder(docs, qrels.get(q), order, opts);
        ordered.set(
          q,
          o.map((d, i) => ({ ...d, score: o.length - i })),
        );
      }
      const r = evaluate(qrels, ordered, ['infAP'], evalOpts);
      for (const [q, v] of r.perQuery) range[order].perQuery.get(q)!.infAP = v.infAP;
      range[order].all.infAP = r.all.infAP;
    }
  }
  return range;
}

/** A score as the tie notes print it: 4 decimals when that is exact, else every digit needed. */
export function formatTieScore(score: number): string {
  const fixed = score.toFixed(4);
  return Number(fixed) === score ? fixed : String(score);
}
