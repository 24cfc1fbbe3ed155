// Tie groups of a ranking in trec_eval's order, and when two scores tie: shared by ties.ts (the range of
// the measures over tie orders) and ties-infap.ts (infAP's own best and worst orders).
import type { RankOptions } from './metrics';
import type { ScoredDoc } from '../types';

/** How ties are broken: trec_eval's (document id descending), or the best or worst order for the measures. */
export type TieOrder = 'best' | 'worst';

/** A run of consecutive ranked documents sharing one score (two or more). Ranks are 1-based. */
export interface TieGroup {
  from: number;
  to: number;
  score: number;
}

/** The key scores are compared by in trec_eval's order: as double, or as float32 (9.x / pytrec_eval). */
export function scoreKey(score: number, opts: RankOptions): number {
  return opts.float32Ties ? Math.fround(score) : score;
}

/** Whether two scores tie in trec_eval's order (NaN ties NaN, as rankQuery orders NaNs by id; 0 ties -0). */
export function scoresTie(a: number, b: number, opts: RankOptions = {}): boolean {
  const na = Number.isNaN(a);
  if (na || Number.isNaN(b)) return na && Number.isNaN(b);
  return scoreKey(a, opts) === scoreKey(b, opts);
}

/** The tie groups of a ranking already in trec_eval's order (rankQuery), by rank. */
export function tieGroups(ranked: readonly ScoredDoc[], opts: RankOptions = {}): TieGroup[] {
  const out: TieGroup[] = [];
  let start = 0;
  for (let i = 1; i <= ranked.length; i++) {
    if (i < ranked.length && scoresTie(ranked[i].score, ranked[start].score, opts)) continue;
    if (i - start >= 2) out.push({ from: start + 1, to: i, score: ranked[start].score });
    start = i;
  }
  return out;
}
