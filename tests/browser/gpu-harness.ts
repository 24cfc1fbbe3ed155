// Page-side half of `npm run bench:gpu -- --browser` (scripts/lib/gpu-browser.ts): the same
// measurements as in Node (scripts/lib/gpu-measure.ts), run with the browser's own navigator.gpu and
// the onnxruntime-web build transformers.js loads (`onnxruntime-web/webgpu` on the asyncify WASM),
// model files fetched from the dev server's /models/. Served by the Vite dev server; never part of
// the app build.
/// <reference types="vite/client" />
import type * as OrtNS from 'onnxruntime-web';
import ortWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import ortMjsUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.mjs?url';
import {
  describeAdapter,
  measureEncoder,
  measureExact,
  type GpuDtype,
  type MeasureOptions,
} from '../../scripts/lib/gpu-measure';

type Ort = typeof OrtNS;
let ortPromise: Promise<Ort> | null = null;
const lines: string[] = [];
const log = (line: string) => lines.push(line);

function ort(threads: number): Promise<Ort> {
  ortPromise ??= (async () => {
    const mod = (await import('onnxruntime-web/webgpu')) as Ort & { default?: Ort };
    const o = mod.default?.InferenceSession ? mod.default : mod;
    o.env.wasm.wasmPaths = {
      wasm: new URL(ortWasmUrl, location.href).href,
      mjs: new URL(ortMjsUrl, location.href).href,
    };
    // Threads need a cross-origin isolated page (the dev server sends COOP/COEP).
    o.env.wasm.numThreads = crossOriginIsolated ? threads : 1;
    o.env.webgpu.powerPreference = 'high-performance';
    o.env.logLevel = 'error';
    return o;
  })();
  return ortPromise;
}

const harness = {
  async adapter() {
    return {
      adapter: navigator.gpu ? await describeAdapter() : null,
      userAgent: navigator.userAgent,
      isolated: crossOriginIsolated,
      cores: navigator.hardwareConcurrency,
    };
  },
  async encoder(
    model: string,
    part: 'text' | 'vision',
    dtype: GpuDtype,
    shaderF16: boolean,
    threads: number,
    opts: MeasureOptions,
  ) {
    const o = await ort(threads);
    lines.length = 0;
    const base = new URL(`/models/generated/${model}/`, location.href);
    const row = await measureEncoder({
      ort: o,
      model,
      part,
      dtype,
      shaderF16,
      read: async (file) => {
        const res = await fetch(new URL(file, base));
        if (!res.ok) throw new Error(`${model}/${file}: HTTP ${res.status}`);
        return new Uint8Array(await res.arrayBuffer());
      },
      opts,
      log,
    });
    return {
      row,
      lines: [...lines],
      ortVersion: o.env.versions?.web ?? null,
      threads: o.env.wasm.numThreads ?? 1,
    };
  },
  async exact(opts: MeasureOptions) {
    lines.length = 0;
    const row = await measureExact(opts, log);
    return { row, lines: [...lines] };
  },
};

export type GpuHarness = typeof harness;
(window as unknown as { gpuHarness: GpuHarness }).gpuHarness = harness;
document.getElementById('status')!.textContent = 'ready';
