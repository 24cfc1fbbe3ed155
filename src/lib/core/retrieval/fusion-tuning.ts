// Tuning a fusion's parameters without leaking: k-fold cross-validation over the queries. Pure: no DOM,
// no Node APIs.
//
// 1. The queries that `evaluate` would count (qrels queries with a judgement that some run answers; with
//    `complete`, every qrels query) are shuffled with Xoshiro128(seed) (Fisher–Yates over their byte
//    order) and cut into `folds` folds of sizes differing by at most one.
// 2. For each fold f, each grid point is scored on the other folds' queries only: the mean over those
//    queries of the measure (evaluate's per-query values), exactly what `evaluate` would report for the
//    fused run restricted to them. The best point wins; equal scores keep the earliest grid point.
// 3. Fold f's queries are fused with fold f's chosen point, and only those queries: the held-out run is
//    the union of the folds' runs, and the reported measure is `evaluate` on it. No query's own
//    judgements ever choose the parameters it is fused with.
//
// Speed: the runs are read into per-query tables once (`prepareFusion`), and each grid point is fused
// and evaluated once over all queries; each fold's training score is then a mean over its training
// queries, which are the other folds (a query's value does not depend on other queries). For a measure
// with a cutoff that only the top k docs decide (P_k, recall_k, ndcg_cut_k, map_cut_k, success_k) the
// runs scored while tuning are cut to k docs, which changes no value.
import {
  COUNTERS,
  SUMMARY_ONLY_MEASURES,
  compareBytes,
  evaluate,
  parseMeasure,
  type EvalOptions,
} from '../eval/metrics';
import { Xoshiro128 } from '../eval/random';
import type { Qrels, Run } from '../types';
import type { FusionBase } from './fusion';
import type { FusionFold, FusionGridSpec, FusionParams, FusionTuning } from './fusion-record';
import {
  DEFAULT_FUSION_DEPTH,
  fusePrepared,
  methodParams,
  prepareFusion,
  type FusionMethod,
  type FusionOptions,
} from './fusion-methods';

/** RRF constants tried by default when tuning RRF: 10, 20, …, 100. */
export const DEFAULT_RRF_KS: readonly number[] = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
/** Default simplex step of tuned weights. */
export const DEFAULT_WEIGHT_STEP = 0.1;
export const DEFAULT_FOLDS = 5;
export const DEFAULT_TUNING_SEED = 42;

/**
 * Every weight vector of `runs` non-negative weights that are multiples of `step` and sum to 1 (1/step
 * must be an integer), the first weight descending: step 0.5, 2 runs → [1, 0], [0.5, 0.5], [0, 1].
 * Each weight is c / (1/step) for an integer c, so 0.1-steps are the doubles 0.1, 0.2, … exactly.
 */
export function simplexGrid(runs: number, step: number): number[][] {
  if (!(Number.isSafeInteger(runs) && runs >= 1)) throw new RangeError(`bad number of runs ${runs}`);
  const steps = Math.round(1 / step);
  if (!(step > 0 && steps >= 1 && Math.abs(steps * step - 1) < 1e-9))
    throw new RangeError(`the weight step must divide 1, got ${step}`);
  const out: number[][] = [];
  const parts = new Array<number>(runs).fill(0);
  const rec = (i: number, left: number) => {
    if (i === runs - 1) {
      parts[i] = left;
      out.push(parts.map((c) => c / steps));
      return;
    }
    for (let c = left; c >= 0; c--) {
      parts[i] = c;
      rec(i + 1, left - c);
    }
  };
  rec(0, steps);
  return out;
}

/**
 * The grid `tuneFusion` tries for `method`: per-run weights on the simplex (`step`, default 0.1) for the
 * methods that need weights (linear, weighted RRF), and for Borda, Condorcet and RRF only when `step`
 * is given; RRF's k over `ks` (RRF default 10…100; weighted RRF only when `ks` is given); the given
 * `normalizations` for score-based methods. Order: normalisation, then k, then weights. A method
 * with nothing to vary gets one point, {} (cross-validation then only reports the held-out score).
 */
export function fusionGrid(method: FusionMethod, runs: number, spec: FusionGridSpec = {}): FusionParams[] {
  const p = methodParams(method);
  const weights =
    p.weights === 'required' || (p.weights === 'optional' && spec.step !== undefined)
      ? simplexGrid(runs, spec.step ?? DEFAULT_WEIGHT_STEP)
      : null;
  const ks = p.k ? (spec.ks ?? (method === 'rrf' ? DEFAULT_RRF_KS : null)) : null;
  const norms = p.normalization ? (spec.normalizations ?? null) : null;
  let grid: FusionParams[] = [{}];
  if (norms) grid = grid.flatMap((g) => norms.map((normalization) => ({ ...g, normalization })));
  if (ks) grid = grid.flatMap((g) => ks.map((k) => ({ ...g, k })));
  if (weights) grid = grid.flatMap((g) => weights.map((w) => ({ ...g, weights: [...w] })));
  return grid;
}

/**
 * Assigns `queries` to `folds` folds: Fisher–Yates shuffle of their byte order with Xoshiro128(seed),
 * then consecutive slices of sizes ⌊n/folds⌋ or ⌈n/folds⌉. Each fold lists its queries in byte order.
 */
export function assignFolds(queries: readonly string[], folds: number, seed: number): string[][] {
  const ids = [...new Set(queries)].sort(compareBytes);
  const n = ids.length;
  if (!(Number.isSafeInteger(folds) && folds >= 2))
    throw new RangeError(`cross-validation needs at least 2 folds, got ${folds}`);
  if (folds > n) throw new RangeError(`${folds} folds need at least ${folds} queries, got ${n}`);
  const rng = new Xoshiro128(seed);
  for (let i = n - 1; i > 0; i--) {
    const j = rng.nextInt(i + 1);
    [ids[i], ids[j]] = [ids[j], ids[i]];
  }
  const out: string[][] = [];
  for (let f = 0; f < folds; f++)
    out.push(ids.slice(Math.floor((f * n) / folds), Math.floor(((f + 1) * n) / folds)).sort(compareBytes));
  return out;
}

export interface TuneFusionOptions {
  /** The method and its fixed options (depth, inputDepth, float32Ties, parameters the grid leaves). */
  fusion: FusionBase;
  /** Parameter points to try (e.g. `fusionGrid(...)`); equal training scores keep the earliest. */
  grid: readonly FusionParams[];
  /** How `grid` was generated, recorded in the tuning (so a permalink can rebuild it). */
  gridSpec?: FusionGridSpec;
  /** The measure to maximise: any evaluate measure with per-query values, e.g. `ndcg_cut_10`. */
  measure: string;
  /** Number of folds, 2 ≤ folds ≤ queries. Default 5. */
  folds?: number;
  /** Seed of the fold assignment. Default 42. */
  seed?: number;
  /** evaluate's options (trec_eval -l, -c, -M); the fusion's float32Ties is passed on as well. */
  evalOptions?: Pick<EvalOptions, 'relevanceLevel' | 'complete' | 'maxDocs'>;
  /** Called after each grid point is scored (done of total points). */
  onProgress?: (done: number, total: number) => void;
}

export interface TunedFusion {
  /** The held-out fused run: each fold's queries fused with the parameters the other folds chose. */
  run: Run;
  measure: string;
  /** The measure over `run` (evaluate's mean over the held-out queries): the number to report. */
  score: number;
  /** Per held-out query, the measure. */
  perQuery: Map<string, number>;
  /** Folds with their queries, chosen parameters, training and held-out scores; the seed and grid. */
  tuning: FusionTuning;
}

/** The qrels of `queries` only. */
function qrelsOf(qrels: Qrels, queries: readonly string[]): Qrels {
  const out: Qrels = new Map();
  for (const q of queries) {
    const j = qrels.get(q);
    if (j) out.set(q, j);
  }
  return out;
}

/** The cutoff k when the measure's per-query value only depends on the top k docs of the ranking. */
function topOnlyCutoff(measure: string): number | undefined {
  const p = parseMeasure(measure);
  const cut = ['P', 'recall', 'ndcg_cut', 'map_cut', 'success'];
  return 'k' in p && cut.includes(p.family) ? p.k : undefined;
}

/**
 * Tunes `opts.fusion`'s parameters over `opts.grid` by k-fold cross-validation over the queries (see
 * the file header) and returns the held-out fused run with its score and the tuning record (store it
 * with `describeFusion(opts.fusion, runNames, result.tuning)`).
 */
export function tuneFusion(runs: readonly Run[], qrels: Qrels, opts: TuneFusionOptions): TunedFusion {
  const { fusion, grid, measure } = opts;
  const K = opts.folds ?? DEFAULT_FOLDS;
  const seed = opts.seed ?? DEFAULT_TUNING_SEED;
  if (grid.length === 0) throw new RangeError('the tuning grid is empty');
  const family = parseMeasure(measure).family;
  if (COUNTERS.includes(family) || SUMMARY_ONLY_MEASURES.includes(family))
    throw new RangeError(`${measure} has no per-query mean to tune on`);
  const evalOpts: EvalOptions = { ...opts.evalOptions, float32Ties: fusion.float32Ties };
  const depth = fusion.depth ?? DEFAULT_FUSION_DEPTH;
  const tuneDepth = Math.min(depth, topOnlyCutoff(measure) ?? Infinity, evalOpts.maxDocs ?? Infinity);
  const optionsAt = (g: FusionParams, d: number) => ({ ...fusion, ...g, depth: d }) as FusionOptions;

  const prepared = prepareFusion(runs, fusion);
  const answered = new Set(prepared.queries.filter((q) => prepared.tables.get(q)!.ids.length > 0));
  const judged = [...qrels.keys()].filter((q) => (qrels.get(q)?.size ?? 0) > 0).sort(compareBytes);
  const queries = evalOpts.complete ? judged : judged.filter((q) => answered.has(q));
  const folds = assignFolds(queries, K, seed);
  const foldOf = new Map<string, number>();
  folds.forEach((f, i) => f.forEach((q) => foldOf.set(q, i)));
  const judgedQrels = qrelsOf(qrels, queries);

  // values[g·n + i]: the measure of queries[i] fused with grid[g]; NaN where evaluate skips the query.
  const n = queries.length;
  const values = new Float64Array(grid.length * n).fill(NaN);
  grid.forEach((g, gi) => {
    const fused = fusePrepared(prepared, optionsAt(g, tuneDepth), queries, true);
    const per = evaluate(judgedQrels, fused, [measure], evalOpts).perQuery;
    queries.forEach((q, i) => {
      const v = per.get(q)?.[measure];
      if (v !== undefined) values[gi * n + i] = v;
    });
    opts.onProgress?.(gi + 1, grid.length);
  });

  const run: Run = new Map();
  const foldResults: FusionFold[] = folds.map((foldQueries, f) => {
    let best = -1;
    let bestScore = -Infinity;
    for (let gi = 0; gi < grid.length; gi++) {
      // The mean over the training queries, summed in byte order as evaluate sums.
      let sum = 0;
      let count = 0;
      for (let i = 0; i < n; i++) {
        const v = values[gi * n + i];
        if (foldOf.get(queries[i]) === f || Number.isNaN(v)) continue;
        sum += v;
        count++;
      }
      const score = count ? sum / count : 0;
      if (score > bestScore) {
        best = gi;
        bestScore = score;
      }
    }
    const params = cloneParams(grid[best]);
    const held = fusePrepared(prepared, optionsAt(params, depth), foldQueries);
    for (const [q, docs] of held) run.set(q, docs);
    const testScore = evaluate(qrelsOf(qrels, foldQueries), held, [measure], evalOpts).all[measure];
    return { queries: foldQueries, params, trainScore: bestScore, testScore };
  });

  const sorted: Run = new Map([...run].sort((a, b) => compareBytes(a[0], b[0])));
  const result = evaluate(judgedQrels, sorted, [measure], evalOpts);
  const perQuery = new Map<string, number>();
  for (const [q, v] of result.perQuery) perQuery.set(q, v[measure]);
  const tuning: FusionTuning = {
    measure,
    seed,
    grid: grid.map(cloneParams),
    folds: foldResults,
    heldOutScore: result.all[measure],
  };
  if (opts.gridSpec) tuning.gridSpec = JSON.parse(JSON.stringify(opts.gridSpec)) as FusionGridSpec;
  if (evalOpts.relevanceLevel !== undefined) tuning.relevanceLevel = evalOpts.relevanceLevel;
  if (evalOpts.complete) tuning.complete = true;
  if (evalOpts.maxDocs !== undefined) tuning.maxDocs = evalOpts.maxDocs;
  return { run: sorted, measure, score: result.all[measure], perQuery, tuning };
}

function cloneParams(g: FusionParams): FusionParams {
  const c: FusionParams = {};
  if (g.k !== undefined) c.k = g.k;
  if (g.weights !== undefined) c.weights = [...g.weights];
  if (g.normalization !== undefined) c.normalization = g.normalization;
  return c;
}
