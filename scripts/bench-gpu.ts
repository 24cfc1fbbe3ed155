// WebGPU vs WASM in Node, where no browser exists: Dawn (the `webgpu` npm package) over Vulkan, and the
// onnxruntime-web build transformers.js loads (`onnxruntime-web/webgpu` → ort.webgpu.bundle.min.mjs on
// the asyncify WASM; never the JSEP build `ort.min.mjs`, which gives wrong q8 vectors). Measures:
//
//   (a) minilm-l6-random (the all-MiniLM-L6-v2 shape): a batch of --batch × --tokens tokens and one
//       query of --query-tokens tokens; fp32, fp16 (only on an adapter with shader-f16) and q8;
//   (b) clip-vit-b16-random's vision tower (the CLIP ViT-B/16 shape): --images images and 1 image;
//   (c) the WGSL exact search kernel (src/lib/platform/gpu-exact.ts) vs the JS path
//       (core/retrieval/exact.ts) on clustered unit vectors (--vectors × 384, --queries queries, top-10):
//       queries whose top-10 ids match, ms per 100 queries.
//
// The encoders run as raw onnxruntime-web sessions on pre-tokenized inputs (deterministic random token
// ids / pixels; tokenization and image decoding are not measured), one WASM and one WebGPU session per
// (model, dtype). ms = median of --repeats runs after --warmup runs; parity = the cosine between the
// WebGPU and WASM embedding of each row (text: mask-weighted mean pooling of last_hidden_state; vision:
// image_embeds), minimum over rows. The models come from scripts/generate-models.ts (generated into
// --models-dir when missing or stale; random weights, real shapes). Prints a markdown table and writes
// --out (JSON: adapter info, machine, options, every run) and the same path with .md.
//
//   npm run bench:gpu -- [--out bench-results/gpu.json] [--models-dir models/generated] [--threads 2]
//     [--repeats 3] [--warmup 1] [--batch 32] [--tokens 128] [--query-tokens 16] [--images 8]
//     [--vectors 100000] [--queries 1000] [--dtypes fp32,fp16,q8] [--no-text] [--no-vision]
//     [--no-exact] [--dawn-flag backend=vulkan]… [--text-model id] [--vision-model id]
//
// Dawn needs a Vulkan driver: VK_DRIVER_FILES may point at one (e.g. Chromium's SwiftShader,
// /usr/lib/chromium/vk_swiftshader_icd.json, or NVIDIA's nvidia_icd.json). Run with --no-liftoff (the
// npm script does) or the first minutes time V8's baseline WASM compiler.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, hostname, release, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type * as OrtNS from 'onnxruntime-web';
import {
  clusteredVectors,
  exactSearch,
  normalizeRows,
  type KnnResult,
  type Matrix,
} from '../src/lib/core/retrieval/exact';
import { softwareAdapter } from '../src/lib/platform/backend';
import { createGpuExact } from '../src/lib/platform/gpu-exact';
import { DEFAULT_OUT, generateModels } from './generate-models';
import { describeAdapter, installNodeWebGpu, type AdapterReport } from './lib/node-webgpu';

const TEXT_MODEL_DEFAULT = 'loupe-test/minilm-l6-random';
const VISION_MODEL_DEFAULT = 'loupe-test/clip-vit-b16-random';
const DIM = 384;
const K = 10;
const ALL_DTYPES = ['fp32', 'fp16', 'q8'] as const;
type Dtype = (typeof ALL_DTYPES)[number];

const { values: argv } = parseArgs({
  options: {
    out: { type: 'string', default: 'bench-results/gpu.json' },
    'models-dir': { type: 'string', default: DEFAULT_OUT },
    threads: { type: 'string', default: '2' },
    repeats: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '1' },
    batch: { type: 'string', default: '32' },
    tokens: { type: 'string', default: '128' },
    'query-tokens': { type: 'string', default: '16' },
    images: { type: 'string', default: '8' },
    vectors: { type: 'string', default: '100000' },
    queries: { type: 'string', default: '1000' },
    dtypes: { type: 'string', default: ALL_DTYPES.join(',') },
    'no-text': { type: 'boolean', default: false },
    'no-vision': { type: 'boolean', default: false },
    'no-exact': { type: 'boolean', default: false },
    'dawn-flag': { type: 'string', multiple: true, default: [] },
    /** Other generated models (e.g. loupe-test/bert-tiny-random, loupe-test/clip-tiny-random for a quick check). */
    'text-model': { type: 'string', default: TEXT_MODEL_DEFAULT },
    'vision-model': { type: 'string', default: VISION_MODEL_DEFAULT },
  },
});

function positiveInt(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) {
    console.error(`--${name} must be a positive integer, got ${JSON.stringify(value)}`);
    process.exit(2);
  }
  return n;
}
const opts = {
  threads: positiveInt('threads', argv.threads),
  repeats: positiveInt('repeats', argv.repeats),
  warmup: Number(argv.warmup) >= 0 && Number.isInteger(Number(argv.warmup)) ? Number(argv.warmup) : 1,
  batch: positiveInt('batch', argv.batch),
  tokens: positiveInt('tokens', argv.tokens),
  queryTokens: positiveInt('query-tokens', argv['query-tokens']),
  images: positiveInt('images', argv.images),
  vectors: positiveInt('vectors', argv.vectors),
  queries: positiveInt('queries', argv.queries),
  dtypes: argv.dtypes.split(',').map((d) => d.trim()) as Dtype[],
  dawnFlags: argv['dawn-flag'],
};
const TEXT_MODEL = argv['text-model'];
const VISION_MODEL = argv['vision-model'];
for (const d of opts.dtypes)
  if (!ALL_DTYPES.includes(d)) {
    console.error(`--dtypes: unknown dtype ${d} (use ${ALL_DTYPES.join(', ')})`);
    process.exit(2);
  }

const OUT = resolve(argv.out);
const OUT_MD = OUT.replace(/\.json$/, '') + '.md';
const t00 = performance.now();
const log = (line: string) =>
  console.log(`[bench-gpu ${((performance.now() - t00) / 1000).toFixed(1).padStart(6)} s] ${line}`);

// ---- results --------------------------------------------------------------------------------------

interface EncoderCase {
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
interface EncoderRow {
  model: string;
  part: 'text' | 'vision';
  dtype: Dtype;
  file: string | null;
  /** Why this dtype was not measured (fp16 without shader-f16 …). */
  skipped?: string;
  error?: string;
  cases: EncoderCase[];
}
interface ExactRow {
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
}

const report = {
  tool: 'npm run bench:gpu (scripts/bench-gpu.ts)',
  date: new Date().toISOString(),
  machine: {
    hostname: hostname(),
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: +(totalmem() / 2 ** 30).toFixed(1),
    os: `${process.platform} ${release()} ${process.arch}`,
    node: process.version,
    execArgv: process.execArgv,
    vkDriverFiles: process.env.VK_DRIVER_FILES ?? null,
  },
  runtime: {
    encoders:
      'raw onnxruntime-web InferenceSession (no transformers.js), pre-tokenized deterministic random inputs',
    ortBuild: 'onnxruntime-web/webgpu (ort.webgpu.bundle.min.mjs) on ort-wasm-simd-threaded.asyncify.wasm',
    ortVersion: null as string | null,
    webgpu: 'Dawn for Node (npm webgpu) over Vulkan',
    webgpuPackage: null as string | null,
    wasmThreads: opts.threads,
  },
  options: opts,
  adapter: null as AdapterReport | null,
  software: null as string | null,
  speedNote: '',
  models: {} as Record<string, unknown>,
  encoders: [] as EncoderRow[],
  exact: null as ExactRow | null,
  errors: [] as string[],
  seconds: 0,
};

function save(): void {
  report.seconds = +((performance.now() - t00) / 1000).toFixed(1);
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, JSON.stringify(report, null, 2) + '\n');
  writeFileSync(OUT_MD, markdown());
}

// ---- formatting -----------------------------------------------------------------------------------

const fmtMs = (ms: number | null | undefined): string =>
  ms == null ? '—' : ms >= 100 ? `${Math.round(ms).toLocaleString('en-US')} ms` : `${ms.toFixed(1)} ms`;
const fmtCos = (c: number | null | undefined): string => (c == null ? '—' : c.toFixed(6));

function markdown(): string {
  const a = report.adapter;
  const lines: string[] = [];
  lines.push(`## bench:gpu — ${report.date.slice(0, 16).replace('T', ' ')} UTC, ${report.machine.hostname}`);
  lines.push('');
  lines.push(
    a
      ? `Adapter: ${[a.vendor, a.architecture, a.device, a.description].filter(Boolean).join(' / ')}; ` +
          `isFallbackAdapter ${a.isFallbackAdapter}; shader-f16 ${a.features.includes('shader-f16') ? 'yes' : 'no'}. ` +
          `Features: ${a.features.join(', ') || 'none'}.`
      : 'Adapter: none (Dawn found no WebGPU adapter).',
  );
  lines.push(
    `Machine: ${report.machine.cpu} × ${report.machine.cores}, ${report.machine.memoryGiB} GiB, ` +
      `${report.machine.os}, Node ${report.machine.node} ${report.machine.execArgv.join(' ')}. ` +
      `onnxruntime-web ${report.runtime.ortVersion ?? '?'} (${report.runtime.ortBuild}), ` +
      `webgpu ${report.runtime.webgpuPackage ?? '?'}; WASM ${opts.threads} threads.`,
  );
  lines.push(
    `Encoders: ${report.runtime.encoders}; median of ${opts.repeats} runs after ${opts.warmup} warm-up; ` +
      `cosine = min over rows of cos(WebGPU, WASM).`,
  );
  if (report.speedNote) lines.push('', `**${report.speedNote}**`);
  lines.push('');
  lines.push(
    `| model, dtype | WebGPU, batch | WASM, same batch | WebGPU single | WASM single | cosine WebGPU vs WASM (batch / single) |`,
  );
  lines.push('|---|---|---|---|---|---|');
  for (const r of report.encoders) {
    const label =
      r.model === TEXT_MODEL_DEFAULT
        ? 'MiniLM-L6 shape'
        : r.model === VISION_MODEL_DEFAULT
          ? 'CLIP B/16 vision'
          : `${r.model}${r.part === 'vision' ? ' vision' : ''}`;
    const name =
      r.part === 'text'
        ? `${label}, ${r.dtype} (${opts.batch} × ${opts.tokens} tokens; query ${opts.queryTokens})`
        : `${label}, ${r.dtype} (${opts.images} images; 1 image)`;
    if (r.skipped || r.error) {
      lines.push(`| ${name} | ${r.skipped ? `not measured: ${r.skipped}` : `error: ${r.error}`} | | | | |`);
      continue;
    }
    const b = r.cases.find((c) => c.case === 'batch');
    const s = r.cases.find((c) => c.case === 'single');
    const cell = (c: EncoderCase | undefined, k: 'webgpuMs' | 'wasmMs') =>
      c?.error ? `error: ${c.error}` : fmtMs(c?.[k]);
    lines.push(
      `| ${name} | ${cell(b, 'webgpuMs')} | ${cell(b, 'wasmMs')} | ${cell(s, 'webgpuMs')} | ${cell(s, 'wasmMs')} | ` +
        `${fmtCos(b?.minCosine)} / ${fmtCos(s?.minCosine)} |`,
    );
  }
  const e = report.exact;
  if (e) {
    lines.push('');
    lines.push(
      `| exact top-${e.k}, ${e.vectors.toLocaleString('en-US')} × ${e.dim}, ${e.queries.toLocaleString('en-US')} queries | ` +
        `WGSL kernel, per 100 queries | JS path, per 100 queries | same top-${e.k} | CPU-fallback queries | max GPU score error |`,
    );
    lines.push('|---|---|---|---|---|---|');
    const per100 = (ms: number | null) => (ms == null ? null : (ms / e.queries) * 100);
    lines.push(
      `| clustered unit vectors${e.error ? ` (error: ${e.error})` : ''} | ${fmtMs(per100(e.gpuMs))} | ${fmtMs(per100(e.cpuMs))} | ` +
        `${e.sameTopK ?? '—'} of ${e.queries} | ${e.cpuFallbackQueries ?? '—'} | ` +
        `${e.maxGpuScoreError == null ? '—' : e.maxGpuScoreError.toExponential(2)} |`,
    );
  }
  if (report.errors.length) lines.push('', 'Errors:', ...report.errors.map((x) => `- ${x}`));
  lines.push('', `Total ${report.seconds} s.`, '');
  return lines.join('\n');
}

// ---- helpers --------------------------------------------------------------------------------------

/** mulberry32: deterministic inputs, the same on every machine. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

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

const errText = (e: unknown): string =>
  (e instanceof Error ? e.message : String(e)).split('\n')[0].slice(0, 300);

// ---- encoders -------------------------------------------------------------------------------------

type Ort = typeof OrtNS;
type Feeds = Record<string, OrtNS.Tensor>;

async function timeSession(
  session: OrtNS.InferenceSession,
  feeds: Feeds,
  fetch: string,
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
  const rand = rng(seed);
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
  const rand = rng(seed);
  // CLIP-normalised pixels lie roughly in [-1.8, 2.2].
  const px = Float32Array.from({ length: batch * channels * size * size }, () => rand() * 4 - 1.8);
  return { pixel_values: new ort.Tensor('float32', px, [batch, channels, size, size]) };
}

async function benchEncoder(
  ort: Ort,
  part: 'text' | 'vision',
  dtype: Dtype,
  shaderF16: boolean,
): Promise<void> {
  const model = part === 'text' ? TEXT_MODEL : VISION_MODEL;
  const dir = join(resolve(argv['models-dir']), ...model.split('/'));
  const base = part === 'text' ? 'model' : 'vision_model';
  const suffix = dtype === 'q8' ? '_quantized' : dtype === 'fp16' ? '_fp16' : '';
  const file = join(dir, 'onnx', `${base}${suffix}.onnx`);
  const row: EncoderRow = { model, part, dtype, file: file.slice(dir.length + 1), cases: [] };
  report.encoders.push(row);
  if (dtype === 'fp16') {
    row.file = null;
    row.skipped = shaderF16
      ? 'the adapter has shader-f16, but scripts/generate-models.ts writes no fp16 variant (fp32 and q8 only)'
      : 'the adapter has no shader-f16';
    log(`${model} ${part} fp16: ${row.skipped}`);
    save();
    return;
  }
  let wasm: OrtNS.InferenceSession | null = null;
  let gpu: OrtNS.InferenceSession | null = null;
  try {
    const bytes = new Uint8Array(readFileSync(file));
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    wasm = await ort.InferenceSession.create(bytes, {
      executionProviders: ['wasm'],
      graphOptimizationLevel: 'all',
    });
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
        const w = await timeSession(wasm, feeds, fetch);
        entry.wasmRuns = w.runs.map((x) => +x.toFixed(2));
        entry.wasmMs = median(w.runs);
        const g = await timeSession(gpu, feeds, fetch);
        entry.webgpuRuns = g.runs.map((x) => +x.toFixed(2));
        entry.webgpuMs = median(g.runs);
        entry.minCosine = minRowCosine(pool(g.out), pool(w.out), c.rows, width);
        log(
          `${model} ${part} ${dtype} ${c.case} (${entry.shape}): WebGPU ${fmtMs(entry.webgpuMs)}, ` +
            `WASM ${fmtMs(entry.wasmMs)}, min cosine ${fmtCos(entry.minCosine)}`,
        );
      } catch (e) {
        entry.error = errText(e);
        report.errors.push(`${model} ${part} ${dtype} ${c.case}: ${entry.error}`);
        log(`${model} ${part} ${dtype} ${c.case}: ERROR ${entry.error}`);
      }
      save();
    }
  } catch (e) {
    row.error = errText(e);
    report.errors.push(`${model} ${part} ${dtype}: ${row.error}`);
    log(`${model} ${part} ${dtype}: ERROR ${row.error}`);
  } finally {
    await wasm?.release();
    await gpu?.release();
    save();
  }
}

// ---- exact search ---------------------------------------------------------------------------------

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

async function benchExact(): Promise<void> {
  const row: ExactRow = {
    vectors: opts.vectors,
    queries: opts.queries,
    dim: DIM,
    k: K,
    cpuMs: null,
    gpuUploadMs: null,
    gpuRuns: [],
    gpuMs: null,
    sameTopK: null,
    cpuFallbackQueries: null,
    maxGpuScoreError: null,
  };
  report.exact = row;
  try {
    log(`exact: generating ${opts.vectors} × ${DIM} clustered vectors and ${opts.queries} queries`);
    const gen = clusteredVectors(DIM, { seed: 1 });
    const docs: Matrix = normalizeRows(gen.generate(opts.vectors));
    const queries: Matrix = normalizeRows(gen.generate(opts.queries));
    let t0 = performance.now();
    const cpu = exactSearch(docs, queries, { k: K });
    row.cpuMs = performance.now() - t0;
    log(`exact: JS path ${fmtMs(row.cpuMs)} for ${opts.queries} queries`);
    save();
    t0 = performance.now();
    const gpu = await createGpuExact(docs);
    row.gpuUploadMs = performance.now() - t0;
    try {
      // Warm-up: pipeline compilation and the first dispatches.
      for (let i = 0; i < opts.warmup; i++) await gpu.search(queries, { k: K });
      let last: KnnResult | null = null;
      for (let i = 0; i < opts.repeats; i++) {
        t0 = performance.now();
        const { result, stats } = await gpu.search(queries, { k: K });
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
        `same top-${K} ${row.sameTopK} of ${opts.queries}, CPU-fallback queries ${row.cpuFallbackQueries}`,
    );
  } catch (e) {
    row.error = errText(e);
    report.errors.push(`exact: ${row.error}`);
    log(`exact: ERROR ${row.error}`);
  }
  save();
}

// ---- main -----------------------------------------------------------------------------------------

async function main(): Promise<number> {
  if (!process.execArgv.includes('--no-liftoff'))
    log('warning: node runs without --no-liftoff: early WASM timings include the baseline compiler');
  const require = createRequire(import.meta.url);
  try {
    report.runtime.webgpuPackage = JSON.parse(
      readFileSync(require.resolve('webgpu/package.json'), 'utf8'),
    ).version;
  } catch {
    // webgpu's package.json is not exported on every version; the version is informational.
  }
  await installNodeWebGpu(opts.dawnFlags);
  report.adapter = await describeAdapter();
  if (!report.adapter) {
    const why =
      'Dawn found no WebGPU adapter (no usable Vulkan driver: set VK_DRIVER_FILES to an ICD json, ' +
      'and check the Vulkan loader libvulkan.so.1 is installed)';
    report.errors.push(why);
    log(why);
    save();
    return 1;
  }
  const a = report.adapter;
  report.software = softwareAdapter({ info: a, isFallbackAdapter: a.isFallbackAdapter }) ?? null;
  report.speedNote = report.software
    ? `Software adapter (${report.software}): these timings are for correctness only and say nothing about a GPU.`
    : '';
  log(
    `adapter: ${[a.vendor, a.architecture, a.description].filter(Boolean).join(' / ')}, fallback ${a.isFallbackAdapter}`,
  );
  if (report.speedNote) log(report.speedNote);
  save();

  const parts: Array<'text' | 'vision'> = [];
  if (!argv['no-text']) parts.push('text');
  if (!argv['no-vision']) parts.push('vision');
  if (parts.length) {
    const ids = parts.map((p) => (p === 'text' ? TEXT_MODEL : VISION_MODEL));
    log(`models: ${ids.join(', ')} into ${resolve(argv['models-dir'])}`);
    const t0 = performance.now();
    const made = generateModels({ models: ids, out: resolve(argv['models-dir']), log: (l) => log(`  ${l}`) });
    report.models = Object.fromEntries(
      made.map((m) => [m.id, { skipped: m.skipped, seconds: +m.seconds.toFixed(1) }]),
    );
    log(`models ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    const wasmMjs = require.resolve('onnxruntime-web/ort-wasm-simd-threaded.asyncify.mjs');
    const wasmBin = require.resolve('onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm');
    const mod = (await import('onnxruntime-web/webgpu')) as Ort & { default?: Ort };
    const ort = mod.default?.InferenceSession ? mod.default : mod;
    ort.env.wasm.wasmPaths = { mjs: pathToFileURL(wasmMjs).href, wasm: pathToFileURL(wasmBin).href };
    ort.env.wasm.numThreads = opts.threads;
    ort.env.wasm.proxy = false;
    ort.env.webgpu.powerPreference = 'high-performance';
    ort.env.logLevel = 'error';
    report.runtime.ortVersion = ort.env.versions?.web ?? null;
    log(`onnxruntime-web ${report.runtime.ortVersion}, WASM ${opts.threads} threads`);
    const shaderF16 = a.features.includes('shader-f16');
    for (const part of parts)
      for (const dtype of opts.dtypes) await benchEncoder(ort, part, dtype, shaderF16);
  }
  if (!argv['no-exact']) await benchExact();
  save();
  console.log('\n' + markdown());
  log(`wrote ${OUT} and ${OUT_MD}`);
  return report.errors.length ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    report.errors.push(`fatal: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    console.error(e);
    try {
      save();
    } catch {
      // Nothing more to write.
    }
    process.exit(1);
  },
);
