// Which ONNX Runtime backend this browser can run: WebGPU (an adapter, and shader-f16 for fp16
// weights) or WASM (threads only when cross-origin isolated). Works in the page and in workers.
import type { Dtype } from '../core/models';

export type Device = 'webgpu' | 'wasm';

/** What the probe found, for the UI and for the encoder's choice. */
export interface BackendProbe {
  webgpu: boolean;
  /** Why WebGPU is not usable, when it is not. */
  webgpuReason?: string;
  /** Software adapter (SwiftShader, WARP…): works, but slower than WASM on most machines. */
  fallbackAdapter: boolean;
  shaderF16: boolean;
  adapterInfo?: string;
  crossOriginIsolated: boolean;
  hardwareConcurrency: number;
}

/** The backend to use and why. */
export interface BackendChoice {
  device: Device;
  dtype: Dtype;
  /** ORT WASM threads (also used by WebGPU sessions for the ops it leaves on the CPU). */
  threads: number;
  reason: string;
  probe: BackendProbe;
}

/** MAX_WASM_THREADS: ORT WASM threads at most (more than 2 was slower on 2-core machines). */
export const MAX_WASM_THREADS = 2;

interface GpuAdapterLike {
  features: { has(name: string): boolean };
  isFallbackAdapter?: boolean;
  info?: {
    vendor?: string;
    architecture?: string;
    device?: string;
    description?: string;
    isFallbackAdapter?: boolean;
  };
}
interface GpuLike {
  requestAdapter(opts?: {
    powerPreference?: 'high-performance' | 'low-power';
  }): Promise<GpuAdapterLike | null>;
}

/** WASM threads for this context: MAX_WASM_THREADS when cross-origin isolated (SharedArrayBuffer), else 1. */
export function wasmThreads(
  isolated = globalThis.crossOriginIsolated === true,
  cores = navigatorCores(),
): number {
  return isolated ? Math.max(1, Math.min(MAX_WASM_THREADS, cores)) : 1;
}

function navigatorCores(): number {
  return (globalThis.navigator as Navigator | undefined)?.hardwareConcurrency ?? 1;
}

/** Probes WebGPU (navigator.gpu → adapter → features) without creating a device. Never throws. */
export async function probeBackend(): Promise<BackendProbe> {
  const base = {
    crossOriginIsolated: globalThis.crossOriginIsolated === true,
    hardwareConcurrency: navigatorCores(),
  };
  const gpu = (globalThis.navigator as (Navigator & { gpu?: GpuLike }) | undefined)?.gpu;
  if (!gpu)
    return {
      ...base,
      webgpu: false,
      webgpuReason: 'this browser has no WebGPU (navigator.gpu)',
      fallbackAdapter: false,
      shaderF16: false,
    };
  let adapter: GpuAdapterLike | null = null;
  try {
    adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  } catch (e) {
    return {
      ...base,
      webgpu: false,
      webgpuReason: `requesting a WebGPU adapter failed: ${(e as Error)?.message ?? e}`,
      fallbackAdapter: false,
      shaderF16: false,
    };
  }
  if (!adapter)
    return {
      ...base,
      webgpu: false,
      webgpuReason: 'no WebGPU adapter (GPU blocked or unsupported)',
      fallbackAdapter: false,
      shaderF16: false,
    };
  const info = adapter.info;
  const fallbackAdapter = adapter.isFallbackAdapter === true || info?.isFallbackAdapter === true;
  const described = [info?.vendor, info?.architecture, info?.device, info?.description]
    .filter(Boolean)
    .join(' ');
  return {
    ...base,
    webgpu: true,
    fallbackAdapter,
    shaderF16: adapter.features.has('shader-f16'),
    adapterInfo: described || undefined,
  };
}

/**
 * Picks device, dtype and threads. `preferred` forces a device ('wasm' always works; 'webgpu' only
 * when an adapter exists), `dtype` forces a weight variant; otherwise fp16 on WebGPU with
 * shader-f16, fp32 on WebGPU without it, and the model's first listed dtype (q8 for hub models) on WASM.
 * fp16 is never chosen for WebGPU without shader-f16.
 */
export function chooseBackend(
  probe: BackendProbe,
  opts: { preferred?: 'auto' | Device; dtype?: Dtype | 'auto'; available?: Dtype[] } = {},
): BackendChoice {
  const available = opts.available?.length ? opts.available : (['fp32'] as Dtype[]);
  const threads = wasmThreads(probe.crossOriginIsolated, probe.hardwareConcurrency);
  const threadNote = probe.crossOriginIsolated
    ? `${threads} WASM thread${threads === 1 ? '' : 's'}`
    : '1 WASM thread (page not cross-origin isolated)';
  const preferred = opts.preferred ?? 'auto';
  const wantGpu = preferred !== 'wasm' && probe.webgpu;
  const device: Device = wantGpu ? 'webgpu' : 'wasm';
  let dtype: Dtype;
  let dtypeWhy: string;
  if (opts.dtype && opts.dtype !== 'auto') {
    dtype = opts.dtype;
    dtypeWhy = `${dtype} as requested`;
    if (device === 'webgpu' && dtype === 'fp16' && !probe.shaderF16) {
      dtype = available.includes('fp32') ? 'fp32' : available[0];
      dtypeWhy = `${dtype}: the adapter has no shader-f16, fp16 was not used`;
    }
  } else if (device === 'webgpu') {
    dtype =
      probe.shaderF16 && available.includes('fp16')
        ? 'fp16'
        : available.includes('fp32')
          ? 'fp32'
          : available[0];
    dtypeWhy = probe.shaderF16 ? `${dtype} (shader-f16 available)` : `${dtype} (no shader-f16)`;
  } else {
    dtype = available[0];
    dtypeWhy = `${dtype} (model default for WASM)`;
  }
  let reason: string;
  if (device === 'webgpu') {
    reason = `WebGPU${probe.adapterInfo ? ` on ${probe.adapterInfo}` : ''}${probe.fallbackAdapter ? ' (software fallback adapter)' : ''}; ${dtypeWhy}`;
  } else if (preferred === 'wasm') {
    reason = `WASM as requested; ${threadNote}; ${dtypeWhy}`;
  } else {
    reason = `WASM because ${probe.webgpuReason ?? 'WebGPU is unavailable'}; ${threadNote}; ${dtypeWhy}`;
  }
  return { device, dtype, threads, reason, probe };
}

/** Probes and chooses in one call. */
export async function detectBackend(
  opts: { preferred?: 'auto' | Device; dtype?: Dtype | 'auto'; available?: Dtype[] } = {},
): Promise<BackendChoice> {
  return chooseBackend(await probeBackend(), opts);
}
