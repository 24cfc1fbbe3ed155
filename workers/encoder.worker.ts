// Encoder worker: loads text and CLIP/SigLIP encoders and cross-encoders (rerankers) with
// transformers.js (WebGPU when it works, WASM otherwise), embeds texts and images, embeds a cached
// shard's corpus batch by batch with every batch stored in IndexedDB (so a cancelled, reloaded or
// closed run resumes where it stopped), and scores query–document pairs with a cross-encoder.
/// <reference types="vite/client" />
import * as Comlink from 'comlink';
import { decodeDicomBlob, isDicomBlob } from '../src/lib/platform/dicom-image';
import { rgbaToRgb } from '../src/lib/core/media/dicom/image';
import {
  AutoModel,
  AutoModelForSequenceClassification,
  AutoProcessor,
  AutoTokenizer,
  CLIPTextModelWithProjection,
  CLIPVisionModelWithProjection,
  RawImage,
  SiglipTextModel,
  SiglipVisionModel,
  Tensor,
  env,
  type PreTrainedModel,
  type PreTrainedTokenizer,
  type Processor,
  type ProgressInfo,
} from '@huggingface/transformers';
// transformers.js 4.3 imports `onnxruntime-web/webgpu` (ort.webgpu.bundle.min.mjs), whose WASM and
// WebGPU execution providers both run on the asyncify build: these two files are all it loads.
import ortWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import ortMjsUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.mjs?url';
import {
  DEFAULT_MAX_TOKENS,
  MODEL_FETCH_FAILED,
  WEBGPU_FAILED,
  corpusEmbeddingKey,
  isCrossEncoder,
  modelPath,
  prefixFor,
  rerankScore,
  supportsPart,
  type Dtype,
  type EmbedPart,
  type EmbedRole,
  type ModelSpec,
} from '../src/lib/core/retrieval/models';
import type { Doc, Progress } from '../src/lib/core/types';
import { clipWords } from '../src/lib/core/retrieval/rerank';
import {
  DEFAULT_TOKEN_BUDGET,
  isValidPlan,
  planBatches,
  type BatchPlan,
} from '../src/lib/core/retrieval/batching';
import { throttle } from '../src/lib/core/throttle';
import {
  chooseBackend,
  probeBackend,
  wasmThreads,
  type BackendProbe,
  type Device,
} from '../src/lib/platform/backend';
import { isQuotaError, openShardStore, type ShardStore } from '../src/lib/platform/shard-store';
import {
  PRECOMPUTED_KIND,
  precomputedKey,
  precomputedMismatch,
  type PrecomputedSet,
} from '../src/lib/core/shard/precomputed';
import { f16ToF32 } from '../src/lib/core/shard/vector-files';
import {
  checkChunking,
  chunkWindows,
  specialFrame,
  frameWindow,
  isChunked,
  windowSize,
  type Chunking,
} from '../src/lib/core/retrieval/chunking';

type OnProgress = (p: Progress) => void;

/** How to load a model. */
export interface LoadOptions {
  /** `auto`: WebGPU on a hardware adapter, else WASM (a software adapter such as SwiftShader is not used). */
  device?: 'auto' | Device;
  /** `auto` (default): fp16 on WebGPU with shader-f16, fp32 on WebGPU without, the model's first dtype on WASM. */
  dtype?: Dtype | 'auto';
  /** Fetch from the Hugging Face hub when a file is not under /models/ (default: true unless the spec is local). */
  allowRemoteModels?: boolean;
  /**
   * URL path of the app's models/ folder (`/course/loupe/models/`); default: `models/` beside the
   * folder this worker's script is in (dev: /workers/, build: assets/), i.e. the app's root.
   */
  modelsBase?: string;
  /** Test only: make the WebGPU attempt fail as a real session error would. */
  simulateWebGpuFailure?: boolean;
  /**
   * Set by the client when it restarted the worker after a WebGPU failure: the reason, reported as
   * `fallbackReason` (with `device: 'wasm'`).
   */
  priorFailure?: string;
}

// Any WebGPU failure leaves this worker unusable: transformers.js chains every session creation and
// every run of a realm on one promise, and a rejected link rejects all later ones, WASM included.
// So it is reported as WEBGPU_FAILED and the client continues on WASM in a fresh worker.
function webGpuFailed(reason: string): Error {
  const e = new Error(reason);
  e.name = WEBGPU_FAILED;
  return e;
}

/** The loaded model and where it runs. */
export interface LoadedEncoder {
  modelId: string;
  device: Device;
  dtype: Dtype;
  /** ORT WASM threads. */
  threads: number;
  dim: number;
  /** Why the model is not on WebGPU although WebGPU was tried (it runs on WASM instead). */
  fallbackReason?: string;
  /**
   * Why the model runs on `device`, in one line, for a run's description: e.g. "software WebGPU
   * adapter (SwiftShader) — using WASM", "WASM as requested", "WebGPU on …", or the fallback reason.
   */
  deviceReason: string;
  /** What the backend probe chose and why (deviceReason plus threads and dtype). */
  reason: string;
  /** Load + warm-up time in ms (0 when it came from this worker's cache). */
  loadMs: number;
  cached: boolean;
}

export interface EmbedCorpusRequest {
  shardHash: string;
  spec: ModelSpec;
  part: EmbedPart;
  /**
   * Most documents per batch (and per stored record). Texts are batched by length (longest first) up
   * to `tokenBudget` padded tokens; images in shard order. A resumed run keeps the plan it started with.
   */
  batchSize: number;
  /** Padded tokens per text batch (batch size × its longest text); default DEFAULT_TOKEN_BUDGET. */
  tokenBudget?: number;
  load?: LoadOptions;
  /**
   * Texts longer than the model's window: `mean`/`max` embed every window (overlapping by
   * `overlap` tokens) and return one row per chunk; `first` or absent truncate (one row per document).
   */
  chunking?: Chunking;
  /**
   * Images of multi-image items (`images: [...]`): every image, one row per image (returned like
   * chunks, `spans` holding [index, index + 1]); absent: the first image of each item.
   */
  allImages?: boolean;
}

export interface EmbedCorpusResult {
  /**
   * Row-major (docs × dim), documents in shard order; rows of `missing` documents are zero. Chunked
   * text: (chunks × dim), the chunks of each document in order, documents in shard order, none for
   * `missing` documents; `chunks` maps them to documents.
   */
  embeddings: Float32Array;
  /** Chunked text only: the document (index into docIds) of each row, and its token span (2 per row). */
  chunks?: { rowDoc: Uint32Array; spans: Uint32Array; overlap: number };
  dim: number;
  docIds: string[];
  /** Documents without that part (no text / no image), skipped. */
  missing: string[];
  key: string;
  /** Most documents per batch. */
  batchSize: number;
  /** Padded tokens per text batch at most (Infinity for images: they are batched by count). */
  tokenBudget: number;
  totalBatches: number;
  computedBatches: number;
  reusedBatches: number;
  /** Batches taken from precomputed embeddings shipped in the shard (not embedded here). */
  precomputedBatches: number;
  /** Why the shard's precomputed embeddings for this model were not used, when it has some. */
  precomputedNote?: string;
  /**
   * Set when the browser's storage filled up: from that batch on, vectors were computed but not
   * saved (this run has them all; the next one resumes from the saved batches). What happened and
   * what to do, for the user.
   */
  notSaved?: string;
  ms: number;
  backend: { device: Device; dtype: Dtype; threads: number; deviceReason: string; fallbackReason?: string };
}

/**
 * A stored batch (artifact kind `emb`, key `<embeddingKey>#<batchNo>`): batch `batchNo` of the
 * meta record's plan, its documents in plan order.
 */
interface EmbBatchRecord {
  v: 2;
  batchNo: number;
  ids: string[];
  dim: number;
  /** ids.length × dim, row-major; chunked text: Σ chunks × dim, each document's chunks in order. */
  vectors: Float32Array;
  /** Chunked text: chunks of each document (ids order) and each chunk's token span (2 per chunk). */
  chunks?: Uint32Array;
  spans?: Uint32Array;
  writtenAt: number;
}

/**
 * The meta record (key `<embeddingKey>#meta`): what the batches are batches of. The plan is stored,
 * not recomputed, so a resumed run (after a cancel or a reload) finds every stored batch where it
 * left it whatever the tokenizer or the limits do meanwhile.
 */
export interface EmbMetaRecord {
  v: 2;
  key: string;
  modelId: string;
  hubId: string;
  revision: string;
  dtype: Dtype;
  part: EmbedPart;
  dim: number;
  batchSize: number;
  tokenBudget: number;
  /** Documents that have the part (the rows the batches cover, in shard order). */
  total: number;
  totalBatches: number;
  /** The batches: positions among those `total` documents (BatchPlan). */
  order: Uint32Array;
  bounds: Uint32Array;
  missing: string[];
  complete: boolean;
  updatedAt: number;
}

/** EMB_KIND: artifact kind of embedding records. */
export const EMB_KIND = 'emb';
/** WARMUP_IMAGE_SIZE: side in pixels of the grey image used to warm up a vision tower. */
const WARMUP_IMAGE_SIZE = 32;

/** Loaded model files. Pooling, prefixes and lengths come from the spec of each call, not from here. */
interface Encoder {
  /** The spec it was loaded for (its files: hub id, revision, kind). */
  spec: ModelSpec;
  device: Device;
  dtype: Dtype;
  threads: number;
  /** Vector size; for a cross-encoder, logits per pair. */
  dim: number;
  tokenizer: PreTrainedTokenizer;
  /** The text tower; for a cross-encoder, its sequence-classification model. */
  textModel: PreTrainedModel;
  /** Cross-encoders: the token an untruncated pair ends with (its template's last special token). */
  pairEnd?: bigint;
  visionModel?: PreTrainedModel;
  processor?: Processor;
  /** Set when the GPU device behind this encoder was lost: it must not be used again. */
  lost?: string;
}

// ---------------------------------------------------------------------------------------------
// transformers.js environment (once per worker)

let configured = false;
/**
 * The app's models/ folder as a URL path. The worker script sits one folder below the app root in
 * both layouts (dev: /workers/x.ts, build: assets/x.js), so `../models/` works at the origin root and
 * under a sub-path alike; a path, not a URL (see configureEnv).
 */
let modelsBase = new URL('../models/', self.location.href).pathname;

/** Network failures of model files during the current load (offline, host unreachable). */
let fetchFailures: { url: string; message: string }[] = [];

/** Documents embedded by embedCorpus since the worker started (stored batches and precomputed rows excluded). */
const counters = {
  docsEmbedded: 0,
  batchesEmbedded: 0,
  batchesReused: 0,
  precomputedRows: 0,
  /** Batches computed but not saved (the browser's storage was full). */
  batchesNotSaved: 0,
  /** Chunks (windows) embedded for chunked corpora (mean/max), and documents that took more than one. */
  chunksEmbedded: 0,
  multiChunkDocs: 0,
  /** Images embedded as rows of multi-image items (allImages). */
  itemImagesEmbedded: 0,
};
// Readable from a test through the worker's global (Playwright evaluates in workers), as well as api.counters().
(self as unknown as { loupeEncoderCounters: typeof counters }).loupeEncoderCounters = counters;

function configureEnv(allowRemoteModels: boolean, base?: string): void {
  if (base) modelsBase = base;
  if (!configured) {
    const wasm = env.backends.onnx.wasm;
    if (!wasm) throw new Error('onnxruntime-web has no WASM backend in this build');
    // Mutate the object ORT reads; replacing env.backends.onnx.wasm would detach it from ORT.
    wasm.wasmPaths = {
      wasm: new URL(ortWasmUrl, self.location.href).href,
      mjs: new URL(ortMjsUrl, self.location.href).href,
    };
    // Only read before the first session is created.
    wasm.numThreads = wasmThreads();
    // Otherwise transformers.js copies ORT's .mjs into the Cache API and imports it from a blob: URL,
    // which the site's Content-Security-Policy (script-src 'self') refuses; the files are self-hosted.
    env.useWasmCache = false;
    env.allowLocalModels = true;
    // A path, not a URL: with a full URL the tokenizer files silently fail to load. Hub ids
    // (`owner/name`) are looked up here first, so a hub model can also be self-hosted under /models/.
    env.localModelPath = modelsBase;
    // Every model file request goes through here, so that a network failure can be reported with
    // the model, the file and the host instead of a bare "Failed to fetch".
    const plainFetch = globalThis.fetch.bind(globalThis);
    env.fetch = async (input: string | URL, init?: RequestInit) => {
      try {
        return await plainFetch(input, init);
      } catch (e) {
        fetchFailures.push({ url: String(input), message: errorText(e) });
        throw e;
      }
    };
    configured = true;
  }
  env.localModelPath = modelsBase;
  // Global to transformers.js: the last load's setting applies to loads running at the same time.
  env.allowRemoteModels = allowRemoteModels;
}

// ---------------------------------------------------------------------------------------------
// Loading

interface GpuDeviceLike {
  lost: Promise<{ message: string; reason?: string }>;
  destroy(): void;
}
/** DEVICE_WAIT_MS: how long a load waits for ORT to hand out its GPUDevice (to watch for device loss). */
const DEVICE_WAIT_MS = 2000;
/** ORT's GPUDevice once a WebGPU session exists (one per worker). */
let gpuDevice: GpuDeviceLike | null = null;

/** One promise per (model, revision, dtype, device); failed loads are evicted. */
const encoders = new Map<string, Promise<Encoder>>();
let active: Encoder | null = null;
/** The spec of the last load(): how embedTexts/embedImages pool, prefix and truncate. */
let activeSpec: ModelSpec | null = null;
/** Why the active model is not on WebGPU although WebGPU was tried. */
let activeFallbackReason: string | undefined;
/** Why the active model runs where it does (LoadedEncoder.deviceReason). */
let activeDeviceReason = '';
/** The adapter probe, once per worker: requestAdapter costs milliseconds on every load otherwise. */
let probePromise: Promise<BackendProbe> | null = null;

const cacheKey = (spec: ModelSpec, dtype: Dtype, device: Device) =>
  `${modelPath(spec, modelsBase)}|${spec.revision}|${spec.kind}|${dtype}|${device}`;

function errorText(e: unknown): string {
  return (e as Error)?.message ?? String(e);
}

function sizeMismatch(spec: ModelSpec, dim: number, source: string): string {
  return isCrossEncoder(spec)
    ? `${spec.id}: the model gives ${dim} logits per pair, ${source} says ${spec.dim}`
    : `${spec.id}: the model gives ${dim}-dimensional vectors, ${source} says ${spec.dim}`;
}

/** A cross-encoder's activation must fit its number of logits (one for none/sigmoid, two or more for softmax). */
function checkActivation(spec: ModelSpec, labels: number): void {
  const a = spec.activation ?? 'none';
  if (a === 'softmax-positive' ? labels < 2 : labels !== 1)
    throw new Error(
      `${spec.id}: activation "${a}" does not fit a model with ${labels} logit${labels === 1 ? '' : 's'} per pair`,
    );
}

/**
 * Throttled progress that forwards at once the first tick of each kind, the first and last tick of
 * each downloaded file and every status message, so short phases (a small local file) are still seen.
 */
function phased(fn?: OnProgress) {
  const throttled = throttle(fn);
  let last: Progress | null = null;
  const report = (p: Progress) => {
    if (!fn) return;
    const prev = last;
    last = p;
    const edge =
      !prev ||
      p.kind !== prev.kind ||
      p.kind === 'status' ||
      (p.kind === 'download' && prev.kind === 'download' && (p.file !== prev.file || p.loaded === p.total));
    if (edge) {
      throttled.flush();
      fn(p);
    } else throttled(p);
  };
  report.flush = () => throttled.flush();
  return report;
}

function progressCallback(report: OnProgress) {
  return (info: ProgressInfo) => {
    if (info.status === 'progress')
      report({ kind: 'download', file: info.file, loaded: info.loaded, total: info.total || undefined });
    else if (info.status === 'initiate') report({ kind: 'status', message: `Loading ${info.file}` });
  };
}

async function createEncoder(
  spec: ModelSpec,
  device: Device,
  dtype: Dtype,
  report: OnProgress,
): Promise<Encoder> {
  const name = modelPath(spec, modelsBase);
  const progress_callback = progressCallback(report);
  const common = { revision: spec.revision, progress_callback };
  const modelOpts = { ...common, dtype, device };
  const tokenizer = await AutoTokenizer.from_pretrained(name, common);
  let textModel: PreTrainedModel;
  let visionModel: PreTrainedModel | undefined;
  let processor: Processor | undefined;
  if (spec.kind === 'text') {
    textModel = await AutoModel.from_pretrained(name, modelOpts);
  } else if (spec.kind === 'cross-encoder') {
    // The model itself, not the text-classification pipeline: that pipeline applies a softmax over
    // the labels, which turns every score of a one-logit reranker into 1.
    textModel = await AutoModelForSequenceClassification.from_pretrained(name, modelOpts);
  } else {
    const [TextCls, VisionCls] =
      spec.kind === 'clip'
        ? [CLIPTextModelWithProjection, CLIPVisionModelWithProjection]
        : [SiglipTextModel, SiglipVisionModel];
    processor = await AutoProcessor.from_pretrained(name, common);
    textModel = await TextCls.from_pretrained(name, modelOpts);
    try {
      visionModel = await VisionCls.from_pretrained(name, modelOpts);
    } catch (e) {
      await textModel.dispose().catch(() => undefined);
      throw e;
    }
  }
  const enc: Encoder = {
    spec,
    device,
    dtype,
    threads: wasmThreads(),
    dim: 0,
    tokenizer,
    textModel,
    visionModel,
    processor,
  };
  try {
    if (device === 'webgpu') await watchDevice(enc);
    // Warm-up: the first run compiles kernels (WebGPU shaders, WASM code paths) and checks the output size.
    report({ kind: 'status', message: `Warming up ${spec.label ?? spec.id} on ${device.toUpperCase()}` });
    if (spec.kind === 'cross-encoder') {
      const ids = tokenizer('warm up', { text_pair: 'warm up' }).input_ids as Tensor;
      enc.pairEnd = (ids.data as BigInt64Array).at(-1);
      enc.dim = (await pairLogits(enc, spec, 'warm up', ['warm up'])).labels;
      checkActivation(spec, enc.dim);
    } else {
      const t = await embedTextBatch(enc, spec, ['warm up'], 'query');
      enc.dim = t.length;
    }
    if (enc.visionModel) {
      const grey = new Uint8ClampedArray(WARMUP_IMAGE_SIZE * WARMUP_IMAGE_SIZE * 3).fill(128);
      const v = await embedImageBatch(enc, spec, [
        new RawImage(grey, WARMUP_IMAGE_SIZE, WARMUP_IMAGE_SIZE, 3),
      ]);
      if (v.length !== enc.dim)
        throw new Error(`${spec.id}: image vectors have ${v.length} dimensions, text vectors ${enc.dim}`);
    }
    if (spec.dim > 0 && enc.dim !== spec.dim) throw new Error(sizeMismatch(spec, enc.dim, 'the registry'));
    if (enc.lost) throw new Error(`the GPU device was lost: ${enc.lost}`);
  } catch (e) {
    await disposeEncoder(enc);
    throw e;
  }
  return enc;
}

/** Marks the encoder lost when ORT's GPU device goes away (driver reset, tab backgrounded on mobile…). */
async function watchDevice(enc: Encoder): Promise<void> {
  try {
    const gpuFlags = env.backends.onnx.webgpu as { device?: Promise<GpuDeviceLike> } | undefined;
    // ORT resolves this once its first WebGPU session exists; never let it hold up a load.
    const device = await Promise.race([
      gpuFlags?.device,
      new Promise<undefined>((r) => setTimeout(() => r(undefined), DEVICE_WAIT_MS)),
    ]);
    if (!device) return;
    gpuDevice = device;
    void device.lost.then((info) => {
      enc.lost = `GPU device lost: ${info.reason ?? 'unknown'}${info.message ? `, ${info.message}` : ''}`;
      if (gpuDevice === device) gpuDevice = null;
      for (const [k, p] of encoders)
        void p.then(
          (e) => e === enc && encoders.delete(k),
          () => undefined,
        );
    });
  } catch {
    // No device to watch: the session itself will fail and trigger the fallback.
  }
}

async function disposeEncoder(enc: Encoder): Promise<void> {
  await Promise.all([
    enc.textModel.dispose().catch(() => undefined),
    enc.visionModel?.dispose().catch(() => undefined),
  ]);
}

function getEncoder(
  spec: ModelSpec,
  device: Device,
  dtype: Dtype,
  report: OnProgress,
): { promise: Promise<Encoder>; cached: boolean } {
  const key = cacheKey(spec, dtype, device);
  const hit = encoders.get(key);
  if (hit) return { promise: hit, cached: true };
  const promise = createEncoder(spec, device, dtype, report);
  encoders.set(key, promise);
  promise.catch(() => {
    if (encoders.get(key) === promise) encoders.delete(key);
  });
  return { promise, cached: false };
}

/** Deletes a model's files from transformers.js's Cache API (best effort). */
async function evictCachedModelFiles(modelId: string): Promise<void> {
  if (typeof caches === 'undefined') return;
  try {
    const cache = await caches.open(env.cacheKey);
    for (const req of await cache.keys()) if (req.url.includes(`/${modelId}/`)) await cache.delete(req);
  } catch (e) {
    console.warn(`loupe: could not clear cached files of ${modelId}`, e);
  }
}

/**
 * The error for a model file that could not be downloaded: the model, the file, the host and the
 * offline alternatives (the page adds the models available offline in this browser).
 */
function modelFetchError(spec: ModelSpec, cause: unknown): Error {
  const own = self.location.origin;
  const remote = fetchFailures.filter((f) => new URL(f.url, self.location.href).origin !== own);
  const f = (remote.length ? remote : fetchFailures).at(-1)!;
  const u = new URL(f.url, self.location.href);
  // Hub URLs are <host>/<owner>/<name>/resolve/<revision>/<file>; local ones end in the file.
  const file = decodeURIComponent(
    /\/resolve\/[^/]+\/(.+)$/.exec(u.pathname)?.[1] ?? u.pathname.split('/').pop() ?? '',
  );
  const e = new Error(
    `Could not download ${file} of model ${spec.id} from ${u.host} (${f.message}; ${errorText(cause)}). ` +
      `The network is off or ${u.host} cannot be reached. Offline choices: a model already cached in ` +
      `this browser, the same files self-hosted under ${modelsBase}${spec.local ? (spec.localPath ?? spec.hubId) : spec.hubId}/, ` +
      `or a generated test model (loupe-test/…, random weights).`,
  );
  e.name = MODEL_FETCH_FAILED;
  return e;
}

async function load(
  spec: ModelSpec,
  opts: LoadOptions = {},
  onProgress?: OnProgress,
): Promise<LoadedEncoder> {
  const report = phased(onProgress);
  const t0 = performance.now();
  configureEnv(spec.local ? false : (opts.allowRemoteModels ?? true), opts.modelsBase);
  fetchFailures = [];
  probePromise ??= probeBackend();
  const probe = await probePromise;
  const choice = chooseBackend(probe, {
    preferred: opts.device ?? 'auto',
    dtype: opts.dtype,
    available: spec.dtypes,
  });
  let fallbackReason: string | undefined;
  if (opts.priorFailure) fallbackReason = `WebGPU failed (${opts.priorFailure}); running on WASM instead`;
  else if (opts.device === 'webgpu' && !probe.webgpu)
    fallbackReason = `WebGPU unavailable: ${probe.webgpuReason}`;
  let enc: Encoder;
  let cached: boolean;
  if (choice.device === 'webgpu') {
    try {
      // Fails where session creation would, before any cached WebGPU session is reused.
      if (opts.simulateWebGpuFailure)
        throw new Error('simulated WebGPU session failure (simulateWebGpuFailure)');
      report({ kind: 'status', message: `Loading ${spec.label ?? spec.id} for WebGPU (${choice.dtype})` });
      const r = getEncoder(spec, 'webgpu', choice.dtype, report);
      enc = await r.promise;
      cached = r.cached;
      if (enc.lost) throw new Error(enc.lost);
    } catch (e) {
      // A file that could not be downloaded is not WebGPU's fault: no WASM retry, the real reason.
      if (fetchFailures.length) throw modelFetchError(spec, e);
      console.warn(`loupe: ${spec.id}: WebGPU failed (${errorText(e)})`);
      throw webGpuFailed(errorText(e));
    }
  } else {
    report({ kind: 'status', message: `Loading ${spec.label ?? spec.id} for WASM (${choice.dtype})` });
    const r = getEncoder(spec, 'wasm', choice.dtype, report);
    try {
      enc = await r.promise;
    } catch (e) {
      // A download that failed (offline, host unreachable) is not a broken file: keep what is cached.
      if (fetchFailures.length) throw modelFetchError(spec, e);
      // A missing, truncated or invalid model file: say which model, and what to do. The failed load
      // is evicted from the encoder cache, and the model's files from transformers.js's Cache API
      // (a truncated download would be served from there forever), so loading again retries.
      await evictCachedModelFiles(spec.id);
      throw new Error(
        `could not load the model ${spec.id} (${choice.dtype}): ${errorText(e)}. Check that its files are ` +
          `complete (self-hosted under models/, or on the hub), then load it again`,
      );
    }
    cached = r.cached;
  }
  report.flush();
  if (spec.dim > 0 && enc.dim !== spec.dim) throw new Error(sizeMismatch(spec, enc.dim, 'the spec'));
  if (isCrossEncoder(spec)) checkActivation(spec, enc.dim);
  active = enc;
  activeSpec = spec;
  activeFallbackReason = fallbackReason;
  activeDeviceReason = fallbackReason ?? choice.deviceReason;
  return {
    modelId: spec.id,
    device: enc.device,
    dtype: enc.dtype,
    threads: enc.threads,
    dim: enc.dim,
    ...(fallbackReason ? { fallbackReason } : {}),
    deviceReason: activeDeviceReason,
    reason: fallbackReason ? `${fallbackReason}; ${choice.reason}` : choice.reason,
    loadMs: cached ? 0 : performance.now() - t0,
    cached,
  };
}

/** The active encoder; a WebGPU one whose device was lost since is a WebGPU failure. */
function current(): Encoder {
  if (!active) throw new Error('no encoder loaded: call load() first');
  if (active.lost) throw webGpuFailed(active.lost);
  return active;
}

// ---------------------------------------------------------------------------------------------
// Embedding

/** A tensor's values as float32 (fp16 outputs are converted). */
function floatData(t: Tensor): Float32Array {
  const x = t.type === 'float32' ? t : t.to('float32');
  return x.data as Float32Array;
}

function l2normalizeRows(m: Float32Array, dim: number): void {
  for (let off = 0; off < m.length; off += dim) {
    let s = 0;
    for (let j = 0; j < dim; j++) s += m[off + j] * m[off + j];
    if (s === 0) continue;
    const inv = 1 / Math.sqrt(s);
    for (let j = 0; j < dim; j++) m[off + j] *= inv;
  }
}

/** Mean over unmasked tokens or the first token of [batch, tokens, hidden]. */
function pool(hidden: Tensor, mask: Tensor, how: 'mean' | 'cls'): Float32Array {
  const [n, seq, dim] = hidden.dims as number[];
  const h = floatData(hidden);
  const m = mask.data as ArrayLike<number | bigint>;
  const out = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) {
    const o = i * dim;
    if (how === 'cls') {
      out.set(h.subarray(i * seq * dim, i * seq * dim + dim), o);
      continue;
    }
    let count = 0;
    for (let t = 0; t < seq; t++) {
      if (Number(m[i * seq + t]) === 0) continue;
      count++;
      const base = (i * seq + t) * dim;
      for (let j = 0; j < dim; j++) out[o + j] += h[base + j];
    }
    const inv = 1 / Math.max(count, 1e-9);
    for (let j = 0; j < dim; j++) out[o + j] *= inv;
  }
  return out;
}

/** Embeds one batch of texts; returns (texts × dim) floats. */
async function embedTextBatch(
  enc: Encoder,
  spec: ModelSpec,
  texts: string[],
  role: EmbedRole,
): Promise<Float32Array> {
  if (isCrossEncoder(spec) || isCrossEncoder(enc.spec))
    throw new Error(`${spec.id} is a cross-encoder: it scores query–document pairs and cannot embed`);
  const prefix = prefixFor(spec, role);
  const maxTokens = spec.maxTokens ?? DEFAULT_MAX_TOKENS;
  const t0 = stages ? performance.now() : 0;
  const inputs = enc.tokenizer(
    // Words beyond maxTokens cannot survive truncation: clipping first spares tokenizing long documents.
    texts.map((t) => prefix + clipWords(t, maxTokens)),
    { padding: spec.padToMax ? 'max_length' : true, truncation: true, max_length: maxTokens },
  ) as Record<string, Tensor>;
  const t1 = stages ? performance.now() : 0;
  if (stages) stages.tokenizeMs += t1 - t0;
  return runTextModel(enc, spec, inputs, texts.length);
}

/** The text model's forward pass on tokenized inputs, pooled and normalised as the spec says: (n × dim). */
async function runTextModel(
  enc: Encoder,
  spec: ModelSpec,
  inputs: Record<string, Tensor>,
  n: number,
): Promise<Float32Array> {
  const t1 = stages ? performance.now() : 0;
  const out = (await enc.textModel(inputs)) as Record<string, Tensor>;
  if (stages) stages.encodeMs += performance.now() - t1;
  let vecs: Float32Array;
  if (spec.pooling === 'model') {
    const t = spec.kind === 'clip' ? out.text_embeds : out.pooler_output;
    if (!t)
      throw new Error(
        `${spec.id}: the text model has no ${spec.kind === 'clip' ? 'text_embeds' : 'pooler_output'} output`,
      );
    vecs = floatData(t).slice();
  } else {
    const hidden = out.last_hidden_state ?? out.token_embeddings;
    if (!hidden) throw new Error(`${spec.id}: the model has no last_hidden_state output`);
    vecs = pool(hidden, inputs.attention_mask, spec.pooling);
  }
  const dim = vecs.length / n;
  if (spec.normalize) l2normalizeRows(vecs, dim);
  return vecs;
}

// ---------------------------------------------------------------------------------------------
// Long texts: windows of token ids (core/chunking.ts), each framed with the model's special tokens

/** How the tokenizer frames one sequence, and the tokens of a role's prefix. */
interface ChunkFrame {
  head: number[];
  tail: number[];
  prefix: number[];
  /** Content tokens per window (maxTokens minus special and prefix tokens). */
  size: number;
  /** Input names the tokenizer gives the model (input_ids, attention_mask, token_type_ids?). */
  inputs: string[];
  padId: number;
}

const frames = new WeakMap<Encoder, Map<string, ChunkFrame>>();

/**
 * The special tokens the tokenizer puts before and after a text (found by tokenizing a probe with
 * and without them), the prefix's tokens for `role`, and the window size they leave.
 */
function chunkFrame(enc: Encoder, spec: ModelSpec, role: EmbedRole): ChunkFrame {
  const prefix = prefixFor(spec, role);
  const maxTokens = spec.maxTokens ?? DEFAULT_MAX_TOKENS;
  const k = `${prefix}\u0000${maxTokens}`;
  let byKey = frames.get(enc);
  if (!byKey) frames.set(enc, (byKey = new Map()));
  const hit = byKey.get(k);
  if (hit) return hit;
  const ids = (text: string, special: boolean) =>
    (
      enc.tokenizer(text, { add_special_tokens: special, return_tensor: false }) as unknown as {
        input_ids: number[];
      }
    ).input_ids;
  const probe = 'chunk probe';
  const framed = ids(probe, true);
  const bare = ids(probe, false);
  let head: number[];
  let tail: number[];
  try {
    ({ head, tail } = specialFrame(framed, bare));
  } catch {
    throw new Error(`${spec.id}: cannot find where the tokenizer puts its special tokens`);
  }
  // The prefix's own words: a trailing space would be a token of its own for SentencePiece (the
  // text's first word carries its space), so "query: " + text frames as "query: text" tokenizes.
  const prefixIds = prefix.trim() ? ids(prefix.trimEnd(), false) : [];
  const sample = enc.tokenizer(['a'], { padding: true }) as Record<string, Tensor>;
  const frame: ChunkFrame = {
    head,
    tail,
    prefix: prefixIds,
    size: windowSize(maxTokens, head.length + tail.length, prefixIds.length),
    inputs: Object.keys(sample),
    padId: Number((enc.tokenizer as unknown as { pad_token_id?: number }).pad_token_id ?? 0),
  };
  byKey.set(k, frame);
  return frame;
}

/** Texts cut into framed windows: the ids of every window, chunks per text and each window's token span. */
interface Windows {
  rows: number[][];
  counts: Uint32Array;
  /** 2 per window: start and end among the text's tokens (special and prefix tokens not counted). */
  spans: Uint32Array;
  /** Tokens of each text without special tokens (to decode a window's text). */
  tokens: number[][];
}

function textWindows(
  enc: Encoder,
  spec: ModelSpec,
  texts: string[],
  role: EmbedRole,
  chunking: Chunking,
): Windows {
  const frame = chunkFrame(enc, spec, role);
  const overlap = chunking.overlap;
  if (overlap >= frame.size)
    throw new RangeError(
      `chunk overlap ${overlap} is not smaller than the ${frame.size}-token window of ${spec.label ?? spec.id}`,
    );
  const rows: number[][] = [];
  const spans: number[] = [];
  const counts = new Uint32Array(texts.length);
  const tokens: number[][] = [];
  for (let i = 0; i < texts.length; i += LENGTH_CHUNK) {
    // Not truncated: every token of a long text is in some window.
    const { input_ids } = enc.tokenizer(texts.slice(i, i + LENGTH_CHUNK), {
      add_special_tokens: false,
      return_tensor: false,
    }) as unknown as { input_ids: number[][] };
    input_ids.forEach((ids, j) => {
      const ws = chunkWindows(ids.length, frame.size, overlap, chunking.aggregate);
      counts[i + j] = ws.length;
      tokens.push(ids);
      for (const w of ws) {
        rows.push(frameWindow(ids, w, frame));
        spans.push(w.start, w.end);
      }
    });
  }
  return { rows, counts, spans: Uint32Array.from(spans), tokens };
}

/** Tokens each text costs once cut into framed windows (for batching documents by cost). */
function windowTokens(enc: Encoder, spec: ModelSpec, texts: string[], chunking: Chunking): Uint32Array {
  const out = new Uint32Array(texts.length);
  for (let i = 0; i < texts.length; i += LENGTH_CHUNK) {
    const w = textWindows(enc, spec, texts.slice(i, i + LENGTH_CHUNK), 'document', chunking);
    let r = 0;
    w.counts.forEach((c, j) => {
      for (let k = 0; k < c; k++, r++) out[i + j] += w.rows[r].length;
    });
  }
  return out;
}

/** Framed windows as model inputs, padded to the longest (or to maxTokens for padToMax models). */
function windowInputs(frame: ChunkFrame, spec: ModelSpec, rows: number[][]): Record<string, Tensor> {
  const len = spec.padToMax
    ? (spec.maxTokens ?? DEFAULT_MAX_TOKENS)
    : Math.max(1, ...rows.map((r) => r.length));
  const n = rows.length;
  const ids = new BigInt64Array(n * len).fill(BigInt(frame.padId));
  const mask = new BigInt64Array(n * len);
  rows.forEach((r, i) => {
    for (let t = 0; t < r.length; t++) {
      ids[i * len + t] = BigInt(r[t]);
      mask[i * len + t] = 1n;
    }
  });
  const out: Record<string, Tensor> = {
    input_ids: new Tensor('int64', ids, [n, len]),
    attention_mask: new Tensor('int64', mask, [n, len]),
  };
  if (frame.inputs.includes('token_type_ids'))
    out.token_type_ids = new Tensor('int64', new BigInt64Array(n * len), [n, len]);
  return out;
}

/**
 * Embeds framed windows in batches of similar length (sorted by length within the token budget),
 * returning their vectors in input order: (windows × dim).
 */
async function embedWindows(
  enc: Encoder,
  spec: ModelSpec,
  role: EmbedRole,
  rows: number[][],
  batchSize: number,
  onDone?: (windows: number) => void,
): Promise<Float32Array> {
  const frame = chunkFrame(enc, spec, role);
  const plan = planBatches(
    rows.map((r) => r.length),
    { tokenBudget: DEFAULT_TOKEN_BUDGET, maxBatch: batchSize },
  );
  let out: Float32Array | null = null;
  for (let b = 0; b + 1 < plan.bounds.length; b++) {
    const pos = plan.order.subarray(plan.bounds[b], plan.bounds[b + 1]);
    const part = Array.from(pos, (p) => rows[p]);
    const v = await runTextModel(enc, spec, windowInputs(frame, spec, part), part.length);
    const dim = v.length / part.length;
    const o = (out ??= new Float32Array(rows.length * dim));
    pos.forEach((p, i) => o.set(v.subarray(i * dim, (i + 1) * dim), p * dim));
    onDone?.(plan.bounds[b + 1]);
  }
  return out ?? new Float32Array(0);
}

/** Chunk vectors of texts: (Σ counts × dim), the chunks of text 0 first, with counts and token spans. */
async function embedTextChunks(
  texts: string[],
  role: EmbedRole,
  chunking: Chunking,
  batchSize = 32,
  onProgress?: OnProgress,
): Promise<{ vectors: Float32Array; counts: Uint32Array; spans: Uint32Array }> {
  checkBatchSize(batchSize);
  checkChunking(chunking);
  const report = throttle(onProgress);
  const r = await onActive(async (enc, spec) => {
    const w = textWindows(enc, spec, texts, role, chunking);
    const total = w.rows.length;
    const vectors = await embedWindows(enc, spec, role, w.rows, batchSize, (done) =>
      report({ kind: 'status', message: `Embedding ${texts.length} texts: ${done} / ${total} chunks` }),
    );
    return { vectors, counts: w.counts, spans: w.spans };
  });
  report.flush();
  return Comlink.transfer(r, [r.vectors.buffer, r.counts.buffer, r.spans.buffer] as ArrayBuffer[]);
}

/** The text of every window of one text (decoded from its tokens, special tokens left out), for the drill-down. */
async function chunkTexts(text: string, role: EmbedRole, chunking: Chunking): Promise<string[]> {
  checkChunking(chunking);
  return onActive(async (enc, spec) => {
    const w = textWindows(enc, spec, [text], role, chunking);
    const ids = w.tokens[0];
    const out: string[] = [];
    for (let c = 0; c < w.counts[0]; c++)
      out.push(
        enc.tokenizer.decode(ids.slice(w.spans[2 * c], w.spans[2 * c + 1]), { skip_special_tokens: true }),
      );
    return out;
  });
}

/** LENGTH_CHUNK: texts tokenized per call when counting tokens (bounds the arrays held at once). */
const LENGTH_CHUNK = 256;

/** Token count of each text after truncation (special tokens and prefix included), for batching by length. */
function textLengths(enc: Encoder, spec: ModelSpec, texts: string[], role: EmbedRole): Uint32Array {
  const maxTokens = spec.maxTokens ?? DEFAULT_MAX_TOKENS;
  const out = new Uint32Array(texts.length);
  // Padded to the maximum anyway (CLIP text towers): every text costs the same.
  if (spec.padToMax) return out.fill(maxTokens);
  const prefix = prefixFor(spec, role);
  for (let i = 0; i < texts.length; i += LENGTH_CHUNK) {
    const { input_ids } = enc.tokenizer(
      texts.slice(i, i + LENGTH_CHUNK).map((t) => prefix + clipWords(t, maxTokens)),
      { truncation: true, max_length: maxTokens, return_tensor: false },
    ) as unknown as { input_ids: number[][] };
    input_ids.forEach((ids, j) => (out[i + j] = ids.length));
  }
  return out;
}

async function embedImageBatch(enc: Encoder, spec: ModelSpec, images: RawImage[]): Promise<Float32Array> {
  if (!enc.visionModel || !enc.processor) throw new Error(`${spec.id} has no image encoder`);
  const t0 = stages ? performance.now() : 0;
  const inputs = (await enc.processor(images)) as Record<string, Tensor>;
  const t1 = stages ? performance.now() : 0;
  const out = (await enc.visionModel(inputs)) as Record<string, Tensor>;
  if (stages) {
    stages.preprocessMs += t1 - t0;
    stages.encodeMs += performance.now() - t1;
  }
  const t = spec.kind === 'clip' ? out.image_embeds : out.pooler_output;
  if (!t)
    throw new Error(
      `${spec.id}: the vision model has no ${spec.kind === 'clip' ? 'image_embeds' : 'pooler_output'} output`,
    );
  const vecs = floatData(t).slice();
  if (spec.normalize) l2normalizeRows(vecs, vecs.length / images.length);
  return vecs;
}

/**
 * A cross-encoder's logits for (query, doc) pairs: `[CLS] query [SEP] doc [SEP]` (the tokenizer's pair
 * template, token types 0 then 1), padded to the longest pair and truncated at maxTokens.
 *
 * transformers.js truncates a pair by cutting the end of the whole sequence, which drops the closing
 * [SEP]; it is put back on every truncated row, so a long document is cut as Python's `longest_first` /
 * `only_second` cut it (the query stays whole unless it alone is longer than maxTokens).
 */
async function pairLogits(
  enc: Encoder,
  spec: ModelSpec,
  query: string,
  docs: string[],
): Promise<{ logits: Float32Array; labels: number }> {
  const maxTokens = spec.maxTokens ?? DEFAULT_MAX_TOKENS;
  const inputs = enc.tokenizer(
    docs.map(() => spec.queryPrefix + query),
    {
      // Words beyond maxTokens cannot be in the pair: clipping first spares tokenizing long documents.
      text_pair: docs.map((d) => spec.docPrefix + clipWords(d, maxTokens)),
      padding: true,
      truncation: true,
      max_length: maxTokens,
    },
  ) as Record<string, Tensor>;
  const ids = inputs.input_ids;
  const [n, len] = ids.dims as number[];
  const end = enc.pairEnd;
  if (end !== undefined) {
    const idData = ids.data as BigInt64Array;
    const mask = inputs.attention_mask.data as BigInt64Array;
    for (let i = 0; i < n; i++) {
      const last = i * len + len - 1;
      if (mask[last] !== 0n && idData[last] !== end) idData[last] = end;
    }
  }
  const out = (await enc.textModel(inputs)) as Record<string, Tensor>;
  const t = out.logits;
  if (!t) throw new Error(`${spec.id}: the model has no logits output`);
  const labels = (t.dims as number[])[1] ?? 1;
  return { logits: floatData(t), labels };
}

/** Scores one batch of pairs with the spec's activation. */
async function scorePairBatch(
  enc: Encoder,
  spec: ModelSpec,
  query: string,
  docs: string[],
): Promise<Float32Array> {
  const { logits, labels } = await pairLogits(enc, spec, query, docs);
  checkActivation(spec, labels);
  const scores = new Float32Array(docs.length);
  for (let i = 0; i < docs.length; i++)
    scores[i] = rerankScore(logits, i * labels, labels, spec.activation ?? 'none');
  return scores;
}

async function decode(blob: Blob, label: string): Promise<RawImage> {
  try {
    if (await isDicomBlob(blob)) {
      // DICOM: LUTs (default window, first frame) to 8-bit RGB, the layout the image processor takes.
      const img = await decodeDicomBlob(blob);
      return new RawImage(rgbaToRgb(img.rgba), img.width, img.height, 3);
    }
    return await RawImage.fromBlob(blob);
  } catch (e) {
    throw new Error(`could not decode image ${label}: ${errorText(e)}`);
  }
}

/**
 * Runs `fn` on the active encoder (with the spec of the last load). Any failure on WebGPU (device
 * lost, an op the WebGPU EP cannot run) is reported as WEBGPU_FAILED, for the client to restart on WASM.
 */
async function onActive<T>(fn: (enc: Encoder, spec: ModelSpec) => Promise<T>): Promise<T> {
  const enc = current();
  try {
    return await fn(enc, activeSpec ?? enc.spec);
  } catch (e) {
    if (enc.device !== 'webgpu') throw e;
    enc.lost ??= errorText(e);
    throw webGpuFailed(enc.lost);
  }
}

function checkBatchSize(batchSize: number): number {
  if (!Number.isInteger(batchSize) || batchSize < 1)
    throw new RangeError(`batch size must be a positive integer, got ${batchSize}`);
  return batchSize;
}

/** Time an ad-hoc query spent in each stage here, in ms (what the page's performance marks cannot see). */
export interface QueryStages {
  /** Text to token ids. */
  tokenizeMs: number;
  /** Image decode, resize and normalisation (the image processor). */
  preprocessMs: number;
  /** The text and vision models' forward passes. */
  encodeMs: number;
}

/** Collector of the embedQuery in progress (null otherwise: the corpus path measures nothing). */
let stages: QueryStages | null = null;

/**
 * Embeds one ad-hoc query, its text and/or image, in one call (one round trip for image + text),
 * with the time each stage took. Vectors transferred.
 */
async function embedQuery(text: string | null, image: Blob | null) {
  const own: QueryStages = { tokenizeMs: 0, preprocessMs: 0, encodeMs: 0 };
  stages = own;
  try {
    const t = text ? await onActive((enc, spec) => embedTextBatch(enc, spec, [text], 'query')) : null;
    let v: Float32Array | null = null;
    if (image) {
      const t0 = performance.now();
      const decoded = await decode(image, 'the query image');
      own.preprocessMs += performance.now() - t0;
      v = await onActive((enc, spec) => embedImageBatch(enc, spec, [decoded]));
    }
    const buffers = [t, v].flatMap((x) => (x ? [x.buffer as ArrayBuffer] : []));
    return Comlink.transfer({ text: t, image: v, stages: own }, buffers);
  } finally {
    stages = null;
  }
}

/** How embedTexts batches. */
export interface TextBatching {
  /** Padded tokens per batch at most (default DEFAULT_TOKEN_BUDGET). */
  tokenBudget?: number;
  /** false: batches of `batchSize` in input order, padded to their longest text (benchmarks only). */
  byLength?: boolean;
}

/**
 * Embeds texts in batches of similar length (the corpus path's batching), vectors in input order.
 * A single text skips the token count.
 */
async function embedTexts(
  texts: string[],
  role: EmbedRole,
  batchSize = 32,
  onProgress?: OnProgress,
  batching: TextBatching = {},
) {
  checkBatchSize(batchSize);
  const report = throttle(onProgress);
  const byLength = batching.byLength !== false && texts.length > 1;
  const lengths = byLength
    ? await onActive(async (enc, spec) => textLengths(enc, spec, texts, role))
    : new Uint32Array(texts.length).fill(1);
  const plan = planBatches(lengths, {
    tokenBudget: byLength ? (batching.tokenBudget ?? DEFAULT_TOKEN_BUDGET) : Infinity,
    maxBatch: batchSize,
  });
  let out: Float32Array | null = null;
  let done = 0;
  for (let b = 0; b + 1 < plan.bounds.length; b++) {
    const pos = plan.order.subarray(plan.bounds[b], plan.bounds[b + 1]);
    const part = Array.from(pos, (p) => texts[p]);
    const v = await onActive((enc, spec) => embedTextBatch(enc, spec, part, role));
    const dim = v.length / pos.length;
    const o = (out ??= new Float32Array(texts.length * dim));
    pos.forEach((p, i) => o.set(v.subarray(i * dim, (i + 1) * dim), p * dim));
    done += pos.length;
    report({ kind: 'embed', done, total: texts.length, docsPerSec: 0 });
  }
  report.flush();
  out ??= new Float32Array(0);
  // Transferred: the page owns the buffer afterwards, this worker keeps no reference.
  return Comlink.transfer(out, [out.buffer]);
}

async function embedImages(blobs: Blob[], batchSize = 16, onProgress?: OnProgress) {
  checkBatchSize(batchSize);
  const report = throttle(onProgress);
  let out: Float32Array | null = null;
  for (let i = 0; i < blobs.length; i += batchSize) {
    const part = blobs.slice(i, i + batchSize);
    const images = await Promise.all(part.map((b, k) => decode(b, `#${i + k}`)));
    const v = await onActive((enc, spec) => embedImageBatch(enc, spec, images));
    const dim = v.length / part.length;
    out ??= new Float32Array(blobs.length * dim);
    out.set(v, i * dim);
    report({ kind: 'embed', done: i + part.length, total: blobs.length, docsPerSec: 0 });
  }
  report.flush();
  out ??= new Float32Array(0);
  return Comlink.transfer(out, [out.buffer]);
}

/**
 * Scores (query, doc) pairs with the active cross-encoder, which must have been loaded for `spec`'s
 * files (load() first); the spec gives the prefixes, the truncation length and the activation.
 * Returns one score per document, higher = more relevant (transferred).
 */
async function rerank(
  spec: ModelSpec,
  query: string,
  docs: string[],
  batchSize = 32,
  onProgress?: OnProgress,
) {
  checkBatchSize(batchSize);
  if (!isCrossEncoder(spec)) throw new Error(`${spec.id} is not a cross-encoder: it cannot rerank`);
  const report = throttle(onProgress);
  const out = new Float32Array(docs.length);
  for (let i = 0; i < docs.length; i += batchSize) {
    const part = docs.slice(i, i + batchSize);
    const scores = await onActive((enc) => {
      if (
        !isCrossEncoder(enc.spec) ||
        modelPath(enc.spec) !== modelPath(spec) ||
        enc.spec.revision !== spec.revision
      )
        throw new Error(
          `the active model is ${enc.spec.id}, not the cross-encoder ${spec.id}: load it first`,
        );
      return scorePairBatch(enc, spec, query, part);
    });
    out.set(scores, i);
    report({ kind: 'status', message: `Reranking: ${i + part.length} / ${docs.length} pairs` });
  }
  report.flush();
  return Comlink.transfer(out, [out.buffer]);
}

// ---------------------------------------------------------------------------------------------
// Corpus embedding with resume

let storePromise: Promise<ShardStore> | null = null;
function store(): Promise<ShardStore> {
  storePromise ??= openShardStore({ sweep: false }).catch((e: unknown) => {
    storePromise = null;
    throw e;
  });
  return storePromise;
}

/** The text a document is embedded from (BEIR: title, a space, text). */
export function docText(d: Doc): string {
  return [d.title, d.text]
    .filter((s) => s && s.trim())
    .join(' ')
    .trim();
}

function hasPart(d: Doc, part: EmbedPart): boolean {
  return part === 'text' ? docText(d) !== '' : typeof d.image === 'string' && d.image !== '';
}

function validBatch(r: unknown, ids: string[], dim: number, chunked = false): r is EmbBatchRecord {
  const b = r as EmbBatchRecord | undefined;
  if (
    !b ||
    b.v !== 2 ||
    b.dim !== dim ||
    !Array.isArray(b.ids) ||
    b.ids.length !== ids.length ||
    !b.ids.every((id, i) => id === ids[i]) ||
    !(b.vectors instanceof Float32Array)
  )
    return false;
  if (!chunked) return b.vectors.length === ids.length * dim;
  if (
    !(b.chunks instanceof Uint32Array) ||
    !(b.spans instanceof Uint32Array) ||
    b.chunks.length !== ids.length
  )
    return false;
  let rows = 0;
  for (const c of b.chunks) rows += c;
  return b.vectors.length === rows * dim && b.spans.length === 2 * rows;
}

async function embedCorpus(req: EmbedCorpusRequest, onProgress?: OnProgress): Promise<EmbedCorpusResult> {
  const t0 = performance.now();
  const { shardHash, spec, part } = req;
  checkBatchSize(req.batchSize);
  if (isCrossEncoder(spec))
    throw new Error(`${spec.id} is a cross-encoder: it scores query–document pairs and cannot embed`);
  if (!supportsPart(spec, part)) throw new Error(`${spec.id} is a text encoder: it cannot embed images`);
  const report = phased(onProgress);
  report({ kind: 'status', message: 'Reading shard from IndexedDB' });
  const db = await store();
  const { docs } = await db.load(shardHash);
  const loaded = await load(spec, req.load, onProgress);
  const dim = loaded.dim;
  // Only text is chunked; `first` is the truncating path (and key) of before.
  const chunking = part === 'text' && isChunked(req.chunking) ? checkChunking(req.chunking) : undefined;
  // Every image of multi-image items, one row each (the page asks only for shards that have them).
  const allImages = part === 'image' && !!req.allImages;
  const key = corpusEmbeddingKey(shardHash, spec, loaded.dtype, part, chunking, allImages);
  const multiRow = !!chunking || allImages;

  const rows: number[] = [];
  const missing: string[] = [];
  docs.forEach((d, i) => (hasPart(d, part) ? rows.push(i) : missing.push(d.id)));

  // Precomputed embeddings shipped in the shard for this model and dtype (checked against the
  // documents at import): used in place of embedding when they fit the loaded model exactly.
  let pre: PrecomputedSet | undefined;
  let precomputedNote: string | undefined;
  try {
    pre = await db.getArtifact<PrecomputedSet>(
      shardHash,
      PRECOMPUTED_KIND,
      precomputedKey(spec.id, loaded.dtype, part),
    );
  } catch {
    pre = undefined;
  }
  // Precomputed sets hold one truncated vector per document: they cannot stand for chunks.
  if (pre && chunking) {
    precomputedNote = `precomputed ${part} embeddings for ${spec.id} (${loaded.dtype}) not used: they hold one truncated vector per document, and long texts are chunked (${chunking.aggregate}); embedding the chunks instead`;
    pre = undefined;
  }
  if (pre && allImages) {
    precomputedNote = `precomputed ${part} embeddings for ${spec.id} (${loaded.dtype}) not used: they hold one vector per item, and every image of multi-image items is embedded; embedding the images instead`;
    pre = undefined;
  }
  if (pre) {
    const why = precomputedMismatch(pre.sidecar, spec, loaded.dtype, dim);
    if (
      pre.sidecar.doc_ids.length !== rows.length ||
      pre.sidecar.doc_ids.some((id, i) => id !== docs[rows[i]].id)
    )
      why.push('document order differs from the shard');
    if (why.length) {
      precomputedNote = `precomputed ${part} embeddings for ${spec.id} (${loaded.dtype}) not used: ${why.join('; ')}; embedding the corpus instead`;
      console.warn(`loupe: ${precomputedNote}`);
      pre = undefined;
    }
  }

  // A resumed run keeps the stored plan, so that its batches stay reusable.
  const metaKey = `${key}#meta`;
  let meta: EmbMetaRecord | undefined;
  try {
    meta = await db.getArtifact<EmbMetaRecord>(shardHash, EMB_KIND, metaKey);
  } catch (e) {
    console.warn('loupe: unreadable embedding meta record, recomputing', e);
  }
  const resumable =
    meta?.v === 2 &&
    meta.dim === dim &&
    meta.total === rows.length &&
    meta.batchSize > 0 &&
    isValidPlan(meta, rows.length);
  let plan: BatchPlan;
  let batchSize: number;
  let tokenBudget: number;
  if (resumable) {
    plan = { order: meta!.order, bounds: meta!.bounds, paddedTokens: 0 };
    batchSize = meta!.batchSize;
    tokenBudget = meta!.tokenBudget;
  } else {
    batchSize = req.batchSize;
    // Texts by length within a padded-token budget; images all cost the same: shard order.
    tokenBudget = part === 'text' ? (req.tokenBudget ?? DEFAULT_TOKEN_BUDGET) : Infinity;
    let lengths: Uint32Array;
    if (part === 'text') {
      report({ kind: 'status', message: 'Counting tokens' });
      const texts = rows.map((r) => docText(docs[r]));
      // Chunked: a document costs the tokens of all its windows; batches group documents of
      // similar cost, and their windows are batched by length again when embedded.
      lengths = await onActive(async (enc) =>
        chunking ? windowTokens(enc, spec, texts, chunking) : textLengths(enc, spec, texts, 'document'),
      );
    } else lengths = new Uint32Array(rows.length).fill(1);
    plan = planBatches(lengths, { tokenBudget, maxBatch: batchSize });
  }
  const totalBatches = plan.bounds.length - 1;
  const writeMeta = (complete: boolean) =>
    db.putArtifact(shardHash, EMB_KIND, metaKey, {
      v: 2,
      key,
      modelId: spec.id,
      hubId: spec.hubId,
      revision: spec.revision,
      dtype: loaded.dtype,
      part,
      dim,
      batchSize,
      tokenBudget,
      total: rows.length,
      totalBatches,
      order: plan.order,
      bounds: plan.bounds,
      missing,
      complete,
      updatedAt: Date.now(),
    } satisfies EmbMetaRecord);

  // A full storage stops the saving, not the run: each batch is one record (saved whole or not at
  // all), the meta record stays incomplete, and the next run resumes from the batches saved.
  let notSaved: string | undefined;
  const full = (batchNo: number) =>
    `the browser's storage filled up while saving the corpus embeddings of ${spec.label ?? spec.id} ` +
    `(batch ${batchNo + 1} of ${totalBatches}): this run has them all, but only the batches before ` +
    'were saved, so the next run embeds the rest again. Delete cached shards or runs you no longer ' +
    'need (Shards view), or allow this site more storage in the browser settings, then run again to ' +
    'save them';
  const saveBatch = async (
    recKey: string,
    batchNo: number,
    ids: string[],
    vectors: Float32Array,
    chunks?: { chunks: Uint32Array; spans: Uint32Array },
  ) => {
    if (notSaved) {
      counters.batchesNotSaved++;
      return;
    }
    try {
      await db.putArtifact(shardHash, EMB_KIND, recKey, {
        v: 2,
        batchNo,
        ids,
        dim,
        vectors,
        ...(chunks ?? {}),
        writtenAt: Date.now(),
      } satisfies EmbBatchRecord);
    } catch (e) {
      if (!isQuotaError(e)) throw e;
      counters.batchesNotSaved++;
      notSaved = full(batchNo);
    }
  };
  if (!resumable)
    await writeMeta(false).catch((e: unknown) => {
      if (!isQuotaError(e)) throw e;
      notSaved = full(0);
    });

  // Row-major (docs × dim) in shard order; rows of documents without the part stay zero.
  // Chunked: each document's chunk rows and spans, put together in shard order at the end.
  const embeddings = new Float32Array(multiRow ? 0 : docs.length * dim);
  const docChunks: { vectors: Float32Array; spans: Uint32Array }[] = [];
  let computedBatches = 0;
  let reusedBatches = 0;
  let precomputedBatches = 0;
  let done = 0;
  let computedDocs = 0;
  let computeMs = 0;
  const tick = () => {
    const docsPerSec = computeMs > 0 ? (computedDocs / computeMs) * 1000 : 0;
    const remaining = rows.length - done;
    report({
      kind: 'embed',
      done,
      total: rows.length,
      docsPerSec,
      ...(docsPerSec > 0 ? { etaSeconds: remaining / docsPerSec } : {}),
    });
  };
  tick();
  for (let b = 0; b < totalBatches; b++) {
    const batchRows = Array.from(plan.order.subarray(plan.bounds[b], plan.bounds[b + 1]), (p) => rows[p]);
    const ids = batchRows.map((r) => docs[r].id);
    const recKey = `${key}#${b}`;
    let rec: unknown;
    try {
      rec = await db.getArtifact(shardHash, EMB_KIND, recKey);
    } catch {
      rec = undefined; // a failed cache read recomputes
    }
    let vectors: Float32Array;
    let chunkInfo: { chunks: Uint32Array; spans: Uint32Array } | undefined;
    if (validBatch(rec, ids, dim, multiRow)) {
      vectors = rec.vectors;
      if (multiRow) chunkInfo = { chunks: rec.chunks!, spans: rec.spans! };
      reusedBatches++;
      counters.batchesReused++;
    } else if (pre) {
      // float16 rows of the shard's precomputed set (row p = rows[p], shard order), stored as a
      // batch like computed ones.
      const set = pre;
      vectors = new Float32Array(ids.length * dim);
      plan.order.subarray(plan.bounds[b], plan.bounds[b + 1]).forEach((p, i) => {
        for (let j = 0; j < dim; j++) vectors[i * dim + j] = f16ToF32(set.f16[p * dim + j]);
      });
      await saveBatch(recKey, b, ids, vectors);
      precomputedBatches++;
      counters.precomputedRows += ids.length;
    } else {
      const tb = performance.now();
      if (part === 'text' && chunking) {
        const texts = batchRows.map((r) => docText(docs[r]));
        const w = await onActive(async (enc) => {
          const win = textWindows(enc, spec, texts, 'document', chunking);
          return { ...win, vectors: await embedWindows(enc, spec, 'document', win.rows, batchSize) };
        });
        vectors = w.vectors;
        chunkInfo = { chunks: w.counts, spans: w.spans };
        counters.chunksEmbedded += w.rows.length;
        counters.multiChunkDocs += w.counts.filter((c) => c > 1).length;
      } else if (part === 'text') {
        const texts = batchRows.map((r) => docText(docs[r]));
        vectors = await onActive((enc) => embedTextBatch(enc, spec, texts, 'document'));
      } else {
        // Each document's images (all of a multi-image item with allImages, else its first).
        const paths = batchRows.map((r) =>
          allImages && docs[r].images ? docs[r].images!.map((x) => x.path) : [docs[r].image!],
        );
        const images = await Promise.all(
          paths.flatMap((list, i) =>
            list.map(async (path) => {
              const d = docs[batchRows[i]];
              const blob = await db.getImage(shardHash, path);
              if (!blob) throw new Error(`image ${path} of document ${d.id} is not in the shard cache`);
              return decode(blob, `${path} (document ${d.id})`);
            }),
          ),
        );
        vectors = await onActive((enc) => embedImageBatch(enc, spec, images));
        if (allImages) {
          const counts = Uint32Array.from(paths, (l) => l.length);
          const spans = new Uint32Array(2 * images.length);
          let at = 0;
          for (const c of counts)
            for (let k = 0; k < c; k++, at++) {
              spans[2 * at] = k;
              spans[2 * at + 1] = k + 1;
            }
          chunkInfo = { chunks: counts, spans };
          counters.itemImagesEmbedded += images.length;
        }
      }
      const rowsOut = chunkInfo ? chunkInfo.spans.length / 2 : ids.length;
      if (vectors.length !== rowsOut * dim)
        throw new Error(`batch ${b}: got ${vectors.length / rowsOut} dimensions, expected ${dim}`);
      await saveBatch(recKey, b, ids, vectors, chunkInfo);
      computeMs += performance.now() - tb;
      computedDocs += ids.length;
      computedBatches++;
      counters.batchesEmbedded++;
      counters.docsEmbedded += ids.length;
    }
    if (chunkInfo) {
      let off = 0;
      batchRows.forEach((r, i) => {
        const c = chunkInfo.chunks[i];
        docChunks[r] = {
          vectors: vectors.subarray(off * dim, (off + c) * dim),
          spans: chunkInfo.spans.subarray(2 * off, 2 * (off + c)),
        };
        off += c;
      });
    } else batchRows.forEach((r, i) => embeddings.set(vectors.subarray(i * dim, (i + 1) * dim), r * dim));
    done += ids.length;
    tick();
  }
  if (!notSaved && (!resumable || !meta?.complete || computedBatches > 0 || precomputedBatches > 0))
    await writeMeta(true);
  report.flush();
  const enc = current();
  let out = embeddings;
  let chunks: EmbedCorpusResult['chunks'];
  if (multiRow) {
    let total = 0;
    for (const c of docChunks) if (c) total += c.spans.length / 2;
    out = new Float32Array(total * dim);
    const rowDoc = new Uint32Array(total);
    const spans = new Uint32Array(2 * total);
    let at = 0;
    docChunks.forEach((c, r) => {
      if (!c) return;
      const n = c.spans.length / 2;
      out.set(c.vectors, at * dim);
      spans.set(c.spans, 2 * at);
      rowDoc.fill(r, at, at + n);
      at += n;
    });
    chunks = { rowDoc, spans, overlap: chunking?.overlap ?? 0 };
  }
  const result: EmbedCorpusResult = {
    embeddings: out,
    ...(chunks ? { chunks } : {}),
    dim,
    docIds: docs.map((d) => d.id),
    missing,
    key,
    batchSize,
    tokenBudget,
    totalBatches,
    computedBatches,
    reusedBatches,
    precomputedBatches,
    ...(precomputedNote ? { precomputedNote } : {}),
    ...(notSaved ? { notSaved } : {}),
    ms: performance.now() - t0,
    backend: {
      device: enc.device,
      dtype: enc.dtype,
      threads: enc.threads,
      deviceReason: loaded.deviceReason,
      ...(loaded.fallbackReason ? { fallbackReason: loaded.fallbackReason } : {}),
    },
  };
  // Transferred: the page owns the embeddings buffer afterwards.
  return Comlink.transfer(result, [
    out.buffer,
    ...(chunks ? [chunks.rowDoc.buffer, chunks.spans.buffer] : []),
  ] as ArrayBuffer[]);
}

// ---------------------------------------------------------------------------------------------

const api = {
  /** Loads (or reuses) a model and makes it the active one; falls back to WASM on any WebGPU failure. */
  load(spec: ModelSpec, opts: LoadOptions = {}, onProgress?: OnProgress): Promise<LoadedEncoder> {
    return load(spec, opts, onProgress);
  },
  /** Embeds texts with the active model (role picks the prefix); (texts × dim) floats, transferred. */
  embedTexts,
  /** Embeds images (decoded and preprocessed here) with the active CLIP/SigLIP model, transferred. */
  embedImages,
  /** Embeds one ad-hoc query's text and/or image with the time of each stage; transferred. */
  embedQuery,
  /** Embeds a cached shard's documents (text or image part), reusing every stored batch. */
  embedCorpus,
  /** Embeds every window of long texts (chunking mean/max): chunk vectors, chunks per text, token spans. */
  embedTextChunks,
  /** The decoded text of each window of one text (drill-down). */
  chunkTexts,
  /** Scores (query, document) pairs with the active cross-encoder (loaded for that spec); transferred. */
  rerank,
  /** Frees every loaded model. */
  async unload(): Promise<void> {
    const all = [...encoders.values()];
    encoders.clear();
    active = null;
    activeSpec = null;
    activeFallbackReason = undefined;
    activeDeviceReason = '';
    await Promise.all(all.map((p) => p.then(disposeEncoder, () => undefined)));
  },
  /** Where the active model runs now (it moves to WASM if its GPU device is lost). */
  backend() {
    if (!active) return null;
    return {
      modelId: activeSpec?.id ?? active.spec.id,
      device: active.device,
      dtype: active.dtype,
      threads: active.threads,
      deviceReason: active.lost ? `WebGPU failed (${active.lost})` : activeDeviceReason,
      ...(active.lost ? { lost: active.lost } : {}),
      ...(activeFallbackReason ? { fallbackReason: activeFallbackReason } : {}),
    };
  },
  /** Corpus documents embedded, batches computed or reused, precomputed rows taken, since the worker started. */
  counters() {
    return { ...counters };
  },
  /** Test only: destroys the GPU device ORT uses, as a driver reset would. Returns whether there was one. */
  simulateDeviceLoss(): boolean {
    if (!gpuDevice) return false;
    gpuDevice.destroy();
    return true;
  },
};

export type EncoderWorkerApi = typeof api;
Comlink.expose(api);
