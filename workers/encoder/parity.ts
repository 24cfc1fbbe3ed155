// The WebGPU parity check and query-speed measurement, at the first WebGPU load of each (model files,
// dtype, adapter) in this worker: a few fixed texts (and a generated image for image–text models) are
// embedded on WebGPU and on WASM; below the policy's cosine the load continues on WASM with the reason.
// When parity holds, a few single text queries are timed on each device and the faster one answers
// single text queries from then on. Verdicts are cached here for the worker's life, and by the client
// for the page (passed back as LoadOptions.knownVerdicts to a worker restarted after a cancel).
import { RawImage } from '@huggingface/transformers';
import type { Dtype, ModelSpec } from '../../src/lib/core/retrieval/models';
import {
  afterParityFailure,
  referenceDtype,
  chooseQueryDevice,
  cosine,
  PARITY_TEXTS,
  parityVerdict,
  perturbVector,
  verdictKey,
  type DeviceVerdict,
  type ParityInput,
} from '../../src/lib/platform/gpu/device-policy';
import { errorText, fetchFailures, modelFetchError, webGpuFailed } from './environment';
import { embedImageBatch } from './image';
import { embedTextBatch } from './text';
import type { Encoder, LoadOptions, LoadedEncoder, OnProgress } from './types';

/** Side of the generated parity image (a colour gradient with a diagonal stripe). */
export const PARITY_IMAGE_SIZE = 64;
/** QUERY_TIMINGS: single text queries timed on each device (after the parity runs warmed both). */
export const QUERY_TIMINGS = 3;
const QUERY_TEXT = 'chest x-ray findings of heart failure';

/** Verdicts by verdictKey, for this worker's life (a check in progress is shared; a failed one is forgotten). */
const verdicts = new Map<string, Promise<DeviceVerdict>>();

/** A deterministic RGB test image: red and green gradients, blue on a diagonal stripe. */
export function parityImage(size = PARITY_IMAGE_SIZE): RawImage {
  const px = new Uint8ClampedArray(size * size * 3);
  for (let y = 0; y < size; y++)
    for (let x = 0; x < size; x++) {
      const o = (y * size + x) * 3;
      px[o] = (255 * x) / (size - 1);
      px[o + 1] = (255 * y) / (size - 1);
      px[o + 2] = Math.abs(x - y) < size / 8 ? 255 : 32;
    }
  return new RawImage(px, size, size, 3);
}

/** Embeds the fixed inputs with one encoder: one vector per input, with its label. */
async function embedFixed(enc: Encoder, spec: ModelSpec): Promise<{ label: string; v: Float32Array }[]> {
  const out: { label: string; v: Float32Array }[] = [];
  const t = await embedTextBatch(enc, spec, [...PARITY_TEXTS], 'document');
  const dim = t.length / PARITY_TEXTS.length;
  PARITY_TEXTS.forEach((s, i) =>
    out.push({
      label: `text "${s.length > 40 ? `${s.slice(0, 40)}…` : s}"`,
      v: t.subarray(i * dim, (i + 1) * dim),
    }),
  );
  if (enc.visionModel) {
    const img = await embedImageBatch(enc, spec, [parityImage()]);
    out.push({ label: `generated image ${PARITY_IMAGE_SIZE}×${PARITY_IMAGE_SIZE}`, v: img });
  }
  return out;
}

async function timeQuery(enc: Encoder, spec: ModelSpec): Promise<number> {
  const t0 = performance.now();
  await embedTextBatch(enc, spec, [QUERY_TEXT], 'query');
  return performance.now() - t0;
}

function keyOf(spec: ModelSpec, dtype: Dtype, adapter: string, simulateMismatch: boolean): string {
  const model = `${spec.local ? 'local:' : ''}${spec.localPath ?? spec.hubId}`;
  return verdictKey(model, spec.revision, dtype, adapter, simulateMismatch);
}

/**
 * A verdict already known for `spec` at `dtype` on `adapter` (this worker's, or one the page passed to
 * a restarted worker), before any WebGPU session is made: a failed one spares loading the model on
 * WebGPU only to leave it. Null when none is known (or its check is still running and fails).
 */
export async function knownVerdict(
  spec: ModelSpec,
  dtype: Dtype,
  adapter: string,
  simulateMismatch: boolean,
  known: [string, DeviceVerdict][] = [],
): Promise<{ verdict: DeviceVerdict; key: string } | null> {
  const key = keyOf(spec, dtype, adapter, simulateMismatch);
  const hit = verdicts.get(key);
  if (hit) return hit.then((verdict) => ({ verdict, key })).catch(() => null);
  const given = known.find(([k]) => k === key)?.[1];
  return given ? { verdict: given, key } : null;
}

/**
 * The verdict for a WebGPU encoder: cached, or measured against `wasm` (loaded on demand; the caller
 * keeps it for queries or the fallback). WebGPU errors propagate (the caller's WebGPU failure rule).
 */
export async function deviceVerdict(
  spec: ModelSpec,
  gpu: Encoder,
  refDtype: Dtype,
  adapter: string,
  simulateMismatch: boolean,
  loadWasm: () => Promise<Encoder>,
  report: OnProgress,
  known: [string, DeviceVerdict][] = [],
): Promise<{ verdict: DeviceVerdict; cached: boolean; key: string }> {
  const key = keyOf(spec, gpu.dtype, adapter, simulateMismatch);
  const hit = verdicts.get(key);
  if (hit) return { verdict: await hit, cached: true, key };
  const given = known.find(([k]) => k === key)?.[1];
  if (given) {
    verdicts.set(key, Promise.resolve(given));
    return { verdict: given, cached: true, key };
  }
  const promise = measure(spec, gpu, refDtype, simulateMismatch, loadWasm, report);
  verdicts.set(key, promise);
  promise.catch(() => {
    if (verdicts.get(key) === promise) verdicts.delete(key);
  });
  return { verdict: await promise, cached: false, key };
}

/** Runs the parity check, and when it passes the single-query timings. */
async function measure(
  spec: ModelSpec,
  gpu: Encoder,
  refDtype: Dtype,
  simulateMismatch: boolean,
  loadWasm: () => Promise<Encoder>,
  report: OnProgress,
): Promise<DeviceVerdict> {
  report({ kind: 'status', message: `Checking WebGPU against WASM (${spec.label ?? spec.id})` });
  const wasm = await loadWasm();
  const onGpu = await embedFixed(gpu, spec);
  const onWasm = await embedFixed(wasm, spec);
  const inputs: ParityInput[] = onGpu.map((g, i) => ({
    label: g.label,
    cosine: cosine(simulateMismatch ? perturbVector(g.v) : g.v, onWasm[i].v),
  }));
  const parity = parityVerdict(inputs, gpu.dtype, refDtype, simulateMismatch);
  let verdict: DeviceVerdict = { parity };
  if (parity.ok) {
    report({ kind: 'status', message: `Timing one text query on WebGPU and on WASM` });
    const g: number[] = [];
    const w: number[] = [];
    for (let i = 0; i < QUERY_TIMINGS; i++) {
      g.push(await timeQuery(gpu, spec));
      w.push(await timeQuery(wasm, spec));
    }
    verdict = { parity, query: chooseQueryDevice(g, w) };
  }
  return verdict;
}

/** The WASM copies of the model being loaded, by dtype (load.ts's encoder cache). */
export interface WasmCopies {
  get(dtype: Dtype): Promise<Encoder>;
  has(dtype: Dtype): boolean;
  drop(dtype: Dtype): Promise<void>;
}

/** What the checks decided for a WebGPU load (load.ts applies it). */
export interface WebGpuCheck {
  /** The encoder the model runs on: the WebGPU one, or the WASM one after a failed check. */
  enc: Encoder;
  fallbackReason?: string;
  /** The parity and query-timing lines for the device reason (when the check passed). */
  checked?: string;
  /** The WASM encoder for single text queries (when it was faster, and queries are not pinned). */
  queryEnc?: Encoder;
  info: Pick<LoadedEncoder, 'parity' | 'queryDevice'>;
  /** Automatic fp16 failed the check: load again in this dtype (on WebGPU), and why. */
  retry?: { dtype: Dtype; why: string };
}

/**
 * The parity check and query timing for a WebGPU encoder, and what follows from them: stay on WebGPU
 * (single queries on WASM when faster), retry fp32, or continue on WASM. Errors while checking are
 * WebGPU failures (the client's WASM restart), except model files that could not be downloaded.
 */
export async function checkWebGpu(
  spec: ModelSpec,
  gpu: Encoder,
  opts: LoadOptions,
  adapter: string,
  report: OnProgress,
  wasm: WasmCopies,
): Promise<WebGpuCheck> {
  const refDtype = referenceDtype(gpu.dtype, spec.dtypes);
  // The WASM copy the check loads is dropped afterwards unless it is used (queries, fallback).
  const hadWasm = wasm.has(refDtype);
  let v: Awaited<ReturnType<typeof deviceVerdict>>;
  try {
    v = await deviceVerdict(
      spec,
      gpu,
      refDtype,
      adapter,
      opts.simulateParityMismatch === true,
      () => wasm.get(refDtype),
      report,
      opts.knownVerdicts,
    );
  } catch (e) {
    if (fetchFailures.length) throw modelFetchError(spec, e);
    throw webGpuFailed(`the WebGPU parity check could not run: ${errorText(e)}`);
  }
  const { parity, query } = v.verdict;
  const info = {
    parity: { ...parity, cached: v.cached, key: v.key },
    ...(query ? { queryDevice: query } : {}),
  };
  if (!parity.ok) {
    const next = afterParityFailure(gpu.dtype, spec.dtypes, (opts.dtype ?? 'auto') === 'auto');
    if (next.device === 'webgpu') return { enc: gpu, info, retry: { dtype: next.dtype, why: parity.reason } };
    return {
      enc: await wasm.get(next.dtype),
      fallbackReason: `${parity.reason}; running on WASM (${next.dtype})`,
      info,
    };
  }
  const checked = query ? `${parity.reason}; ${query.reason}` : parity.reason;
  if (query?.device === 'wasm' && !opts.pinQueries)
    return { enc: gpu, checked, queryEnc: await wasm.get(refDtype), info };
  if (!hadWasm) await wasm.drop(refDtype);
  return { enc: gpu, checked, info };
}
