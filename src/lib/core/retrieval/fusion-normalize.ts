// Per-query, per-run score normalisations of the score-based fusion methods (fusion-methods.ts), as
// ranx documents them (min-max, z-score/ZMUV, sum, max, rank), with Loupe's rules for constant lists
// and a non-positive maximum. Pure: no DOM, no Node APIs.
import { rankQuery, type RankOptions } from '../eval/metrics';
import type { ScoredDoc } from '../types';

/** Per-query, per-run score normalisation of the score-based methods. */
export type ScoreNormalization = 'minmax' | 'zscore' | 'sum' | 'max' | 'rank' | 'none';

export const SCORE_NORMALIZATIONS: readonly ScoreNormalization[] = [
  'minmax',
  'zscore',
  'sum',
  'max',
  'rank',
  'none',
];

/**
 * Normalises the finite scores `s` of one run's docs for one query, given in trec_eval order (best
 * first). With m = s.length, min / max / mean over the list:
 * - 'minmax': (s − min) / (max − min). A constant list (one doc included) maps to 1: each doc is that
 *   run's best answer and counts more than a doc the run did not return.
 * - 'zscore': (s − mean) / sd, population sd (divide by m); ranx's ZMUV. A constant list maps to 0.
 * - 'sum': (s − min) / Σ(s − min): the minimum maps to 0 and the list sums to 1. A constant list maps
 *   to 1/m (it still sums to 1).
 * - 'max': s / max (ranx). When max < 0 Loupe divides by |max| instead, so the order is kept (ranx's
 *   s / max would reverse it); when max = 0 the scores are kept as they are.
 * - 'rank': 1 − (p − 1) / m, p the 1-based position in the list: the top doc gets 1, the last 1/m.
 * - 'none': the raw scores.
 */
export function normalizeOrdered(s: ArrayLike<number>, norm: ScoreNormalization): Float64Array {
  const m = s.length;
  const out = new Float64Array(m);
  if (m === 0) return out;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < m; i++) {
    if (s[i] < min) min = s[i];
    if (s[i] > max) max = s[i];
  }
  switch (norm) {
    case 'none':
      out.set(s);
      return out;
    case 'minmax': {
      const range = max - min;
      if (range === 0) return out.fill(1);
      // A range that overflows (scores near ±MAX_VALUE) is scaled down first.
      if (!Number.isFinite(range)) {
        const h = max / 2 - min / 2;
        for (let i = 0; i < m; i++) out[i] = (s[i] / 2 - min / 2) / h;
        return out;
      }
      for (let i = 0; i < m; i++) out[i] = (s[i] - min) / range;
      return out;
    }
    case 'zscore': {
      if (max === min) return out; // all 0
      let sum = 0;
      for (let i = 0; i < m; i++) sum += s[i];
      const mean = sum / m;
      let ss = 0;
      for (let i = 0; i < m; i++) ss += (s[i] - mean) * (s[i] - mean);
      const sd = Math.sqrt(ss / m);
      if (sd === 0) return out;
      for (let i = 0; i < m; i++) out[i] = (s[i] - mean) / sd;
      return out;
    }
    case 'sum': {
      if (max === min) return out.fill(1 / m);
      // Scaling every term by the same power of two is exact, so the fallback for sums that would
      // overflow gives the same ratios.
      let scale = 1;
      let total = 0;
      for (let i = 0; i < m; i++) total += s[i] - min;
      if (!Number.isFinite(total)) {
        scale = 2 ** -(Math.ceil(Math.log2(m)) + 1);
        total = 0;
        for (let i = 0; i < m; i++) total += s[i] * scale - min * scale;
      }
      for (let i = 0; i < m; i++) out[i] = (s[i] * scale - min * scale) / total;
      return out;
    }
    case 'max': {
      const d = max === 0 ? 1 : Math.abs(max);
      for (let i = 0; i < m; i++) out[i] = s[i] / d;
      return out;
    }
    case 'rank':
      for (let i = 0; i < m; i++) out[i] = 1 - i / m;
      return out;
    default:
      throw new Error(`unknown score normalisation '${String(norm)}'`);
  }
}

export function checkNormalization(norm: unknown): ScoreNormalization {
  if (!SCORE_NORMALIZATIONS.includes(norm as ScoreNormalization))
    throw new Error(`unknown score normalisation '${String(norm)}'`);
  return norm as ScoreNormalization;
}

/**
 * A query's docs of one run with their normalised scores, in the input order; docs with a non-finite
 * score are dropped. Computed over the docs in trec_eval order (which 'rank' uses); see
 * `normalizeOrdered` above for each normalisation and its constant-list case.
 */
export function normalizeScores(
  docs: readonly ScoredDoc[],
  normalization: ScoreNormalization,
  opts: RankOptions = {},
): ScoredDoc[] {
  checkNormalization(normalization);
  const kept = docs.filter((d) => Number.isFinite(d.score));
  const ranked = rankQuery(kept, { float32Ties: opts.float32Ties });
  const values = normalizeOrdered(
    ranked.map((d) => d.score),
    normalization,
  );
  const at = new Map<ScoredDoc, number>();
  ranked.forEach((d, i) => at.set(d, values[i]));
  return kept.map((d) => ({ docId: d.docId, score: at.get(d)! }));
}
