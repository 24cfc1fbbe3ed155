// The encoder worker's model cache and active model: one promise per (model, revision, dtype,
// device), the model calls run on, the GPU device it watches for loss, and the WebGPU-failure rule
// every call on the active model goes through (onActive).
import { env } from '@huggingface/transformers';
import type { ModelSpec } from '../../src/lib/core/retrieval/models';
import { errorText, webGpuFailed } from './environment';
import type { Encoder } from './types';

interface GpuDeviceLike {
  lost: Promise<{ message: string; reason?: string }>;
  destroy(): void;
}
/** DEVICE_WAIT_MS: how long a load waits for ORT to hand out its GPUDevice (to watch for device loss). */
const DEVICE_WAIT_MS = 2000;
/** ORT's GPUDevice once a WebGPU session exists (one per worker). */
let gpuDevice: GpuDeviceLike | null = null;

/** One promise per (model, revision, dtype, device); failed loads are evicted. */
export const encoders = new Map<string, Promise<Encoder>>();
/** The model embedTexts, embedImages, rerank… run on (the last one loaded). */
let active: Encoder | null = null;
/** Where single text queries run when not on `active` (WASM, measured faster at load: device-policy.ts). */
let activeQuery: Encoder | null = null;
/** The spec of the last load(): how embedTexts/embedImages pool, prefix and truncate. */
let activeSpec: ModelSpec | null = null;
/** Why the active model is not on WebGPU although WebGPU was tried. */
let activeFallbackReason: string | undefined;
/** Why the active model runs where it does (LoadedEncoder.deviceReason). */
let activeDeviceReason = '';

/** Marks the encoder lost when ORT's GPU device goes away (driver reset, tab backgrounded on mobile…). */
export async function watchDevice(enc: Encoder): Promise<void> {
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

/** Frees a loaded model's sessions (errors ignored: it is being dropped). */
export async function disposeEncoder(enc: Encoder): Promise<void> {
  await Promise.all([
    enc.textModel.dispose().catch(() => undefined),
    enc.visionModel?.dispose().catch(() => undefined),
  ]);
}

/** Removes one model from the cache and frees it (the parity check's WASM copy when it is not used). */
export async function dropEncoder(key: string): Promise<void> {
  const p = encoders.get(key);
  if (!p) return;
  encoders.delete(key);
  await p.then(disposeEncoder, () => undefined);
}

/** The active encoder; a WebGPU one whose device was lost since is a WebGPU failure. */
export function current(): Encoder {
  if (!active) throw new Error('no encoder loaded: call load() first');
  if (active.lost) throw webGpuFailed(active.lost);
  return active;
}

/**
 * Runs `fn` on the active encoder (with the spec of the last load). Any failure on WebGPU (device
 * lost, an op the WebGPU EP cannot run) is reported as WEBGPU_FAILED, for the client to restart on WASM.
 */
export async function onActive<T>(fn: (enc: Encoder, spec: ModelSpec) => Promise<T>): Promise<T> {
  const enc = current();
  try {
    return await fn(enc, activeSpec ?? enc.spec);
  } catch (e) {
    if (enc.device !== 'webgpu') throw e;
    enc.lost ??= errorText(e);
    throw webGpuFailed(enc.lost);
  }
}

/** Runs `fn` on the single-text-query encoder: the WASM one when it was faster at load, else onActive. */
export async function onQuery<T>(fn: (enc: Encoder, spec: ModelSpec) => Promise<T>): Promise<T> {
  const q = activeQuery;
  if (!q || !active || active.lost) return onActive(fn);
  return fn(q, activeSpec ?? q.spec);
}

/** Makes `enc` the active encoder, used with `spec` until the next load (`query`: for single text queries). */
export function setActive(
  enc: Encoder,
  spec: ModelSpec,
  fallbackReason: string | undefined,
  deviceReason: string,
  query?: Encoder,
): void {
  active = enc;
  activeQuery = query && query !== enc ? query : null;
  activeSpec = spec;
  activeFallbackReason = fallbackReason;
  activeDeviceReason = deviceReason;
}

/** Where the active model runs now (it moves to WASM if its GPU device is lost). */
export function activeBackend() {
  if (!active) return null;
  return {
    modelId: activeSpec?.id ?? active.spec.id,
    device: active.device,
    dtype: active.dtype,
    threads: active.threads,
    ...(activeQuery ? { queryDevice: activeQuery.device } : {}),
    deviceReason: active.lost ? `WebGPU failed (${active.lost})` : activeDeviceReason,
    ...(active.lost ? { lost: active.lost } : {}),
    ...(activeFallbackReason ? { fallbackReason: activeFallbackReason } : {}),
  };
}

/** Test only: destroys the GPU device ORT uses, as a driver reset would. Returns whether there was one. */
export function simulateDeviceLoss(): boolean {
  if (!gpuDevice) return false;
  gpuDevice.destroy();
  return true;
}
