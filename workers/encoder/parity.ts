// The WebGPU parity check and query-speed measurement, at the first WebGPU load of each (model files,
// dtype, adapter) in this worker: a few fixed texts (and a generated image for image–text models) are
// embedded on WebGPU and on WASM; below the policy's cosine the load continues on WASM with the reason.
// When parity holds, a few single text queries are timed on each device and the faster one answers
// single text queries from then on. Verdicts are cached for the worker's life (the page's, unless a
// cancel or a WebGPU failure restarts it).
import { RawImage } from '@huggingface/transformers';
import type { Dtype, ModelSpec } from '../../src/lib/core/retrieval/models';
import {
  chooseQueryDevice,
  cosine,
  PARITY_TEXTS,
  parityVerdict,
  perturbVector,
  verdictKey,
  type DeviceVerdict,
  type ParityInput,
} from '../../src/lib/platform/device-policy';
import { embedImageBatch } from './image';
import { embedTextBatch } from './text';
import type { Encoder, OnProgress } from './types';

/** Side of the generated parity image (a colour gradient with a diagonal stripe). */
export const PARITY_IMAGE_SIZE = 64;
/** QUERY_TIMINGS: single text queries timed on each device (after the parity runs warmed both). */
export const QUERY_TIMINGS = 3;
const QUERY_TEXT = 'chest x-ray findings of heart failure';

/** Verdicts by verdictKey, for this worker's life. */
const verdicts = new Map<string, DeviceVerdict>();

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
): Promise<{ verdict: DeviceVerdict; cached: boolean }> {
  const key = verdictKey(
    `${spec.local ? 'local:' : ''}${spec.localPath ?? spec.hubId}`,
    spec.revision,
    gpu.dtype,
    adapter,
    simulateMismatch,
  );
  const hit = verdicts.get(key);
  if (hit) return { verdict: hit, cached: true };
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
  verdicts.set(key, verdict);
  return { verdict, cached: false };
}
