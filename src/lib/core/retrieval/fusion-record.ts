// What a cross-validated fusion tuning records (fusion-tuning.ts makes it; a fused run's descriptor and
// its stored config keep it): the grid, the folds and the parameters each fold chose. Apart from
// fusion.ts so that runs.ts can describe a tuning without importing the fusion code.
import type { ScoreNormalization } from './fusion-normalize';

/** The parameters a tuning grid varies (each absent key is taken from the fixed options). */
export interface FusionParams {
  k?: number;
  weights?: number[];
  normalization?: ScoreNormalization;
}

/** How a tuning grid was generated (`fusionGrid`), kept so a permalink can rebuild it. */
export interface FusionGridSpec {
  /** Simplex step of the weights (1/step an integer), e.g. 0.1. */
  step?: number;
  /** RRF constants to try. */
  ks?: number[];
  /** Normalisations to try (score-based methods). */
  normalizations?: ScoreNormalization[];
}

/** One fold of a cross-validated tuning. */
export interface FusionFold {
  /** The fold's (held-out) query ids, byte order. */
  queries: string[];
  /** Parameters chosen on the other folds' queries. */
  params: FusionParams;
  /** Mean of the measure over the other folds' queries with `params` (what chose them). */
  trainScore: number;
  /** Mean of the measure over this fold's queries, fused with `params`. */
  testScore: number;
}

/** What a cross-validated tuning did (fusion-tuning.ts): stored in the fused run's descriptor. */
export interface FusionTuning {
  /** The measure maximised, e.g. `ndcg_cut_10` (evaluate's name). */
  measure: string;
  /** Seed of the shuffle that assigned queries to folds (Xoshiro128). */
  seed: number;
  /** Every grid point, in the order tried (equal training scores keep the earliest). */
  grid: FusionParams[];
  /** How the grid was generated, when by `fusionGrid`. */
  gridSpec?: FusionGridSpec;
  folds: FusionFold[];
  /** The measure over the held-out run (the union of the folds, each fused with its own parameters). */
  heldOutScore: number;
  /** evaluate's options that change the measure (trec_eval -l, -c, -M). */
  relevanceLevel?: number;
  complete?: boolean;
  maxDocs?: number;
}

/** One line on how a described fusion was made, for run descriptions (`describeConfig`). */
export function describeTuning(t: FusionTuning): string {
  return `tuned by ${t.folds.length}-fold cross-validation on ${t.measure} (seed ${t.seed}, ${t.grid.length} grid points), held-out ${t.measure} ${t.heldOutScore.toFixed(4)}`;
}
