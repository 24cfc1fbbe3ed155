// Raw onnxruntime-web in a worker, without transformers.js: times InferenceSession.run on inputs
// tokenized elsewhere, with the plain SIMD+threads WASM build (`onnxruntime-web/wasm`) or the
// asyncify build that transformers.js's `onnxruntime-web/webgpu` import loads (what the product
// runs). Used by scripts/bench-encode.ts to split the browser's cost into kernels vs everything else.
/// <reference types="vite/client" />
import * as Comlink from 'comlink';
import type * as OrtNS from 'onnxruntime-web';
import plainWasm from 'onnxruntime-web/ort-wasm-simd-threaded.wasm?url';
import plainMjs from 'onnxruntime-web/ort-wasm-simd-threaded.mjs?url';
import asyncWasm from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import asyncMjs from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.mjs?url';

export type OrtBuild = 'plain' | 'asyncify';

/** One input tensor: int64 ids as plain numbers, or float32 values. */
export interface PlainTensor {
  name: string;
  type: 'int64' | 'float32';
  data: number[] | Float32Array;
  dims: number[];
}

let ort: typeof OrtNS | null = null;
let session: OrtNS.InferenceSession | null = null;

const api = {
  async init(build: OrtBuild, threads: number): Promise<{ version: string }> {
    if (ort) throw new Error('init once per worker (the thread count is read before the first session)');
    const mod = (
      build === 'plain' ? await import('onnxruntime-web/wasm') : await import('onnxruntime-web/webgpu')
    ) as typeof OrtNS & { default?: typeof OrtNS };
    ort = mod.default?.InferenceSession ? mod.default : mod;
    const wasm = ort.env.wasm;
    wasm.wasmPaths = {
      wasm: new URL(build === 'plain' ? plainWasm : asyncWasm, self.location.href).href,
      mjs: new URL(build === 'plain' ? plainMjs : asyncMjs, self.location.href).href,
    };
    wasm.numThreads = threads;
    return { version: ort.env.versions?.web ?? '?' };
  },

  async load(url: string): Promise<{ inputs: readonly string[]; outputs: readonly string[] }> {
    if (!ort) throw new Error('init first');
    const bytes = new Uint8Array(await (await fetch(url)).arrayBuffer());
    session = await ort.InferenceSession.create(bytes, {
      executionProviders: ['wasm'],
      graphOptimizationLevel: 'all',
    });
    return { inputs: session.inputNames, outputs: session.outputNames };
  },

  /** Runs every batch once per repeat; returns the wall time of each repeat in ms. */
  async time(batches: PlainTensor[][], repeats: number): Promise<number[]> {
    if (!ort || !session) throw new Error('load first');
    const O = ort;
    const feeds = batches.map((b) =>
      Object.fromEntries(
        b.map((t) => [
          t.name,
          t.type === 'int64'
            ? new O.Tensor(
                'int64',
                BigInt64Array.from(t.data as number[], (v) => BigInt(v)),
                t.dims,
              )
            : new O.Tensor('float32', Float32Array.from(t.data), t.dims),
        ]),
      ),
    );
    const times: number[] = [];
    for (let r = 0; r < repeats; r++) {
      const t0 = performance.now();
      for (const f of feeds) {
        const out = await session.run(f);
        for (const v of Object.values(out)) v.dispose();
      }
      times.push(performance.now() - t0);
    }
    return times;
  },
};

export type OrtWorkerApi = typeof api;
Comlink.expose(api);
