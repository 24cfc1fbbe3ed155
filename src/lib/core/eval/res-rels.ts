// One query's ranking turned into judgment values (trec_eval's RES_RELS, form_res_rels.c), and the
// building blocks several measures share (nDCG at a depth, interpolated precision). Split out of
// metrics.ts. Pure: no DOM, no Node APIs.
import type { ScoredDoc } from '../types';
import type { TrecEvalVersion } from './measure-names';

/** Qrels judgment for a doc not listed in the qrels (trec_eval.h:226 RELVALUE_NONPOOL). */
export const NONPOOL = -1;
/** Qrels judgment for a listed doc with a negative grade (trec_eval.h:227 RELVALUE_UNJUDGED). */
export const UNJUDGED = -2;

/** One query's ranking turned into what every measure needs (trec_eval's RES_RELS). */
export interface ResRels {
  /** Judgment value of the doc at each rank (grade, NONPOOL or UNJUDGED). */
  rels: number[];
  numRel: number;
  numRelRet: number;
  /** Judged entries of the query below the relevance level (grades 0..L-1): bpref's non-relevant pool. */
  numNonrel: number;
  /** Ranked docs absent from the qrels, and ranked docs listed with a negative value. */
  numNonpool: number;
  numUnjudged: number;
  /** Grades > 0 of every qrels entry of the query, descending: the ideal ranking for IDCG. */
  idealGains: number[];
}

export function formResRels(
  ranked: readonly ScoredDoc[],
  judged: ReadonlyMap<string, number>,
  level: number,
): ResRels {
  const rels: number[] = [];
  let numRelRet = 0;
  let numNonpool = 0;
  let numUnjudged = 0;
  const seen = new Set<string>();
  for (const d of ranked) {
    // form_res_rels.c rejects duplicate docnos (checked after -M, like trec_eval).
    if (seen.has(d.docId)) throw new Error(`duplicate doc '${d.docId}' in one query of the run`);
    seen.add(d.docId);
    const g = judged.get(d.docId);
    const v = g === undefined ? NONPOOL : g < 0 ? UNJUDGED : g;
    rels.push(v);
    if (v === NONPOOL) numNonpool++;
    else if (v === UNJUDGED) numUnjudged++;
    // num_rel_ret only counts judged docs (form_res_rels.c), even with -l <= -1.
    else if (v >= level) numRelRet++;
  }
  let numRel = 0;
  let numNonrel = 0;
  const idealGains: number[] = [];
  for (const g of judged.values()) {
    // rel_levels count only grades >= 0 (form_res_rels.c:160-194); R = entries with grade >= L (:234-241).
    if (g >= 0 && g >= level) numRel++;
    else if (g >= 0) numNonrel++;
    if (g > 0) idealGains.push(g);
  }
  idealGains.sort((a, b) => b - a);
  return { rels, numRel, numRelRet, numNonrel, numNonpool, numUnjudged, idealGains };
}

/** nDCG over the top `k` (Infinity: the whole ranking), trec_eval's linear gain (m_ndcg_cut.c, m_ndcg.c). */
export function ndcgAt(rels: readonly number[], idealGains: readonly number[], k: number): number {
  // Linear gain = judgment value if > 0, discount log2(rank + 1); the ideal ranking is every qrels grade
  // > 0 descending, retrieved or not. -l is not used. 0 if IDCG = 0.
  const lim = Math.min(k, rels.length);
  let dcg = 0;
  for (let i = 0; i < lim; i++) if (rels[i] > 0) dcg += rels[i] / Math.log2(i + 2);
  const ilim = Math.min(k, idealGains.length);
  let idcg = 0;
  for (let i = 0; i < ilim; i++) idcg += idealGains[i] / Math.log2(i + 2);
  return idcg > 0 ? dcg / idcg : dcg;
}

/**
 * The number of relevant docs that stands for recall level `p` of R relevant docs. trec_eval 10.0
 * (m_iprec_at_recall.c, m_11pt_avg.c) rounds p·R to the nearest integer, halves away from zero (lround);
 * trec_eval 9.0.8 adds 0.9 and truncates ((long) (p·R + 0.9), "the same cutoffs as historical MAP
 * implementations"), so any fraction above 0.1 rounds up there: recall 0.6 of R = 12 is 7 relevant docs
 * in 10.0 (lround 7.2) and 8 in 9.0.8. Both in double arithmetic, as trec_eval computes them.
 */
export function recallCutoff(p: number, R: number, version: TrecEvalVersion = '10.0'): number {
  // lround on a non-negative value = Math.round (half away from zero); the C cast truncates.
  return version === '9.0.8' ? Math.trunc(p * R + 0.9) : Math.round(p * R);
}

/**
 * Interpolated precision at each recall level (m_iprec_at_recall.c): the level becomes a number of
 * relevant docs (`recallCutoff`, which differs between 10.0 and 9.0.8), and the value is the best
 * precision at or after the rank where that many relevant docs have been seen; levels beyond the relevant
 * docs retrieved are 0. Values are by level; trec_eval fills them from the last level down (11pt_avg sums
 * them in that order).
 */
export function iprecAtRecall(
  rr: ResRels,
  levels: readonly number[],
  level: number,
  version: TrecEvalVersion = '10.0',
): number[] {
  const { rels, numRel: R, numRelRet } = rr;
  const N = rels.length;
  const out = levels.map(() => 0);
  const cut = levels.map((p) => recallCutoff(p, R, version));
  let cur = levels.length - 1;
  while (cur >= 0 && cut[cur] > numRelRet) cur--;
  // An empty ranking (-M 0) gives 0/0 = NaN at the levels reached (trec_eval prints -nan). A query
  // missing from the run with -c is not empty: `evaluate` ranks trec_eval's one unpooled bogus doc.
  let best = numRelRet / N;
  let relSoFar = numRelRet;
  // Walk the ranking backwards so `best` is the maximum precision at or below each rank.
  for (let i = N; i > 0 && relSoFar > 0; i--) {
    const p = relSoFar / i;
    if (best < p) best = p;
    if (rels[i - 1] >= level) {
      while (cur >= 0 && relSoFar === cut[cur]) out[cur--] = best;
      relSoFar--;
    }
  }
  while (cur >= 0) out[cur--] = best;
  return out;
}
