// The WebGPU device policy's pure rules (src/lib/platform/gpu/device-policy.ts): quantised weights never
// on WebGPU, the parity verdict and its message, the faster device for one text query, and what a
// failed parity check falls back to. The worker side (the models and clocks) is tested in Chromium by
// tests/e2e/device-policy.test.ts.
import { describe, expect, it } from 'vitest';
import { chooseBackend, type BackendProbe } from '../../src/lib/platform/gpu/backend';
import {
  afterParityFailure,
  applyDevicePolicy,
  chooseQueryDevice,
  cosine,
  formatCosine,
  median,
  parityVerdict,
  perturbVector,
  referenceDtype,
  verdictKey,
} from '../../src/lib/platform/gpu/device-policy';

const gpu: BackendProbe = {
  webgpu: true,
  fallbackAdapter: false,
  shaderF16: true,
  adapterInfo: 'test gpu',
  crossOriginIsolated: true,
  hardwareConcurrency: 8,
};

describe('device policy: dtypes on WebGPU', () => {
  it('moves an explicit q8 (or any quantised dtype) on WebGPU to WASM, with the reason', () => {
    for (const dtype of ['q8', 'int8', 'uint8', 'q4', 'q4f16'] as const) {
      const c = applyDevicePolicy(
        chooseBackend(gpu, { preferred: 'webgpu', dtype, available: ['fp32', dtype] }),
      );
      expect(c.device).toBe('wasm');
      expect(c.dtype).toBe(dtype);
      expect(c.deviceReason).toBe(
        `${dtype} runs on WASM, never on WebGPU: its quantised ops are not accelerated there (measured no faster than WASM, BENCHMARKS.md)`,
      );
      expect(c.reason).toMatch(/; 2 WASM threads$/);
    }
  });

  it('moves a model whose only variant is q8 off WebGPU under auto too', () => {
    const c = applyDevicePolicy(chooseBackend(gpu, { available: ['q8'] }));
    expect(c).toMatchObject({ device: 'wasm', dtype: 'q8' });
  });

  it('leaves fp32 and fp16 on WebGPU, and every dtype on WASM, as chosen', () => {
    const auto = chooseBackend(gpu, { available: ['q8', 'fp32', 'fp16'] });
    expect(applyDevicePolicy(auto)).toBe(auto);
    expect(auto).toMatchObject({ device: 'webgpu', dtype: 'fp16' });
    const noF16 = chooseBackend({ ...gpu, shaderF16: false }, { available: ['q8', 'fp32'] });
    expect(applyDevicePolicy(noF16)).toMatchObject({ device: 'webgpu', dtype: 'fp32' });
    const wasm = chooseBackend(gpu, { preferred: 'wasm', dtype: 'q8', available: ['q8'] });
    expect(applyDevicePolicy(wasm)).toBe(wasm);
  });

  it('checks fp16 against WASM fp32 where the model has it, else the same dtype', () => {
    expect(referenceDtype('fp16', ['fp32', 'fp16'])).toBe('fp32');
    expect(referenceDtype('fp16', ['fp16'])).toBe('fp16');
    expect(referenceDtype('fp32', ['fp32', 'fp16'])).toBe('fp32');
  });

  it('after a failed check: automatic fp16 retries fp32 on WebGPU; anything else goes to WASM', () => {
    expect(afterParityFailure('fp16', ['q8', 'fp32', 'fp16'], true)).toEqual({
      device: 'webgpu',
      dtype: 'fp32',
    });
    expect(afterParityFailure('fp16', ['q8', 'fp32', 'fp16'], false)).toEqual({
      device: 'wasm',
      dtype: 'fp32',
    });
    expect(afterParityFailure('fp16', ['fp16'], true)).toEqual({ device: 'wasm', dtype: 'fp16' });
    expect(afterParityFailure('fp32', ['fp32'], true)).toEqual({ device: 'wasm', dtype: 'fp32' });
  });
});

describe('device policy: parity', () => {
  it('computes cosines (hand-checked values)', () => {
    expect(cosine([1, 0], [0, 1])).toBe(0);
    expect(cosine([1, 2, 3], [2, 4, 6])).toBeCloseTo(1, 12);
    // (1,1)·(1,0) / (√2 · 1) = 1/√2
    expect(cosine([1, 1], [1, 0])).toBeCloseTo(Math.SQRT1_2, 12);
    expect(cosine([0, 0], [1, 0])).toBe(0);
    expect(() => cosine([1], [1, 2])).toThrow(/1 and 2 dimensions/);
  });

  it('the simulated mismatch moves a vector well below the threshold', () => {
    // v = e0: perturbed = 0.9·e0 + 0.45·e_{n-1}; cosine = 0.9 / √(0.81 + 0.2025) = 0.894427…
    const v = new Float32Array(8);
    v[0] = 1;
    const p = perturbVector(v);
    expect(p[0]).toBeCloseTo(0.9, 6);
    expect(p[7]).toBeCloseTo(0.45, 6);
    expect(cosine(p, v)).toBeCloseTo(0.9 / Math.sqrt(0.81 + 0.2025), 6);
    expect(v[0]).toBe(1);
  });

  it('passes at or above 0.9999 for fp32 and names the lowest input when it fails', () => {
    const ok = parityVerdict(
      [
        { label: 'text "a"', cosine: 0.99999999 },
        { label: 'text "b"', cosine: 0.99995 },
      ],
      'fp32',
    );
    expect(ok).toMatchObject({ ok: true, cosine: 0.99995, worst: 'text "b"', threshold: 0.9999, inputs: 2 });
    expect(ok.reason).toBe(
      'WebGPU parity check passed: cosine 0.999950 ≥ 0.9999 vs WASM fp32 (lowest of 2 fixed inputs)',
    );
    const bad = parityVerdict(
      [
        { label: 'text "a"', cosine: 1 },
        { label: 'generated image 64×64', cosine: 0.93 },
        { label: 'text "c"', cosine: 0.99989 },
      ],
      'fp32',
      'fp32',
      true,
    );
    expect(bad).toMatchObject({ ok: false, cosine: 0.93, worst: 'generated image 64×64', simulated: true });
    expect(bad.reason).toBe(
      'WebGPU parity check failed: cosine 0.930000 < 0.9999 on generated image 64×64 ' +
        '(fp32 WebGPU vs WASM fp32, lowest of 3 fixed inputs) (simulated mismatch)',
    );
    // Just below: never printed as the threshold itself.
    expect(parityVerdict([{ label: 'x', cosine: 0.99989999 }], 'fp32').reason).toMatch(
      /cosine 0\.999899 < 0\.9999/,
    );
    expect(formatCosine(0.9999, 0.9999)).toBe('0.999900');
  });

  it('fails on NaN vectors and uses 0.999 for fp16 against fp32', () => {
    const nan = parityVerdict(
      [
        { label: 'a', cosine: 1 },
        { label: 'b', cosine: NaN },
      ],
      'fp32',
    );
    expect(nan).toMatchObject({ ok: false, worst: 'b', cosine: -1 });
    const f16 = parityVerdict([{ label: 'a', cosine: 0.9995 }], 'fp16', 'fp32');
    expect(f16).toMatchObject({ ok: true, threshold: 0.999 });
    expect(f16.reason).toMatch(/vs WASM fp32/);
    expect(() => parityVerdict([], 'fp32')).toThrow(/without inputs/);
  });

  it('keys verdicts by model files, dtype, adapter and the test hook', () => {
    const k = verdictKey('m', 'main', 'fp32', 'gpu A', false);
    expect(verdictKey('m', 'main', 'fp32', 'gpu A', false)).toBe(k);
    for (const other of [
      verdictKey('m2', 'main', 'fp32', 'gpu A', false),
      verdictKey('m', 'v2', 'fp32', 'gpu A', false),
      verdictKey('m', 'main', 'fp16', 'gpu A', false),
      verdictKey('m', 'main', 'fp32', 'gpu B', false),
      verdictKey('m', 'main', 'fp32', 'gpu A', true),
    ])
      expect(other).not.toBe(k);
  });
});

describe('device policy: single text queries', () => {
  it('takes medians', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  it('picks WASM only when its median is lower (H200: q8 single query 5.6 ms vs 69.2 ms)', () => {
    const q8 = chooseQueryDevice([69.2, 70, 68], [5.6, 5.5, 40]);
    expect(q8).toMatchObject({ device: 'wasm', webgpuMs: 69.2, wasmMs: 5.6, runs: 3 });
    expect(q8.reason).toBe('single text queries on WASM: 5.6 ms vs 69 ms on WebGPU (median of 3 at load)');
    const vit = chooseQueryDevice([16.4, 16, 17], [805, 800, 810]);
    expect(vit.device).toBe('webgpu');
    expect(vit.reason).toBe('single text queries on WebGPU: 16 ms vs 805 ms on WASM (median of 3 at load)');
    expect(chooseQueryDevice([5, 5, 5], [5, 5, 5]).device).toBe('webgpu');
  });
});
