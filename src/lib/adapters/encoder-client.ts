// Page-side client of workers/encoder.worker.ts: one lazily started encoder worker; every long call
// takes `{ signal, onProgress }` and a cancel terminates the worker (the loaded model goes with it;
// stored corpus batches stay, so the next embedCorpus resumes).
//
// WebGPU failures: the worker reports any of them (session creation, warm-up, a failed run, a lost
// device) as a WEBGPU_FAILED error and is then unusable (transformers.js keeps a rejected promise
// in the chain every later session and run waits on). This client terminates it, loads the model
// again on WASM in a fresh worker, and repeats the call there; the reason is returned as
// `fallbackReason`.
import type {
  EmbedCorpusRequest,
  EmbedCorpusResult,
  EncoderWorkerApi,
  LoadOptions,
  LoadedEncoder,
} from '../../../workers/encoder.worker';
import registryJson from '../../../models/registry.json';
import {
  WEBGPU_FAILED,
  parseRegistry,
  type Dtype,
  type EmbedRole,
  type ModelSpec,
  type Registry,
} from '../core/models';
import type { ProgressFn } from '../core/types';
import { WorkerClient, proxyProgress, type JobOptions } from './worker-client';

export type { EmbedCorpusRequest, EmbedCorpusResult, LoadOptions, LoadedEncoder };

/** The bundled model registry (models/registry.json), validated. */
export const MODEL_REGISTRY: Registry = parseRegistry(registryJson);

/** A registry entry by id. */
export function registryModel(id: string): ModelSpec | undefined {
  return MODEL_REGISTRY.models.find((m) => m.id === id);
}

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

async function load(
  spec: ModelSpec,
  opts: LoadOptions,
  onProgress?: ProgressFn,
  signal?: AbortSignal,
): Promise<LoadedEncoder> {
  try {
    const info = await client.run((r) => r.load(spec, opts, proxyProgress(onProgress)), signal);
    active = { spec, opts, dtype: info.dtype };
    return info;
  } catch (e) {
    if (!isWebGpuFailure(e)) throw e;
    client.terminate();
    const retry = wasmRetry(opts, e.message);
    const info = await client.run((r) => r.load(spec, retry, proxyProgress(onProgress)), signal);
    active = { spec, opts: retry, dtype: info.dtype };
    return info;
  }
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

/**
 * Embeds a cached shard's corpus (text or image part), storing each batch; batches already stored
 * by an earlier (even cancelled) run are reused. Cancel terminates the worker. After a WebGPU
 * failure it continues on WASM in a fresh worker (same explicit dtype, so stored batches still count).
 */
export async function embedCorpus(
  req: EmbedCorpusRequest,
  opts: JobOptions = {},
): Promise<EmbedCorpusResult> {
  const run = (q: EmbedCorpusRequest) =>
    client.run((r) => r.embedCorpus(q, proxyProgress(opts.onProgress)), opts.signal);
  // embedCorpus makes its model the worker's active one.
  const done = (q: EmbedCorpusRequest, r: EmbedCorpusResult) => {
    active = { spec: q.spec, opts: q.load ?? {}, dtype: r.backend.dtype };
    return r;
  };
  try {
    return done(req, await run(req));
  } catch (e) {
    if (!isWebGpuFailure(e)) throw e;
    client.terminate();
    active = null;
    const retry = { ...req, load: wasmRetry(req.load ?? {}, e.message) };
    return done(retry, await run(retry));
  }
}

/** Where the active model runs now (null before the first load or after a cancel). */
export function encoderBackend() {
  return client.run((r) => r.backend());
}

/** Test only: destroys the GPU device of the encoder worker, as a driver reset would. */
export function simulateGpuDeviceLoss(): Promise<boolean> {
  return client.run((r) => r.simulateDeviceLoss());
}

/** Frees the loaded models but keeps the worker. */
export function unloadEncoders(): Promise<void> {
  active = null;
  return client.run((r) => r.unload());
}

/** Terminates the encoder worker (calls in flight reject; the next call starts a fresh one). */
export function stopEncoder(): void {
  active = null;
  client.terminate();
}
