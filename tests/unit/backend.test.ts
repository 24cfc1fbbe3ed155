import { describe, expect, it } from 'vitest';
import {
  chooseBackend,
  ortBuildFor,
  softwareAdapter,
  wasmThreads,
  type BackendProbe,
} from '../../src/lib/platform/gpu/backend';

const gpu: BackendProbe = {
  webgpu: true,
  fallbackAdapter: false,
  shaderF16: true,
  adapterInfo: 'test gpu',
  crossOriginIsolated: true,
  hardwareConcurrency: 8,
};
const noGpu: BackendProbe = {
  webgpu: false,
  webgpuReason: 'no WebGPU adapter (GPU blocked or unsupported)',
  fallbackAdapter: false,
  shaderF16: false,
  crossOriginIsolated: false,
  hardwareConcurrency: 8,
};
const HUB = ['q8', 'fp32', 'fp16'] as const;

describe('backend choice', () => {
  it('runs ONNX Runtime on the plain WASM build only where auto can never put a model on WebGPU', () => {
    const swiftShader = { ...gpu, fallbackAdapter: true, software: 'SwiftShader' };
    // No WebGPU, or only a software adapter: WASM loads take the plain build…
    expect(ortBuildFor('wasm', noGpu)).toBe('plain');
    expect(ortBuildFor('wasm', swiftShader)).toBe('plain');
    expect(ortBuildFor('wasm', { ...gpu, fallbackAdapter: true })).toBe('plain');
    // …a hardware adapter keeps asyncify for WASM too (a WebGPU load may follow in the same worker),
    // and WebGPU always needs it, a software adapter asked for explicitly included.
    expect(ortBuildFor('wasm', gpu)).toBe('asyncify');
    expect(ortBuildFor('webgpu', gpu)).toBe('asyncify');
    expect(ortBuildFor('webgpu', swiftShader)).toBe('asyncify');
  });

  it('uses WebGPU with fp16 only when the adapter has shader-f16', () => {
    expect(chooseBackend(gpu, { available: [...HUB] })).toMatchObject({ device: 'webgpu', dtype: 'fp16' });
    const noF16 = chooseBackend({ ...gpu, shaderF16: false }, { available: [...HUB] });
    expect(noF16).toMatchObject({ device: 'webgpu', dtype: 'fp32' });
    expect(noF16.reason).toMatch(/no shader-f16/);
    // An explicit fp16 is refused without shader-f16.
    const forced = chooseBackend({ ...gpu, shaderF16: false }, { dtype: 'fp16', available: [...HUB] });
    expect(forced.dtype).toBe('fp32');
    expect(forced.dtypeNote).toBe('fp16 was not used: the adapter has no shader-f16');
  });

  it("at dtype auto, takes a dtype the shard's embeddings of the model were made for over the default", () => {
    const why = (d: string) => `${d} (the shard's embeddings of this model are for ${d} queries)`;
    // A hub model on WASM defaults to q8; an fp32 set (sentence-transformers' vectors) gets fp32.
    const wasm = chooseBackend(noGpu, { available: [...HUB], setDtypes: ['fp32'] });
    expect(wasm).toMatchObject({ device: 'wasm', dtype: 'fp32', dtypeReason: why('fp32') });
    expect(wasm.reason).toContain(why('fp32'));
    // The default is kept when a set is of it, or when no set is of a dtype the model offers.
    expect(chooseBackend(noGpu, { available: [...HUB], setDtypes: ['fp32', 'q8'] }).dtype).toBe('q8');
    expect(chooseBackend(noGpu, { available: ['fp32', 'q8'], setDtypes: ['fp16'] }).dtype).toBe('fp32');
    // WebGPU: fp32 for an fp32 set even with shader-f16; fp16 only where the adapter has it.
    expect(chooseBackend(gpu, { available: [...HUB], setDtypes: ['fp32'] })).toMatchObject({
      device: 'webgpu',
      dtype: 'fp32',
      deviceReason: `WebGPU on test gpu; ${why('fp32')}`,
    });
    const noF16 = { ...gpu, shaderF16: false };
    expect(chooseBackend(noF16, { available: [...HUB], setDtypes: ['fp16'] }).dtype).toBe('fp32');
    // A q8 set on WebGPU: q8 (the device policy then runs it on WASM).
    expect(chooseBackend(gpu, { available: [...HUB], setDtypes: ['q8'] }).dtype).toBe('q8');
    // An explicit dtype is never overridden.
    expect(chooseBackend(noGpu, { dtype: 'q8', available: [...HUB], setDtypes: ['fp32'] }).dtype).toBe('q8');
  });

  it("names the dtype and why in a WebGPU load's device reason", () => {
    const noF16 = { ...gpu, shaderF16: false };
    const reason = (probe: BackendProbe, opts: Parameters<typeof chooseBackend>[1]) =>
      chooseBackend(probe, opts).deviceReason;
    expect(reason(noF16, { available: [...HUB] })).toBe('WebGPU on test gpu; fp32 (no shader-f16)');
    expect(reason(gpu, { available: ['q8', 'fp32'] })).toBe(
      'WebGPU on test gpu; fp32 (shader-f16 available, but the model has no fp16 weights)',
    );
    expect(reason(noF16, { dtype: 'fp16', available: [...HUB] })).toBe(
      'WebGPU on test gpu; fp32: the adapter has no shader-f16, fp16 was not used',
    );
    expect(reason(gpu, { dtype: 'fp32', available: [...HUB] })).toBe('WebGPU on test gpu; fp32 as requested');
    expect(
      reason(gpu, { dtype: 'fp32', dtypeWhy: 'fp16 failed the WebGPU parity check', available: [...HUB] }),
    ).toBe('WebGPU on test gpu; fp32 (fp16 failed the WebGPU parity check)');
    // Only a requested dtype that was not used carries a note.
    expect(chooseBackend(noF16, { available: [...HUB] }).dtypeNote).toBeUndefined();
    expect(chooseBackend(gpu, { dtype: 'fp16', available: [...HUB] })).toMatchObject({ dtype: 'fp16' });
    expect(chooseBackend(gpu, { dtype: 'fp16', available: [...HUB] }).dtypeNote).toBeUndefined();
    // WASM keeps its reason; the dtype is in `reason` (with the threads).
    const wasm = chooseBackend(gpu, { preferred: 'wasm', available: [...HUB] });
    expect(wasm.deviceReason).toBe('WASM as requested');
    expect(wasm.dtypeReason).toBe('q8 (model default for WASM)');
  });

  it('falls back to WASM with the reason, and the model default dtype', () => {
    const c = chooseBackend(noGpu, { available: [...HUB] });
    expect(c).toMatchObject({ device: 'wasm', dtype: 'q8', threads: 1 });
    expect(c.reason).toMatch(/WASM because no WebGPU adapter/);
    expect(c.reason).toMatch(/not cross-origin isolated/);
    expect(chooseBackend(gpu, { preferred: 'wasm', available: [...HUB] })).toMatchObject({
      device: 'wasm',
      dtype: 'q8',
      threads: 2,
    });
    expect(chooseBackend(gpu, { preferred: 'wasm', dtype: 'fp32' }).reason).toMatch(/WASM as requested/);
  });

  it('auto never takes a software adapter; an explicit webgpu still does', () => {
    const swift: BackendProbe = {
      ...gpu,
      fallbackAdapter: true,
      software: 'SwiftShader',
      shaderF16: false,
      adapterInfo: 'google swiftshader',
    };
    const auto = chooseBackend(swift, { available: [...HUB] });
    expect(auto).toMatchObject({ device: 'wasm', dtype: 'q8', threads: 2 });
    expect(auto.deviceReason).toBe('software WebGPU adapter (SwiftShader) — using WASM');
    expect(auto.reason).toMatch(/^software WebGPU adapter \(SwiftShader\) — using WASM; 2 WASM threads/);
    const forced = chooseBackend(swift, { preferred: 'webgpu', available: [...HUB] });
    expect(forced).toMatchObject({ device: 'webgpu', dtype: 'fp32' });
    expect(forced.deviceReason).toMatch(
      /^WebGPU as requested on google swiftshader \(software adapter SwiftShader/,
    );
    // A flagged fallback adapter whose name says nothing is still software.
    const flagged = chooseBackend({ ...gpu, fallbackAdapter: true }, { available: [...HUB] });
    expect(flagged.device).toBe('wasm');
    expect(flagged.deviceReason).toBe('software WebGPU adapter (fallback adapter) — using WASM');
    expect(chooseBackend(gpu, { available: [...HUB] }).deviceReason).toBe(
      'WebGPU on test gpu; fp16 (shader-f16 available, the model has fp16 weights; checked against WASM fp32)',
    );
  });

  it('recognises software adapters by flag or by name', () => {
    expect(softwareAdapter({ info: { vendor: 'google', architecture: 'swiftshader' } })).toBe('SwiftShader');
    expect(softwareAdapter({ info: { description: 'llvmpipe (LLVM 15.0.6, 256 bits)' } })).toBe('llvmpipe');
    expect(softwareAdapter({ info: { device: 'Intel(R) UHD Graphics (lavapipe)' } })).toBe('lavapipe');
    expect(softwareAdapter({ info: { description: 'Microsoft Basic Render Driver' } })).toBe(
      'Microsoft Basic Render Driver',
    );
    expect(softwareAdapter({ info: { vendor: 'nvidia', isFallbackAdapter: true } })).toBe('fallback adapter');
    expect(softwareAdapter({ isFallbackAdapter: true, info: { vendor: 'x' } })).toBe('fallback adapter');
    expect(softwareAdapter({ info: { vendor: 'nvidia', architecture: 'ampere' } })).toBeUndefined();
    expect(softwareAdapter({ info: { vendor: 'apple', architecture: 'metal-3' } })).toBeUndefined();
  });

  it('uses at most two WASM threads, and only when cross-origin isolated', () => {
    expect(wasmThreads(true, 8)).toBe(2);
    expect(wasmThreads(true, 1)).toBe(1);
    expect(wasmThreads(false, 8)).toBe(1);
  });
});
