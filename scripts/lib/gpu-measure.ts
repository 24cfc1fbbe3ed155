// The measurements of `npm run bench:gpu`, the same in Node (Dawn) and in a browser page (headless
// Chromium's navigator.gpu): an encoder's ONNX file run as raw onnxruntime-web sessions on WASM and
// on WebGPU over deterministic pre-tokenized inputs (timings and the cosine between the two
// backends' rows), and the WGSL exact search kernel against the JS path. No Node or DOM API here:
// the caller reads the model bytes and hands in the ORT module.
import type * as OrtNS from 'onnxruntime-web';
import {
  clusteredVectors,
  exactSearch,
  mulberry32,
  normalizeRows,
  type KnnResult,
  type Matrix,
} from '../../src/lib/core/retrieval/exact';
import { createGpuExact } from '../../src/lib/platform/gpu/gpu-exact';
import { median } from '../../src/lib/core/eval/stats';
import { measureIvfInt8, type IvfInt8Row } from './gpu-measure-ivf';

export const GPU_DTYPES = ['fp32', 'fp16', 'q8'] as const;
export type GpuDtype = (typeof GPU_DTYPES)[number];
type Ort = typeof OrtNS;
type Feeds = Record<string, OrtNS.Tensor>;

export interface MeasureOptions {
  repeats: number;
  warmup: number;
  batch: number;
  tokens: number;
  queryTokens: number;
  images: number;
  vectors: number;
  queries: number;
}

export interface EncoderCase {
  /** 'batch' (--batch texts / --images images) or 'single' (one query / one image). */
  case: 'batch' | 'single';
  shape: string;
  wasmMs: number | null;
  webgpuMs: number | null;
  wasmRuns: number[];
  webgpuRuns: number[];
  /** Minimum over rows of cosine(WebGPU row, WASM row). */
  minCosine: number | null;
  error?: string;
}
export interface EncoderRow {
  model: string;
  part: 'text' | 'vision';
  dtype: GpuDtype;
  file: string | null;
  /** Why this dtype was not measured at all. */
  skipped?: string;
  /**
   * fp16 only. With shader-f16: 'fp32', the WASM side runs the fp32 file (the app's parity reference).
   * Without: WebGPU is not run (`webgpuSkipped`); the WASM side runs the fp16 file and the cosine is
   * against the fp32 file on WASM (a correctness check of the fp16 file itself).
   */
  wasmDtype?: GpuDtype;
  webgpuSkipped?: string;
  /** What the cosine compares, in words ("WebGPU fp16 vs WASM fp32"). */
  cosineOf?: string;
  error?: string;
  cases: EncoderCase[];
}
export interface ExactRow {
  vectors: number;
  queries: number;
  dim: number;
  k: number;
  cpuMs: number | null;
  gpuUploadMs: number | null;
  gpuRuns: number[];
  gpuMs: number | null;
  /** Queries whose top-k ids (in order) and scores equal the JS path's. */
  sameTopK: number | null;
  cpuFallbackQueries: number | null;
  maxGpuScoreError: number | null;
  error?: string;
  /** The IVF int8 scoring kernel on the same vectors (absent when the exact row failed first). */
  ivf?: IvfInt8Row;
}

/** What the adapter says about itself, as the bench reports it. */
export interface AdapterReport {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallbackAdapter: boolean;
  features: string[];
  limits: {
    maxBufferSize: number;
    maxStorageBufferBindingSize: number;
    maxComputeWorkgroupStorageSize: number;
  };
}

/** Requests an adapter (no device) and reports what it says; null when there is none (navigator.gpu: Dawn for Node, or the browser). */
export async function describeAdapter(): Promise<AdapterReport | null> {
  const adapter = await navigator.gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) return null;
  const info = adapter.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
  return {
    vendor: info.vendor,
    architecture: info.architecture,
    device: info.device,
    description: info.description,
    isFallbackAdapter:
      info.isFallbackAdapter === true ||
      (adapter as GPUAdapter & { isFallbackAdapter?: boolean }).isFallbackAdapter === true,
    features: [...adapter.features].sort(),
    limits: {
      maxBufferSize: adapter.limits.maxBufferSize,
      maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
      maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize,
    },
  };
}

export const fmtMs = (ms: number | null | undefined): string =>
  ms == null ? '—' : ms >= 100 ? `${Math.round(ms).toLocaleString('en-US')} ms` : `${ms.toFixed(1)} ms`;
export const fmtCos = (c: number | null | undefined): string => (c == null ? '—' : c.toFixed(6));
export const errText = (e: unknown): string =>
  (e instanceof Error ? e.message : String(e)).split('\n')[0].slice(0, 300);

export { median };

/** Minimum over rows of the cosine between row r of `a` and of `b` (rows of `width` values). */
function minRowCosine(a: Float32Array, b: Float32Array, rows: number, width: number): number {
  let min = Infinity;
  for (let r = 0; r < rows; r++) {
    let ab = 0;
    let aa = 0;
    let bb = 0;
    for (let j = r * width; j < (r + 1) * width; j++) {
      ab += a[j] * b[j];
      aa += a[j] * a[j];
      bb += b[j] * b[j];
    }
    const c = aa > 0 && bb > 0 ? ab / Math.sqrt(aa * bb) : aa === bb ? 1 : 0;
    min = Math.min(min, c);
  }
  return min;
}

/** Mean pooling of last_hidden_state [B, T, H] (every mask value is 1 here). */
function meanPool(data: Float32Array, batch: number, tokens: number, hidden: number): Float32Array {
  const out = new Float32Array(batch * hidden);
  for (let b = 0; b < batch; b++)
    for (let t = 0; t < tokens; t++)
      for (let h = 0; h < hidden; h++) out[b * hidden + h] += data[(b * tokens + t) * hidden + h] / tokens;
  return out;
}

async function timeSession(
  session: OrtNS.InferenceSession,
  feeds: Feeds,
  fetch: string,
  opts: MeasureOptions,
): Promise<{ runs: number[]; out: Float32Array }> {
  let out = new Float32Array(0);
  const runs: number[] = [];
  for (let i = 0; i < opts.warmup + opts.repeats; i++) {
    const t0 = performance.now();
    const result = await session.run(feeds, [fetch]);
    const ms = performance.now() - t0;
    const tensor = result[fetch];
    out = Float32Array.from(tensor.data as Float32Array);
    for (const v of Object.values(result)) v.dispose();
    if (i >= opts.warmup) runs.push(ms);
  }
  return { runs, out };
}

function textFeeds(
  ort: Ort,
  names: readonly string[],
  batch: number,
  tokens: number,
  vocab: number,
  seed: number,
): Feeds {
  const rand = mulberry32(seed); // deterministic inputs, the same on every machine
  const ids = new BigInt64Array(batch * tokens);
  for (let b = 0; b < batch; b++)
    for (let t = 0; t < tokens; t++) {
      // [CLS] … [SEP] around ids drawn from the ordinary vocabulary (past the first 1,000 specials).
      const id = t === 0 ? 101 : t === tokens - 1 ? 102 : 1000 + Math.floor(rand() * (vocab - 1000));
      ids[b * tokens + t] = BigInt(id);
    }
  const feeds: Feeds = {};
  for (const name of names) {
    if (name === 'input_ids') feeds[name] = new ort.Tensor('int64', ids, [batch, tokens]);
    else if (name === 'attention_mask')
      feeds[name] = new ort.Tensor('int64', new BigInt64Array(batch * tokens).fill(1n), [batch, tokens]);
    else if (name === 'token_type_ids')
      feeds[name] = new ort.Tensor('int64', new BigInt64Array(batch * tokens), [batch, tokens]);
    else throw new Error(`unexpected text model input ${name}`);
  }
  return feeds;
}

function visionFeeds(ort: Ort, batch: number, size: number, channels: number, seed: number): Feeds {
  const rand = mulberry32(seed); // deterministic inputs, the same on every machine
  // CLIP-normalised pixels lie roughly in [-1.8, 2.2].
  const px = Float32Array.from({ length: batch * channels * size * size }, () => rand() * 4 - 1.8);
  return { pixel_values: new ort.Tensor('float32', px, [batch, channels, size, size]) };
}

/** The ONNX file of a model part and dtype, relative to the model's folder. */
export function encoderFile(part: 'text' | 'vision', dtype: GpuDtype): string {
  const base = part === 'text' ? 'model' : 'vision_model';
  const suffix = dtype === 'q8' ? '_quantized' : dtype === 'fp16' ? '_fp16' : '';
  return `onnx/${base}${suffix}.onnx`;
}

/**
 * One encoder row: a batch and a single input on WASM and on WebGPU, with the cosine between the
 * backends. `read(file)` gives a file of the model's folder (`config.json`, `onnx/…`).
 */
export async function measureEncoder(args: {
  ort: Ort;
  model: string;
  part: 'text' | 'vision';
  dtype: GpuDtype;
  shaderF16: boolean;
  read: (file: string) => Promise<Uint8Array>;
  opts: MeasureOptions;
  log: (line: string) => void;
}): Promise<EncoderRow> {
  const { ort, model, part, dtype, opts, log } = args;
  const file = encoderFile(part, dtype);
  const row: EncoderRow = {
    model,
    part,
    dtype,
    file,
    cases: [],
    cosineOf: `WebGPU ${dtype} vs WASM ${dtype}`,
  };
  // fp16: WebGPU runs the fp16 file against WASM fp32 (as the app's parity check does), and only on an
  // adapter with shader-f16 (onnxruntime-web's fp16 WebGPU kernels need it: without it a run fails with
  // "requires f16 but the device does not support it"). Without, the fp16 file runs on WASM against fp32.
  const f16 = fp16Plan(dtype, args.shaderF16);
  Object.assign(row, f16.row);
  if (f16.row.webgpuSkipped) log(`${model} ${part} fp16: WebGPU not run: ${f16.row.webgpuSkipped}`);
  let wasm: OrtNS.InferenceSession | null = null;
  let gpu: OrtNS.InferenceSession | null = null;
  let ref: OrtNS.InferenceSession | null = null;
  try {
    const bytes = await args.read(file);
    const config = JSON.parse(new TextDecoder().decode(await args.read('config.json')));
    const onWasm = (b: Uint8Array) =>
      ort.InferenceSession.create(b, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
    const fp32Bytes = f16.fp32 ? await args.read(encoderFile(part, 'fp32')) : null;
    wasm = await onWasm(f16.fp32 === 'wasm' ? fp32Bytes! : bytes);
    if (f16.fp32 === 'reference') ref = await onWasm(fp32Bytes!);
    else
      gpu = await ort.InferenceSession.create(bytes, {
        executionProviders: ['webgpu'],
        graphOptimizationLevel: 'all',
      });
    const cases: Array<{ case: 'batch' | 'single'; rows: number; length: number }> =
      part === 'text'
        ? [
            { case: 'batch', rows: opts.batch, length: opts.tokens },
            { case: 'single', rows: 1, length: opts.queryTokens },
          ]
        : [
            { case: 'batch', rows: opts.images, length: 0 },
            { case: 'single', rows: 1, length: 0 },
          ];
    for (const c of cases) {
      const entry: EncoderCase = {
        case: c.case,
        shape: '',
        wasmMs: null,
        webgpuMs: null,
        wasmRuns: [],
        webgpuRuns: [],
        minCosine: null,
      };
      row.cases.push(entry);
      try {
        let feeds: Feeds;
        let fetch: string;
        let width: number;
        let pool: (x: Float32Array) => Float32Array;
        if (part === 'text') {
          feeds = textFeeds(ort, wasm.inputNames, c.rows, c.length, config.vocab_size, 7 + c.rows);
          fetch = 'last_hidden_state';
          width = config.hidden_size;
          pool = (x) => meanPool(x, c.rows, c.length, width);
          entry.shape = `${c.rows} × ${c.length} tokens`;
        } else {
          const v = config.vision_config;
          feeds = visionFeeds(ort, c.rows, v.image_size, v.num_channels ?? 3, 11 + c.rows);
          fetch = 'image_embeds';
          width = config.projection_dim;
          pool = (x) => x;
          entry.shape = `${c.rows} × ${v.num_channels ?? 3} × ${v.image_size} × ${v.image_size}`;
        }
        const w = await timeSession(wasm, feeds, fetch, opts);
        entry.wasmRuns = w.runs.map((x) => +x.toFixed(2));
        entry.wasmMs = median(w.runs);
        if (gpu) {
          const g = await timeSession(gpu, feeds, fetch, opts);
          entry.webgpuRuns = g.runs.map((x) => +x.toFixed(2));
          entry.webgpuMs = median(g.runs);
          entry.minCosine = minRowCosine(pool(g.out), pool(w.out), c.rows, width);
        } else if (ref) {
          const r = await timeSession(ref, feeds, fetch, { ...opts, warmup: 0, repeats: 1 });
          entry.minCosine = minRowCosine(pool(w.out), pool(r.out), c.rows, width);
        }
        log(
          `${model} ${part} ${dtype} ${c.case} (${entry.shape}): WebGPU ${gpu ? fmtMs(entry.webgpuMs) : 'not run'}, ` +
            `WASM ${f16.fp32 === 'wasm' ? 'fp32 ' : ''}${fmtMs(entry.wasmMs)}, ` +
            `min cosine ${fmtCos(entry.minCosine)} (${row.cosineOf})`,
        );
      } catch (e) {
        entry.error = errText(e);
        log(`${model} ${part} ${dtype} ${c.case}: ERROR ${entry.error}`);
      }
    }
  } catch (e) {
    row.error = errText(e);
    log(`${model} ${part} ${dtype}: ERROR ${row.error}`);
  } finally {
    await wasm?.release();
    await gpu?.release();
    await ref?.release();
  }
  return row;
}

/**
 * How an fp16 row runs: with shader-f16, WebGPU fp16 against the fp32 file on WASM (`fp32: 'wasm'`);
 * without, no WebGPU, the fp16 file on WASM checked against the fp32 file (`fp32: 'reference'`).
 * Other dtypes: the same file on both backends.
 */
export function fp16Plan(
  dtype: GpuDtype,
  shaderF16: boolean,
): { fp32?: 'wasm' | 'reference'; row: Partial<EncoderRow> } {
  if (dtype !== 'fp16') return { row: {} };
  if (shaderF16) return { fp32: 'wasm', row: { wasmDtype: 'fp32', cosineOf: 'WebGPU fp16 vs WASM fp32' } };
  return {
    fp32: 'reference',
    row: {
      webgpuSkipped: "the adapter has no shader-f16 (onnxruntime-web's fp16 WebGPU kernels need it)",
      cosineOf: 'fp16 file vs fp32 file, both on WASM',
    },
  };
}

function sameRows(a: KnnResult, b: KnnResult): number {
  let same = 0;
  for (let q = 0; q < a.nq; q++) {
    let ok = a.counts[q] === b.counts[q];
    for (let j = q * a.k; ok && j < q * a.k + a.counts[q]; j++)
      ok = a.indices[j] === b.indices[j] && a.scores[j] === b.scores[j];
    if (ok) same++;
  }
  return same;
}

/** The WGSL exact kernel against the JS path on clustered unit vectors (`dim` wide, top-`k`). */
export async function measureExact(
  opts: MeasureOptions,
  log: (line: string) => void,
  dim = 384,
  k = 10,
  /** Told the exact row before the IVF part starts (a bench stopped at its time limit keeps it). */
  onExactDone?: (row: ExactRow) => void,
): Promise<ExactRow> {
  const row: ExactRow = {
    vectors: opts.vectors,
    queries: opts.queries,
    dim,
    k,
    cpuMs: null,
    gpuUploadMs: null,
    gpuRuns: [],
    gpuMs: null,
    sameTopK: null,
    cpuFallbackQueries: null,
    maxGpuScoreError: null,
  };
  try {
    log(`exact: generating ${opts.vectors} × ${dim} clustered vectors and ${opts.queries} queries`);
    const gen = clusteredVectors(dim, { seed: 1 });
    const docs: Matrix = normalizeRows(gen.generate(opts.vectors));
    const queries: Matrix = normalizeRows(gen.generate(opts.queries));
    let t0 = performance.now();
    const cpu = exactSearch(docs, queries, { k });
    row.cpuMs = performance.now() - t0;
    log(`exact: JS path ${fmtMs(row.cpuMs)} for ${opts.queries} queries`);
    t0 = performance.now();
    const gpu = await createGpuExact(docs);
    row.gpuUploadMs = performance.now() - t0;
    try {
      // Warm-up: pipeline compilation and the first dispatches.
      for (let i = 0; i < opts.warmup; i++) await gpu.search(queries, { k });
      let last: KnnResult | null = null;
      for (let i = 0; i < opts.repeats; i++) {
        t0 = performance.now();
        const { result, stats } = await gpu.search(queries, { k });
        row.gpuRuns.push(+(performance.now() - t0).toFixed(2));
        last = result;
        row.cpuFallbackQueries = Math.max(row.cpuFallbackQueries ?? 0, stats.cpuFallbackQueries);
        row.maxGpuScoreError = Math.max(row.maxGpuScoreError ?? 0, stats.maxGpuScoreError);
      }
      row.gpuMs = median(row.gpuRuns);
      row.sameTopK = last ? sameRows(last, cpu) : null;
    } finally {
      gpu.destroy();
    }
    log(
      `exact: WGSL ${fmtMs(row.gpuMs)} for ${opts.queries} queries (upload ${fmtMs(row.gpuUploadMs)}), ` +
        `same top-${k} ${row.sameTopK} of ${opts.queries}, CPU-fallback queries ${row.cpuFallbackQueries}, ` +
        `max GPU score error ${row.maxGpuScoreError?.toExponential(2) ?? '—'}`,
    );
    onExactDone?.(row);
    row.ivf = await measureIvfInt8(docs, queries, log);
  } catch (e) {
    row.error = errText(e);
    log(`exact: ERROR ${row.error}`);
  }
  return row;
}
