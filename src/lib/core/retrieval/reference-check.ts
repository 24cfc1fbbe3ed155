// Reference vectors checked (issue 37): a shard's precomputed corpus vectors for a model were made
// elsewhere (sentence-transformers, a GPU cluster, another dtype, prefix or pooling), and a mismatch
// with the browser's query encoder gives plausible, wrong rankings with no warning. Before the first
// run or search that uses such a set, a small fixed probe of the shard's own documents is embedded
// in the browser on the device and dtype chosen and compared with the stored rows: cosine per row,
// the minimum against a threshold per dtype, the rows' norms against the model's normalisation.
// Pure: which rows to probe, the comparison, the likely causes and the words of the run's details.
import { Xoshiro128, MAX_INT_RANGE } from '../eval/random';
import { ivfBytes } from './ivf-report';

/** Documents a probe embeds (fewer when the set has fewer rows). */
export const PROBE_SIZE = 16;
/** The probe's seed: the same rows of a set on every visit and machine. */
export const PROBE_SEED = 37;

/**
 * Lowest cosine a probed row may have against its stored row, per dtype the browser embeds at. The
 * stored rows are float16 (a float32 row rounded to float16 keeps cosine > 0.99999); fp32 on WASM and
 * on WebGPU agree to ~1e-6; quantised or half-precision weights move a vector by up to ~1e-2.
 */
export const REFERENCE_THRESHOLDS: Record<string, number> = {
  fp32: 0.999,
  fp16: 0.99,
  q8: 0.99,
  int8: 0.99,
  uint8: 0.99,
  q4: 0.97,
  q4f16: 0.97,
};

/** The threshold of `dtype` (an unknown dtype: the strictest quantised one). */
export const referenceThreshold = (dtype: string): number => REFERENCE_THRESHOLDS[dtype] ?? 0.99;

/** Relative difference of the mean norms (stored vs probed) from which normalisation is the cause. */
export const NORM_TOLERANCE = 0.01;

/**
 * The rows of a set of `n` rows a probe embeds: `size` distinct rows chosen by `seed`, ascending
 * (stored pieces are then read once each); every row when `n` ≤ `size`.
 */
export function probeRows(n: number, size = PROBE_SIZE, seed = PROBE_SEED): number[] {
  if (!(Number.isInteger(n) && n >= 0)) throw new RangeError(`rows must be a whole number, got ${n}`);
  if (n <= size) return Array.from({ length: n }, (_, i) => i);
  const rng = new Xoshiro128(seed);
  const picked = new Set<number>();
  // Rejection of repeats: size ≪ n, so a handful of draws; nextInt covers n up to 2^21, beyond
  // that a float draw (a row of a 10M-row set need not be exactly uniform).
  while (picked.size < size)
    picked.add(n <= MAX_INT_RANGE ? rng.nextInt(n) : Math.floor(rng.nextFloat() * n));
  return [...picked].sort((a, b) => a - b);
}

/** One document part of a check: which set, which documents, the cosine of each row. */
export interface ReferencePartCheck {
  part: 'text' | 'image';
  /** The set's name as the shard carries it (its .npy, Parquet file or packed index). */
  set: string;
  docIds: string[];
  cosines: number[];
  /** Mean L2 norm of the stored rows and of the rows embedded here. */
  storedNorm: number;
  probedNorm: number;
  /** A packed index's rows, read by Range from the shard's host: the bytes that took. */
  bytes?: number;
}

/** What a check found, recorded with the run (its details show it). */
export interface ReferenceCheck {
  /** passed / failed: measured; unchecked: failed, and the run was asked to go on anyway. */
  status: 'passed' | 'failed' | 'unchecked';
  modelId: string;
  dtype: string;
  device: string;
  threshold: number;
  /** Lowest cosine over every probed row of every part. */
  min: number;
  parts: ReferencePartCheck[];
  /** Likely causes, the most likely first (empty when it passed). */
  causes: string[];
  /** Time to read the stored rows and embed the probe, ms. */
  ms: number;
  /** Of `ms`, the time the probe's documents took to embed. */
  embedMs?: number;
  /** Made for an earlier run or query in this tab (its time and bytes were spent then, not now). */
  earlier?: boolean;
}

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}

const meanNorm = (m: Float32Array, rows: number, dim: number) => {
  let s = 0;
  for (let r = 0; r < rows; r++) {
    let n = 0;
    for (let j = 0; j < dim; j++) n += m[r * dim + j] ** 2;
    s += Math.sqrt(n);
  }
  return rows ? s / rows : 0;
};

/** Compares `probed` (rows embedded here) with `stored` (the set's rows), row by row (rows × dim each). */
export function compareRows(
  stored: Float32Array,
  probed: Float32Array,
  dim: number,
): { cosines: number[]; storedNorm: number; probedNorm: number } {
  if (stored.length !== probed.length || stored.length % dim)
    throw new RangeError(`stored ${stored.length} and probed ${probed.length} values are not rows of ${dim}`);
  const rows = stored.length / dim;
  const cosines: number[] = [];
  for (let r = 0; r < rows; r++)
    cosines.push(cosine(stored.subarray(r * dim, (r + 1) * dim), probed.subarray(r * dim, (r + 1) * dim)));
  return { cosines, storedNorm: meanNorm(stored, rows, dim), probedNorm: meanNorm(probed, rows, dim) };
}

/** The model's settings a set must have been made with (the sidecar states them; the vectors may not). */
export interface ReferenceModel {
  id: string;
  revision?: string;
  pooling: string;
  normalize: boolean;
  docPrefix: string;
}

/** Whether the norms say the stored rows were normalised differently from the model's rows here. */
export const normsDiffer = (p: Pick<ReferencePartCheck, 'storedNorm' | 'probedNorm'>): boolean =>
  Math.abs(p.storedNorm - p.probedNorm) > NORM_TOLERANCE * Math.max(p.probedNorm, 1e-12);

/**
 * The check of a run from its parts: passed when every row's cosine reaches the dtype's threshold
 * and the norms agree (a dot-product ranking needs both); otherwise the likely causes, the most
 * likely first, from the measured values.
 */
export function judgeReference(
  model: ReferenceModel,
  run: { dtype: string; device: string },
  parts: ReferencePartCheck[],
  ms: number,
): ReferenceCheck {
  const threshold = referenceThreshold(run.dtype);
  const all = parts.flatMap((p) => p.cosines);
  const min = all.length ? Math.min(...all) : 1;
  const mean = all.length ? all.reduce((a, b) => a + b, 0) / all.length : 1;
  const norms = parts.filter(normsDiffer);
  const pass = min >= threshold && !norms.length;
  const causes: string[] = [];
  if (!pass) {
    const prefix = model.docPrefix ? `"${model.docPrefix}"` : 'none';
    const c = {
      normalisation: `normalisation: the stored rows have norm ${norms.map((p) => p.storedNorm.toFixed(3)).join(', ')}, the model's rows here ${norms.map((p) => p.probedNorm.toFixed(3)).join(', ')} (${model.normalize ? 'it normalises' : 'it does not normalise'}): rankings by dot product differ`,
      model: `another model or revision: cosines near 0 (mean ${mean.toFixed(3)}) are unrelated vectors; check the set was made with ${model.id}${model.revision ? ` at revision ${model.revision}` : ''}`,
      pooling: `pooling: the model ${model.pooling === 'model' ? 'takes its own pooled, projected output (CLIP, SigLIP)' : `pools by ${model.pooling}`}; a set pooled otherwise (CLS, mean, last token) gives related but different vectors`,
      prefix: `document prefix: the model puts ${prefix} before each document; a set embedded with another prefix (or none) differs most on short texts`,
      dtype: `dtype: the set was made at another precision than ${run.dtype} on ${run.device} (quantised or half-precision weights move vectors by up to ~1e-2); choose the set's dtype, or re-embed`,
    };
    const order: (keyof typeof c)[] =
      min >= threshold
        ? ['normalisation']
        : mean < 0.25
          ? ['model', 'pooling', 'prefix', 'dtype']
          : mean < 0.8
            ? ['pooling', 'prefix', 'model', 'dtype']
            : min >= 0.95
              ? // At fp32 a set made at lower precision is still within ~1e-4: a prefix first.
                run.dtype === 'fp32'
                ? ['prefix', 'dtype', 'pooling', 'model']
                : ['dtype', 'prefix', 'pooling', 'model']
              : ['prefix', 'pooling', 'model', 'dtype'];
    if (norms.length && order[0] !== 'normalisation') order.unshift('normalisation');
    causes.push(...order.map((k) => c[k]));
  }
  return {
    status: pass ? 'passed' : 'failed',
    modelId: model.id,
    dtype: run.dtype,
    device: run.device,
    threshold,
    min,
    parts,
    causes,
    ms,
  };
}

/** The key a check is kept under in a tab: it runs once per shard, set, model, dtype and device. */
export const referenceCheckKey = (
  shard: string,
  sets: string[],
  model: string,
  dtype: string,
  device: string,
) => [shard, sets.join('+'), model, dtype, device].join('|');

/** The check in words (a run's details, the refusal). */
export function describeReference(r: ReferenceCheck): string[] {
  const rows = r.parts.reduce((a, p) => a + p.cosines.length, 0);
  const sets = r.parts.map((p) => `${p.part}: ${p.set}`).join('; ');
  const head =
    r.status === 'passed'
      ? `Passed: ${rows} documents embedded here (${r.dtype} on ${r.device}) match the stored rows; lowest cosine ${r.min.toFixed(4)} ≥ ${r.threshold}.`
      : r.status === 'failed'
        ? `Refused: the stored rows do not match this model here (${r.dtype} on ${r.device}); lowest cosine ${r.min.toFixed(4)} < ${r.threshold} over ${rows} documents.`
        : `Unchecked: run anyway although the lowest cosine was ${r.min.toFixed(4)} (threshold ${r.threshold}, ${r.dtype} on ${r.device}); its rankings may be wrong.`;
  const bytes = referenceBytes(r);
  const cost = r.earlier
    ? 'checked earlier in this tab'
    : `${r.ms.toFixed(0)} ms` + (bytes === null ? '' : `; it read ${ivfBytes(bytes)} from the shard's host`);
  return [head, `Sets: ${sets}. Probe: ${rows} documents chosen by seed ${PROBE_SEED}; ${cost}.`];
}

/**
 * Bytes this check read from the shard's host (a packed index's header and rows), or null: none
 * there, or it was made earlier in the tab.
 */
export function referenceBytes(r: ReferenceCheck): number | null {
  if (r.earlier) return null;
  const read = r.parts.filter((p) => p.bytes !== undefined);
  return read.length ? read.reduce((a, p) => a + p.bytes!, 0) : null;
}
