// Encoder speed in the browser vs native ONNX Runtime, in one run, on the same ONNX files and inputs:
//
//   (a) minilm-l6-random (the all-MiniLM-L6-v2 shape; q8 and fp32), texts truncated at 128 tokens on
//       both sides: docs/s embedding 256 medquad documents at batch 1 and batch 32, and ms per query
//       (medquad queries, one call each, batch 1). Chromium WASM with 1 and 2 threads (a fresh
//       browser and encoder worker per configuration; the product's worker, cross-origin isolated)
//       next to native onnxruntime-node with intraOpNumThreads 1 and 2 (a child process each).
//   (b) clip-vit-b16-random's vision tower (the CLIP ViT-B/16 shape): images/s on vqa-rad images,
//       WASM 2 threads vs native 2 threads (fp32 and q8).
//   (c) WebGPU numbers for completeness. Here WebGPU is SwiftShader, a CPU emulation: its speed
//       says nothing about a GPU.
//   (e) the corpus row: the same model (q8, 2 threads, truncation at the model's maximum length) over
//       medquad documents (their real length mix) through a plain transformers.js
//       `pipeline('feature-extraction')` loop (batches of 32 in shard order, what a user would write)
//       vs the product worker's length-bucketed batches, in the same browser, in alternating rounds
//       (plain, Loupe, plain, Loupe, …); the median ratio and its spread. `--corpus-only` runs just it.
//   (d) a breakdown: raw onnxruntime-web (no transformers.js, pre-tokenized inputs) with the plain
//       SIMD+threads build (what the product loads without a hardware WebGPU adapter) and with the
//       asyncify build (what it loads where one is, as WebGPU needs it), vs native model-only time;
//       CPU use (cores busy) to check that threads are used; the WASM binaries' SIMD features.
//
// Every configuration is warmed up first; each figure is the median of --repeats runs. Memory: the
// page's measureUserAgentSpecificMemory (page + workers), the renderer's peak RSS (/proc VmHWM) and
// the native process's max RSS. Prints a markdown table and writes bench-results/encode.json.
//
//   npx tsx scripts/bench-encode.ts [--docs 256] [--queries 64] [--images 16] [--repeats 3]
//     [--max-tokens 128] [--no-webgpu] [--no-breakdown] [--out bench-results/encode.json]
//     [--dtypes q8,fp32] [--threads 1,2] [--no-images]   (subsets, to re-measure a configuration)
//     [--corpus-docs 320] [--corpus-batch 32] [--rounds 3] [--corpus-only] [--no-corpus]
import { execSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RawImage } from '@huggingface/transformers';
import { modelPath, type Dtype, type ModelSpec } from '../src/lib/core/retrieval/models';
import type { PlainTensor } from '../tests/browser/bench-ort.worker';
import {
  ROOT,
  benchArgs,
  busySeconds,
  call,
  launchHarness,
  median,
  renderers,
  requireGenerated,
  startDevServer,
  type BrowserSession,
  type ChromiumProc,
} from './lib/bench-harness';
import {
  NativeTextEncoder,
  NativeVisionEncoder,
  localName,
  nodePixelValues,
  onnxFile,
  registrySpec,
} from './lib/native-encoder';
import { DATA_DIR, medquadDocs, medquadQueries, vqaRadImages } from './lib/parity-data';

const SELF = fileURLToPath(import.meta.url);
const TEXT_MODEL = 'loupe-test/minilm-l6-random';
const VISION_MODEL = 'loupe-test/clip-vit-b16-random';
const ALL_DTYPES: Dtype[] = ['q8', 'fp32'];
const ALL_THREADS = [1, 2];
const IMAGE_BATCH = 8;

const argv = benchArgs({
  docs: { type: 'string', default: '256' },
  queries: { type: 'string', default: '64' },
  images: { type: 'string', default: '16' },
  repeats: { type: 'string', default: '3' },
  'max-tokens': { type: 'string', default: '128' },
  'webgpu-docs': { type: 'string', default: '16' },
  'webgpu-queries': { type: 'string', default: '4' },
  'webgpu-images': { type: 'string', default: '1' },
  /** Subsets, to re-measure one configuration: --dtypes fp32 --threads 2 --no-images. */
  dtypes: { type: 'string', default: ALL_DTYPES.join(',') },
  threads: { type: 'string', default: ALL_THREADS.join(',') },
  'no-images': { type: 'boolean', default: false },
  'no-webgpu': { type: 'boolean', default: false },
  'no-breakdown': { type: 'boolean', default: false },
  'corpus-docs': { type: 'string', default: '320' },
  'corpus-batch': { type: 'string', default: '32' },
  rounds: { type: 'string', default: '3' },
  'corpus-only': { type: 'boolean', default: false },
  'no-corpus': { type: 'boolean', default: false },
  out: { type: 'string', default: join(ROOT, 'bench-results/encode.json') },
  /** Internal: run one native configuration in this (child) process and print JSON. */
  child: { type: 'string' },
});
const N_DOCS = Number(argv.docs);
const N_QUERIES = Number(argv.queries);
const N_IMAGES = Number(argv.images);
const REPEATS = Number(argv.repeats);
const MAX_TOKENS = Number(argv['max-tokens']);
const DTYPES = argv.dtypes!.split(',').filter((d): d is Dtype => ALL_DTYPES.includes(d as Dtype));
const THREADS = argv
  .threads!.split(',')
  .map(Number)
  .filter((t) => ALL_THREADS.includes(t));

const CORPUS_DOCS = Number(argv['corpus-docs']);
const CORPUS_BATCH = Number(argv['corpus-batch']);
const ROUNDS = Number(argv.rounds);
const log = (...a: unknown[]) => console.error(`[${new Date().toISOString().slice(11, 19)}]`, ...a);
const textSpec = (): ModelSpec => registrySpec(TEXT_MODEL, { maxTokens: MAX_TOKENS });

// ---------------------------------------------------------------------------------------------
// Results

/** Throughput figures of one configuration (medians over repeats). */
interface TextFigures {
  /** docs/s embedding the corpus at batch 1 and 32 (WebGPU: at `bigBatch`). */
  docsPerSecB1: number;
  docsPerSecB32: number;
  bigBatch?: number;
  /** ms per query embedded alone (median over queries of the median over repeats). */
  msPerQuery: number;
  /** Cores busy while embedding at batch 32 (CPU seconds ÷ wall seconds). */
  coresB32: number;
}

interface TextResult extends TextFigures {
  side: 'wasm' | 'webgpu' | 'native';
  dtype: Dtype;
  threads: number;
  docs: number;
  queries: number;
  /** Browser: page + workers (measureUserAgentSpecificMemory) after the runs. */
  uaMemoryBytes?: number | null;
  /** Browser: peak RSS of the page's renderer process; native: max RSS of the process. */
  peakRssBytes: number;
  gpuProcessPeakRssBytes?: number;
  loadMs: number;
  /** 1-minute load average when the configuration finished (the machine is shared). */
  load1?: number;
  /** Native only: model-only (session.run) and tokenization-only docs/s at batch 32. */
  modelOnlyDocsPerSecB32?: number;
  modelOnlyDocsPerSecB1?: number;
  tokenizeDocsPerSecB32?: number;
}

interface ImageResult {
  side: 'wasm' | 'webgpu' | 'native';
  dtype: Dtype;
  threads: number;
  images: number;
  batch?: number;
  /** Decode + preprocess + vision tower. */
  imagesPerSec: number;
  /** Native only: the vision tower on ready pixel tensors. */
  modelOnlyImagesPerSec?: number;
  cores: number;
  uaMemoryBytes?: number | null;
  peakRssBytes: number;
  gpuProcessPeakRssBytes?: number;
  loadMs: number;
}

interface BreakdownResult {
  build: 'plain' | 'asyncify' | 'native';
  dtype: Dtype;
  threads: number;
  /** Model-only docs/s at batch 32 (pre-tokenized, the same int64 inputs). */
  docsPerSecB32: number;
  cores: number;
}

// ---------------------------------------------------------------------------------------------
// Native (child process per configuration, so its max RSS is its own)

interface ChildJob {
  kind: 'text' | 'image';
  dtype: Dtype;
  threads: number;
}

async function nativeText(job: ChildJob): Promise<TextResult> {
  const docs = medquadDocs(N_DOCS);
  const queries = medquadQueries(N_QUERIES);
  const t0 = performance.now();
  const enc = await NativeTextEncoder.load(textSpec(), job.dtype, { threads: job.threads });
  const loadMs = performance.now() - t0;
  // Warm-up.
  await enc.embed(docs.slice(0, 32), 'document', 32);
  await enc.embed(docs.slice(0, 8), 'document', 1);
  for (const q of queries.slice(0, 8)) await enc.embed([q], 'query', 1);

  const timeCorpus = async (batch: number) => {
    const ms: number[] = [];
    let cores = 0;
    for (let r = 0; r < REPEATS; r++) {
      const c0 = process.cpuUsage();
      const t = performance.now();
      await enc.embed(docs, 'document', batch);
      const wall = performance.now() - t;
      const c = process.cpuUsage(c0);
      ms.push(wall);
      cores = Math.max(cores, (c.user + c.system) / 1000 / wall);
    }
    return { perSec: (docs.length / median(ms)) * 1000, cores };
  };
  const b32 = await timeCorpus(32);
  const b1 = await timeCorpus(1);
  const perQuery: number[][] = queries.map(() => []);
  for (let r = 0; r < REPEATS; r++)
    for (let i = 0; i < queries.length; i++) {
      const t = performance.now();
      await enc.embed([queries[i]], 'query', 1);
      perQuery[i].push(performance.now() - t);
    }
  // Model-only and tokenization-only, batch 32 and 1.
  const modelOnly = async (batch: number) => {
    const batches = [];
    for (let i = 0; i < docs.length; i += batch)
      batches.push(enc.tokenize(docs.slice(i, i + batch), 'document'));
    const ms: number[] = [];
    for (let r = 0; r < REPEATS; r++) {
      const t = performance.now();
      for (const b of batches) await enc.session.run(b.feeds);
      ms.push(performance.now() - t);
    }
    return (docs.length / median(ms)) * 1000;
  };
  const tokMs: number[] = [];
  for (let r = 0; r < REPEATS; r++) {
    const t = performance.now();
    for (let i = 0; i < docs.length; i += 32) enc.tokenize(docs.slice(i, i + 32), 'document');
    tokMs.push(performance.now() - t);
  }
  const result: TextResult = {
    side: 'native',
    dtype: job.dtype,
    threads: job.threads,
    docs: docs.length,
    queries: queries.length,
    docsPerSecB1: b1.perSec,
    docsPerSecB32: b32.perSec,
    msPerQuery: median(perQuery.map(median)),
    coresB32: b32.cores,
    modelOnlyDocsPerSecB32: await modelOnly(32),
    modelOnlyDocsPerSecB1: await modelOnly(1),
    tokenizeDocsPerSecB32: (docs.length / median(tokMs)) * 1000,
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
    loadMs,
  };
  await enc.release();
  return result;
}

async function nativeImages(job: ChildJob): Promise<ImageResult> {
  const spec = registrySpec(VISION_MODEL);
  const paths = vqaRadImages(N_IMAGES);
  const bytes = paths.map((p) => readFileSync(join(DATA_DIR, 'vqa-rad', p)));
  const t0 = performance.now();
  const vis = await NativeVisionEncoder.load(spec, job.dtype, { threads: job.threads });
  const loadMs = performance.now() - t0;
  // End to end as the worker does it: decode, preprocess (transformers.js in Node: sharp), run.
  const endToEnd = async (n: number) => {
    for (let i = 0; i < n; i += IMAGE_BATCH) {
      const images = await Promise.all(
        bytes.slice(i, Math.min(n, i + IMAGE_BATCH)).map((b) => RawImage.fromBlob(new Blob([b]))),
      );
      const px = await nodePixelValues(spec, images);
      await vis.run(px.data, px.dims);
    }
  };
  await endToEnd(IMAGE_BATCH); // warm-up
  const ms: number[] = [];
  let cores = 0;
  for (let r = 0; r < REPEATS; r++) {
    const c0 = process.cpuUsage();
    const t = performance.now();
    await endToEnd(bytes.length);
    const wall = performance.now() - t;
    const c = process.cpuUsage(c0);
    ms.push(wall);
    cores = Math.max(cores, (c.user + c.system) / 1000 / wall);
  }
  const images = await Promise.all(bytes.map((b) => RawImage.fromBlob(new Blob([b]))));
  const px = await nodePixelValues(spec, images);
  const modelMs: number[] = [];
  for (let r = 0; r < REPEATS; r++) {
    const t = performance.now();
    await vis.runBatches(px.data, px.dims, IMAGE_BATCH);
    modelMs.push(performance.now() - t);
  }
  await vis.release();
  return {
    side: 'native',
    dtype: job.dtype,
    threads: job.threads,
    images: bytes.length,
    imagesPerSec: (bytes.length / median(ms)) * 1000,
    modelOnlyImagesPerSec: (bytes.length / median(modelMs)) * 1000,
    cores,
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
    loadMs,
  };
}

/** Runs one native configuration in a child Node process; returns its JSON. */
function runChild<T>(job: ChildJob): T {
  const args = ['--import', 'tsx', SELF, '--child', JSON.stringify(job)];
  for (const k of ['docs', 'queries', 'images', 'repeats', 'max-tokens'] as const)
    args.push(`--${k}`, argv[k]!);
  const r = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`native ${JSON.stringify(job)} failed (${r.status}): ${r.stderr}`);
  const line = r.stdout.trim().split('\n').pop()!;
  return JSON.parse(line) as T;
}

/** Tokenized batches of the benchmark documents as plain tensors (for raw onnxruntime-web). */
async function plainBatches(batch: number): Promise<PlainTensor[][]> {
  const enc = await NativeTextEncoder.load(textSpec(), 'fp32');
  const docs = medquadDocs(N_DOCS);
  const out: PlainTensor[][] = [];
  for (let i = 0; i < docs.length; i += batch) {
    const t = enc.tokenize(docs.slice(i, i + batch), 'document');
    out.push(
      Object.entries(t.feeds).map(([name, v]) => ({
        name,
        type: 'int64' as const,
        data: Array.from(v.data as BigInt64Array, Number),
        dims: [...v.dims],
      })),
    );
  }
  await enc.release();
  return out;
}

// ---------------------------------------------------------------------------------------------
// Browser

function pageRenderer(procs: ChromiumProc[]): ChromiumProc | undefined {
  return renderers(procs).sort((a, b) => b.cpuSeconds - a.cpuSeconds)[0];
}
const gpuProcess = (procs: ChromiumProc[]) => procs.find((p) => p.type === 'gpu-process');

/** Times `fn` and the cores the browser kept busy meanwhile. */
async function timed<T>(
  s: BrowserSession,
  fn: () => Promise<T>,
): Promise<{ value: T; cores: number; ms: number }> {
  const c0 = busySeconds(s.procs());
  const t = performance.now();
  const value = await fn();
  const ms = performance.now() - t;
  return { value, cores: (busySeconds(s.procs()) - c0) / (ms / 1000), ms };
}

interface BrowserTextRun {
  device: 'wasm' | 'webgpu';
  dtype: Dtype;
  threads: number;
  docs: number;
  queries: number;
  /** Batch sizes to time the corpus at (the largest goes in the "batch 32" column). */
  batches: number[];
  repeats: number;
  /** Warm-up: documents embedded at each batch size, and queries. */
  warmDocs: number;
  warmQueries: number;
}

async function browserText(base: string, run: BrowserTextRun): Promise<TextResult> {
  const { device, dtype, threads } = run;
  const docs = medquadDocs(N_DOCS).slice(0, run.docs);
  const queries = medquadQueries(N_QUERIES).slice(0, run.queries);
  const s = await launchHarness(base, (m) => log(m));
  try {
    await call(s.page, 'open', threads);
    const loaded = await call(s.page, 'load', textSpec(), { device, dtype });
    if (!loaded.ok) throw new Error(`${device} ${dtype}: ${loaded.error.message}`);
    if (loaded.info.device !== device || loaded.info.threads !== threads || loaded.info.fallbackReason)
      throw new Error(`asked for ${device}/${threads} threads, got ${JSON.stringify(loaded.info)}`);
    // Warm-up: each batch size once, and a few queries.
    for (const b of run.batches)
      await call(s.page, 'timeTexts', docs.slice(0, Math.max(b, run.warmDocs)), 'document', b, 1, {
        byLength: false,
      });
    await call(s.page, 'timeQueries', queries.slice(0, run.warmQueries));
    const perSec: Record<number, { perSec: number; cores: number }> = {};
    for (const b of run.batches) {
      // Batches in input order, as native is timed (the corpus row measures the length bucketing).
      const r = await timed(s, () =>
        call(s.page, 'timeTexts', docs, 'document', b, run.repeats, { byLength: false }),
      );
      perSec[b] = { perSec: (docs.length / median(r.value)) * 1000, cores: r.cores };
    }
    const perQuery: number[][] = queries.map(() => []);
    for (let r = 0; r < run.repeats; r++) {
      const ms = await call(s.page, 'timeQueries', queries);
      ms.forEach((m, i) => perQuery[i].push(m));
    }
    const mem = await call(s.page, 'memory');
    const procs = s.procs();
    const big = Math.max(...run.batches);
    return {
      side: device,
      dtype,
      threads,
      docs: docs.length,
      queries: queries.length,
      docsPerSecB1: perSec[1]?.perSec ?? NaN,
      docsPerSecB32: perSec[big]?.perSec ?? NaN,
      bigBatch: big,
      msPerQuery: median(perQuery.map(median)),
      coresB32: perSec[big]?.cores ?? NaN,
      uaMemoryBytes: mem.uaBytes,
      peakRssBytes: pageRenderer(procs)?.hwmBytes ?? 0,
      ...(device === 'webgpu' ? { gpuProcessPeakRssBytes: gpuProcess(procs)?.hwmBytes ?? 0 } : {}),
      loadMs: loaded.info.loadMs,
    };
  } finally {
    await s.close();
  }
}

async function browserImages(
  base: string,
  device: 'wasm' | 'webgpu',
  dtype: Dtype,
  n: number,
  batch: number,
  repeats: number,
): Promise<ImageResult> {
  const urls = vqaRadImages(N_IMAGES)
    .slice(0, n)
    .map((p) => `${base}/shards/vqa-rad/${p}`);
  const s = await launchHarness(base, (m) => log(m));
  try {
    await call(s.page, 'open', 2);
    const loaded = await call(s.page, 'load', registrySpec(VISION_MODEL), { device, dtype });
    if (!loaded.ok) throw new Error(`${device} ${dtype}: ${loaded.error.message}`);
    if (loaded.info.device !== device || loaded.info.fallbackReason)
      throw new Error(`asked for ${device}, got ${JSON.stringify(loaded.info)}`);
    await call(s.page, 'timeImages', urls.slice(0, batch), batch, 1); // warm-up
    const r = await timed(s, () => call(s.page, 'timeImages', urls, batch, repeats));
    const mem = await call(s.page, 'memory');
    const procs = s.procs();
    return {
      side: device,
      dtype,
      threads: loaded.info.threads,
      images: urls.length,
      batch,
      imagesPerSec: (urls.length / median(r.value)) * 1000,
      cores: r.cores,
      uaMemoryBytes: mem.uaBytes,
      peakRssBytes: pageRenderer(procs)?.hwmBytes ?? 0,
      ...(device === 'webgpu' ? { gpuProcessPeakRssBytes: gpuProcess(procs)?.hwmBytes ?? 0 } : {}),
      loadMs: loaded.info.loadMs,
    };
  } finally {
    await s.close();
  }
}

async function browserBreakdown(
  base: string,
  build: 'plain' | 'asyncify',
  dtype: Dtype,
  threads: number,
  batches: PlainTensor[][],
): Promise<BreakdownResult> {
  const s = await launchHarness(base, (m) => log(m));
  try {
    await call(s.page, 'ortOpen', build, threads);
    const rel = onnxFile(textSpec(), 'text', dtype).slice(join(ROOT, 'models').length);
    await call(s.page, 'ortLoad', `${base}/models${rel}`);
    await call(s.page, 'ortTime', batches.slice(0, 2), 1); // warm-up
    const r = await timed(s, () => call(s.page, 'ortTime', batches, REPEATS));
    const docs = batches.reduce((a, b) => a + b[0].dims[0], 0);
    return { build, dtype, threads, docsPerSecB32: (docs / median(r.value)) * 1000, cores: r.cores };
  } finally {
    await s.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Corpus row: plain transformers.js pipeline vs the product worker

interface CorpusResult {
  model: string;
  dtype: Dtype;
  threads: number;
  docs: number;
  batch: number;
  maxTokens: number;
  /** Wall ms per round, in the order run (rounds alternate plain, Loupe). */
  plainMs: number[];
  loupeMs: number[];
  /** Loupe ÷ plain time of each round; the median and its spread (min … max). */
  ratios: number[];
  medianRatio: number;
  /** Smallest cosine between the two sides' vectors of the same document. */
  minCosine: number;
  /** 1-minute load averages before and after (the machine is shared). */
  loadBefore: number[];
  loadAfter: number[];
  uptime: string;
}

function decodeF32(b64: string): Float32Array {
  const b = Buffer.from(b64, 'base64');
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}

async function corpusRow(base: string): Promise<CorpusResult> {
  const dtype: Dtype = 'q8';
  const threads = 2;
  // No maxTokens override: both sides truncate at the model's maximum length (512).
  const spec = registrySpec(TEXT_MODEL);
  const docs = medquadDocs(CORPUS_DOCS);
  const loadBefore = loadavg();
  const s = await launchHarness(base, (m) => log(m));
  try {
    await call(s.page, 'open', threads);
    const loaded = await call(s.page, 'load', spec, { device: 'wasm', dtype });
    if (!loaded.ok) throw new Error(`loupe ${dtype}: ${loaded.error.message}`);
    if (loaded.info.threads !== threads) throw new Error(`loupe has ${loaded.info.threads} threads`);
    await call(s.page, 'plainOpen', modelPath(spec), dtype as 'q8', threads);
    // Same vectors (a check, untimed), which also warms up both sides.
    const sample = docs.slice(0, 2 * CORPUS_BATCH);
    const a = decodeF32(await call(s.page, 'plainEmbed', sample, CORPUS_BATCH));
    const b = decodeF32(await call(s.page, 'embedDocs', sample, CORPUS_BATCH));
    const dim = a.length / sample.length;
    let minCosine = 1;
    for (let i = 0; i < sample.length; i++) {
      let dot = 0;
      for (let j = i * dim; j < (i + 1) * dim; j++) dot += a[j] * b[j];
      minCosine = Math.min(minCosine, dot);
    }
    const plainMs: number[] = [];
    const loupeMs: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      plainMs.push(await call(s.page, 'plainTime', docs, CORPUS_BATCH));
      loupeMs.push((await call(s.page, 'timeTexts', docs, 'document', CORPUS_BATCH, 1))[0]);
      log(
        `corpus round ${r + 1}: plain ${(plainMs[r] / 1000).toFixed(1)} s, loupe ${(loupeMs[r] / 1000).toFixed(1)} s, ratio ${(loupeMs[r] / plainMs[r]).toFixed(3)} (load ${loadavg()[0].toFixed(1)})`,
      );
    }
    const ratios = loupeMs.map((l, i) => l / plainMs[i]);
    return {
      model: TEXT_MODEL,
      dtype,
      threads,
      docs: docs.length,
      batch: CORPUS_BATCH,
      maxTokens: spec.maxTokens ?? 512,
      plainMs,
      loupeMs,
      ratios,
      medianRatio: median(ratios),
      minCosine,
      loadBefore,
      loadAfter: loadavg(),
      uptime: execSync('uptime').toString().trim(),
    };
  } finally {
    await s.close();
  }
}

function corpusMarkdown(c: CorpusResult): string {
  const sec = (ms: number[]) => ms.map((m) => (m / 1000).toFixed(1)).join(', ');
  return [
    `### Corpus embedding: plain transformers.js pipeline vs Loupe's worker (${c.docs} medquad documents)`,
    '',
    `${c.model} (**random weights**), ${c.dtype}, WASM ${c.threads} threads, truncation at ${c.maxTokens} tokens. Plain: \`pipeline('feature-extraction')\` on batches of ${c.batch} in shard order. Loupe: the encoder worker's length-bucketed batches (≤ ${c.batch} documents, ≤ 4096 padded tokens). Alternating rounds, plain first.`,
    '',
    '| side | wall s per round | docs/s (median) |',
    '| --- | --- | --- |',
    `| plain pipeline | ${sec(c.plainMs)} | ${((c.docs / median(c.plainMs)) * 1000).toFixed(1)} |`,
    `| Loupe worker | ${sec(c.loupeMs)} | ${((c.docs / median(c.loupeMs)) * 1000).toFixed(1)} |`,
    '',
    `Loupe ÷ plain time: median **${c.medianRatio.toFixed(3)}** (rounds ${c.ratios.map((r) => r.toFixed(3)).join(', ')}; spread ${Math.min(...c.ratios).toFixed(3)}–${Math.max(...c.ratios).toFixed(3)}). Same vectors: min cosine ${c.minCosine.toFixed(6)}. Load: \`${c.uptime}\`.`,
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// WASM binary features

/** Whether each ORT WASM build validates without relaxed SIMD (Node 20 has it behind a flag). */
function wasmFeatures(): Record<string, { bytes: number; validatesWithoutRelaxedSimd: boolean }> {
  const dist = join(ROOT, 'node_modules/onnxruntime-web/dist');
  const out: Record<string, { bytes: number; validatesWithoutRelaxedSimd: boolean }> = {};
  for (const f of ['ort-wasm-simd-threaded.wasm', 'ort-wasm-simd-threaded.asyncify.wasm']) {
    const b = readFileSync(join(dist, f));
    out[f] = { bytes: b.length, validatesWithoutRelaxedSimd: WebAssembly.validate(b) };
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Report

/** A row whose cores busy fell well short of its thread count: another process took CPU meanwhile. */
const contended = (threads: number, cores: number) => (cores < 0.9 * threads ? ' ⚠' : '');
const fmt = (x: number | undefined, d = 1) => (x === undefined || !Number.isFinite(x) ? '—' : x.toFixed(d));
const mib = (b: number | null | undefined) => (b ? `${(b / 1048576).toFixed(0)} MiB` : '—');

function markdown(r: {
  text: TextResult[];
  images: ImageResult[];
  breakdown: BreakdownResult[];
  ratios: Record<string, number>;
}): string {
  const md: string[] = [];
  md.push(
    `### ${TEXT_MODEL} (MiniLM-L6 shape), ${N_DOCS} medquad documents ≤ ${MAX_TOKENS} tokens, ${N_QUERIES} queries`,
    '',
    '| runtime | dtype | threads | docs/s batch 1 | docs/s batch 32 | ms/query (batch 1) | cores busy (b32) | memory | load ms |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  );
  for (const t of r.text) {
    const mem =
      t.side === 'native'
        ? `RSS peak ${mib(t.peakRssBytes)}`
        : `tab ${mib(t.uaMemoryBytes)}, renderer RSS peak ${mib(t.peakRssBytes)}` +
          (t.gpuProcessPeakRssBytes ? `, GPU proc ${mib(t.gpuProcessPeakRssBytes)}` : '');
    const name =
      t.side === 'native'
        ? 'native onnxruntime-node'
        : t.side === 'wasm'
          ? 'Chromium WASM'
          : 'Chromium WebGPU (SwiftShader)*';
    md.push(
      `| ${name} | ${t.dtype} | ${t.threads} | ${fmt(t.docsPerSecB1)} | ${fmt(t.docsPerSecB32)}${t.bigBatch && t.bigBatch !== 32 ? ` (batch ${t.bigBatch}, ${t.docs} docs)` : ''} | ${fmt(t.msPerQuery, 2)} | ${fmt(t.coresB32, 2)}${t.side === 'webgpu' ? '' : contended(t.threads, t.coresB32)} | ${mem} | ${fmt(t.loadMs, 0)} |`,
    );
  }
  md.push('', '| ratio WASM ÷ native (throughput) | value |', '| --- | --- |');
  for (const [k, v] of Object.entries(r.ratios)) md.push(`| ${k} | ${v.toFixed(2)} |`);
  if (r.images.length > 0) {
    md.push(
      '',
      `### ${VISION_MODEL} vision tower (CLIP ViT-B/16 shape), ${N_IMAGES} vqa-rad images, batch ${IMAGE_BATCH}`,
      '',
      '| runtime | dtype | threads | images/s (decode + preprocess + model) | images/s model only | cores busy | memory |',
      '| --- | --- | --- | --- | --- | --- | --- |',
    );
    for (const i of r.images) {
      const name =
        i.side === 'native'
          ? 'native onnxruntime-node'
          : i.side === 'wasm'
            ? 'Chromium WASM'
            : 'Chromium WebGPU (SwiftShader)*';
      const mem =
        i.side === 'native'
          ? `RSS peak ${mib(i.peakRssBytes)}`
          : `tab ${mib(i.uaMemoryBytes)}, renderer RSS peak ${mib(i.peakRssBytes)}` +
            (i.gpuProcessPeakRssBytes ? `, GPU proc ${mib(i.gpuProcessPeakRssBytes)}` : '');
      md.push(
        `| ${name} | ${i.dtype} | ${i.threads} | ${fmt(i.imagesPerSec, 2)}${i.batch && i.batch !== IMAGE_BATCH ? ` (${i.images} images, batch ${i.batch})` : ''} | ${fmt(i.modelOnlyImagesPerSec, 2)} | ${fmt(i.cores, 2)}${i.side === 'webgpu' ? '' : contended(i.threads, i.cores)} | ${mem} |`,
      );
    }
  }
  if (r.breakdown.length > 0) {
    md.push(
      '',
      `### Breakdown: model only (pre-tokenized, batch 32, ${N_DOCS} documents), docs/s`,
      '',
      '| runtime | dtype | threads | docs/s | cores busy | ÷ native same threads |',
      '| --- | --- | --- | --- | --- | --- |',
    );
    for (const b of r.breakdown) {
      const native = r.breakdown.find(
        (x) => x.build === 'native' && x.dtype === b.dtype && x.threads === b.threads,
      );
      const name =
        b.build === 'native'
          ? 'native onnxruntime-node'
          : b.build === 'plain'
            ? 'onnxruntime-web, plain SIMD build (the product without a hardware WebGPU adapter)'
            : 'onnxruntime-web, asyncify build (the product with one)';
      md.push(
        `| ${name} | ${b.dtype} | ${b.threads} | ${fmt(b.docsPerSecB32)} | ${fmt(b.cores, 2)}${contended(b.threads, b.cores)} | ${native && b.build !== 'native' ? (b.docsPerSecB32 / native.docsPerSecB32).toFixed(2) : ''} |`,
      );
    }
  }
  md.push(
    '',
    '\\* SwiftShader is a CPU emulation of a GPU: WebGPU speed here says nothing about real GPUs.',
    '⚠ cores busy well below the thread count: another process took CPU during that measurement (shared machine); re-measure it.',
  );
  return md.join('\n');
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const t0 = performance.now();
  await requireGenerated([TEXT_MODEL]);
  const generated = existsSync(join(localName(registrySpec(VISION_MODEL)), 'onnx/vision_model.onnx'));
  const withImages = generated && !argv['no-images'];
  if (!generated)
    log(
      `${VISION_MODEL} is not generated (npx tsx scripts/generate-models.ts --set bench): no image figures`,
    );
  const webgpu = !argv['no-webgpu'];
  const text: TextResult[] = [];
  const images: ImageResult[] = [];
  const breakdown: BreakdownResult[] = [];

  let corpus: CorpusResult | null = null;
  const { server, base } = await startDevServer();
  try {
    if (!argv['no-corpus']) {
      corpus = await corpusRow(base);
      log(`corpus: Loupe ÷ plain median ${corpus.medianRatio.toFixed(3)}`);
    }
    // Native and WASM of the same configuration back to back, so both see the same machine load.
    if (!argv['corpus-only'])
      for (const dtype of DTYPES)
        for (const threads of THREADS) {
          const n = runChild<TextResult>({ kind: 'text', dtype, threads });
          text.push({ ...n, load1: loadavg()[0] });
          log(
            `native ${dtype} ${threads}t: b1 ${fmt(n.docsPerSecB1)} b32 ${fmt(n.docsPerSecB32)} docs/s, ` +
              `${fmt(n.msPerQuery, 2)} ms/query, cores ${fmt(n.coresB32, 2)}`,
          );
          const w = await browserText(base, {
            device: 'wasm',
            dtype,
            threads,
            docs: N_DOCS,
            queries: N_QUERIES,
            batches: [1, 32],
            repeats: REPEATS,
            warmDocs: 32,
            warmQueries: 8,
          });
          text.push({ ...w, load1: loadavg()[0] });
          log(
            `wasm ${dtype} ${threads}t: b1 ${fmt(w.docsPerSecB1)} b32 ${fmt(w.docsPerSecB32)} docs/s, ` +
              `${fmt(w.msPerQuery, 2)} ms/query, cores ${fmt(w.coresB32, 2)} (load ${loadavg()[0].toFixed(1)})`,
          );
        }
    if (webgpu && DTYPES.includes('fp32') && !argv['corpus-only']) {
      // SwiftShader runs MiniLM at well under 1 doc/s: a small sample, one timed run.
      const nd = Number(argv['webgpu-docs']);
      const r = await browserText(base, {
        device: 'webgpu',
        dtype: 'fp32',
        threads: 2,
        docs: nd,
        queries: Number(argv['webgpu-queries']),
        batches: [nd],
        repeats: 1,
        warmDocs: 2,
        warmQueries: 1,
      });
      text.push(r);
      log(`webgpu fp32: b32 ${fmt(r.docsPerSecB32)} docs/s, ${fmt(r.msPerQuery, 2)} ms/query`);
    }
    if (withImages && !argv['corpus-only']) {
      for (const dtype of DTYPES) {
        const nat = runChild<ImageResult>({ kind: 'image', dtype, threads: 2 });
        images.push(nat);
        const w = await browserImages(base, 'wasm', dtype, N_IMAGES, IMAGE_BATCH, REPEATS);
        images.push(w);
        log(
          `images ${dtype}: native ${fmt(nat.imagesPerSec, 2)}/s (model ${fmt(nat.modelOnlyImagesPerSec, 2)}), wasm ${fmt(w.imagesPerSec, 2)}/s`,
        );
      }
      if (webgpu && DTYPES.includes('fp32')) {
        const ng = Number(argv['webgpu-images']);
        const g = await browserImages(base, 'webgpu', 'fp32', ng, ng, 1);
        images.push(g);
        log(`images webgpu fp32: ${fmt(g.imagesPerSec, 3)}/s`);
      }
    }
    if (!argv['no-breakdown'] && !argv['corpus-only']) {
      const batches = await plainBatches(32);
      for (const dtype of DTYPES)
        for (const threads of THREADS) {
          const nat = text.find((t) => t.side === 'native' && t.dtype === dtype && t.threads === threads)!;
          breakdown.push({
            build: 'native',
            dtype,
            threads,
            docsPerSecB32: nat.modelOnlyDocsPerSecB32!,
            cores: nat.coresB32,
          });
          for (const build of ['plain', 'asyncify'] as const) {
            const b = await browserBreakdown(base, build, dtype, threads, batches);
            breakdown.push(b);
            log(
              `raw ort-web ${build} ${dtype} ${threads}t: ${fmt(b.docsPerSecB32)} docs/s (cores ${fmt(b.cores, 2)})`,
            );
          }
        }
    }
  } finally {
    await server.close();
  }

  const ratios: Record<string, number> = {};
  for (const dtype of DTYPES)
    for (const threads of THREADS) {
      const w = text.find((t) => t.side === 'wasm' && t.dtype === dtype && t.threads === threads);
      const n = text.find((t) => t.side === 'native' && t.dtype === dtype && t.threads === threads);
      if (!w || !n) continue;
      const k = `${dtype}, ${threads} thread${threads > 1 ? 's' : ''}`;
      ratios[`${k}: docs/s batch 1`] = w.docsPerSecB1 / n.docsPerSecB1;
      ratios[`${k}: docs/s batch 32`] = w.docsPerSecB32 / n.docsPerSecB32;
      ratios[`${k}: queries/s (1 ÷ ms/query)`] = n.msPerQuery / w.msPerQuery;
    }
  for (const dtype of DTYPES) {
    const w = images.find((i) => i.side === 'wasm' && i.dtype === dtype);
    const n = images.find((i) => i.side === 'native' && i.dtype === dtype);
    if (w && n)
      ratios[`CLIP ViT-B/16 vision ${dtype}, 2 threads: images/s`] = w.imagesPerSec / n.imagesPerSec;
  }

  const result = {
    date: new Date().toISOString(),
    seconds: (performance.now() - t0) / 1000,
    config: {
      textModel: TEXT_MODEL,
      visionModel: withImages ? VISION_MODEL : null,
      docs: N_DOCS,
      queries: N_QUERIES,
      images: N_IMAGES,
      imageBatch: IMAGE_BATCH,
      maxTokens: MAX_TOKENS,
      repeats: REPEATS,
      dtypes: DTYPES,
      threads: THREADS,
    },
    machine: {
      node: process.version,
      cpus: (await import('node:os')).cpus().length,
      cpu: (await import('node:os')).cpus()[0]?.model,
      loadAverage: (await import('node:os')).loadavg(),
    },
    wasmBinaries: wasmFeatures(),
    text,
    images,
    breakdown,
    ratios,
    corpus,
  };
  mkdirSync(dirname(argv.out), { recursive: true });
  writeFileSync(argv.out, JSON.stringify(result, null, 2) + '\n');
  if (!argv['corpus-only']) console.log(markdown(result));
  if (corpus) console.log('\n' + corpusMarkdown(corpus));
  log(`wrote ${argv.out} in ${(result.seconds / 60).toFixed(1)} min`);
}

if (argv.child) {
  const job = JSON.parse(argv.child) as ChildJob;
  const r = job.kind === 'text' ? await nativeText(job) : await nativeImages(job);
  console.log(JSON.stringify(r));
} else {
  await main();
}
