// Fusion of two or more runs into one. The methods, their formulas and conventions (missing documents,
// ties, normalisations) are in fusion-methods.ts, re-exported here; cross-validated tuning of their
// parameters is in fusion-tuning.ts. This file describes a fusion: the JSON-safe descriptor stored
// with a fused run (method, normalisation, parameters and, when tuned, the folds and per-fold
// parameters), its short label, and the stored run configuration built from it and read back.
// Pure: no DOM, no Node APIs.
import {
  DEFAULT_FUSION_DEPTH,
  DEFAULT_NORMALIZATION,
  DEFAULT_RRF_K,
  FUSION_METHODS,
  SCORE_NORMALIZATIONS,
  methodParams,
  type FusionCommonOptions,
  type FusionMethod,
  type FusionOptions,
  type ScoreNormalization,
} from './fusion-methods';
import type { FusionParams, FusionTuning } from './fusion-record';
import type { RetrieverConfig } from './runs';

export * from './fusion-methods';
export * from './fusion-record';

/**
 * A method with its fixed options: a `FusionOptions`, or what a tuning starts from (the parameters
 * the grid varies left out, e.g. linear fusion without weights).
 */
export type FusionBase = {
  method: FusionMethod;
  k?: number;
  weights?: readonly number[];
  normalization?: ScoreNormalization;
} & FusionCommonOptions;

/** What a fused run was made from, with every default resolved: stored in the run's metadata. JSON-safe. */
export interface FusionDescriptor {
  method: FusionMethod;
  /** Names of the input runs, in the order they were given (the order of `weights`). */
  runs: string[];
  depth: number;
  /** Present when the inputs were cut before fusing. */
  inputDepth?: number;
  /** RRF constant (RRF and weighted RRF), unless tuned per fold. */
  k?: number;
  /** Weighted methods, unless tuned per fold. */
  weights?: number[];
  /** Score-based methods only, unless tuned per fold. */
  normalization?: ScoreNormalization;
  float32Ties?: boolean;
  /** Present when the parameters were tuned by cross-validation: folds and per-fold parameters. */
  tuning?: FusionTuning;
}

/**
 * The descriptor of a fusion, defaults resolved, to store beside the fused run. With `tuning`, the
 * parameters its grid varies are recorded per fold (in `tuning.folds`), not at the top level.
 */
export function describeFusion(
  options: FusionOptions | FusionBase,
  runNames: readonly string[],
  tuning?: FusionTuning,
): FusionDescriptor {
  const opts = options as FusionBase;
  const p = methodParams(opts.method);
  const tuned = new Set(tuning ? tuning.grid.flatMap((g) => Object.keys(g)) : []);
  const d: FusionDescriptor = {
    method: opts.method,
    runs: [...runNames],
    depth: opts.depth ?? DEFAULT_FUSION_DEPTH,
  };
  if (opts.inputDepth !== undefined) d.inputDepth = opts.inputDepth;
  if (p.k && !tuned.has('k')) d.k = opts.k ?? DEFAULT_RRF_K;
  if (p.weights !== 'none' && opts.weights && !tuned.has('weights')) d.weights = [...opts.weights];
  if (p.normalization && !tuned.has('normalization'))
    d.normalization = opts.normalization ?? DEFAULT_NORMALIZATION;
  if (opts.float32Ties) d.float32Ties = true;
  if (tuning) d.tuning = cloneTuning(tuning);
  return d;
}

function cloneTuning(t: FusionTuning): FusionTuning {
  return JSON.parse(JSON.stringify(t)) as FusionTuning;
}

/** Display names of the methods. */
export const METHOD_LABELS: Readonly<Record<FusionMethod, string>> = {
  rrf: 'RRF',
  wrrf: 'wRRF',
  combsum: 'CombSUM',
  combmnz: 'CombMNZ',
  combmax: 'CombMAX',
  combmin: 'CombMIN',
  combanz: 'CombANZ',
  linear: 'Linear',
  isr: 'ISR',
  logisr: 'logISR',
  borda: 'Borda',
  condorcet: 'Condorcet',
};

/**
 * Short UI label: `RRF k=60`, `CombMNZ zscore`, `Linear minmax 0.7/0.3`, and for a tuned fusion
 * `Linear minmax 5-fold CV ndcg_cut_10 seed 42`.
 */
export function fusionLabel(d: FusionDescriptor): string {
  const parts = [METHOD_LABELS[d.method] ?? d.method];
  if (d.k !== undefined) parts.push(`k=${d.k}`);
  if (d.normalization !== undefined) parts.push(d.normalization);
  if (d.weights) parts.push(d.weights.join('/'));
  if (d.tuning) parts.push(`${d.tuning.folds.length}-fold CV ${d.tuning.measure} seed ${d.tuning.seed}`);
  return parts.join(' ');
}

type FusionConfig = Extract<RetrieverConfig, { kind: 'fusion' }>;

/**
 * The stored configuration of a fused run: its descriptor's numbers and strings as `params` (weights
 * as `"0.7,0.3"`, float32Ties as 1), the tuning record as `tuning`, the input run ids as `inputs`.
 */
export function fusionConfig(d: FusionDescriptor, inputIds: readonly string[]): FusionConfig {
  const params: Record<string, number | string> = {};
  for (const [k, v] of Object.entries(d))
    if (typeof v === 'number' || typeof v === 'string') params[k] = v;
    else if (Array.isArray(v) && k === 'weights') params.weights = v.join(',');
  if (d.float32Ties) params.float32Ties = 1;
  const c: FusionConfig = { kind: 'fusion', method: d.method, params, inputs: [...inputIds] };
  if (d.tuning) c.tuning = cloneTuning(d.tuning);
  return c;
}

/**
 * The descriptor back from a stored fusion configuration (`runNames`: the inputs' names, when known;
 * otherwise their ids). Older stored runs without some parameter get the defaults of their method.
 */
export function fusionDescriptorOf(c: FusionConfig, runNames?: readonly string[]): FusionDescriptor {
  const method = c.method as FusionMethod;
  if (!FUSION_METHODS.includes(method)) throw new Error(`unknown fusion method '${c.method}'`);
  const p = methodParams(method);
  const num = (k: string) => (typeof c.params[k] === 'number' ? (c.params[k] as number) : undefined);
  const tuned = new Set(c.tuning ? c.tuning.grid.flatMap((g) => Object.keys(g)) : []);
  const d: FusionDescriptor = {
    method,
    runs: [...(runNames ?? c.inputs)],
    depth: num('depth') ?? DEFAULT_FUSION_DEPTH,
  };
  const inputDepth = num('inputDepth');
  if (inputDepth !== undefined) d.inputDepth = inputDepth;
  if (p.k && !tuned.has('k')) d.k = num('k') ?? DEFAULT_RRF_K;
  const w = c.params.weights;
  if (typeof w === 'string' && w) d.weights = w.split(',').map(Number);
  else if (typeof w === 'number') d.weights = [w];
  const norm = c.params.normalization;
  if (p.normalization && !tuned.has('normalization'))
    d.normalization = SCORE_NORMALIZATIONS.includes(norm as ScoreNormalization)
      ? (norm as ScoreNormalization)
      : DEFAULT_NORMALIZATION;
  if (c.params.float32Ties) d.float32Ties = true;
  if (c.tuning) d.tuning = cloneTuning(c.tuning);
  return d;
}

/**
 * The options that fused `queryId` in a described fusion: the descriptor's own parameters, or for a
 * tuned fusion those chosen for the fold holding the query (null when no fold holds it).
 */
export function fusionOptionsFor(d: FusionDescriptor, queryId?: string): FusionOptions | null {
  let params: FusionParams = {};
  if (d.tuning) {
    const fold = d.tuning.folds.find((f) => queryId !== undefined && f.queries.includes(queryId));
    if (!fold) return null;
    params = fold.params;
  }
  const o: Record<string, unknown> = { method: d.method, depth: d.depth };
  if (d.inputDepth !== undefined) o.inputDepth = d.inputDepth;
  if (d.float32Ties) o.float32Ties = true;
  for (const [k, v] of Object.entries({
    k: d.k,
    weights: d.weights,
    normalization: d.normalization,
    ...params,
  }))
    if (v !== undefined) o[k] = v;
  return o as unknown as FusionOptions;
}
