// Page-side helpers for scripts/parity.ts, scripts/bench-encode.ts and tests/e2e/parity.test.ts
// (called through page.evaluate). Served by the Vite dev server at /tests/browser/bench-harness.html;
// never part of the app build.
//
// Embeddings come from the product's encoder worker (workers/encoder.worker.ts, started through
// bench-encoder.worker.ts so a benchmark can pick 1 or 2 WASM threads). Vectors go back to Node as
// base64 float32 bytes, so nothing is rounded on the way.
import * as Comlink from 'comlink';
import { AutoProcessor, RawImage, env, type Processor, type Tensor } from '@huggingface/transformers';
import type {
  EncoderWorkerApi,
  LoadOptions,
  LoadedEncoder,
  TextBatching,
} from '../../workers/encoder.worker';
import type { PlainWorkerApi } from './bench-plain.worker';
import type { OrtBuild, OrtWorkerApi, PlainTensor } from './bench-ort.worker';
import {
  LOCAL_MODELS_PATH,
  modelPath,
  type EmbedRole,
  type ModelSpec,
} from '../../src/lib/core/retrieval/models';

type Failure = { ok: false; error: { name: string; message: string } };
const failure = (e: unknown): Failure => ({
  ok: false,
  error: { name: (e as Error)?.name ?? 'Error', message: (e as Error)?.message ?? String(e) },
});

function toBase64(a: ArrayBufferView): string {
  const bytes = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000)
    s += String.fromCharCode(...bytes.subarray(i, Math.min(i + 0x8000, bytes.length)));
  return btoa(s);
}

async function fetchBlobs(urls: string[]): Promise<Blob[]> {
  return Promise.all(
    urls.map(async (u) => {
      const res = await fetch(u);
      if (!res.ok) throw new Error(`HTTP ${res.status} for ${u}`);
      return res.blob();
    }),
  );
}

let worker: Worker | null = null;
let encoder: Comlink.Remote<EncoderWorkerApi> | null = null;
let ortWorker: Worker | null = null;
let ortApi: Comlink.Remote<OrtWorkerApi> | null = null;
let plainWorker: Worker | null = null;
let plainApi: Comlink.Remote<PlainWorkerApi> | null = null;

function api(): Comlink.Remote<EncoderWorkerApi> {
  if (!encoder) throw new Error('call open() first');
  return encoder;
}

/**
 * Resolves with the worker once it reports that its API is exposed. The caller writes
 * `new Worker(new URL(…, import.meta.url), …)` itself: only that form makes a build bundle the worker
 * (a bare `new URL('./x.ts', import.meta.url)` becomes an inlined data: asset, which the CSP refuses).
 */
function startWorker(w: Worker): Promise<Worker> {
  return new Promise((resolve, reject) => {
    const onMessage = (e: MessageEvent) => {
      if ((e.data as { loupeBenchReady?: boolean })?.loupeBenchReady) {
        w.removeEventListener('message', onMessage);
        resolve(w);
      }
    };
    w.addEventListener('message', onMessage);
    w.addEventListener('error', (e) => reject(new Error(`worker failed to start: ${e.message}`)), {
      once: true,
    });
  });
}

const processors = new Map<string, Promise<Processor>>();
function processorFor(spec: ModelSpec): Promise<Processor> {
  env.allowLocalModels = true;
  env.allowRemoteModels = false;
  env.localModelPath = LOCAL_MODELS_PATH;
  const name = modelPath(spec);
  let p = processors.get(name);
  if (!p) processors.set(name, (p = AutoProcessor.from_pretrained(name)));
  return p;
}

const benchHarness = {
  crossOriginIsolated: () => globalThis.crossOriginIsolated === true,

  /** Starts the encoder worker (a fresh one); `threads` caps its WASM threads (default: the product's choice). */
  async open(threads?: number): Promise<void> {
    benchHarness.close();
    const name = threads ? `loupe-bench-threads-${threads}` : 'loupe-bench';
    worker = await startWorker(
      new Worker(new URL('./bench-encoder.worker.ts', import.meta.url), { type: 'module', name }),
    );
    encoder = Comlink.wrap<EncoderWorkerApi>(worker);
  },

  close(): void {
    encoder?.[Comlink.releaseProxy]();
    worker?.terminate();
    encoder = null;
    worker = null;
    ortApi?.[Comlink.releaseProxy]();
    ortWorker?.terminate();
    ortApi = null;
    ortWorker = null;
    benchHarness.plainClose();
  },

  async load(spec: ModelSpec, opts: LoadOptions): Promise<{ ok: true; info: LoadedEncoder } | Failure> {
    try {
      return {
        ok: true,
        info: await api().load(spec, {
          allowRemoteModels: false,
          modelsBase: LOCAL_MODELS_PATH,
          // A WebGPU row times one query on WebGPU, not on the device the policy would pick.
          pinQueries: true,
          ...opts,
        }),
      };
    } catch (e) {
      return failure(e);
    }
  },

  /** Embeds texts with the loaded model; vectors as base64 float32, with the wall time in ms. */
  async embedTexts(texts: string[], role: EmbedRole, batchSize: number) {
    const t0 = performance.now();
    const v = await api().embedTexts(texts, role, batchSize);
    return { ms: performance.now() - t0, b64: toBase64(v), n: texts.length };
  },

  /**
   * Wall time (ms) of embedding all texts, once per repeat. `batching`: the worker's length-bucketed
   * batches (default), or `{ byLength: false }` for batches in input order (as native is timed).
   */
  async timeTexts(
    texts: string[],
    role: EmbedRole,
    batchSize: number,
    repeats: number,
    batching: TextBatching = {},
  ): Promise<number[]> {
    const out: number[] = [];
    for (let r = 0; r < repeats; r++) {
      const t0 = performance.now();
      await api().embedTexts(texts, role, batchSize, undefined, batching);
      out.push(performance.now() - t0);
    }
    return out;
  },

  /** Latency (ms) of each query embedded alone, as the app embeds a typed query (one call each). */
  async timeQueries(queries: string[]): Promise<number[]> {
    const out: number[] = [];
    for (const q of queries) {
      const t0 = performance.now();
      await api().embedTexts([q], 'query', 1);
      out.push(performance.now() - t0);
    }
    return out;
  },

  /** Embeds images (fetched first, not timed; decoded and preprocessed in the worker). */
  async embedImages(urls: string[], batchSize: number) {
    const blobs = await fetchBlobs(urls);
    const t0 = performance.now();
    const v = await api().embedImages(blobs, batchSize);
    return { ms: performance.now() - t0, b64: toBase64(v), n: urls.length };
  },

  async timeImages(urls: string[], batchSize: number, repeats: number): Promise<number[]> {
    const blobs = await fetchBlobs(urls);
    const out: number[] = [];
    for (let r = 0; r < repeats; r++) {
      const t0 = performance.now();
      await api().embedImages(blobs, batchSize);
      out.push(performance.now() - t0);
    }
    return out;
  },

  /**
   * The browser's own preprocessing of images (transformers.js's web code: createImageBitmap +
   * OffscreenCanvas decode, canvas resize, crop, normalise), run here on the page with the same
   * processor config the worker loads: pixel_values as base64 float32, plus each decoded image as RGB bytes.
   */
  async pixelValues(spec: ModelSpec, urls: string[]) {
    const processor = await processorFor(spec);
    const blobs = await fetchBlobs(urls);
    const images = await Promise.all(blobs.map((b) => RawImage.fromBlob(b)));
    const px = ((await processor(images)) as Record<string, Tensor>).pixel_values;
    return {
      dims: px.dims as number[],
      b64: toBase64(px.data as Float32Array),
      decoded: images.map((im) => {
        const rgb = im.rgb();
        return { width: rgb.width, height: rgb.height, b64: toBase64(rgb.data) };
      }),
    };
  },

  /** Memory of the page's agent cluster (page + its workers, wasm heaps included) and the page's JS heap. */
  async memory() {
    const perf = performance as Performance & {
      measureUserAgentSpecificMemory?: () => Promise<{ bytes: number }>;
      memory?: { usedJSHeapSize: number; totalJSHeapSize: number };
    };
    let uaBytes: number | null = null;
    let error: string | undefined;
    try {
      uaBytes = perf.measureUserAgentSpecificMemory
        ? (await perf.measureUserAgentSpecificMemory()).bytes
        : null;
    } catch (e) {
      error = (e as Error)?.message ?? String(e);
    }
    return { uaBytes, pageJsHeap: perf.memory?.usedJSHeapSize ?? null, ...(error ? { error } : {}) };
  },

  /** The product worker's document vectors (length-bucketed batches), as base64 float32. */
  async embedDocs(texts: string[], batchSize: number) {
    return toBase64(await api().embedTexts(texts, 'document', batchSize));
  },

  // ---- plain transformers.js pipeline (the baseline of the corpus row) ------------------------

  /** Starts the plain-pipeline worker beside the product's (kept by open()) and loads `name`. */
  async plainOpen(name: string, dtype: 'q8' | 'fp32', threads: number): Promise<void> {
    benchHarness.plainClose();
    plainWorker = new Worker(new URL('./bench-plain.worker.ts', import.meta.url), {
      type: 'module',
      name: 'loupe-bench-plain',
    });
    plainApi = Comlink.wrap<PlainWorkerApi>(plainWorker);
    await plainApi.load(name, dtype, threads);
  },

  plainClose(): void {
    plainApi?.[Comlink.releaseProxy]();
    plainWorker?.terminate();
    plainApi = null;
    plainWorker = null;
  },

  /** Wall time (ms) of the plain pipeline over all texts in batches of `batch`, measured in its worker. */
  async plainTime(texts: string[], batch: number): Promise<number> {
    if (!plainApi) throw new Error('call plainOpen() first');
    return (await plainApi.embed(texts, batch)).ms;
  },

  /** The plain pipeline's vectors, as base64 float32. */
  async plainEmbed(texts: string[], batch: number): Promise<string> {
    if (!plainApi) throw new Error('call plainOpen() first');
    return toBase64((await plainApi.embed(texts, batch)).vectors);
  },

  // ---- raw onnxruntime-web (no transformers.js), for the benchmark's breakdown -------------------

  async ortOpen(build: OrtBuild, threads: number) {
    benchHarness.close();
    ortWorker = new Worker(new URL('./bench-ort.worker.ts', import.meta.url), {
      type: 'module',
      name: `loupe-bench-ort-${build}-${threads}`,
    });
    ortApi = Comlink.wrap<OrtWorkerApi>(ortWorker);
    return ortApi.init(build, threads);
  },

  ortLoad(url: string) {
    if (!ortApi) throw new Error('call ortOpen() first');
    return ortApi.load(url);
  },

  ortTime(batches: PlainTensor[][], repeats: number) {
    if (!ortApi) throw new Error('call ortOpen() first');
    return ortApi.time(batches, repeats);
  },
};

export type BenchHarness = typeof benchHarness;

declare global {
  interface Window {
    benchHarness: BenchHarness;
  }
}

window.benchHarness = benchHarness;
document.getElementById('status')!.textContent = 'ready';
