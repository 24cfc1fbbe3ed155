// Which backend this browser can run: WebGPU (an adapter, and shader-f16 for fp16 weights) or WASM
// (threads only when cross-origin isolated). Works in the page and in workers. One probe serves every
// WebGPU user (encoders, rerankers, exact search): a software adapter (SwiftShader, llvmpipe,
// lavapipe, Microsoft Basic Render/WARP) emulates the GPU on the CPU, correct but many times slower
// than WASM, so `auto` never takes one; only an explicit 'webgpu' does.
import type { Dtype } from '../../core/retrieval/models';

export type Device = 'webgpu' | 'wasm';

/** What the probe found, for the UI and for the encoder's choice. */
export interface BackendProbe {
  webgpu: boolean;
  /** Why WebGPU is not usable, when it is not. */
  webgpuReason?: string;
  /** Software adapter (SwiftShader, WARP…): works, but slower than WASM on most machines. */
  fallbackAdapter: boolean;
  /** The software renderer's name when the adapter is one ('SwiftShader', 'llvmpipe'…, or 'fallback adapter'). */
  software?: string;
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
  /** Why this device, in one line (for a run's description): e.g. "software WebGPU adapter (SwiftShader) — using WASM". */
  deviceReason: string;
  /** deviceReason plus threads and dtype. */
  reason: string;
  /** The dtype chosen and why, in words ("fp32 (no shader-f16)"); on WebGPU also part of deviceReason. */
  dtypeReason: string;
  /** Set when a requested dtype was not used (fp16 on an adapter without shader-f16), and why. */
  dtypeNote?: string;
  probe: BackendProbe;
}

/**
 * The onnxruntime-web WASM build an encoder worker runs: `plain` (ort-wasm-simd-threaded.wasm, 14 MB)
 * or `asyncify` (ort-wasm-simd-threaded.asyncify.wasm, 27 MB), which the WebGPU execution provider
 * needs. A worker picks one before its first session and keeps it (ONNX Runtime initialises once).
 * On a fresh visit here the plain build made the first dense result 4.16 s → 2.95 s: it compiles in
 * half the time, and the query's own work ran without the asyncify build's load on the CPU
 * (BENCHMARKS.md, first dense result).
 */
export type OrtBuild = 'plain' | 'asyncify';

/**
 * The build for a worker whose first session goes to `device`: asyncify for WebGPU, and for WASM
 * wherever `auto` could later put a model on WebGPU in the same worker (a hardware adapter); plain
 * where it cannot (no WebGPU, or only a software adapter). A later explicit WebGPU load in a plain
 * worker restarts the worker (ORT_BUILD_RESTART), as a WebGPU failure does.
 */
export function ortBuildFor(device: Device, probe: BackendProbe): OrtBuild {
  if (device === 'webgpu') return 'asyncify';
  const hardwareGpu = probe.webgpu && !probe.software && !probe.fallbackAdapter;
  return hardwareGpu ? 'asyncify' : 'plain';
}

/** MAX_WASM_THREADS: ORT WASM threads at most (more than 2 was slower on 2-core machines). */
export const MAX_WASM_THREADS = 2;

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

/** Software renderers by the names adapters report (vendor, architecture, device, description). */
const SOFTWARE_RENDERERS: [RegExp, string][] = [
  [/swiftshader/i, 'SwiftShader'],
  [/llvmpipe/i, 'llvmpipe'],
  [/lavapipe/i, 'lavapipe'],
  [/microsoft basic render/i, 'Microsoft Basic Render Driver'],
  [/\bwarp\b/i, 'WARP'],
];

/**
 * The software renderer behind an adapter, or undefined for hardware: its name from the adapter's
 * info, else 'fallback adapter' when only `isFallbackAdapter` (info's, or the adapter's older flag) says so.
 */
export function softwareAdapter(adapter: {
  isFallbackAdapter?: boolean;
  info?: {
    vendor?: string;
    architecture?: string;
    device?: string;
    description?: string;
    isFallbackAdapter?: boolean;
  };
}): string | undefined {
  const i = adapter.info;
  const text = [i?.vendor, i?.architecture, i?.device, i?.description].filter(Boolean).join(' ');
  for (const [re, name] of SOFTWARE_RENDERERS) if (re.test(text)) return name;
  return i?.isFallbackAdapter === true || adapter.isFallbackAdapter === true ? 'fallback adapter' : undefined;
}

/** Why `auto` does not use a software adapter, as runs and the UI show it. */
export function softwareReason(software: string, instead = 'WASM'): string {
  return `software WebGPU adapter (${software}) — using ${instead}`;
}

/** A WebGPU adapter and what the probe found (the adapter cannot cross a worker boundary; the probe can). */
export type GpuProbe =
  | {
      ok: true;
      adapter: GPUAdapter;
      /** Software adapter (SwiftShader, llvmpipe…): its name; undefined on hardware. */
      software?: string;
      fallbackAdapter: boolean;
      description: string;
      probe: BackendProbe;
    }
  | { ok: false; reason: string; probe: BackendProbe };

/**
 * The one WebGPU probe (navigator.gpu → adapter → features, no device created), for the encoders'
 * choice and exact search. Never throws.
 */
export async function probeWebGpu(): Promise<GpuProbe> {
  const base = {
    crossOriginIsolated: globalThis.crossOriginIsolated === true,
    hardwareConcurrency: navigatorCores(),
    fallbackAdapter: false,
    shaderF16: false,
  };
  const fail = (reason: string): GpuProbe => ({
    ok: false,
    reason,
    probe: { ...base, webgpu: false, webgpuReason: reason },
  });
  const gpu = (globalThis.navigator as Navigator | undefined)?.gpu;
  if (!gpu) return fail('this browser has no WebGPU (navigator.gpu)');
  let adapter: GPUAdapter | null = null;
  try {
    adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  } catch (e) {
    return fail(`requesting a WebGPU adapter failed: ${(e as Error)?.message ?? e}`);
  }
  if (!adapter) return fail('no WebGPU adapter (GPU blocked or unsupported)');
  const info = adapter.info as GPUAdapterInfo | undefined;
  const software = softwareAdapter(adapter as Parameters<typeof softwareAdapter>[0]);
  const description =
    [info?.vendor, info?.architecture, info?.device, info?.description].filter(Boolean).join(' ') ||
    'unknown';
  const probe: BackendProbe = {
    ...base,
    webgpu: true,
    fallbackAdapter: software !== undefined,
    ...(software ? { software } : {}),
    shaderF16: adapter.features.has('shader-f16'),
    adapterInfo: description,
  };
  return { ok: true, adapter, software, fallbackAdapter: software !== undefined, description, probe };
}

/** What probeWebGpu found, without the adapter (structured-clone friendly). Never throws. */
export async function probeBackend(): Promise<BackendProbe> {
  return (await probeWebGpu()).probe;
}

/**
 * Picks device, dtype and threads. `auto` takes WebGPU only on a hardware adapter (a software one
 * gives WASM, and says so); `preferred` forces a device ('wasm' always works; 'webgpu' whenever an
 * adapter exists, software included), `dtype` forces a weight variant; otherwise fp16 on WebGPU with
 * shader-f16, fp32 on WebGPU without it, and the model's first listed dtype (q8 for hub models) on WASM.
 * fp16 is never chosen for WebGPU without shader-f16.
 */
export function chooseBackend(
  probe: BackendProbe,
  opts: {
    preferred?: 'auto' | Device;
    dtype?: Dtype | 'auto';
    available?: Dtype[];
    /** Why an explicit dtype was asked for, instead of "as requested" (the worker's fp16 → fp32 retry). */
    dtypeWhy?: string;
    /**
     * The dtypes the open shard has embeddings of this model for (its precomputed sets and packed
     * indexes): with `dtype` auto, one of them is taken over the device's default when the default is
     * not among them, so that the corpus is not embedded again for want of a dtype.
     */
    setDtypes?: readonly Dtype[];
  } = {},
): BackendChoice {
  const available = opts.available?.length ? opts.available : (['fp32'] as Dtype[]);
  const threads = wasmThreads(probe.crossOriginIsolated, probe.hardwareConcurrency);
  const threadNote = probe.crossOriginIsolated
    ? `${threads} WASM thread${threads === 1 ? '' : 's'}`
    : '1 WASM thread (page not cross-origin isolated)';
  const preferred = opts.preferred ?? 'auto';
  const software = probe.webgpu
    ? (probe.software ?? (probe.fallbackAdapter ? 'fallback adapter' : undefined))
    : undefined;
  const wantGpu = probe.webgpu && (preferred === 'webgpu' || (preferred === 'auto' && !software));
  const device: Device = wantGpu ? 'webgpu' : 'wasm';
  let dtype: Dtype;
  let dtypeWhy: string;
  let dtypeNote: string | undefined;
  if (opts.dtype && opts.dtype !== 'auto') {
    dtype = opts.dtype;
    dtypeWhy = opts.dtypeWhy ? `${dtype} (${opts.dtypeWhy})` : `${dtype} as requested`;
    if (device === 'webgpu' && dtype === 'fp16' && !probe.shaderF16) {
      dtype = available.includes('fp32') ? 'fp32' : available[0];
      dtypeWhy = `${dtype}: the adapter has no shader-f16, fp16 was not used`;
      dtypeNote = 'fp16 was not used: the adapter has no shader-f16';
    }
  } else if (device === 'webgpu') {
    dtype =
      probe.shaderF16 && available.includes('fp16')
        ? 'fp16'
        : available.includes('fp32')
          ? 'fp32'
          : available[0];
    dtypeWhy =
      dtype === 'fp16'
        ? 'fp16 (shader-f16 available, the model has fp16 weights; checked against WASM fp32)'
        : !probe.shaderF16
          ? `${dtype} (no shader-f16)`
          : !available.includes('fp16')
            ? `${dtype} (shader-f16 available, but the model has no fp16 weights)`
            : `${dtype} (shader-f16 available)`;
  } else {
    dtype = available[0];
    dtypeWhy = `${dtype} (model default for WASM)`;
  }
  const sets = (opts.dtype ?? 'auto') === 'auto' ? available.filter((d) => opts.setDtypes?.includes(d)) : [];
  if (sets.length && !sets.includes(dtype)) {
    // On WebGPU the unquantised weights first (fp16 only with shader-f16); on WASM the model's order.
    const order: Dtype[] =
      device === 'webgpu'
        ? [...(probe.shaderF16 ? (['fp16'] as Dtype[]) : []), 'fp32', ...available]
        : available;
    const pick = order.find(
      (d) => sets.includes(d) && (d !== 'fp16' || device !== 'webgpu' || probe.shaderF16),
    );
    if (pick) {
      dtype = pick;
      dtypeWhy = `${dtype} (the shard's embeddings of this model are for ${dtype} queries)`;
    }
  }
  let deviceReason: string;
  if (device === 'webgpu') {
    // The dtype is part of a WebGPU run's device reason: which weights ran on the GPU, and why.
    const on = probe.adapterInfo ? ` on ${probe.adapterInfo}` : '';
    deviceReason = software
      ? `WebGPU as requested${on} (software adapter ${software}: correct, slower than WASM); ${dtypeWhy}`
      : `WebGPU${on}; ${dtypeWhy}`;
  } else if (preferred === 'wasm') {
    deviceReason = 'WASM as requested';
  } else if (software) {
    deviceReason = softwareReason(software);
  } else {
    deviceReason = `WASM because ${probe.webgpuReason ?? 'WebGPU is unavailable'}`;
  }
  const reason = device === 'webgpu' ? deviceReason : `${deviceReason}; ${threadNote}; ${dtypeWhy}`;
  return {
    device,
    dtype,
    threads,
    deviceReason,
    reason,
    dtypeReason: dtypeWhy,
    ...(dtypeNote ? { dtypeNote } : {}),
    probe,
  };
}

/** Probes and chooses in one call. */
export async function detectBackend(opts: Parameters<typeof chooseBackend>[1] = {}): Promise<BackendChoice> {
  return chooseBackend(await probeBackend(), opts);
}
