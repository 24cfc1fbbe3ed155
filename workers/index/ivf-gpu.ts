// IVF int8 scoring on the WGSL kernel (platform/gpu/gpu-int8): the probed lists' codes scored on the GPU,
// turned into exactly the CPU's candidates by int8Candidates (core/retrieval/ivf.ts), or scored on
// the CPU when the GPU's float32 sums cannot decide the cut. 'auto' takes hardware adapters only: a
// software one (SwiftShader) is correct but slower than the CPU loop.
import {
  Candidates,
  int8Candidates,
  scaledQuery,
  scoreList,
  type IvfHeader,
  type IvfList,
} from '../../src/lib/core/retrieval/ivf';
import { probeWebGpu, softwareReason, type GpuProbe } from '../../src/lib/platform/gpu/backend';
import { createGpuInt8, int8ScoreBound, type GpuInt8 } from '../../src/lib/platform/gpu/gpu-int8';
import type { IvfScoring } from './ivf-types';

/** The adapter probe, once per worker; the device, once per worker that scores on it. */
let probe: Promise<GpuProbe> | null = null;
let scorer: Promise<GpuInt8> | null = null;

/** The candidates of one query over its probed lists, on the GPU when `mode` allows one. */
export async function scoreProbed(
  h: IvfHeader,
  lists: readonly IvfList[],
  q: Float32Array,
  size: number,
  mode: 'auto' | 'webgpu' | 'cpu',
): Promise<{ cand: Candidates; scoring: IvfScoring }> {
  const cpu = (scoring: IvfScoring) => {
    const cand = new Candidates(size);
    for (const list of lists) scoreList(h, list, q, cand);
    return { cand, scoring };
  };
  if (mode === 'cpu') return cpu({ device: 'cpu', reason: 'CPU scoring asked for' });
  probe ??= probeWebGpu();
  const p = await probe;
  if (!p.ok) return cpu({ device: 'cpu', reason: p.reason });
  if (mode === 'auto' && p.software)
    return cpu({ device: 'cpu', reason: softwareReason(p.software, 'the CPU') });
  scorer ??= createGpuInt8({ probe: p });
  let gpu: GpuInt8;
  try {
    gpu = await scorer;
  } catch (e) {
    scorer = null;
    return cpu({ device: 'cpu', reason: (e as Error)?.message ?? String(e) });
  }
  const rows = lists.reduce((s, l) => s + l.rows.length, 0);
  const codes = new Int8Array(rows * h.dim);
  let at = 0;
  for (const l of lists) {
    codes.set(l.codes.subarray(0, l.rows.length * h.dim), at);
    at += l.rows.length * h.dim;
  }
  const qs = scaledQuery(h, q);
  let approx: Float32Array;
  try {
    approx = await gpu.score(codes, rows, qs);
  } catch (e) {
    scorer = null;
    gpu.destroy();
    return cpu({ device: 'cpu', reason: `WebGPU scoring failed: ${(e as Error)?.message ?? e}` });
  }
  const cand = int8Candidates(h, lists, q, approx, int8ScoreBound(qs), size);
  if (cand) return { cand, scoring: { device: 'webgpu' } };
  return cpu({ device: 'cpu', recomputed: true, reason: 'the GPU scores could not decide the cut' });
}
