// Loupe's device policy on WebGPU, as measured (issue 19, BENCHMARKS.md's H200 table): fp32 batches
// on a GPU are far faster than WASM and give the same vectors; quantised models (q8…) are no faster
// on WebGPU than on WASM, so they never run there; fp16 only where the adapter has `shader-f16`, the
// model has an fp16 variant and the parity check holds. Every WebGPU load is checked against WASM on a
// few fixed inputs (parity), and single text queries run on whichever device answered them faster at
// load. Pure functions: the worker (workers/encoder/parity.ts) runs the models and the clocks.
import type { Dtype } from '../../core/retrieval/models';
import { median } from '../../core/eval/stats';
import type { BackendChoice, Device } from './backend';

/** Weight variants whose quantised ops the WebGPU execution provider does not accelerate. */
export const QUANTISED: readonly Dtype[] = ['q8', 'int8', 'uint8', 'q4', 'q4f16'];

/**
 * Lowest cosine WebGPU vs WASM (per fixed input) for the WebGPU vectors to be used, per WebGPU dtype.
 * fp16 is compared with WASM fp32, so its gap includes the weights' rounding (measured on the generated
 * models' fp16 files against fp32 on the CPU: cosine ≥ 0.9999999, tests/unit/models.test.ts) and fp16
 * arithmetic on the GPU (not measurable here: no adapter at hand has shader-f16). 0.999 leaves that
 * arithmetic ten times fp32's room, and still stops a broken kernel (the forced mismatch measures 0.89).
 */
export const PARITY_MIN: Partial<Record<Dtype, number>> = { fp32: 0.9999, fp16: 0.999 };

/** Fixed texts of the parity check (embedded as documents): short and long, plain and clinical, one non-Latin. */
export const PARITY_TEXTS: readonly string[] = [
  'pneumothorax',
  'What are the symptoms of the common cold?',
  'Axial CT of the head without contrast shows a hyperdense lesion in the left basal ganglia.',
  'Лечение артериальной гипертензии у пожилых пациентов',
];

/** Why a quantised dtype asked for on WebGPU runs on WASM instead. */
export function quantisedReason(dtype: Dtype): string {
  return (
    `${dtype} runs on WASM, never on WebGPU: its quantised ops are not accelerated there ` +
    `(measured no faster than WASM, BENCHMARKS.md)`
  );
}

/**
 * Applies the policy to the backend probe's choice: a quantised dtype chosen for WebGPU (asked for,
 * or the model's only variant) moves to WASM, with the reason; anything else is left as it is.
 */
export function applyDevicePolicy(choice: BackendChoice): BackendChoice & { policyNote?: string } {
  if (choice.device !== 'webgpu' || !QUANTISED.includes(choice.dtype)) return choice;
  const note = quantisedReason(choice.dtype);
  return {
    ...choice,
    device: 'wasm',
    deviceReason: note,
    reason: `${note}; ${choice.threads} WASM thread${choice.threads === 1 ? '' : 's'}`,
    policyNote: note,
  };
}

/** The WASM dtype a WebGPU load is compared with: the same, except fp16 against fp32 when the model has it. */
export function referenceDtype(dtype: Dtype, available: readonly Dtype[]): Dtype {
  return dtype === 'fp16' && available.includes('fp32') ? 'fp32' : dtype;
}

/** Cosine similarity of two vectors (0 when either is all zeros). */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`cosine of vectors of ${a.length} and ${b.length} dimensions`);
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na > 0 && nb > 0 ? dot / Math.sqrt(na * nb) : 0;
}

/**
 * Test hook (URL `simulate-parity-mismatch=1`): a WebGPU vector as a faulty kernel might give it,
 * 0.9·v plus 0.45·(v rolled by one place). Deterministic; the check then measures it like any other.
 */
export function perturbVector(v: Float32Array): Float32Array {
  const out = new Float32Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = 0.9 * v[i] + 0.45 * v[(i + 1) % v.length];
  return out;
}

/** One fixed input of the parity check and its cosine WebGPU vs WASM. */
export interface ParityInput {
  /** What was embedded, for the message: `text "pneumothorax"`, `generated image 64×64`. */
  label: string;
  cosine: number;
}

/** The parity check's outcome for one (model, dtype, adapter). */
export interface ParityVerdict {
  ok: boolean;
  /** The lowest cosine over the inputs, and the input it was measured on. */
  cosine: number;
  worst: string;
  threshold: number;
  inputs: number;
  dtype: Dtype;
  referenceDtype: Dtype;
  /** The forced mismatch was applied (simulate-parity-mismatch=1). */
  simulated: boolean;
  /** One line: "WebGPU parity check passed: cosine ≥ 0.999999 …" or "WebGPU parity check failed: …". */
  reason: string;
}

/** Cosine to 6 decimals, rounded towards the threshold's side it is on (never shows a fail as 0.9999). */
export function formatCosine(c: number, threshold: number): string {
  const f = c < threshold ? Math.floor(c * 1e6) / 1e6 : Math.max(threshold, Math.floor(c * 1e6) / 1e6);
  return f.toFixed(6);
}

/** Judges the per-input cosines of a WebGPU load against WASM. */
export function parityVerdict(
  inputs: ParityInput[],
  dtype: Dtype,
  refDtype: Dtype = dtype,
  simulated = false,
): ParityVerdict {
  if (inputs.length === 0) throw new Error('parity check without inputs');
  const threshold = PARITY_MIN[dtype] ?? 0.9999;
  const worstInput = inputs.reduce((w, x) => (!(x.cosine >= w.cosine) ? x : w));
  const c = Number.isFinite(worstInput.cosine) ? worstInput.cosine : -1;
  const ok = c >= threshold;
  const against = refDtype === dtype ? `WASM ${dtype}` : `WASM ${refDtype}`;
  const sim = simulated ? ' (simulated mismatch)' : '';
  const n = `${inputs.length} fixed input${inputs.length === 1 ? '' : 's'}`;
  const reason = ok
    ? `WebGPU parity check passed: cosine ${formatCosine(c, threshold)} ≥ ${threshold} vs ${against} (lowest of ${n})`
    : `WebGPU parity check failed: cosine ${formatCosine(c, threshold)} < ${threshold} on ${worstInput.label} ` +
      `(${dtype} WebGPU vs ${against}, lowest of ${n})${sim}`;
  return {
    ok,
    cosine: c,
    worst: worstInput.label,
    threshold,
    inputs: inputs.length,
    dtype,
    referenceDtype: refDtype,
    simulated,
    reason,
  };
}

export { median };

/** Where single text queries run, from a few single-query timings on each device at load. */
export interface QueryDeviceChoice {
  device: Device;
  /** Median ms of one text query on each device. */
  webgpuMs: number;
  wasmMs: number;
  runs: number;
  reason: string;
}

/**
 * The faster device for one text query: WebGPU unless WASM's median is lower (a tie keeps WebGPU,
 * where the model already runs). Batches of queries (a benchmark run) stay on the model's device.
 */
export function chooseQueryDevice(webgpuMs: readonly number[], wasmMs: readonly number[]): QueryDeviceChoice {
  const g = median(webgpuMs);
  const w = median(wasmMs);
  const device: Device = w < g ? 'wasm' : 'webgpu';
  const runs = Math.min(webgpuMs.length, wasmMs.length);
  const ms = (x: number) => (x < 10 ? x.toFixed(1) : x.toFixed(0));
  const [fast, slow] = device === 'wasm' ? [w, g] : [g, w];
  const other = device === 'wasm' ? 'WebGPU' : 'WASM';
  return {
    device,
    webgpuMs: g,
    wasmMs: w,
    runs,
    reason:
      `single text queries on ${device === 'wasm' ? 'WASM' : 'WebGPU'}: ${ms(fast)} ms vs ${ms(slow)} ms on ` +
      `${other} (median of ${runs} at load)`,
  };
}

/** What a WebGPU load decided, cached per (model files, dtype, adapter) for the page. */
export interface DeviceVerdict {
  parity: ParityVerdict;
  /** Absent when parity failed (everything runs on WASM then). */
  query?: QueryDeviceChoice;
}

/** The cache key of a verdict: the model's files, dtype and the adapter's description. */
export function verdictKey(
  model: string,
  revision: string,
  dtype: Dtype,
  adapter: string,
  simulated: boolean,
) {
  return JSON.stringify([model, revision, dtype, adapter, simulated]);
}

/**
 * After a failed parity check: fp16 chosen automatically retries on WebGPU in fp32 when the model has
 * it (fp16 is only used where parity holds); anything else runs on WASM in the reference dtype.
 */
export function afterParityFailure(
  dtype: Dtype,
  available: readonly Dtype[],
  dtypeWasAuto: boolean,
): { device: Device; dtype: Dtype } {
  if (dtype === 'fp16' && dtypeWasAuto && available.includes('fp32'))
    return { device: 'webgpu', dtype: 'fp32' };
  return { device: 'wasm', dtype: referenceDtype(dtype, available) };
}
