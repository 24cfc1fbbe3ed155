// The fusion methods and score normalisations, computed over a per-query table of the input runs. Pure:
// no DOM, no Node APIs. fusion.ts re-exports everything here and adds descriptors and labels;
// fusion-tuning.ts tunes the parameters by cross-validation on the same tables (`prepareFusion`).
//
// Definitions follow ranx's documentation (Bassani & Romelli, "ranx.fuse", 2022) and the papers it
// cites; the code is written from the formulas. Per query q, with runs r = 1..R:
// - rank_r(d): 1-based position of doc d in run r's trec_eval order (`rankQuery`: score descending,
//   equal scores by docno descending), after cutting the run to `inputDepth` docs. Docs with a non-finite
//   score keep their rank (trec_eval puts NaN last).
// - s_r(d): d's score in run r after the run's per-query normalisation `norm` (see `normalizeScores`).
//   Docs with a non-finite score have no s_r(d): score-based methods treat them as not returned.
// - R(d): the runs that returned d (for score-based methods: with a finite score); |R(d)| their count.
//   Every method below works on the union of the docs the runs returned for q; a doc no run returned
//   does not appear.
//
// Score-based methods (normalisation applies; default min-max):
//   CombSUM   Σ_{r∈R(d)} s_r(d)                     a run without d adds nothing (counts as 0)
//   Linear    Σ_{r∈R(d)} w_r·s_r(d)                 (ranx "wsum"); a run without d adds nothing
//   CombMNZ   |R(d)| · Σ_{r∈R(d)} s_r(d)
//   CombANZ   Σ_{r∈R(d)} s_r(d) / |R(d)|            mean over the runs that returned d
//   CombMAX   max_{r∈R(d)} s_r(d)                   over the runs that returned d only (as ranx)
//   CombMIN   min_{r∈R(d)} s_r(d)                   over the runs that returned d only (as ranx): a doc
//                                                    one run missed is not pushed to 0 by that run
// Rank-based methods (normalisation does not apply):
//   RRF       Σ_{r∈R(d)} w_r / (k + rank_r(d))       k ≥ 0, default 60; w_r default 1
//   wRRF      the same with per-run weights required (weighted RRF)
//   ISR       |R(d)| · Σ_{r∈R(d)} 1 / rank_r(d)²     inverse square rank (Mourão et al., 2014)
//   logISR    ln|R(d)| · Σ_{r∈R(d)} 1 / rank_r(d)²   a doc returned by one run scores ln 1 = 0
//   Borda     Σ_r w_r · points_r(d), n = |union of q's docs|, m_r = docs run r kept for q:
//             points_r(d) = n − rank_r(d) + 1 when r returned d, else (n − m_r + 1) / 2 (the points left,
//             Σ_{j=1}^{n−m_r} j, shared equally by the n − m_r docs r did not rank: Aslam & Montague 2001)
//   Condorcet Condorcet-fuse (Montague & Aslam 2002): d goes before e when the runs preferring d outweigh
//             those preferring e (Σ w_r over runs; a run prefers d to e when it ranks d higher, or ranks
//             d and not e; a run ranking neither has no preference). The union, first in docno-descending
//             order, is merge-sorted (stable) with that comparison; within a majority cycle the order is
//             the one this sort leaves, deterministic for a given set of docs and runs. The fused score
//             of the doc at position p (1-based) of n is n − p + 1, so trec_eval's order is the sort's.
//
// Conventions shared by every method:
// - Sums over runs are taken in descending order of the terms, so a fused score depends only on which
//   run gave which term (through its weight), not on the order the runs are listed in.
// - The fused run has the union of the input runs' queries (a query where no doc gets a fused score is
//   left out). Each query's docs are in trec_eval's order, cut to `depth` (default 1000): equal fused
//   scores are broken by docno descending, exactly as `evaluate` will order them again.
// - A document id twice in one query of one run is an error (trec_eval rejects it too).
import { compareBytes, rankQuery, type RankOptions } from '../eval/metrics';
import type { Run, ScoredDoc } from '../types';
import { checkNormalization, normalizeOrdered, type ScoreNormalization } from './fusion-normalize';
import { scratch, topDocs } from './fusion-select';

export { normalizeScores, SCORE_NORMALIZATIONS, type ScoreNormalization } from './fusion-normalize';

export type FusionMethod =
  | 'rrf'
  | 'wrrf'
  | 'combsum'
  | 'combmnz'
  | 'combmax'
  | 'combmin'
  | 'combanz'
  | 'linear'
  | 'isr'
  | 'logisr'
  | 'borda'
  | 'condorcet';

export const FUSION_METHODS: readonly FusionMethod[] = [
  'rrf',
  'wrrf',
  'combsum',
  'combmnz',
  'combmax',
  'combmin',
  'combanz',
  'linear',
  'isr',
  'logisr',
  'borda',
  'condorcet',
];

/** The parameters a method takes: RRF's k, per-run weights (required or optional), a normalisation. */
export interface MethodParams {
  k: boolean;
  weights: 'required' | 'optional' | 'none';
  normalization: boolean;
}

const SCORE_METHODS: readonly FusionMethod[] = [
  'combsum',
  'combmnz',
  'combmax',
  'combmin',
  'combanz',
  'linear',
];

/** Which parameters `method` takes (what a UI shows for it, what a tuning grid may vary). */
export function methodParams(method: FusionMethod): MethodParams {
  if (!FUSION_METHODS.includes(method)) throw new Error(`unknown fusion method '${String(method)}'`);
  return {
    k: method === 'rrf' || method === 'wrrf',
    weights:
      method === 'linear' || method === 'wrrf'
        ? 'required'
        : method === 'rrf' || method === 'borda' || method === 'condorcet'
          ? 'optional'
          : 'none',
    normalization: SCORE_METHODS.includes(method),
  };
}

/** Whether `method` fuses normalised scores (true) or ranks (false). */
export function isScoreMethod(method: FusionMethod): boolean {
  return SCORE_METHODS.includes(method);
}

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

export interface WeightedRrfOptions extends FusionCommonOptions {
  /** Default 60. */
  k?: number;
  /** One non-negative weight per run. */
  weights: readonly number[];
}

export interface ScoreFusionOptions extends FusionCommonOptions {
  /** Default 'minmax'. */
  normalization?: ScoreNormalization;
}

export interface LinearFusionOptions extends ScoreFusionOptions {
  /** One non-negative weight per run: fused score = Σ weight · normalised score. */
  weights: readonly number[];
}

export interface RankFusionOptions extends FusionCommonOptions {
  /** Borda and Condorcet: one non-negative weight per run (weighted variants). Default 1 each. */
  weights?: readonly number[];
}

/** Every fusion method with its parameters, as the UI picks one. */
export type FusionOptions =
  | ({ method: 'rrf' } & RrfOptions)
  | ({ method: 'wrrf' } & WeightedRrfOptions)
  | ({ method: 'combsum' | 'combmnz' | 'combmax' | 'combmin' | 'combanz' } & ScoreFusionOptions)
  | ({ method: 'linear' } & LinearFusionOptions)
  | ({ method: 'isr' | 'logisr' } & FusionCommonOptions)
  | ({ method: 'borda' | 'condorcet' } & RankFusionOptions);

export const DEFAULT_RRF_K = 60;
export const DEFAULT_FUSION_DEPTH = 1000;
export const DEFAULT_NORMALIZATION: ScoreNormalization = 'minmax';

// ---------------------------------------------------------------------------------------------------
// Per-query tables

/** One query of the input runs: the union of their docs with each run's rank and raw score. */
interface QueryTable {
  ids: string[];
  /** rank[i·R + r]: 1-based rank of doc i in run r (trec_eval order, after inputDepth); 0 = absent. */
  rank: Int32Array;
  /** raw[i·R + r]: doc i's score in run r (meaningful where rank > 0). */
  raw: Float64Array;
  /** Docs each run kept for the query. */
  listLength: Int32Array;
  /** Normalised scores by normalisation, computed on first use; NaN where absent or not finite. */
  norm: Map<ScoreNormalization, Float64Array>;
}

/** The input runs read once into per-query tables, fused then with any method and parameters. */
export interface PreparedFusion {
  readonly runCount: number;
  /** Query ids (union of the runs'), byte order. */
  readonly queries: readonly string[];
  readonly inputDepth: number | undefined;
  readonly float32Ties: boolean;
  readonly tables: ReadonlyMap<string, QueryTable>;
}

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

function buildTable(q: string, runs: readonly Run[], rankOpts: RankOptions): QueryTable {
  const R = runs.length;
  const lists: ScoredDoc[][] = [];
  const listLength = new Int32Array(R);
  let total = 0;
  for (let r = 0; r < R; r++) {
    const ranked = rankQuery(runs[r].get(q) ?? [], rankOpts);
    const seen = new Set<string>();
    for (const d of ranked) {
      if (seen.has(d.docId)) throw new Error(`duplicate doc '${d.docId}' in query '${q}' of run ${r + 1}`);
      seen.add(d.docId);
    }
    lists.push(ranked);
    listLength[r] = ranked.length;
    total += ranked.length;
  }
  const index = new Map<string, number>();
  const ids: string[] = [];
  const rank = new Int32Array(total * R);
  const raw = new Float64Array(total * R);
  for (let r = 0; r < R; r++) {
    const list = lists[r];
    for (let j = 0; j < list.length; j++) {
      let i = index.get(list[j].docId);
      if (i === undefined) {
        i = ids.length;
        index.set(list[j].docId, i);
        ids.push(list[j].docId);
      }
      rank[i * R + r] = j + 1;
      raw[i * R + r] = list[j].score;
    }
  }
  const n = ids.length;
  return { ids, rank: rank.slice(0, n * R), raw: raw.slice(0, n * R), listLength, norm: new Map() };
}

/** The union of the runs' query ids, byte order. */
function queryUnion(runs: readonly Run[]): string[] {
  const ids = new Set<string>();
  for (const r of runs) for (const q of r.keys()) ids.add(q);
  return [...ids].sort(compareBytes);
}

/**
 * Reads the runs into per-query tables (each input query ranked trec_eval's way and cut to
 * `inputDepth`), for `fusePrepared`. `fuse` is `fusePrepared(prepareFusion(runs, opts), opts)`.
 */
export function prepareFusion(
  runs: readonly Run[],
  opts: Pick<FusionCommonOptions, 'inputDepth' | 'float32Ties'> = {},
): PreparedFusion {
  checkRuns(runs);
  const inputDepth = checkDepth('inputDepth', opts.inputDepth, undefined);
  const rankOpts: RankOptions = { maxDocs: inputDepth, float32Ties: opts.float32Ties };
  const queries = queryUnion(runs);
  const tables = new Map<string, QueryTable>();
  for (const q of queries) tables.set(q, buildTable(q, runs, rankOpts));
  return { runCount: runs.length, queries, inputDepth, float32Ties: !!opts.float32Ties, tables };
}

function normalized(t: QueryTable, R: number, norm: ScoreNormalization): Float64Array {
  const cached = t.norm.get(norm);
  if (cached) return cached;
  const n = t.ids.length;
  const out = new Float64Array(n * R).fill(NaN);
  for (let r = 0; r < R; r++) {
    const order = new Int32Array(t.listLength[r]);
    for (let i = 0; i < n; i++) if (t.rank[i * R + r] > 0) order[t.rank[i * R + r] - 1] = i;
    const docs: number[] = [];
    const scores: number[] = [];
    for (const i of order)
      if (Number.isFinite(t.raw[i * R + r])) {
        docs.push(i);
        scores.push(t.raw[i * R + r]);
      }
    const v = normalizeOrdered(scores, norm);
    for (let j = 0; j < docs.length; j++) out[docs[j] * R + r] = v[j];
  }
  t.norm.set(norm, out);
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Methods

interface Resolved {
  method: FusionMethod;
  depth: number;
  k: number;
  weights: number[];
  normalization: ScoreNormalization;
}

/** Validates `opts` for `R` runs and fills in the defaults. */
function resolve(opts: FusionOptions, R: number): Resolved {
  const method = opts.method;
  const p = methodParams(method);
  const o = opts as FusionCommonOptions & {
    k?: number;
    weights?: readonly number[];
    normalization?: unknown;
  };
  const depth = checkDepth('depth', o.depth, DEFAULT_FUSION_DEPTH)!;
  checkDepth('inputDepth', o.inputDepth, undefined);
  const k = o.k ?? DEFAULT_RRF_K;
  if (p.k) {
    if (!(Number.isFinite(k) && k >= 0)) throw new RangeError(`RRF k must be finite and >= 0, got ${k}`);
  } else if (o.k !== undefined) throw new RangeError(`${method} takes no k`);
  if (p.weights === 'required' && o.weights === undefined)
    throw new RangeError(`${method} needs one weight per run`);
  if (p.weights === 'none' && o.weights !== undefined) throw new RangeError(`${method} takes no weights`);
  const weights = checkWeights(o.weights, R);
  if (!p.normalization && o.normalization !== undefined)
    throw new RangeError(`${method} fuses ranks and takes no normalisation`);
  const normalization = checkNormalization(o.normalization ?? DEFAULT_NORMALIZATION);
  return { method, depth, k, weights, normalization };
}

/** Sum of buf[0..len) in descending order of the terms (order-free for one or two terms). */
function sumDesc(buf: Float64Array, len: number): number {
  if (len === 0) return 0;
  if (len === 1) return buf[0];
  if (len === 2) return buf[0] + buf[1];
  const v = buf.subarray(0, len);
  v.sort();
  let s = 0;
  for (let j = len - 1; j >= 0; j--) s += v[j];
  return s;
}

/** Fused scores of a table's docs; `keep[i]` = 0 leaves doc i out (a score method, no finite score). */
function scoreTable(t: QueryTable, R: number, o: Resolved): { scores: Float64Array; keep: Uint8Array } {
  const n = t.ids.length;
  const { scores, keep } = scratch(n);
  const buf = new Float64Array(R);
  const w = o.weights;
  if (isScoreMethod(o.method)) {
    const v = normalized(t, R, o.normalization);
    const weighted = o.method === 'linear';
    for (let i = 0; i < n; i++) {
      let c = 0;
      let max = -Infinity;
      let min = Infinity;
      for (let r = 0; r < R; r++) {
        const x = v[i * R + r];
        if (Number.isNaN(x)) continue;
        const y = weighted ? w[r] * x : x;
        buf[c++] = y;
        if (y > max) max = y;
        if (y < min) min = y;
      }
      if (c === 0) {
        keep[i] = 0;
        continue;
      }
      switch (o.method) {
        case 'combmax':
          scores[i] = max;
          break;
        case 'combmin':
          scores[i] = min;
          break;
        case 'combmnz':
          scores[i] = sumDesc(buf, c) * c;
          break;
        case 'combanz':
          scores[i] = sumDesc(buf, c) / c;
          break;
        default: // combsum, linear
          scores[i] = sumDesc(buf, c);
      }
    }
    return { scores, keep };
  }
  for (let i = 0; i < n; i++) {
    let c = 0;
    if (o.method === 'borda') {
      for (let r = 0; r < R; r++) {
        const rk = t.rank[i * R + r];
        buf[r] = w[r] * (rk > 0 ? n - rk + 1 : (n - t.listLength[r] + 1) / 2);
      }
      scores[i] = sumDesc(buf, R);
      continue;
    }
    for (let r = 0; r < R; r++) {
      const rk = t.rank[i * R + r];
      if (rk === 0) continue;
      buf[c++] = o.method === 'rrf' || o.method === 'wrrf' ? w[r] / (o.k + rk) : 1 / (rk * rk);
    }
    const s = sumDesc(buf, c);
    scores[i] = o.method === 'isr' ? c * s : o.method === 'logisr' ? Math.log(c) * s : s;
  }
  return { scores, keep };
}

/** Condorcet-fuse order of a table's docs (see the file header), as scores n, n − 1, …, 1. */
function condorcetScores(
  t: QueryTable,
  R: number,
  w: readonly number[],
): { scores: Float64Array; keep: Uint8Array } {
  const n = t.ids.length;
  let a = Array.from({ length: n }, (_, i) => i).sort((x, y) => compareBytes(t.ids[y], t.ids[x]));
  // Does doc x go after doc y? Only when the runs preferring y outweigh those preferring x.
  const after = (x: number, y: number): boolean => {
    let forX = 0;
    let forY = 0;
    for (let r = 0; r < R; r++) {
      const rx = t.rank[x * R + r] || Infinity;
      const ry = t.rank[y * R + r] || Infinity;
      if (rx < ry) forX += w[r];
      else if (ry < rx) forY += w[r];
    }
    return forY > forX;
  };
  // Bottom-up merge sort: stable, so docs no majority separates keep the docno-descending order.
  let b = new Array<number>(n);
  for (let width = 1; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      let k = lo;
      while (i < mid && j < hi) b[k++] = after(a[i], a[j]) ? a[j++] : a[i++];
      while (i < mid) b[k++] = a[i++];
      while (j < hi) b[k++] = a[j++];
    }
    [a, b] = [b, a];
  }
  const { scores, keep } = scratch(n);
  for (let p = 0; p < n; p++) scores[a[p]] = n - p;
  return { scores, keep };
}

/**
 * Fuses prepared runs with the method and parameters of `opts` (its `inputDepth` and `float32Ties`
 * must be those the runs were prepared with). `queries`: fuse only these (default: every query).
 * `unsorted`: each query keeps the same docs but in no particular order (for tuning, where `evaluate`
 * orders them again).
 */
export function fusePrepared(
  p: PreparedFusion,
  opts: FusionOptions,
  queries?: readonly string[],
  unsorted = false,
): Run {
  const R = p.runCount;
  const o = resolve(opts, R);
  if ((opts.inputDepth ?? undefined) !== p.inputDepth || !!opts.float32Ties !== p.float32Ties)
    throw new Error('fusePrepared: inputDepth and float32Ties must be those the runs were prepared with');
  const out: Run = new Map();
  for (const q of queries ?? p.queries) {
    const t = p.tables.get(q);
    if (!t || t.ids.length === 0) continue;
    const { scores, keep } =
      o.method === 'condorcet' ? condorcetScores(t, R, o.weights) : scoreTable(t, R, o);
    const docs = topDocs(t.ids, scores, keep, o.depth, p.float32Ties, unsorted);
    if (docs.length) out.set(q, docs);
  }
  return out;
}

/**
 * What each input run adds for `docId` in query `queryId` before the method combines the terms (the
 * "why" of a fused score): the normalised score (× its weight for linear fusion) for score-based
 * methods, w / (k + rank) for RRF, 1 / rank² for ISR and log-ISR, w · points for Borda (the unranked
 * share included). null where the run did not return the doc (score-based: or gave it no finite
 * score), and for Condorcet, which compares docs instead of adding terms.
 */
export function fusionTerms(
  runs: readonly Run[],
  opts: FusionOptions,
  queryId: string,
  docId: string,
): (number | null)[] {
  const R = runs.length;
  const o = resolve(opts, R);
  const one = runs.map((r) => new Map([[queryId, r.get(queryId) ?? []]]));
  const t = prepareFusion(one, opts).tables.get(queryId)!;
  const i = t.ids.indexOf(docId);
  const out: (number | null)[] = new Array<number | null>(R).fill(null);
  if (i < 0 || o.method === 'condorcet') return out;
  const n = t.ids.length;
  const v = isScoreMethod(o.method) ? normalized(t, R, o.normalization) : null;
  for (let r = 0; r < R; r++) {
    const rk = t.rank[i * R + r];
    if (v) {
      const x = v[i * R + r];
      if (!Number.isNaN(x)) out[r] = o.method === 'linear' ? o.weights[r] * x : x;
    } else if (o.method === 'borda')
      out[r] = o.weights[r] * (rk > 0 ? n - rk + 1 : (n - t.listLength[r] + 1) / 2);
    else if (rk > 0)
      out[r] = o.method === 'rrf' || o.method === 'wrrf' ? o.weights[r] / (o.k + rk) : 1 / (rk * rk);
  }
  return out;
}

/** Fuses runs with the method and parameters of `opts` (see the file header for every method). */
export function fuse(runs: readonly Run[], opts: FusionOptions): Run {
  checkRuns(runs);
  resolve(opts, runs.length);
  return fusePrepared(prepareFusion(runs, opts), opts);
}

/** Reciprocal rank fusion: Σ_runs w_r / (k + rank_r(d)); k ≥ 0, default 60; weights default 1. */
export function reciprocalRankFusion(runs: readonly Run[], opts: RrfOptions = {}): Run {
  return fuse(runs, { ...opts, method: 'rrf' });
}

/** Weighted RRF: Σ_runs w_r / (k + rank_r(d)) with one weight per run. */
export function weightedRrf(runs: readonly Run[], opts: WeightedRrfOptions): Run {
  return fuse(runs, { ...opts, method: 'wrrf' });
}

/** CombSUM: Σ normalised scores (0 for a run without d). Default normalisation min-max. */
export function combSum(runs: readonly Run[], opts: ScoreFusionOptions = {}): Run {
  return fuse(runs, { ...opts, method: 'combsum' });
}

/** CombMNZ: CombSUM × the number of runs that returned d (finite score, within `inputDepth`). */
export function combMnz(runs: readonly Run[], opts: ScoreFusionOptions = {}): Run {
  return fuse(runs, { ...opts, method: 'combmnz' });
}

/** CombANZ: CombSUM ÷ the number of runs that returned d. */
export function combAnz(runs: readonly Run[], opts: ScoreFusionOptions = {}): Run {
  return fuse(runs, { ...opts, method: 'combanz' });
}

/** CombMAX: the largest normalised score among the runs that returned d. */
export function combMax(runs: readonly Run[], opts: ScoreFusionOptions = {}): Run {
  return fuse(runs, { ...opts, method: 'combmax' });
}

/** CombMIN: the smallest normalised score among the runs that returned d (missing runs ignored). */
export function combMin(runs: readonly Run[], opts: ScoreFusionOptions = {}): Run {
  return fuse(runs, { ...opts, method: 'combmin' });
}

/** Weighted linear fusion: Σ_runs w_r · normalised score (0 for a run without d). */
export function linearFusion(runs: readonly Run[], opts: LinearFusionOptions): Run {
  return fuse(runs, { ...opts, method: 'linear' });
}

/** ISR: |R(d)| · Σ 1 / rank_r(d)². */
export function inverseSquareRank(runs: readonly Run[], opts: FusionCommonOptions = {}): Run {
  return fuse(runs, { ...opts, method: 'isr' });
}

/** log-ISR: ln|R(d)| · Σ 1 / rank_r(d)². */
export function logInverseSquareRank(runs: readonly Run[], opts: FusionCommonOptions = {}): Run {
  return fuse(runs, { ...opts, method: 'logisr' });
}

/** Borda count (BordaFuse), optionally weighted: see the file header. */
export function bordaFuse(runs: readonly Run[], opts: RankFusionOptions = {}): Run {
  return fuse(runs, { ...opts, method: 'borda' });
}

/** Condorcet-fuse, optionally weighted: see the file header. */
export function condorcetFuse(runs: readonly Run[], opts: RankFusionOptions = {}): Run {
  return fuse(runs, { ...opts, method: 'condorcet' });
}
