// WebGPU vs WASM in Node, where no browser exists: Dawn (the `webgpu` npm package) over Vulkan, and the
// onnxruntime-web build transformers.js loads (`onnxruntime-web/webgpu` → ort.webgpu.bundle.min.mjs on
// the asyncify WASM; never the JSEP build `ort.min.mjs`, which gives wrong q8 vectors). Measures:
//
//   (a) minilm-l6-random (the all-MiniLM-L6-v2 shape): a batch of --batch × --tokens tokens and one
//       query of --query-tokens tokens; fp32, fp16 and q8. fp16 runs on WebGPU only where the adapter
//       has shader-f16, against WASM fp32 (the app's parity reference); without shader-f16 the row
//       checks the fp16 file on WASM against the fp32 file and says WebGPU was not run;
//   (b) clip-vit-b16-random's vision tower (the CLIP ViT-B/16 shape): --images images and 1 image;
//   (c) the WGSL exact search kernel (src/lib/platform/gpu/gpu-exact.ts) vs the JS path
//       (core/retrieval/exact.ts) on clustered unit vectors (--vectors × 384, --queries queries, top-10):
//       queries whose top-10 ids match, ms per 100 queries.
//   (d) IVF int8 scoring of each query's 16 probed lists on the WGSL kernel (platform/gpu/gpu-int8.ts,
//       made exact by int8Candidates) vs the CPU loop, over the same vectors packed with nlist 2·√n:
//       queries whose candidates match, ms per query.
//
// The encoders run as raw onnxruntime-web sessions on pre-tokenized inputs (deterministic random token
// ids / pixels; tokenization and image decoding are not measured), one WASM and one WebGPU session per
// (model, dtype). ms = median of --repeats runs after --warmup runs; parity = the cosine between the
// WebGPU and WASM embedding of each row (text: mask-weighted mean pooling of last_hidden_state; vision:
// image_embeds), minimum over rows. The models come from scripts/generate-models.ts (generated into
// --models-dir when missing or stale; random weights, real shapes). Prints a markdown table and writes
// --out (JSON: adapter info, machine, options, every run) and the same path with .md.
//
//   npm run bench:gpu -- [--browser [--chromium-flag F]…] [--out bench-results/gpu.json] [--models-dir models/generated] [--threads 2]
//     [--repeats 3] [--warmup 1] [--batch 32] [--tokens 128] [--query-tokens 16] [--images 8]
//     [--vectors 100000] [--queries 1000] [--dtypes fp32,fp16,q8] [--no-text] [--no-vision]
//     [--no-exact] [--dawn-flag backend=vulkan]… [--text-model id] [--vision-model id]
//
// --browser runs the same measurements (scripts/lib/gpu-measure.ts) in headless Chromium instead, with
// its own adapter and the app's onnxruntime-web build (scripts/lib/gpu-browser.ts); here that adapter
// is SwiftShader, so the table is for correctness only and says so.
//
// Dawn needs a Vulkan driver: VK_DRIVER_FILES may point at one (e.g. Chromium's SwiftShader,
// /usr/lib/chromium/vk_swiftshader_icd.json, or NVIDIA's nvidia_icd.json). Run with --no-liftoff (the
// npm script does) or the first minutes time V8's baseline WASM compiler.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, hostname, release, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as OrtNS from 'onnxruntime-web';
import { softwareAdapter } from '../src/lib/platform/gpu/backend';
import { DEFAULT_OUT, generateModels } from './generate-models';
import {
  GPU_DTYPES,
  fmtCos,
  fmtMs,
  measureEncoder,
  measureExact,
  type AdapterReport,
  type EncoderCase,
  type EncoderRow,
  type ExactRow,
} from './lib/gpu-measure';
import { describeAdapter, installNodeWebGpu } from './lib/node-webgpu';
import { benchArgs, usage, whole } from './lib/bench-harness';

const TEXT_MODEL_DEFAULT = 'loupe-test/minilm-l6-random';
const VISION_MODEL_DEFAULT = 'loupe-test/clip-vit-b16-random';
const DIM = 384;
const K = 10;
const ALL_DTYPES = GPU_DTYPES;
type Dtype = (typeof ALL_DTYPES)[number];
type Ort = typeof OrtNS;

const argv = benchArgs({
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
  /** Headless Chromium's own WebGPU instead of Dawn for Node (scripts/lib/gpu-browser.ts). */
  browser: { type: 'boolean', default: false },
  'chromium-flag': { type: 'string', multiple: true, default: [] },
  /** Other generated models (e.g. loupe-test/bert-tiny-random, loupe-test/clip-tiny-random for a quick check). */
  'text-model': { type: 'string', default: TEXT_MODEL_DEFAULT },
  'vision-model': { type: 'string', default: VISION_MODEL_DEFAULT },
});

const opts = {
  threads: whole('threads', argv.threads),
  repeats: whole('repeats', argv.repeats),
  warmup: whole('warmup', argv.warmup, 0),
  batch: whole('batch', argv.batch),
  tokens: whole('tokens', argv.tokens),
  queryTokens: whole('query-tokens', argv['query-tokens']),
  images: whole('images', argv.images),
  vectors: whole('vectors', argv.vectors),
  queries: whole('queries', argv.queries),
  dtypes: argv.dtypes.split(',').map((d) => d.trim()) as Dtype[],
  dawnFlags: argv['dawn-flag'],
};
const TEXT_MODEL = argv['text-model'];
const VISION_MODEL = argv['vision-model'];
for (const d of opts.dtypes)
  if (!ALL_DTYPES.includes(d)) usage(`--dtypes: unknown dtype ${d} (use ${ALL_DTYPES.join(', ')})`);

const OUT = resolve(argv.out);
const OUT_MD = OUT.replace(/\.json$/, '') + '.md';
const t00 = performance.now();
const log = (line: string) =>
  console.log(`[bench-gpu ${((performance.now() - t00) / 1000).toFixed(1).padStart(6)} s] ${line}`);

// ---- results --------------------------------------------------------------------------------------

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
      `${argv.browser ? report.runtime.webgpu : `webgpu ${report.runtime.webgpuPackage ?? '?'}`}; ` +
      `WASM ${report.runtime.wasmThreads} threads.`,
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
    const dtype = r.wasmDtype ? `${r.dtype} (WASM columns: ${r.wasmDtype}, the parity reference)` : r.dtype;
    const name =
      r.part === 'text'
        ? `${label}, ${dtype} (${opts.batch} × ${opts.tokens} tokens; query ${opts.queryTokens})`
        : `${label}, ${dtype} (${opts.images} images; 1 image)`;
    if (r.skipped || r.error) {
      lines.push(`| ${name} | ${r.skipped ? `not measured: ${r.skipped}` : `error: ${r.error}`} | | | | |`);
      continue;
    }
    const b = r.cases.find((c) => c.case === 'batch');
    const s = r.cases.find((c) => c.case === 'single');
    const cell = (c: EncoderCase | undefined, k: 'webgpuMs' | 'wasmMs') =>
      c?.error
        ? `error: ${c.error}`
        : k === 'webgpuMs' && r.webgpuSkipped
          ? `not run: ${r.webgpuSkipped}`
          : fmtMs(c?.[k]);
    // A cosine that is not WebGPU vs WASM of the same dtype says what it compares.
    const of = r.cosineOf && r.cosineOf !== `WebGPU ${r.dtype} vs WASM ${r.dtype}` ? ` (${r.cosineOf})` : '';
    lines.push(
      `| ${name} | ${cell(b, 'webgpuMs')} | ${cell(b, 'wasmMs')} | ${cell(s, 'webgpuMs')} | ${cell(s, 'wasmMs')} | ` +
        `${fmtCos(b?.minCosine)} / ${fmtCos(s?.minCosine)}${of} |`,
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
    const v = e.ivf;
    if (v) {
      lines.push('');
      lines.push(
        `| IVF int8 scoring, nlist ${v.nlist}, nprobe ${v.nprobe}, ${v.rerank} candidates | rows per query | ` +
          `WGSL kernel, per query | CPU loop, per query | same candidates | undecided (CPU again) |`,
      );
      lines.push('|---|---|---|---|---|---|');
      lines.push(
        `| same vectors and queries${v.error ? ` (error: ${v.error})` : ''} | ${v.rowsPerQuery} | ${fmtMs(v.gpuMs)} | ` +
          `${fmtMs(v.cpuMs)} | ${v.same ?? '—'} of ${v.queries} | ${v.undecided ?? '—'} |`,
      );
    }
  }
  if (report.errors.length) lines.push('', 'Errors:', ...report.errors.map((x) => `- ${x}`));
  lines.push('', `Total ${report.seconds} s.`, '');
  return lines.join('\n');
}

// ---- measurements (scripts/lib/gpu-measure.ts: the same code in Node and in the browser page) ----

async function benchEncoder(ort: Ort, part: 'text' | 'vision', dtype: Dtype, shaderF16: boolean) {
  const model = part === 'text' ? TEXT_MODEL : VISION_MODEL;
  const dir = join(resolve(argv['models-dir']), ...model.split('/'));
  const row = await measureEncoder({
    ort,
    model,
    part,
    dtype,
    shaderF16,
    read: async (file) => new Uint8Array(readFileSync(join(dir, file))),
    opts,
    log,
  });
  record(row);
}

/** Adds an encoder row to the report (its errors listed too) and saves. */
function record(row: EncoderRow): void {
  report.encoders.push(row);
  if (row.error) report.errors.push(`${row.model} ${row.part} ${row.dtype}: ${row.error}`);
  for (const c of row.cases)
    if (c.error) report.errors.push(`${row.model} ${row.part} ${row.dtype} ${c.case}: ${c.error}`);
  save();
}

function recordExact(row: ExactRow): void {
  report.exact = row;
  if (row.error) report.errors.push(`exact: ${row.error}`);
  if (row.ivf?.error) report.errors.push(`ivf: ${row.ivf.error}`);
  save();
}

// ---- main -----------------------------------------------------------------------------------------

/** The same measurements in headless Chromium: its adapter, the app's ORT build, /models/ over HTTP. */
async function mainBrowser(): Promise<number> {
  if (resolve(argv['models-dir']) !== resolve(DEFAULT_OUT)) {
    console.error('--browser reads the models the dev server serves: leave --models-dir at its default');
    return 2;
  }
  const parts: Array<'text' | 'vision'> = [];
  if (!argv['no-text']) parts.push('text');
  if (!argv['no-vision']) parts.push('vision');
  const ids = parts.map((p) => (p === 'text' ? TEXT_MODEL : VISION_MODEL));
  if (ids.length)
    generateModels({ models: ids, out: resolve(argv['models-dir']), log: (l) => log(`  ${l}`) });
  report.runtime.webgpu = 'headless Chromium (navigator.gpu), Vite dev server';
  // Loaded only here: the GPU bundle (scripts/gpu-bundle.sh) has no browser, Vite or Playwright.
  const { runInBrowser } = await import('./lib/gpu-browser');
  const run = await runInBrowser({
    flags: argv['chromium-flag'],
    jobs: parts.flatMap((part) =>
      opts.dtypes.map((dtype) => ({ model: part === 'text' ? TEXT_MODEL : VISION_MODEL, part, dtype })),
    ),
    exact: !argv['no-exact'],
    threads: opts.threads,
    opts,
    log,
    onAdapter: (r) => {
      report.runtime.webgpu = `${r.chromium}, headless (navigator.gpu); page ${r.isolated ? 'cross-origin isolated' : 'not isolated: 1 WASM thread'}`;
      report.adapter = r.adapter;
      if (!r.adapter) {
        report.errors.push('Chromium found no WebGPU adapter (try --chromium-flag, e.g. --use-angle=vulkan)');
        return;
      }
      const a = r.adapter;
      report.software = softwareAdapter({ info: a, isFallbackAdapter: a.isFallbackAdapter }) ?? null;
      report.speedNote = report.software
        ? `Software adapter (${report.software}): these timings are for correctness only and say nothing about a GPU.`
        : '';
      log(`adapter: ${[a.vendor, a.architecture, a.description].filter(Boolean).join(' / ')}`);
      if (report.speedNote) log(report.speedNote);
      save();
    },
    onRow: record,
    onExact: recordExact,
  });
  report.runtime.ortVersion = run.ortVersion;
  if (run.threads !== null) report.runtime.wasmThreads = run.threads;
  save();
  console.log('\n' + markdown());
  log(`wrote ${OUT} and ${OUT_MD}`);
  return report.errors.length ? 1 : 0;
}

async function main(): Promise<number> {
  if (argv.browser) return mainBrowser();
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
  if (!argv['no-exact']) recordExact(await measureExact(opts, log, DIM, K, recordExact));
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
