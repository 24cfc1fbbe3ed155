// The GPU exact path: WebGPU compute shaders (platform/gpu/gpu-exact) over the open index's vectors,
// uploaded once per chunking and kept with the index; 'auto' takes hardware adapters only.
import type { Exclusions, Matrix } from '../../src/lib/core/retrieval/exact';
import { softwareReason } from '../../src/lib/platform/gpu/backend';
import { createGpuExact, probeWebGpu, type GpuProbe } from '../../src/lib/platform/gpu/gpu-exact';
import type { ExactResult, Open } from './types';

/** The WebGPU adapter probe, once per worker (for the choice; devices come from fresh adapters). */
let probePromise: Promise<GpuProbe> | null = null;

/**
 * Exact top-k on WebGPU; throws (with the reason) when there is no usable adapter, or a software one
 * under 'auto', or the upload or the search fails.
 */
export async function gpuExact(
  o: Open,
  q: Matrix,
  k: number,
  exclude: Exclusions | undefined,
  backend: 'auto' | 'webgpu',
  maxChunkDocs?: number,
): Promise<ExactResult> {
  probePromise ??= probeWebGpu();
  const probe = await probePromise;
  if (!probe.ok) throw new Error(probe.reason);
  // A software adapter (SwiftShader, WARP) emulates the GPU on the CPU: correct but far slower
  // than the JS path, so 'auto' only takes real hardware.
  if (backend === 'auto' && probe.software) throw new Error(softwareReason(probe.software, 'the CPU'));
  if (o.gpu && o.gpuChunkDocs !== maxChunkDocs) {
    // Another chunking asked for (tests exercise the cross-chunk merge): upload again.
    void o.gpu.then((g) => g.destroy()).catch(() => undefined);
    o.gpu = undefined;
  }
  o.gpuChunkDocs = maxChunkDocs;
  // A fresh adapter: an adapter gives out one device only.
  o.gpu ??= createGpuExact(o.vectors, { maxChunkDocs });
  const g = await o.gpu.catch((e: unknown) => {
    o.gpu = undefined;
    throw e;
  });
  const { result, stats } = await g.search(q, { k, tieBreak: o.tieBreak, exclude });
  return { result, backend: 'webgpu', fallbackAdapter: g.fallbackAdapter, gpu: stats, ms: stats.ms };
}
