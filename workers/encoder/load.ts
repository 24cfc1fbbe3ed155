// Model loading and device choice: the backend probe picks WebGPU or WASM and a dtype, the files
// load through transformers.js (tokenizer, text tower or cross-encoder, vision tower and processor),
// one warm-up run checks the output size, and any WebGPU failure is reported for the client to
// continue on WASM in a fresh worker.
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
  type PreTrainedModel,
  type Processor,
  type Tensor,
} from '@huggingface/transformers';
import { isCrossEncoder, modelPath, type Dtype, type ModelSpec } from '../../src/lib/core/retrieval/models';
import {
  chooseBackend,
  ortBuildFor,
  probeBackend,
  wasmThreads,
  type BackendProbe,
  type Device,
} from '../../src/lib/platform/gpu/backend';
import { afterParityFailure, applyDevicePolicy } from '../../src/lib/platform/gpu/device-policy';
import {
  claimOrtBuild,
  configureEnv,
  errorText,
  evictCachedModelFiles,
  fetchFailures,
  modelFetchError,
  modelsBase,
  reportWeightDownloads,
  resetFetchFailures,
  webGpuFailed,
} from './environment';
import { flushModelCache, queuedModelFiles } from './model-cache';
import { WARMUP_IMAGE_SIZE, embedImageBatch } from './image';
import { phased, progressCallback } from './progress';
import { checkWebGpu, knownVerdict } from './parity';
import { checkActivation, pairLogits } from './rerank';
import { disposeEncoder, dropEncoder, encoders, setActive, watchDevice } from './session';
import { embedTextBatch } from './text';
import type { Encoder, LoadOptions, LoadedEncoder, OnProgress } from './types';

/** The adapter probe, once per worker: requestAdapter costs milliseconds on every load otherwise. */
let probePromise: Promise<BackendProbe> | null = null;

const cacheKey = (spec: ModelSpec, dtype: Dtype, device: Device) =>
  `${modelPath(spec, modelsBase)}|${spec.revision}|${spec.kind}|${dtype}|${device}`;

function sizeMismatch(spec: ModelSpec, dim: number, source: string): string {
  return isCrossEncoder(spec)
    ? `${spec.id}: the model gives ${dim} logits per pair, ${source} says ${spec.dim}`
    : `${spec.id}: the model gives ${dim}-dimensional vectors, ${source} says ${spec.dim}`;
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
  // No progress callback for the sessions: their weight files' downloads are reported by the fetch
  // hook (environment.ts, reportWeightDownloads), which spares transformers.js's size requests.
  const modelOpts = { revision: spec.revision, dtype, device };
  reportWeightDownloads(report);
  // The tokenizer's files download while the weights do (a fresh visit's first query waits on both).
  const tokenizing = AutoTokenizer.from_pretrained(name, common);
  tokenizing.catch(() => undefined);
  let textModel: PreTrainedModel;
  let visionModel: PreTrainedModel | undefined;
  let processor: Processor | undefined;
  try {
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
      // Both towers' files download side by side (one summed progress line, one wait instead of two).
      const [proc, text, vision] = await Promise.allSettled([
        AutoProcessor.from_pretrained(name, common),
        TextCls.from_pretrained(name, modelOpts),
        VisionCls.from_pretrained(name, modelOpts),
      ]);
      const failed = [proc, text, vision].find((r) => r.status === 'rejected');
      if (failed) {
        for (const r of [text, vision])
          if (r.status === 'fulfilled') await r.value.dispose().catch(() => undefined);
        throw failed.reason;
      }
      processor = (proc as PromiseFulfilledResult<Processor>).value;
      textModel = (text as PromiseFulfilledResult<PreTrainedModel>).value;
      visionModel = (vision as PromiseFulfilledResult<PreTrainedModel>).value;
    }
  } catch (e) {
    // The tokenizer's own failure, if any, is the one to report (it was asked for first).
    await tokenizing;
    throw e;
  } finally {
    reportWeightDownloads(null);
  }
  let tokenizer: Awaited<typeof tokenizing>;
  try {
    tokenizer = await tokenizing;
  } catch (e) {
    await textModel.dispose().catch(() => undefined);
    await visionModel?.dispose().catch(() => undefined);
    throw e;
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
    report({ kind: 'compile', model: spec.label ?? spec.id, device: device.toUpperCase() });
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

/**
 * getEncoder for a load: "Loading <model> for <device> (<dtype>)" is said only when the worker does
 * not hold that encoder already (a cached one is no load: the page's story and a first query's
 * summary would say the model was loaded).
 */
function announcedEncoder(spec: ModelSpec, device: Device, dtype: Dtype, report: OnProgress) {
  if (!encoders.has(cacheKey(spec, dtype, device))) {
    const where = device === 'webgpu' ? 'WebGPU' : 'WASM';
    report({ kind: 'status', message: `Loading ${spec.label ?? spec.id} for ${where} (${dtype})` });
  }
  return getEncoder(spec, device, dtype, report);
}

/** Why fp32 runs on WebGPU after an automatic fp16 failed its parity check (the retry's dtype reason). */
const FP16_RETRY = 'fp16 failed the WebGPU parity check';

/** Loads (or reuses) a model and makes it the active one; falls back to WASM on any WebGPU failure. */
export async function load(
  spec: ModelSpec,
  opts: LoadOptions = {},
  onProgress?: OnProgress,
): Promise<LoadedEncoder> {
  const report = phased(onProgress);
  const t0 = performance.now();
  configureEnv(
    spec.local ? false : (opts.allowRemoteModels ?? true),
    opts.modelsBase,
    spec.local || (opts.allowLocalModels ?? true),
  );
  resetFetchFailures();
  probePromise ??= probeBackend();
  const probe = await probePromise;
  // The device policy (device-policy.ts): quantised weights never run on WebGPU.
  let choice = applyDevicePolicy(
    chooseBackend(probe, {
      preferred: opts.device ?? 'auto',
      dtype: opts.dtype,
      available: spec.dtypes,
      dtypeWhy: opts.dtypeWhy,
      setDtypes: opts.setDtypes,
    }),
  );
  let fallbackReason: string | undefined;
  if (opts.priorFailure) fallbackReason = `WebGPU failed (${opts.priorFailure}); running on WASM instead`;
  else if (opts.device === 'webgpu' && !probe.webgpu)
    fallbackReason = `WebGPU unavailable: ${probe.webgpuReason}`;
  let enc: Encoder;
  let cached: boolean;
  /** The parity check's and the query timing's lines (WebGPU loads only). */
  let checked: string | undefined;
  let queryEnc: Encoder | undefined;
  let verdictInfo: Pick<LoadedEncoder, 'parity' | 'queryDevice'> = {};
  const adapter = probe.adapterInfo ?? 'unknown adapter';
  if (choice.device === 'webgpu' && !isCrossEncoder(spec) && !opts.simulateWebGpuFailure) {
    // A parity check that already failed here: go where it sent the model, without a WebGPU session.
    const prior = await knownVerdict(
      spec,
      choice.dtype,
      adapter,
      opts.simulateParityMismatch === true,
      opts.knownVerdicts,
    );
    if (prior && !prior.verdict.parity.ok) {
      const why = prior.verdict.parity.reason;
      const next = afterParityFailure(choice.dtype, spec.dtypes, (opts.dtype ?? 'auto') === 'auto');
      if (next.device === 'webgpu') {
        report.flush(); // the retry reports on its own: nothing of this load's arrives after its ticks
        const r = await load(spec, { ...opts, dtype: next.dtype, dtypeWhy: FP16_RETRY }, onProgress);
        return { ...r, deviceReason: `${why}; ${r.deviceReason}`, reason: `${why}; ${r.reason}` };
      }
      fallbackReason = `${why}; running on WASM (${next.dtype})`;
      verdictInfo = { parity: { ...prior.verdict.parity, cached: true, key: prior.key } };
      choice = { ...choice, device: 'wasm', dtype: next.dtype };
    }
  }
  // The ORT build, before the first session: a WebGPU load in a plain worker goes to a fresh one.
  const ortBuild = claimOrtBuild(ortBuildFor(choice.device, probe), spec.id);
  if (choice.device === 'webgpu') {
    try {
      // Fails where session creation would, before any cached WebGPU session is reused.
      if (opts.simulateWebGpuFailure)
        throw new Error('simulated WebGPU session failure (simulateWebGpuFailure)');
      const r = announcedEncoder(spec, 'webgpu', choice.dtype, report);
      enc = await r.promise;
      cached = r.cached;
      if (enc.lost) throw new Error(enc.lost);
    } catch (e) {
      // A file that could not be downloaded is not WebGPU's fault: no WASM retry, the real reason.
      if (fetchFailures.length) throw modelFetchError(spec, e);
      console.warn(`loupe: ${spec.id}: WebGPU failed (${errorText(e)})`);
      // The client retires this worker: the files it downloaded are written first, so that the WASM
      // load in the fresh worker finds them in the cache.
      await flushModelCache();
      throw webGpuFailed(errorText(e));
    }
    // Parity with WASM and the faster device for one text query, once per (model, dtype, adapter).
    if (!isCrossEncoder(spec)) {
      const c = await checkWebGpu(spec, enc, opts, adapter, report, {
        get: (dtype) => getEncoder(spec, 'wasm', dtype, report).promise,
        has: (dtype) => encoders.has(cacheKey(spec, dtype, 'wasm')),
        drop: (dtype) => dropEncoder(cacheKey(spec, dtype, 'wasm')),
      });
      if (c.retry) {
        // Automatic fp16 failed the check: fp32 on WebGPU, checked in turn (the fp16 copy is freed).
        await dropEncoder(cacheKey(spec, enc.dtype, 'webgpu'));
        report.flush();
        const r = await load(spec, { ...opts, dtype: c.retry.dtype, dtypeWhy: FP16_RETRY }, onProgress);
        return {
          ...r,
          deviceReason: `${c.retry.why}; ${r.deviceReason}`,
          reason: `${c.retry.why}; ${r.reason}`,
        };
      }
      // Failed parity: the model runs on WASM, and its WebGPU session is freed.
      if (c.fallbackReason) await dropEncoder(cacheKey(spec, enc.dtype, 'webgpu'));
      ({ enc, fallbackReason, checked, queryEnc } = c);
      verdictInfo = c.info;
    }
  } else {
    const r = announcedEncoder(spec, 'wasm', choice.dtype, report);
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
  // A requested fp16 that was not used (no shader-f16) is part of a fallback's reason too.
  if (fallbackReason && choice.dtypeNote) fallbackReason = `${fallbackReason}; ${choice.dtypeNote}`;
  report.flush();
  if (spec.dim > 0 && enc.dim !== spec.dim) throw new Error(sizeMismatch(spec, enc.dim, 'the spec'));
  if (isCrossEncoder(spec)) checkActivation(spec, enc.dim);
  const deviceReason =
    fallbackReason ?? (checked ? `${choice.deviceReason}; ${checked}` : choice.deviceReason);
  setActive(enc, spec, fallbackReason, deviceReason, queryEnc);
  return {
    modelId: spec.id,
    device: enc.device,
    dtype: enc.dtype,
    threads: enc.threads,
    dim: enc.dim,
    ortBuild,
    ...(fallbackReason ? { fallbackReason } : {}),
    deviceReason,
    reason: fallbackReason
      ? `${fallbackReason}; ${choice.reason}`
      : checked
        ? `${choice.reason}; ${checked}`
        : choice.reason,
    ...verdictInfo,
    loadMs: cached ? 0 : performance.now() - t0,
    cached,
    cacheQueued: queuedModelFiles(),
  };
}
