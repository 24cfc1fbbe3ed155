// Page-side client of workers/encoder.worker.ts: one lazily started encoder worker; every long call
// takes `{ signal, onProgress }` and a cancel terminates the worker (the loaded model goes with it;
// stored corpus batches stay, so the next embedCorpus resumes).
//
// WebGPU failures: the worker reports any of them (session creation, warm-up, a failed run, a lost
// device) as a WEBGPU_FAILED error and is then unusable (transformers.js keeps a rejected promise
// in the chain every later session and run waits on). This client terminates it, loads the model
// again on WASM in a fresh worker, and repeats the call there; the reason is returned as
// `fallbackReason`. The worker runs ONNX Runtime's plain WASM build where no hardware WebGPU adapter
// exists (backend.ts, ortBuildFor); a WebGPU load asked of such a worker is loaded in a fresh one.
//
// Cross-encoders (rerankers) load through the same worker and model cache; `rerankPairs` scores a
// query's candidate documents with one, with the same WebGPU → WASM fallback.
import * as Comlink from 'comlink';
import { chunkOffsets, isChunked, meanOfChunks, type Chunking } from '../core/retrieval/chunking';
import { itemImagePaths, type DocPart, type MultiImage } from '../core/retrieval/multi-image';
import type {
  CorpusSink,
  EmbedCorpusRequest,
  EmbedCorpusResult,
  EncoderWorkerApi,
  LoadOptions,
  LoadedEncoder,
  QueryStages,
  ReferenceIo,
  ReferenceRequest,
} from '../../../workers/encoder.worker';
import {
  ORT_BUILD_RESTART,
  WEBGPU_FAILED,
  isCrossEncoder,
  modelPath,
  type Dtype,
  type EmbedPart,
  type EmbedRole,
  type ModelSpec,
} from '../core/retrieval/models';
import type { ProgressFn, Query } from '../core/types';
import type { DeviceVerdict } from '../platform/gpu/device-policy';
import {
  MODEL_REGISTRY,
  RERANKER_REGISTRY,
  registryModel,
  rerankerModel,
} from '../platform/models/model-registry';
import { modelFolder, servedModelFolders } from '../platform/models/model-index';
import { foreground, whenQuiet } from '../platform/page/activity';
import { stageTook, timeStage } from '../platform/page/query-timing';
import { openShardStore, type ShardStore } from '../platform/storage/shard-store';
import type { DenseQueries } from '../../../workers/retrieval.worker';
import { WorkerClient, abortError, isAbortError, proxyProgress, type JobOptions } from './worker-client';

export type { CorpusSink, EmbedCorpusRequest, EmbedCorpusResult, LoadOptions, LoadedEncoder };

/** Corpus vectors the page received from embedCorpus (floats, all calls): a test reads it as `loupeCorpusReceived`. */
const received = { results: 0, floats: 0, streamed: 0 };
(globalThis as unknown as { loupeCorpusReceived: typeof received }).loupeCorpusReceived = received;
export { MODEL_REGISTRY, RERANKER_REGISTRY, registryModel, rerankerModel };

const client = new WorkerClient<EncoderWorkerApi>(
  () =>
    new Worker(new URL('../../../workers/encoder.worker.ts', import.meta.url), {
      type: 'module',
      name: 'loupe-encoder',
    }),
);

/** The model the worker holds as active (and the dtype it runs), to load again after a restart. */
let active: { spec: ModelSpec; opts: LoadOptions; dtype: Dtype } | null = null;

function isWebGpuFailure(e: unknown): e is Error {
  return (e as { name?: string } | null)?.name === WEBGPU_FAILED;
}

/** Load options for the fresh worker after a WebGPU failure: WASM, same explicit dtype. */
function wasmRetry(opts: LoadOptions, reason: string, dtype?: LoadOptions['dtype']): LoadOptions {
  return {
    ...opts,
    device: 'wasm',
    dtype: dtype ?? opts.dtype,
    simulateWebGpuFailure: false,
    priorFailure: reason,
  };
}

/**
 * The last load() of the current worker: asking again for the model it holds active (an ad-hoc query
 * after the previous one) is answered here, without a worker round trip and its progress messages.
 */
let lastLoad: { key: string; generation: number; info: LoadedEncoder } | null = null;

function loadKey(spec: ModelSpec, opts: LoadOptions): string {
  return JSON.stringify([modelPath(spec), spec.revision, spec.kind, spec.dtypes, opts]);
}

/**
 * A hub model that models/index.json does not list is asked of the hub directly: transformers.js
 * would otherwise try every file under models/ first (one 404 each). Without an index (a site built
 * without one), models/ is looked at first as before.
 */
async function localFirst(spec: ModelSpec, opts: LoadOptions): Promise<LoadOptions> {
  if (spec.local || opts.allowLocalModels !== undefined || typeof document === 'undefined') return opts;
  const served = await servedModelFolders();
  return served && !served.has(modelFolder(spec)) ? { ...opts, allowLocalModels: false } : opts;
}

/**
 * Device verdicts (WebGPU parity, single-query device) the worker measured, for the page: passed back
 * with every load, so a worker restarted after a cancel does not check again (device-policy.ts).
 */
const verdicts = new Map<string, DeviceVerdict>();

function withVerdicts(opts: LoadOptions): LoadOptions {
  return verdicts.size ? { ...opts, knownVerdicts: [...verdicts] } : opts;
}

function remember(info: LoadedEncoder): void {
  if (!info.parity || info.parity.cached) return;
  const { cached: _c, key, ...parity } = info.parity;
  verdicts.set(key, { parity, ...(info.queryDevice ? { query: info.queryDevice } : {}) });
}

async function load(
  spec: ModelSpec,
  options: LoadOptions,
  onProgress?: ProgressFn,
  signal?: AbortSignal,
): Promise<LoadedEncoder> {
  // A load started ahead (preloadEncoder) settles first: two loads in flight could leave the wrong
  // model active. The same model is then answered from the worker's cache.
  if (ahead) await untilAhead(signal);
  const opts = await localFirst(spec, options);
  const key = loadKey(spec, opts);
  if (lastLoad && lastLoad.key === key && lastLoad.generation === client.generation && isActive(spec))
    return { ...lastLoad.info, cached: true, loadMs: 0 };
  lastLoad = null;
  const inWorker = () =>
    client.run((r) => r.load(spec, withVerdicts(opts), proxyProgress(onProgress)), signal);
  try {
    let info: LoadedEncoder;
    try {
      info = await inWorker();
    } catch (e) {
      if ((e as { name?: string } | null)?.name !== ORT_BUILD_RESTART) throw e;
      // A WebGPU load in a worker on ONNX Runtime's plain build: the same load in a fresh worker,
      // whose first session takes the asyncify build (so this cannot happen twice).
      await retire();
      info = await inWorker();
    }
    cacheWhenQuiet(info);
    remember(info);
    active = { spec, opts, dtype: info.dtype };
    lastLoad = { key, generation: client.generation, info };
    return info;
  } catch (e) {
    if (!isWebGpuFailure(e)) throw e;
    // The worker wrote its downloaded files before it reported the failure (load.ts).
    client.terminate();
    const retry = wasmRetry(opts, e.message);
    const info = await client.run((r) => r.load(spec, retry, proxyProgress(onProgress)), signal);
    cacheWhenQuiet(info);
    active = { spec, opts: retry, dtype: info.dtype };
    return info;
  }
}

/** How long the page must be quiet before a model's downloaded files are written to the browser cache. */
const MODEL_CACHE_QUIET_MS = 500;

/**
 * After a load that downloaded files, the worker writes them to the browser cache once the page is
 * quiet (no job and no model loading for half a second; workers/encoder/model-cache.ts), so that a
 * first query neither waits on that copy nor shares the CPU with it: a link's first query is answered,
 * then its model is cached. A worker gone by then (a cancel, the page closed) took its files with it:
 * the next load downloads them again.
 */
function cacheWhenQuiet(info: LoadedEncoder): void {
  if (!info.cacheQueued) return;
  const generation = client.generation;
  void whenQuiet(MODEL_CACHE_QUIET_MS).then(() =>
    client.generation === generation ? cacheModelFiles() : undefined,
  );
}

/**
 * Writes the model files the encoder worker downloaded to the browser cache now; resolves when they
 * are (at once when no worker runs).
 */
export function cacheModelFiles(): Promise<void> {
  if (client.generation === 0) return Promise.resolve();
  return client
    .run((r) => r.flushModelCache())
    .catch((e: unknown) => {
      if (!isAbortError(e)) console.warn(`loupe: model files not cached: ${(e as Error)?.message ?? e}`);
    });
}

/** Ends the worker on purpose (not a cancel): its downloaded model files are written first. */
async function retire(): Promise<void> {
  await cacheModelFiles();
  client.terminate();
}

/**
 * Starts the encoder worker ahead of its first call (its scripts, transformers.js and ONNX Runtime's
 * JavaScript, load meanwhile); a no-op when it runs.
 */
export function startEncoderWorker(): void {
  void client.remote;
}

/** A load started by preloadEncoder, until it settles (never rejects). */
let ahead: Promise<void> | null = null;

/** Waits for the load started ahead; a cancel stops it (the worker goes, as with any cancel). */
function untilAhead(signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortError());
  return new Promise<void>((resolve, reject) => {
    const stop = () => {
      client.terminate();
      reject(abortError());
    };
    signal?.addEventListener('abort', stop, { once: true });
    void ahead!.then(() => {
      signal?.removeEventListener('abort', stop);
      resolve();
    });
  });
}

/**
 * Starts loading a model before its first use (a shard opening by URL with the Search view's model
 * named: issue 19), with the options its query will pass, so that the query finds it loaded. Every
 * other load waits for it to settle; a failure is the caller's to ignore (the query loads again and
 * reports it).
 */
export function preloadEncoder(spec: ModelSpec, opts: LoadOptions): Promise<LoadedEncoder> {
  const p = foreground(load(spec, opts));
  const settled = p.then(
    () => undefined,
    () => undefined,
  );
  ahead = settled;
  void settled.then(() => {
    if (ahead === settled) ahead = null;
  });
  return p;
}

/**
 * Runs a call on the active model; after a WebGPU failure, restarts the worker, loads the same
 * model (same dtype) on WASM and runs the call again once.
 */
async function onActiveModel<T>(
  call: (r: Parameters<Parameters<typeof client.run>[0]>[0]) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  try {
    return await client.run(call, signal);
  } catch (e) {
    if (!isWebGpuFailure(e) || !active) throw e;
    client.terminate();
    const { spec, opts, dtype } = active;
    await load(spec, wasmRetry(opts, e.message, dtype), undefined, signal);
    return client.run(call, signal);
  }
}

/**
 * The worker's active encoder, as a key that changes with the model, its load options and the
 * worker (a restart or a cancel gives another): what a prefetched query vector was embedded with.
 */
export function activeEncoderKey(): string | null {
  return lastLoad && lastLoad.generation === client.generation
    ? `${lastLoad.key}#${lastLoad.generation}`
    : null;
}

/**
 * activeEncoderKey() when loading `spec` with `opts` would answer at once (the worker holds it,
 * active), else null: a query vector embedded now is then the one a query would embed.
 */
export async function loadedEncoderKey(spec: ModelSpec, opts: LoadOptions): Promise<string | null> {
  const key = loadKey(spec, await localFirst(spec, opts));
  return lastLoad?.key === key && isActive(spec) ? activeEncoderKey() : null;
}

/** Loads a model in the encoder worker (WebGPU when it works, else WASM) and makes it the active one. */
export function loadEncoder(spec: ModelSpec, opts: LoadOptions & JobOptions = {}): Promise<LoadedEncoder> {
  const { signal, onProgress, ...loadOpts } = opts;
  return load(spec, loadOpts, onProgress, signal);
}

/** Embeds texts with the active model: (texts × dim) floats; the buffer is the caller's. */
export function embedTexts(
  texts: string[],
  role: EmbedRole,
  opts: JobOptions & { batchSize?: number } = {},
): Promise<Float32Array> {
  return onActiveModel(
    (r) => r.embedTexts(texts, role, opts.batchSize ?? 32, proxyProgress(opts.onProgress)),
    opts.signal,
  );
}

/**
 * Embeds every window of texts longer than the active model's window (chunking mean/max): chunk
 * vectors (Σ counts × dim, text 0's chunks first), chunks per text, each chunk's token span and each
 * text's mean (the model's normalisation).
 */
export function embedTextChunks(
  texts: string[],
  role: EmbedRole,
  chunking: Chunking,
  opts: JobOptions & { batchSize?: number } = {},
): Promise<{ vectors: Float32Array; counts: Uint32Array; spans: Uint32Array; mean: Float32Array }> {
  return onActiveModel(
    (r) => r.embedTextChunks(texts, role, chunking, opts.batchSize ?? 32, proxyProgress(opts.onProgress)),
    opts.signal,
  );
}

/**
 * A corpus's text and image parts as one matrix, fused in the encoder worker (core's fuseDocParts) so
 * that the page's thread does no arithmetic over the corpus; the parts' rows are transferred (the
 * caller no longer has them).
 */
export function fuseDocParts(
  docIds: string[],
  dim: number,
  text: DocPart,
  image: DocPart,
  imageRowDoc?: Uint32Array,
  opts: JobOptions = {},
) {
  const req = { docIds, dim, text, image, ...(imageRowDoc ? { imageRowDoc } : {}) };
  const moved = [text.embeddings.buffer, image.embeddings.buffer] as ArrayBuffer[];
  return client.run((r) => r.fuseDocParts(Comlink.transfer(req, moved)), opts.signal);
}

/** The text of each window of one text as the active model cuts it (decoded tokens), for the drill-down. */
export function chunkTexts(text: string, role: EmbedRole, chunking: Chunking, opts: JobOptions = {}) {
  return onActiveModel((r) => r.chunkTexts(text, role, chunking), opts.signal);
}

/**
 * Embeds one ad-hoc query (text and/or image) with the active model in one worker call: its vectors
 * and the worker-side time of each stage (tokenize, image preprocessing, encode).
 */
export function embedQuery(
  text: string | null,
  image: Blob | null,
  opts: JobOptions = {},
): Promise<{ text: Float32Array | null; image: Float32Array | null; stages: QueryStages }> {
  return onActiveModel((r) => r.embedQuery(text, image), opts.signal);
}

/** Embeds image blobs with the active CLIP/SigLIP model: (images × dim) floats. */
export function embedImages(
  blobs: Blob[],
  opts: JobOptions & { batchSize?: number } = {},
): Promise<Float32Array> {
  return onActiveModel(
    (r) => r.embedImages(blobs, opts.batchSize ?? 16, proxyProgress(opts.onProgress)),
    opts.signal,
  );
}

/** The stored sets (or packed index) a run's corpus vectors come from, as the active model fits them. */
export function referenceSets(req: ReferenceRequest, opts: JobOptions = {}) {
  return onActiveModel((r) => r.referenceSets(req), opts.signal);
}

/**
 * The check of those sets on the active model (workers/encoder/reference.ts): the probe embedded in
 * the worker, which asks `io` for what only the page reaches (the open shard's documents, a packed
 * set's rows).
 */
export function checkReference(req: ReferenceRequest, io: ReferenceIo, opts: JobOptions = {}) {
  return onActiveModel(
    (r) => r.checkReference(req, Comlink.proxy(io), proxyProgress(opts.onProgress)),
    opts.signal,
  );
}

/**
 * Embeds a cached shard's corpus (text or image part), storing each batch; batches already stored
 * by an earlier (even cancelled) run are reused. Cancel terminates the worker. After a WebGPU
 * failure it continues on WASM in a fresh worker (same explicit dtype, so stored batches still count).
 * With `req.stream` and `opts.sink`, a large corpus goes to the sink in pieces instead (a retry
 * begins the sink again).
 */
export async function embedCorpus(
  req: EmbedCorpusRequest,
  opts: JobOptions & { sink?: CorpusSink } = {},
): Promise<EmbedCorpusResult> {
  const sink = opts.sink ? Comlink.proxy(opts.sink) : undefined;
  const run = (q: EmbedCorpusRequest) =>
    client.run(
      (r) => r.embedCorpus({ ...q, load: withVerdicts(q.load ?? {}) }, proxyProgress(opts.onProgress), sink),
      opts.signal,
    );
  // embedCorpus makes its model the worker's active one.
  const done = (q: EmbedCorpusRequest, r: EmbedCorpusResult) => {
    received.results++;
    received.floats += r.embeddings.length;
    if (r.streamed) received.streamed++;
    // A call with `loaded` that needed no model leaves the (restarted) worker without one.
    if (r.backend.idle) {
      active = null;
      lastLoad = null;
      return r;
    }
    active = { spec: q.spec, opts: q.load ?? {}, dtype: r.backend.dtype };
    // Its load options may differ from the last load()'s: the next load() asks the worker, unless
    // the model, device and dtype are the ones that load() answered with (an ad-hoc query's corpus
    // embedded right after its load: the same encoder stays active).
    const same =
      lastLoad?.generation === client.generation &&
      lastLoad.info.modelId === q.spec.id &&
      lastLoad.info.device === r.backend.device &&
      lastLoad.info.dtype === r.backend.dtype &&
      !r.backend.fallbackReason;
    if (!same) lastLoad = null;
    return r;
  };
  try {
    req = { ...req, load: await localFirst(req.spec, req.load ?? {}) };
    return done(req, await run(req));
  } catch (e) {
    if (!isWebGpuFailure(e)) throw e;
    client.terminate();
    active = null;
    const retry = { ...req, load: wasmRetry(req.load ?? {}, e.message) };
    return done(retry, await run(retry));
  }
}

/** Whether the worker's active model is `spec`'s files (same path, revision and kind). */
function isActive(spec: ModelSpec): boolean {
  const a = active?.spec;
  return !!a && modelPath(a) === modelPath(spec) && a.revision === spec.revision && a.kind === spec.kind;
}

/**
 * Scores a query against candidate document texts with a cross-encoder: one score per document
 * (higher = more relevant; the spec's activation applied). Loads the model first unless it is the
 * worker's active one (`load` gives device and dtype for that load). Cancel terminates the worker;
 * after a WebGPU failure the worker is restarted, the model loaded on WASM and the call repeated.
 */
export async function rerankPairs(
  spec: ModelSpec,
  query: string,
  docs: string[],
  opts: JobOptions & { batchSize?: number; load?: LoadOptions } = {},
): Promise<Float32Array> {
  if (!isCrossEncoder(spec)) throw new Error(`${spec.id} is not a cross-encoder`);
  if (docs.length === 0) return new Float32Array(0);
  try {
    if (!isActive(spec)) await load(spec, opts.load ?? {}, opts.onProgress, opts.signal);
    return await onActiveModel(
      (r) => r.rerank(spec, query, docs, opts.batchSize ?? 32, proxyProgress(opts.onProgress)),
      opts.signal,
    );
  } catch (e) {
    // A cancel terminated the worker: the next call must load the model again.
    if (isAbortError(e)) active = null;
    throw e;
  }
}

/** Where the active model runs now (null before the first load or after a cancel). */
export function encoderBackend() {
  return client.run((r) => r.backend());
}

/** The encoder worker's counters: corpus documents embedded, batches computed and reused, precomputed rows used. */
export function encoderCounters() {
  return client.run((r) => r.counters());
}

/** Test only: destroys the GPU device of the encoder worker, as a driver reset would. */
export function simulateGpuDeviceLoss(): Promise<boolean> {
  return client.run((r) => r.simulateDeviceLoss());
}

/**
 * Ends the encoder worker to free its memory (the next call starts a fresh one), once the model files
 * it downloaded are in the browser cache.
 */
export async function stopEncoder(): Promise<void> {
  active = null;
  await retire();
}

// ---- a dense run's queries ------------------------------------------------------------------------
// A run's queries as vectors, whatever their shape: texts (whole, or every window of a long one:
// chunking mean/max), images (a query image that is a corpus image takes that row), several images
// per query (multi-image mean/max), and the one query typed in the Search view, whose parts may have
// been embedded ahead (state/query-prefetch.ts).

/** What the dense query path asks of the prefetcher (embedRunQueries). */
export interface PrefetchLookup {
  /** The vectors prefetched for this text / image by `encoder` (each null when there is none). */
  take(
    encoder: string,
    text: string | null,
    image: Blob | null,
  ): { text: Promise<Float32Array | null> | null; image: Promise<Float32Array | null> | null };
  /** Resolves when no prefetch is running (a query's own encoder call waits for it). */
  settled(): Promise<void>;
}

/** A dense run's queries and how they are embedded (the plan's settings, the loaded encoder's dim). */
export interface RunQueries {
  shardHash: string;
  queries: Query[];
  /** The query parts the model embeds (dense-plan.ts's densePlan). */
  parts: EmbedPart[];
  dim: number;
  chunking?: Chunking;
  multiImage?: MultiImage;
  /** The corpus's image rows: a query image that is a corpus image is not embedded twice. */
  corpusImages?: { rowOf: Map<string, number>; rows: Float32Array | null };
  /** One query typed in the Search view: its image(s), in one worker call with the text, stages timed. */
  adhoc?: { image: Blob | null; more: Blob[]; prefetch?: PrefetchLookup };
}

/**
 * Embeds a run's queries with the active encoder (see the file's header): first every vector, each
 * shape in its own worker call, then the windows of a chunked text and the images of a multi-image
 * query aggregated (mean → one vector per query; max → every window or image a row of its own).
 */
export async function embedRunQueries(r: RunQueries, job: JobOptions): Promise<DenseQueries> {
  const { queries: qs, parts, dim, chunking, adhoc } = r;
  const q: DenseQueries = {
    ids: qs.map((x) => x.id),
    dim,
    text: null,
    image: null,
    hasText: new Uint8Array(qs.length),
    hasImage: new Uint8Array(qs.length),
    exclude: qs.map((x) => x.excludeIds),
  };
  /** Query qi's `part` is row j of `vecs`. */
  const put = (part: 'text' | 'image', qi: number, vecs: Float32Array, j = 0) => {
    (q[part] ??= new Float32Array(qs.length * dim)).set(vecs.subarray(j * dim, (j + 1) * dim), qi * dim);
    (part === 'text' ? q.hasText : q.hasImage)[qi] = 1;
  };
  const chunked = isChunked(chunking) && parts.includes('text');
  const withText = qs.flatMap((x, i) => (x.text ? [i] : []));
  // An ad-hoc query: one worker call for its text and image, with the time of each stage.
  let text = adhoc && parts.includes('text') && qs[0].text && !chunked ? qs[0].text : null;
  let image = adhoc && parts.includes('image') ? adhoc.image : null;
  // Parts embedded ahead by the same encoder (the image as it was added, the text on a pause).
  const encoderKey = activeEncoderKey();
  if (adhoc?.prefetch && encoderKey) {
    const ahead = adhoc.prefetch.take(encoderKey, text, image);
    if (ahead.text || ahead.image) {
      const [t, i] = await timeStage('encode', () => Promise.all([ahead.text, ahead.image]));
      if (t) put('text', 0, t);
      if (i) put('image', 0, i);
      text = t ? null : text;
      image = i ? null : image;
    }
    await adhoc.prefetch.settled();
  }
  // Every window of each query's text.
  const texts = withText.map((i) => qs[i].text);
  const windows = chunked ? await embedTextChunks(texts, 'query', chunking, job) : null;
  // The shard's images a query names, read from the cache: one connection for the run's images (not
  // withShardStore's one per call), not swept, closed at the end.
  let store: Promise<ShardStore> | undefined;
  const imagesAt = async (paths: string[]) => {
    const s = await (store ??= openShardStore({ sweep: false }));
    return Promise.all(paths.map((p) => s.getImage(r.shardHash, p)));
  };
  try {
    if (adhoc && (text || image)) {
      const t0 = performance.now();
      const e = await embedQuery(text, image, job);
      const s = e.stages;
      // Only the stages of the parts embedded now (a part embedded ahead has none here).
      if (text) stageTook('tokenize', t0, s.tokenizeMs);
      if (image) stageTook('preprocess', t0 + s.tokenizeMs, s.preprocessMs);
      stageTook('encode', t0 + s.tokenizeMs + s.preprocessMs, s.encodeMs);
      if (e.text) put('text', 0, e.text);
      if (e.image) put('image', 0, e.image);
    } else if (!adhoc) {
      if (parts.includes('text') && !chunked) {
        q.text = new Float32Array(qs.length * dim);
        const vecs = await embedTexts(texts, 'query', job);
        withText.forEach((qi, j) => put('text', qi, vecs, j));
      }
      if (parts.includes('image')) {
        q.image = new Float32Array(qs.length * dim);
        const { rowOf, rows } = r.corpusImages ?? { rowOf: new Map<string, number>(), rows: null };
        const todo: number[] = [];
        qs.forEach((x, i) => {
          const row = x.image ? rowOf.get(x.image) : undefined;
          if (row !== undefined && rows) put('image', i, rows, row);
          else if (x.image) todo.push(i);
        });
        const blobs = todo.length ? await imagesAt(todo.map((i) => qs[i].image!)) : [];
        const ok = todo.filter((_, j) => blobs[j]);
        if (todo.length) {
          const vecs = await embedImages(
            blobs.filter((b): b is Blob => !!b),
            job,
          );
          ok.forEach((qi, j) => put('image', qi, vecs, j));
        }
      }
    }
    // Queries with several images (the items' images after the first, or the extra images of an
    // ad-hoc query): every one embedded.
    const extra: Blob[][] = adhoc ? [adhoc.more] : qs.map(() => []);
    const several = !!r.multiImage && parts.includes('image') && !!q.image;
    if (several && !adhoc)
      for (const [i, x] of qs.entries()) {
        const more = itemImagePaths(x).slice(1);
        if (more.length && q.hasImage[i]) extra[i] = (await imagesAt(more)).filter((b): b is Blob => !!b);
      }
    const todo = several ? extra.flatMap((l, i) => (l.length && q.hasImage[i] ? [i] : [])) : [];
    const extraVecs = todo.length
      ? await embedImages(
          todo.flatMap((i) => extra[i]),
          job,
        )
      : null;
    if (windows) {
      // Chunked texts: mean → one vector per query; max → all its windows as rows as well.
      q.text = new Float32Array(qs.length * dim);
      const counts = new Uint32Array(qs.length);
      withText.forEach((qi, j) => {
        put('text', qi, windows.mean, j);
        counts[qi] = windows.counts[j];
      });
      // Queries without text have no chunks, so the chunk rows are already in query order.
      if (chunking!.aggregate === 'max')
        q.textChunks = { vectors: windows.vectors, offsets: chunkOffsets(counts) };
    }
    if (extraVecs) {
      // Several images: mean → the query's image vector is their normalised mean; max → each is a
      // row of `q.imageRows` (the retrieval worker scores a document by its best pair).
      const counts = new Uint32Array(qs.length);
      const rows: Float32Array[] = [];
      let at = 0;
      for (const i of todo) {
        const n = extra[i].length + 1;
        const all = new Float32Array(n * dim);
        all.set(q.image!.subarray(i * dim, (i + 1) * dim), 0);
        all.set(extraVecs.subarray(at * dim, (at + n - 1) * dim), dim);
        at += n - 1;
        put('image', i, meanOfChunks(all, [n], dim, true));
        counts[i] = n;
        rows[i] = all;
      }
      if (r.multiImage === 'max') {
        const offsets = chunkOffsets(counts);
        const vectors = new Float32Array(offsets[qs.length] * dim);
        for (const i of todo) vectors.set(rows[i], offsets[i] * dim);
        q.imageRows = { vectors, offsets };
      }
    }
    return q;
  } finally {
    if (store) await (await store.catch(() => null))?.close();
  }
}
