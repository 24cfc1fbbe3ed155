// Exact search on the open index, the ground truth recall is measured against: WebGPU on a hardware
// adapter, else the wasm candidate kernels, else plain JS (the reference); all three give the same
// ids and scores, and the result says which ran and why not a faster one.
import * as Comlink from 'comlink';
import { exactSearch, normalizeRows, type Exclusions, type Matrix } from '../../src/lib/core/retrieval/exact';
import { gpuExact } from './gpu';
import { asMatrix, requireOpen } from './session';
import type { ExactBackend, ExactResult, Open, WasmKernel } from './types';
import { wasmExact } from './wasm-exact';

/**
 * Exact top-k, same answers on either backend. 'auto': WebGPU on a hardware adapter, else JS (the
 * result says which, and why not WebGPU); 'webgpu' forces it (a software adapter included).
 */
export async function exactTopK(
  queries: Float32Array,
  k: number,
  opts: {
    exclude?: number[][];
    backend?: 'auto' | ExactBackend;
    maxChunkDocs?: number;
    /** The wasm backend's first kernel: int16 (default) or float32 (benchmarks compare them). */
    wasmKernel?: WasmKernel;
  } = {},
): Promise<ExactResult> {
  const o = requireOpen();
  const q = asMatrix(o.space === 'cosine' ? queries.slice() : queries, o.vectors.dim, 'queries');
  if (o.space === 'cosine') normalizeRows(q);
  const r = await exact(o, q, k, opts.exclude, opts.backend ?? 'auto', opts.maxChunkDocs, opts.wasmKernel);
  return Comlink.transfer(r, [r.result.indices.buffer, r.result.scores.buffer]);
}

/** Exact top-k of the rows of `q` in `o` on `backend` ('auto': the fastest that works). */
export async function exact(
  o: Open,
  q: Matrix,
  k: number,
  exclude: Exclusions | undefined,
  backend: 'auto' | ExactBackend,
  maxChunkDocs?: number,
  wasmKernel: WasmKernel = 'int16',
): Promise<ExactResult> {
  const reasons: string[] = [];
  if (backend === 'auto' || backend === 'webgpu') {
    try {
      return await gpuExact(o, q, k, exclude, backend, maxChunkDocs);
    } catch (e) {
      if (backend === 'webgpu') throw e;
      reasons.push(`WebGPU: ${(e as Error)?.message ?? String(e)}`);
    }
  }
  if (backend === 'auto' || backend === 'wasm') {
    try {
      const t0 = performance.now();
      const { result, stats } = await wasmExact(o, q, k, exclude, wasmKernel);
      return { result, backend: 'wasm', wasm: stats, reason: reasons[0], ms: performance.now() - t0 };
    } catch (e) {
      if (backend === 'wasm') throw e;
      reasons.push(`wasm: ${(e as Error)?.message ?? String(e)}`);
    }
  }
  const t0 = performance.now();
  const result = exactSearch(o.vectors, q, { k, tieBreak: o.tieBreak, exclude });
  return { result, backend: 'js', reason: reasons.join('; ') || undefined, ms: performance.now() - t0 };
}
