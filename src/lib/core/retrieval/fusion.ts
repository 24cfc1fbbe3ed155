// Fusion of two or more runs into one: reciprocal rank fusion (RRF), CombSUM, CombMNZ and weighted
// linear fusion, with per-query, per-run score normalisation. Pure: no DOM, no Node APIs.
//
// Conventions shared by every method:
// - The fused run has the union of the input runs' queries. Per query, a document's fused score is a
//   sum of one contribution per input run; a run that does not return the document contributes
//   nothing (0).
// - Each input query is first put in trec_eval's order with `rankQuery` (score descending, equal scores
//   by docno descending) and, with `inputDepth`, cut to its first `inputDepth` docs, exactly as trec_eval
//   -M would cut it. RRF ranks are positions (1-based) in that order.
// - A document id appearing twice in one query of one run is an error (trec_eval rejects it too).
// - Contributions are summed in descending order of value, so the fused score of a document does not
//   depend on the order the runs are given in (only on which run gave which contribution, through the
//   weights).
// - The output holds each query's docs in trec_eval's order, cut to `depth` (default 1000); equal fused
//   scores are therefore broken by docno descending, the way `evaluate` will order them again.
//
// Score-based methods (CombSUM, CombMNZ, linear) normalise each run's scores per query first:
// - 'minmax': (s - min) / (max - min) over that run's docs of the query, so its top doc gets 1 and its
//   bottom doc 0. A constant-score list (all scores equal, including a single doc) maps every doc to 1:
//   each of them is that run's best answer, and it still counts more than a doc the run did not return.
// - 'zscore': (s - mean) / sd with the population standard deviation (divide by the list length). A
//   constant-score list maps every doc to 0 (no deviation from its mean). Normalised scores below the
//   list mean are negative, so such a doc scores lower than one the run did not return (0).
// - 'none': raw scores, only meaningful when the runs' scores are on one scale.
// Docs whose score is not finite (NaN, ±Infinity) are left out of score-based fusion for that run, as if
// the run had not returned them (they do keep their trec_eval rank, last, for RRF).
// A document missing from a run contributes 0 after normalisation, and CombMNZ's multiplier counts only
// the runs that returned the document (with a finite score).
import { compareBytes, rankQuery } from '../eval/metrics';
import type { Run, ScoredDoc } from '../types';

/** Per-query, per-run score normalisation of the score-based methods. */
export type ScoreNormalization = 'minmax' | 'zscore' | 'none';

export type FusionMethod = 'rrf' | 'combsum' | 'combmnz' | 'linear';

/** Options shared by every fusion method. */
export interface FusionCommonOptions {
  /** Docs kept per query in the fused run (trec_eval order). Default 1000. */
  depth?: number;
  /** Cut each input query to its first n docs (trec_eval order) before fusing. Default: all docs. */
  inputDepth?: number;
  /** Order input and output rankings comparing scores as float32 (see `RankOptions.float32Ties`). */
  float32Ties?: boolean;
}

export interface RrfOptions extends FusionCommonOptions {
  /** RRF constant: a doc at rank r of a run contributes weight / (k + r). Default 60. */
  k?: number;
  /** One non-negative weight per run. Default 1 for every run. */
  weights?: readonly number[];
}

export interface ScoreFusionOptions extends FusionCommonOptions {
  /** Default 'minmax'. */
  normalization?: ScoreNormalization;
}

export interface LinearFusionOptions extends ScoreFusionOptions {
  /** One non-negative weight per run: fused score = Σ weight · normalised score. */
  weights: readonly number[];
}

/** Every fusion method with its parameters, as the UI picks one. */
export type FusionOptions =
  | ({ method: 'rrf' } & RrfOptions)
  | ({ method: 'combsum' } & ScoreFusionOptions)
  | ({ method: 'combmnz' } & ScoreFusionOptions)
  | ({ method: 'linear' } & LinearFusionOptions);

/** What a fused run was made from, with every default resolved: stored in the run's metadata. JSON-safe. */
export interface FusionDescriptor {
  method: FusionMethod;
  /** Names of the input runs, in the order they were given (the order of `weights`). */
  runs: string[];
  depth: number;
  /** Present when the inputs were cut before fusing. */
  inputDepth?: number;
  /** RRF constant (RRF only). */
  k?: number;
  /** Linear fusion, and RRF when weighted. */
  weights?: number[];
  /** Score-based methods only. */
  normalization?: ScoreNormalization;
  float32Ties?: boolean;
}

export const DEFAULT_RRF_K = 60;
export const DEFAULT_FUSION_DEPTH = 1000;

// ---------------------------------------------------------------------------------------------------
// Normalisation

/**
 * A query's docs of one run with their normalised scores, in the input order (docs with a non-finite
 * score are dropped). See the file header for constant lists.
 */
export function normalizeScores(docs: readonly ScoredDoc[], normalization: ScoreNormalization): ScoredDoc[] {
  const kept = docs.filter((d) => Number.isFinite(d.score));
  const m = kept.length;
  if (m === 0 || normalization === 'none') return kept.map((d) => ({ docId: d.docId, score: d.score }));
  if (normalization === 'minmax') {
    let min = Infinity;
    let max = -Infinity;
    for (const d of kept) {
      if (d.score < min) min = d.score;
      if (d.score > max) max = d.score;
    }
    const range = max - min;
    // A range that overflows (scores near ±MAX_VALUE) is scaled down first.
    if (range === 0) return kept.map((d) => ({ docId: d.docId, score: 1 }));
    if (!Number.isFinite(range)) {
      const h = max / 2 - min / 2;
      return kept.map((d) => ({ docId: d.docId, score: (d.score / 2 - min / 2) / h }));
    }
    return kept.map((d) => ({ docId: d.docId, score: (d.score - min) / range }));
  }
  if (normalization === 'zscore') {
    let sum = 0;
    for (const d of kept) sum += d.score;
    const mean = sum / m;
    let ss = 0;
    let allEqual = true;
    for (const d of kept) {
      const e = d.score - mean;
      ss += e * e;
      if (d.score !== kept[0].score) allEqual = false;
    }
    const sd = Math.sqrt(ss / m);
    if (allEqual || sd === 0) return kept.map((d) => ({ docId: d.docId, score: 0 }));
    return kept.map((d) => ({ docId: d.docId, score: (d.score - mean) / sd }));
  }
  throw new Error(`unknown score normalisation '${String(normalization)}'`);
}

// ---------------------------------------------------------------------------------------------------
// Core

function checkDepth(name: string, v: number | undefined, fallback: number | undefined): number | undefined {
  if (v === undefined) return fallback;
  if (!(Number.isSafeInteger(v) && v >= 1))
    throw new RangeError(`${name} must be a positive integer, got ${v}`);
  return v;
}

function checkWeights(weights: readonly number[] | undefined, runs: number): number[] {
  if (weights === undefined) return new Array<number>(runs).fill(1);
  if (weights.length !== runs)
    throw new RangeError(`expected ${runs} weights (one per run), got ${weights.length}`);
  for (const w of weights)
    if (!(Number.isFinite(w) && w >= 0))
      throw new RangeError(`weights must be finite and non-negative, got ${w}`);
  return [...weights];
}

function checkRuns(runs: readonly Run[]): void {
  if (runs.length < 2) throw new RangeError(`fusion needs at least two runs, got ${runs.length}`);
}

/** Union of the runs' query ids, byte order. */
function queryUnion(runs: readonly Run[]): string[] {
  const ids = new Set<string>();
  for (const r of runs) for (const q of r.keys()) ids.add(q);
  return [...ids].sort(compareBytes);
}

/**
 * Shared accumulator: `contribute(q, r, docs, values)` for each run, then `finish` sums every doc's
 * contributions (descending) and applies the optional MNZ multiplier.
 */
function fuseWith(
  runs: readonly Run[],
  common: FusionCommonOptions,
  contributions: (
    docs: ScoredDoc[],
    runIndex: number,
  ) => { docs: readonly ScoredDoc[]; values: ArrayLike<number> },
  mnz: boolean,
): Run {
  const depth = checkDepth('depth', common.depth, DEFAULT_FUSION_DEPTH)!;
  const inputDepth = checkDepth('inputDepth', common.inputDepth, undefined);
  const R = runs.length;
  const out: Run = new Map();
  for (const q of queryUnion(runs)) {
    const index = new Map<string, number>();
    const ids: string[] = [];
    // contrib[i * R + r]: run r's contribution to doc i (0 when absent); count[i]: runs returning it.
    let contrib = new Float64Array(64 * R);
    let count = new Int32Array(64);
    for (let r = 0; r < R; r++) {
      const ranked = rankQuery(runs[r].get(q) ?? [], {
        maxDocs: inputDepth,
        float32Ties: common.float32Ties,
      });
      const seen = new Set<string>();
      for (const d of ranked) {
        if (seen.has(d.docId)) throw new Error(`duplicate doc '${d.docId}' in query '${q}' of run ${r + 1}`);
        seen.add(d.docId);
      }
      const { docs, values } = contributions(ranked, r);
      for (let j = 0; j < docs.length; j++) {
        const id = docs[j].docId;
        let i = index.get(id);
        if (i === undefined) {
          i = ids.length;
          index.set(id, i);
          ids.push(id);
          if (i >= count.length) {
            const c2 = new Float64Array(contrib.length * 2);
            c2.set(contrib);
            contrib = c2;
            const n2 = new Int32Array(count.length * 2);
            n2.set(count);
            count = n2;
          }
        }
        contrib[i * R + r] = values[j];
        count[i]++;
      }
    }
    if (ids.length === 0) continue;
    const fused: ScoredDoc[] = [];
    const buf = new Float64Array(R);
    for (let i = 0; i < ids.length; i++) {
      for (let r = 0; r < R; r++) buf[r] = contrib[i * R + r];
      buf.sort();
      let s = 0;
      for (let r = R - 1; r >= 0; r--) s += buf[r];
      fused.push({ docId: ids[i], score: mnz ? s * count[i] : s });
    }
    out.set(q, rankQuery(fused, { maxDocs: depth, float32Ties: common.float32Ties }));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Methods

/**
 * Reciprocal rank fusion: score(d) = Σ_runs w_r / (k + rank_r(d)), rank_r(d) the 1-based position of
 * d in run r's trec_eval order (after `inputDepth`); a run without d adds nothing. k >= 0, default 60.
 */
export function reciprocalRankFusion(runs: readonly Run[], opts: RrfOptions = {}): Run {
  checkRuns(runs);
  const k = opts.k ?? DEFAULT_RRF_K;
  if (!(Number.isFinite(k) && k >= 0)) throw new RangeError(`RRF k must be finite and >= 0, got ${k}`);
  const w = checkWeights(opts.weights, runs.length);
  return fuseWith(
    runs,
    opts,
    (docs, r) => {
      const values = new Float64Array(docs.length);
      for (let i = 0; i < docs.length; i++) values[i] = w[r] / (k + i + 1);
      return { docs, values };
    },
    false,
  );
}

function scoreFusion(runs: readonly Run[], opts: ScoreFusionOptions, weights: number[], mnz: boolean): Run {
  const norm = opts.normalization ?? 'minmax';
  if (norm !== 'minmax' && norm !== 'zscore' && norm !== 'none')
    throw new Error(`unknown score normalisation '${String(norm)}'`);
  return fuseWith(
    runs,
    opts,
    (ranked, r) => {
      const docs = normalizeScores(ranked, norm);
      const values = new Float64Array(docs.length);
      for (let i = 0; i < docs.length; i++) values[i] = weights[r] * docs[i].score;
      return { docs, values };
    },
    mnz,
  );
}

/** CombSUM: score(d) = Σ_runs normalised score (0 for a run without d). Default normalisation min-max. */
export function combSum(runs: readonly Run[], opts: ScoreFusionOptions = {}): Run {
  checkRuns(runs);
  return scoreFusion(runs, opts, checkWeights(undefined, runs.length), false);
}

/**
 * CombMNZ: CombSUM × the number of runs that returned d (with a finite score, within `inputDepth`).
 * Default normalisation min-max.
 */
export function combMnz(runs: readonly Run[], opts: ScoreFusionOptions = {}): Run {
  checkRuns(runs);
  return scoreFusion(runs, opts, checkWeights(undefined, runs.length), true);
}

/** Weighted linear fusion: score(d) = Σ_runs w_r · normalised score (0 for a run without d). */
export function linearFusion(runs: readonly Run[], opts: LinearFusionOptions): Run {
  checkRuns(runs);
  return scoreFusion(runs, opts, checkWeights(opts.weights, runs.length), false);
}

/** Fuses runs with the method and parameters of `opts`. */
export function fuse(runs: readonly Run[], opts: FusionOptions): Run {
  switch (opts.method) {
    case 'rrf':
      return reciprocalRankFusion(runs, opts);
    case 'combsum':
      return combSum(runs, opts);
    case 'combmnz':
      return combMnz(runs, opts);
    case 'linear':
      return linearFusion(runs, opts);
    default:
      throw new Error(`unknown fusion method '${String((opts as { method: unknown }).method)}'`);
  }
}

/** The descriptor of a fusion, defaults resolved, to store beside the fused run. */
export function describeFusion(opts: FusionOptions, runNames: readonly string[]): FusionDescriptor {
  const d: FusionDescriptor = {
    method: opts.method,
    runs: [...runNames],
    depth: opts.depth ?? DEFAULT_FUSION_DEPTH,
  };
  if (opts.inputDepth !== undefined) d.inputDepth = opts.inputDepth;
  if (opts.method === 'rrf') {
    d.k = opts.k ?? DEFAULT_RRF_K;
    if (opts.weights) d.weights = [...opts.weights];
  } else {
    d.normalization = opts.normalization ?? 'minmax';
    if (opts.method === 'linear') d.weights = [...opts.weights];
  }
  if (opts.float32Ties) d.float32Ties = true;
  return d;
}

const METHOD_LABELS: Readonly<Record<FusionMethod, string>> = {
  rrf: 'RRF',
  combsum: 'CombSUM',
  combmnz: 'CombMNZ',
  linear: 'Linear',
};

/** Short UI label: `RRF k=60`, `CombMNZ zscore`, `Linear minmax 0.7/0.3`. */
export function fusionLabel(d: FusionDescriptor): string {
  const parts = [METHOD_LABELS[d.method]];
  if (d.k !== undefined) parts.push(`k=${d.k}`);
  if (d.normalization !== undefined) parts.push(d.normalization);
  if (d.weights) parts.push(d.weights.join('/'));
  return parts.join(' ');
}
