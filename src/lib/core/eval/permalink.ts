// Permalinks: retriever configurations written into a URL parameter and read back.
//   runs=bm25(k1=0.9,b=0.4);dense(model=loupe-test/clip-tiny-random,dtype=fp32,fusion=score,alpha=0.5)
//   fuse=rrf(k=60)   fuse=linear(norm=zscore,w=0.7:0.3)   fuse=combmax(norm=rank)
//   fuse=linear(norm=minmax,cv=5,seed=42,measure=ndcg_cut_10,step=0.1)   (tuned by cross-validation)
// Values are percent-encoded by URLSearchParams; inside a spec, `,` `(` `)` `;` are separators, so
// values containing them are escaped with encodeURIComponent.
import type { RetrieverConfig } from '../retrieval/runs';
import { DEFAULT_CHUNK_OVERLAP, type ChunkAggregate } from '../retrieval/chunking';
import type { MultiImage } from '../retrieval/multi-image';
import {
  FUSION_METHODS,
  SCORE_NORMALIZATIONS,
  fusionDescriptorOf,
  methodParams,
  type FusionBase,
  type FusionGridSpec,
  type FusionMethod,
  type FusionOptions,
  type FusionParams,
  type ScoreNormalization,
} from '../retrieval/fusion';
import { fusionGrid } from '../retrieval/fusion-tuning';
import { parseMeasure } from './measure-names';

/** A retriever to run (or find in the run store) for a permalink. */
export type RunSpec =
  | { kind: 'bm25'; k1: number; b: number }
  | {
      kind: 'dense';
      model: string;
      dtype: string;
      device: string;
      fusion: 'score' | 'feature' | 'both';
      alpha: number;
      /** Long texts (core/chunking.ts): absent or `first` = truncated to the model's window. */
      chunks?: ChunkAggregate;
      /** Tokens shared by consecutive windows (chunks mean/max). */
      overlap?: number;
      /** Multi-image items: every image by mean or max (absent: the first image). */
      images?: MultiImage;
    };

/** A fusion of all the listed runs. */
export interface FuseSpec {
  method: FusionMethod;
  /** `k=`: RRF's constant. */
  k?: number;
  /** `norm=`: score normalisation of score-based methods. */
  normalization?: ScoreNormalization;
  /** `w=0.7:0.3`: one weight per run, in the order of `runs=`. */
  weights?: number[];
  /**
   * Tuned by cross-validation (`cv=folds,seed=,measure=`, and the grid: `step=` for weights, `ks=10:60`
   * for RRF's k, `norms=minmax:zscore` for the normalisation), instead of fixed parameters.
   */
  cv?: { folds: number; seed: number; measure: string } & FusionGridSpec;
}

export class PermalinkError extends Error {}

function parseCall(s: string): { name: string; args: Map<string, string> } {
  const m = /^\s*([a-z][a-z0-9]*)\s*(?:\((.*)\))?\s*$/.exec(s);
  if (!m) throw new PermalinkError(`cannot read "${s}": expected name(key=value,…)`);
  const args = new Map<string, string>();
  for (const part of (m[2] ?? '').split(',').filter((p) => p.trim())) {
    const eq = part.indexOf('=');
    if (eq < 0) throw new PermalinkError(`"${part}" in "${s}" is not key=value`);
    args.set(part.slice(0, eq).trim(), decodeURIComponent(part.slice(eq + 1).trim()));
  }
  return { name: m[1], args };
}

function num(args: Map<string, string>, key: string, dflt: number, where: string): number {
  const v = args.get(key);
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new PermalinkError(`${where}: ${key}=${v} is not a number`);
  return n;
}

/** Parses the `runs` parameter. */
export function parseRunSpecs(s: string): RunSpec[] {
  return s
    .split(';')
    .filter((x) => x.trim())
    .map((part): RunSpec => {
      const { name, args } = parseCall(part);
      if (name === 'bm25')
        return { kind: 'bm25', k1: num(args, 'k1', 0.9, part), b: num(args, 'b', 0.4, part) };
      if (name === 'dense') {
        const model = args.get('model');
        if (!model) throw new PermalinkError(`${part}: dense needs model=…`);
        const fusion = args.get('fusion') ?? 'both';
        if (fusion !== 'score' && fusion !== 'feature' && fusion !== 'both')
          throw new PermalinkError(`${part}: fusion must be score, feature or both`);
        const chunks = args.get('chunks') ?? 'first';
        if (chunks !== 'first' && chunks !== 'mean' && chunks !== 'max')
          throw new PermalinkError(`${part}: chunks must be first, mean or max`);
        const overlap = num(args, 'overlap', DEFAULT_CHUNK_OVERLAP, part);
        if (!Number.isInteger(overlap) || overlap < 0)
          throw new PermalinkError(`${part}: overlap must be a non-negative integer`);
        const images = args.get('images');
        if (images !== undefined && images !== 'mean' && images !== 'max')
          throw new PermalinkError(`${part}: images must be mean or max`);
        return {
          kind: 'dense',
          model,
          dtype: args.get('dtype') ?? 'auto',
          device: args.get('device') ?? 'auto',
          fusion,
          alpha: num(args, 'alpha', 0.5, part),
          ...(chunks !== 'first' ? { chunks, overlap } : {}),
          ...(images ? { images } : {}),
        };
      }
      throw new PermalinkError(`unknown retriever "${name}" (bm25 or dense)`);
    });
}

function numList(v: string, where: string): number[] {
  const xs = v.split(':').map(Number);
  if (!v || xs.some((x) => !Number.isFinite(x) || x < 0))
    throw new PermalinkError(`${where}: "${v}" is not a list of non-negative numbers (a:b:c)`);
  return xs;
}

function normOf(v: string, where: string): ScoreNormalization {
  if (!SCORE_NORMALIZATIONS.includes(v as ScoreNormalization))
    throw new PermalinkError(`${where}: norm must be one of ${SCORE_NORMALIZATIONS.join(', ')}`);
  return v as ScoreNormalization;
}

/** Parses the `fuse` parameter. */
export function parseFuseSpec(s: string): FuseSpec {
  const { name, args } = parseCall(s);
  if (!FUSION_METHODS.includes(name as FusionMethod))
    throw new PermalinkError(`unknown fusion "${name}" (${FUSION_METHODS.join(', ')})`);
  const method = name as FusionMethod;
  const norm = args.get('norm');
  const spec: FuseSpec = { method };
  if (args.has('k')) spec.k = num(args, 'k', 60, s);
  if (norm !== undefined) spec.normalization = normOf(norm, s);
  if (args.has('w')) spec.weights = numList(args.get('w')!, s);
  if (args.has('cv')) {
    const folds = num(args, 'cv', 5, s);
    if (!Number.isInteger(folds) || folds < 2) throw new PermalinkError(`${s}: cv must be 2 or more folds`);
    const seed = num(args, 'seed', 42, s);
    const measure = args.get('measure');
    if (!measure) throw new PermalinkError(`${s}: cv needs measure=…`);
    try {
      parseMeasure(measure);
    } catch (e) {
      throw new PermalinkError(`${s}: ${e instanceof Error ? e.message : String(e)}`);
    }
    spec.cv = { folds, seed, measure };
    if (args.has('step')) spec.cv.step = num(args, 'step', 0.1, s);
    if (args.has('ks')) spec.cv.ks = numList(args.get('ks')!, s);
    if (args.has('norms'))
      spec.cv.normalizations = args
        .get('norms')!
        .split(':')
        .map((n) => normOf(n, s));
  }
  return spec;
}

const enc = (v: string | number) => encodeURIComponent(String(v));

export function formatRunSpec(r: RunSpec): string {
  return r.kind === 'bm25'
    ? `bm25(k1=${r.k1},b=${r.b})`
    : `dense(model=${enc(r.model)},dtype=${enc(r.dtype)},device=${enc(r.device)},fusion=${r.fusion},alpha=${r.alpha}${r.chunks && r.chunks !== 'first' ? `,chunks=${r.chunks},overlap=${r.overlap ?? DEFAULT_CHUNK_OVERLAP}` : ''}${r.images ? `,images=${r.images}` : ''})`;
}

export function formatFuseSpec(f: FuseSpec): string {
  const args = [
    f.k !== undefined ? `k=${f.k}` : '',
    f.normalization ? `norm=${f.normalization}` : '',
    f.weights ? `w=${f.weights.join(':')}` : '',
  ];
  if (f.cv) {
    args.push(`cv=${f.cv.folds}`, `seed=${f.cv.seed}`, `measure=${enc(f.cv.measure)}`);
    if (f.cv.step !== undefined) args.push(`step=${f.cv.step}`);
    if (f.cv.ks) args.push(`ks=${f.cv.ks.join(':')}`);
    if (f.cv.normalizations) args.push(`norms=${f.cv.normalizations.join(':')}`);
  }
  const a = args.filter(Boolean);
  return `${f.method}${a.length ? `(${a.join(',')})` : ''}`;
}

/**
 * The spec that reproduces a stored fusion (method, normalisation, k, weights, and for a tuned one
 * its folds, seed, measure and grid), or null for a tuning whose grid was not made by `fusionGrid`.
 */
export function fuseSpecOf(c: Extract<RetrieverConfig, { kind: 'fusion' }>): FuseSpec | null {
  const d = fusionDescriptorOf(c);
  const spec: FuseSpec = { method: d.method };
  if (d.k !== undefined) spec.k = d.k;
  if (d.normalization !== undefined) spec.normalization = d.normalization;
  if (d.weights) spec.weights = [...d.weights];
  if (d.tuning) {
    const g = d.tuning.gridSpec;
    if (!g) return null;
    spec.cv = { folds: d.tuning.folds.length, seed: d.tuning.seed, measure: d.tuning.measure };
    if (g.step !== undefined) spec.cv.step = g.step;
    if (g.ks) spec.cv.ks = [...g.ks];
    if (g.normalizations) spec.cv.normalizations = [...g.normalizations];
  }
  return spec;
}

/** What a `fuse=` spec asks of `runs` runs: a fusion with fixed options, or a tuning. */
export type FusionRequest =
  | { kind: 'fixed'; options: FusionOptions }
  | {
      kind: 'tuned';
      base: FusionBase;
      grid: FusionParams[];
      gridSpec: FusionGridSpec;
      measure: string;
      folds: number;
      seed: number;
    };

/**
 * The fusion a spec describes over `runs` runs. A weighted method without `w=` (and not tuned) gets
 * equal weights 1/runs; parameters the method does not take are dropped.
 */
export function fusionRequestOf(f: FuseSpec, runs: number): FusionRequest {
  const p = methodParams(f.method);
  const base: FusionBase = { method: f.method };
  if (p.k && f.k !== undefined) base.k = f.k;
  if (p.normalization && f.normalization) base.normalization = f.normalization;
  if (p.weights !== 'none' && f.weights) {
    if (f.weights.length !== runs)
      throw new PermalinkError(`fuse: ${f.weights.length} weights for ${runs} runs`);
    base.weights = [...f.weights];
  }
  if (f.cv) {
    const { folds, seed, measure, ...gridSpec } = f.cv;
    const grid = fusionGrid(f.method, runs, gridSpec);
    return { kind: 'tuned', base, grid, gridSpec, measure, folds, seed };
  }
  if (p.weights === 'required' && !base.weights) base.weights = new Array<number>(runs).fill(1 / runs);
  return { kind: 'fixed', options: base as FusionOptions };
}

/** The spec that reproduces a stored run's configuration, or null (imports, fusions, reranks). */
export function specOf(c: RetrieverConfig): RunSpec | null {
  if (c.kind === 'bm25') return { kind: 'bm25', k1: c.k1, b: c.b };
  if (c.kind === 'dense')
    return {
      kind: 'dense',
      model: c.modelId,
      dtype: c.dtype,
      device: c.device,
      fusion: c.fusion?.mode ?? 'both',
      alpha: c.fusion?.textWeight ?? 0.5,
      ...(c.chunking && c.chunking.aggregate !== 'first'
        ? { chunks: c.chunking.aggregate, overlap: c.chunking.overlap }
        : {}),
      ...(c.multiImage ? { images: c.multiImage } : {}),
    };
  return null;
}

/**
 * Whether a stored run was produced by this spec (so a permalink can reuse it instead of running
 * again). `auto` dtype/device match whatever was chosen; a dense spec with fusion `both` matches
 * either fusion run.
 */
export function specMatches(spec: RunSpec, c: RetrieverConfig): boolean {
  if (spec.kind === 'bm25') return c.kind === 'bm25' && c.k1 === spec.k1 && c.b === spec.b;
  // Permalinks describe exact runs; an approximate (HNSW) run is not a match.
  if (c.kind !== 'dense' || c.modelId !== spec.model || c.ann) return false;
  if (spec.dtype !== 'auto' && c.dtype !== spec.dtype) return false;
  if (spec.device !== 'auto' && c.device !== spec.device) return false;
  // Long-text chunking: truncation (first) matches runs without chunking only.
  const chunks = spec.chunks ?? 'first';
  const runChunks = c.chunking?.aggregate ?? 'first';
  if (chunks !== runChunks) return false;
  if (chunks !== 'first' && c.chunking!.overlap !== (spec.overlap ?? DEFAULT_CHUNK_OVERLAP)) return false;
  if ((spec.images ?? null) !== (c.multiImage ?? null)) return false;
  if (!c.fusion) return true;
  if (spec.fusion !== 'both' && c.fusion.mode !== spec.fusion) return false;
  return c.fusion.mode === 'feature' || c.fusion.textWeight === spec.alpha;
}
