// trec_eval 10.0's gain-based measures beyond nDCG: G, binG, Rndcg, ndcg_rel, rbp and rbp_resid, with
// trec_eval's default gains (gain of a grade = the grade; unjudged, unpooled and grade-0 docs gain 0).
// Written from the definitions in trec_eval 10.0's m_G.c, m_binG.c, m_Rndcg.c, m_ndcg_rel.c, m_rbp.c,
// m_rbp_resid.c and gain_init.c; the arithmetic runs in the same order, so the doubles are identical.
// Pure: no DOM, no Node APIs.
import type { ResRels } from './res-rels';

/** Persistence of rbp and rbp_resid (trec_eval's default p). */
export const RBP_PERSISTENCE = 0.9;

/** Default gain of a judgment value: the grade itself when > 0 (gain_init.c), else 0. */
function gainOf(v: number): number {
  return v > 0 ? v : 0;
}

/**
 * The ideal ranking's gain at 0-based rank i: every qrels grade > 0, descending, then 0. This is the
 * walk over trec_eval's gain levels (highest first, `num_at_level` docs each) flattened.
 */
function idealAt(ideal: readonly number[], i: number): number {
  return i < ideal.length ? ideal[i] : 0;
}

/**
 * G, normalized gain (m_G.c): each retrieved gain divided by log2(2 + cost so far - gain so far), where
 * the cost of a rank is the ideal gain there (at least 1); the sum is divided by the total ideal gain.
 */
export function gMeasure(rr: ResRels): number {
  const { rels, idealGains: ideal } = rr;
  const n = rels.length;
  let g = 0;
  let gained = 0;
  let idealSum = 0;
  let cost = 0;
  let idealGain = idealAt(ideal, 0);
  let i = 0;
  // While the ideal ranking still gains: both rankings advance together.
  for (; i < n && idealGain > 0; i++) {
    const gain = gainOf(rels[i]);
    gained += gain;
    idealGain = idealAt(ideal, i);
    if (idealGain > 0) idealSum += idealGain;
    cost += idealGain >= 1 ? idealGain : 1;
    if (gain !== 0) g += gain / Math.log2(2 + cost - gained);
  }
  for (; i < n; i++) {
    const gain = gainOf(rels[i]);
    gained += gain;
    cost += 1;
    if (gain !== 0) g += gain / Math.log2(2 + cost - gained);
  }
  // The rest of the ideal ranking only adds to the ideal total.
  for (; idealGain > 0; i++) {
    idealGain = idealAt(ideal, i);
    if (idealGain > 0) idealSum += idealGain;
  }
  return idealSum > 0 ? g / idealSum : 0;
}

/** binG (m_binG.c): sum over relevant retrieved docs of 1 / log2(2 + non-relevant docs above it), / R. */
export function binG(rr: ResRels, level: number): number {
  const { rels, numRel: R } = rr;
  let relSoFar = 0;
  let sum = 0;
  for (let i = 0; i < rels.length; i++) {
    if (rels[i] >= level) {
      relSoFar++;
      sum += 1 / Math.log2(3 + i - relSoFar);
    }
  }
  return relSoFar ? sum / R : 0;
}

/**
 * Rndcg (m_Rndcg.c): nDCG averaged over the ranks where the ideal gain changes (the "R levels" of each
 * grade), plus the end of the ranking if it goes past the last positive ideal gain. 0 when R = 0.
 */
export function rndcg(rr: ResRels): number {
  const { rels, idealGains: ideal, numRel } = rr;
  if (numRel === 0) return 0;
  const n = rels.length;
  let dcg = 0;
  let idcg = 0;
  let sum = 0;
  let points = 0;
  let idealGain = idealAt(ideal, 0);
  let previous = idealGain;
  let i = 0;
  const boundary = () => {
    if (previous !== idealGain) {
      if (idcg > 0) {
        sum += dcg / idcg;
        points++;
      }
      previous = idealGain;
    }
  };
  for (; i < n && idealGain > 0; i++) {
    const gain = gainOf(rels[i]);
    idealGain = idealAt(ideal, i);
    boundary();
    if (gain !== 0) dcg += gain / Math.log2(i + 2);
    if (idealGain > 0) idcg += idealGain / Math.log2(i + 2);
  }
  if (i < n) {
    for (; i < n; i++) {
      const gain = gainOf(rels[i]);
      if (gain !== 0) dcg += gain / Math.log2(i + 2);
    }
    if (idcg > 0) {
      sum += dcg / idcg;
      points++;
    }
  }
  for (; idealGain > 0; i++) {
    idealGain = idealAt(ideal, i);
    boundary();
    if (idealGain > 0) idcg += idealGain / Math.log2(i + 2);
  }
  // 0/0 (no point counted, e.g. -l 0 with only grade-0 judgments) is NaN, as in trec_eval.
  return sum / points;
}

/**
 * ndcg_rel (m_ndcg_rel.c): nDCG averaged over the relevant docs (gain > 0); a relevant doc not retrieved
 * contributes DCG at the end of the ranking / the ideal DCG over all relevant docs.
 */
export function ndcgRel(rr: ResRels): number {
  const { rels, idealGains: ideal } = rr;
  const n = rels.length;
  let dcg = 0;
  let idcg = 0;
  let sum = 0;
  let relCount = 0;
  let relRet = 0;
  let idealGain = idealAt(ideal, 0);
  let i = 0;
  for (; i < n && idealGain > 0; i++) {
    const gain = gainOf(rels[i]);
    if (gain !== 0) dcg += gain / Math.log2(i + 2);
    idealGain = idealAt(ideal, i);
    if (idealGain > 0) {
      relCount++;
      idcg += idealGain / Math.log2(i + 2);
    }
    if (gain > 0) {
      sum += dcg / idcg;
      relRet++;
    }
  }
  for (; i < n; i++) {
    const gain = gainOf(rels[i]);
    if (gain !== 0) dcg += gain / Math.log2(i + 2);
    if (gain > 0) {
      sum += dcg / idcg;
      relRet++;
    }
  }
  for (; idealGain > 0; i++) {
    idealGain = idealAt(ideal, i);
    if (idealGain > 0) {
      relCount++;
      idcg += idealGain / Math.log2(i + 2);
    }
  }
  sum += ((relCount - relRet) * dcg) / idcg;
  return sum > 0 ? sum / relCount : 0;
}

/**
 * Gains of rbp: trec_eval rescales the gain levels to [0, 1] with (gain - min) / (max - min) when one lies
 * outside it. The levels run from grade 0 to the query's highest judged grade, so min is 0 and max the
 * highest grade; a doc with no level (unjudged, unpooled) gains 0.
 */
function rbpScale(rr: ResRels): (v: number) => number {
  const top = rr.idealGains.length ? rr.idealGains[0] : 0;
  if (top <= 1) return gainOf;
  return (v) => (v < 0 ? 0 : v / top);
}

/**
 * rbp (m_rbp.c): rank-biased precision, (1 - p) * sum of gain_i * p^(i-1), with persistence p and
 * gains rescaled to [0, 1].
 */
export function rbp(rr: ResRels, p = RBP_PERSISTENCE): number {
  const gain = rbpScale(rr);
  let sum = 0;
  let weight = 1;
  for (const v of rr.rels) {
    const g = gain(v);
    if (g !== 0) sum += g * weight;
    weight *= p;
  }
  return (1 - p) * sum;
}

/**
 * rbp_resid (m_rbp_resid.c): how much rbp could still rise if every unjudged retrieved doc had gain 1,
 * plus the weight of the ranks below the ranking; 0 when every retrieved doc is judged.
 */
export function rbpResidual(rr: ResRels, p = RBP_PERSISTENCE): number {
  let sum = 0;
  let weight = 1;
  let unjudged = 0;
  for (const v of rr.rels) {
    if (v < 0) {
      unjudged++;
      sum += weight;
    }
    weight *= p;
  }
  return unjudged ? weight + (1 - p) * sum : 0;
}
