// trec_eval 10.0's set and cutoff measures beyond P/recall: utility, set_map, set_relative_P,
// relative_P_k, Rprec_mult_m, unj_k and 11pt_avg. Written from the definitions in trec_eval 10.0's
// m_utility.c, m_set_map.c, m_set_rel_P.c, m_rel_P.c, m_Rprec_mult.c, m_unjudged.c and m_11pt_avg.c,
// with the same arithmetic order. Pure: no DOM, no Node APIs.
import { iprecAtRecall, type ResRels } from './res-rels';
import type { TrecEvalVersion } from './measure-names';

/** The 11 recall levels 11pt_avg averages over (m_11pt_avg.c). */
const ELEVEN_POINTS = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1];

/**
 * utility (m_utility.c) with trec_eval's default coefficients (1, -1, 0, 0): relevant retrieved minus
 * non-relevant retrieved. The last two terms (relevant not retrieved, and non-relevant not retrieved in
 * a collection of -N docs, 0 by default) are kept with weight 0, as trec_eval adds them.
 */
export function utility(rr: ResRels): number {
  const n = rr.rels.length;
  const a = rr.numRelRet;
  return 1 * a + -1 * (n - a) + 0 * (rr.numRel - a) + 0 * (0 + a - n - rr.numRel);
}

/** set_map (m_set_map.c): set precision × set recall, 0 with nothing retrieved or nothing relevant. */
export function setMap(rr: ResRels): number {
  const n = rr.rels.length;
  return n && rr.numRel ? (rr.numRelRet * rr.numRelRet) / (n * rr.numRel) : 0;
}

/** set_relative_P (m_set_rel_P.c): relevant retrieved / min(retrieved, R). */
export function setRelativeP(rr: ResRels): number {
  const n = rr.rels.length;
  return n && rr.numRel ? rr.numRelRet / Math.min(n, rr.numRel) : 0;
}

/**
 * relative_P_k (m_rel_P.c): relevant docs in the top k / min(k, R), so a perfect run scores 1 at every
 * k; missing ranks count as non-relevant; 0 when R = 0.
 */
export function relativeP(relTop: (k: number) => number, R: number, k: number): number {
  return R ? relTop(k) / (k > R ? R : k) : 0;
}

/**
 * Rprec_mult_m (m_Rprec_mult.c): precision at rank trunc(m × R + 0.9) (missing ranks non-relevant);
 * 0 when that rank is 0.
 */
export function rprecMult(relTop: (k: number) => number, R: number, mult: number): number {
  const cut = Math.trunc(mult * R + 0.9);
  return cut > 0 ? relTop(cut) / cut : 0;
}

/**
 * unj_k (m_unjudged.c): share of the top k that is unjudged (absent from the qrels, or listed with a
 * negative value); ranks beyond the ranking count as judged.
 */
export function unjudgedAt(rels: readonly number[], k: number): number {
  const lim = Math.min(k, rels.length);
  let unj = 0;
  for (let i = 0; i < lim; i++) if (rels[i] < 0) unj++;
  return unj / k;
}

/**
 * 11pt_avg (m_11pt_avg.c): mean interpolated precision at recall 0.0, 0.1, ..., 1.0, summed from the
 * highest level down as trec_eval does, with the version's recall cutoffs (res-rels.ts `recallCutoff`).
 * NaN for an empty ranking (-M 0), like trec_eval's -nan (9.0.8 and 10.0 alike).
 */
export function elevenPointAverage(rr: ResRels, level: number, version: TrecEvalVersion = '10.0'): number {
  const v = iprecAtRecall(rr, ELEVEN_POINTS, level, version);
  let sum = 0;
  for (let i = v.length - 1; i >= 0; i--) sum += v[i];
  return sum / v.length;
}
