// The baseline a transformers.js user would write: `pipeline('feature-extraction')` called on
// batches of N documents in shard order (each padded to its longest document, truncated at the
// model's maximum length), mean pooling and normalisation by the pipeline. Same ORT wasm files (the
// build the product's worker picks for a WASM load on this device, backend.ts ortBuildFor) and thread
// count as the product's worker. Used by scripts/bench-encode.ts (corpus row); benchmarks only.
/// <reference types="vite/client" />
import * as Comlink from 'comlink';
import { env, pipeline, type FeatureExtractionPipeline } from '@huggingface/transformers';
import { ortBuildFor, probeBackend } from '../../src/lib/platform/gpu/backend';
import { setOrtFiles } from '../../workers/encoder/environment';

let extractor: FeatureExtractionPipeline | null = null;

const api = {
  /** Loads the model (`name` as transformers.js takes it) on WASM with `threads` ORT threads. */
  async load(name: string, dtype: 'q8' | 'fp32', threads: number): Promise<void> {
    const wasm = env.backends.onnx.wasm!;
    setOrtFiles(ortBuildFor('wasm', await probeBackend()));
    wasm.numThreads = threads;
    env.allowLocalModels = true;
    env.allowRemoteModels = false;
    env.localModelPath = '/models/';
    extractor = (await pipeline('feature-extraction', name, {
      dtype,
      device: 'wasm',
    })) as FeatureExtractionPipeline;
  },

  /** Embeds `texts` in batches of `batch`, in order; returns (texts × dim) floats and the wall time. */
  async embed(texts: string[], batch: number): Promise<{ ms: number; vectors: Float32Array }> {
    if (!extractor) throw new Error('load first');
    const t0 = performance.now();
    const parts: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += batch) {
      const out = await extractor(texts.slice(i, i + batch), { pooling: 'mean', normalize: true });
      parts.push(out.data as Float32Array);
    }
    const ms = performance.now() - t0;
    const vectors = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
    let o = 0;
    for (const p of parts) {
      vectors.set(p, o);
      o += p.length;
    }
    return Comlink.transfer({ ms, vectors }, [vectors.buffer]);
  },
};

export type PlainWorkerApi = typeof api;
Comlink.expose(api);
