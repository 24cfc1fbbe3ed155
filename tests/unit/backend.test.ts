import { describe, expect, it } from 'vitest';
import {
  chooseBackend,
  softwareAdapter,
  wasmThreads,
  type BackendProbe,
} from '../../src/lib/platform/backend';

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
  it('uses WebGPU with fp16 only when the adapter has shader-f16', () => {
    expect(chooseBackend(gpu, { available: [...HUB] })).toMatchObject({ device: 'webgpu', dtype: 'fp16' });
    const noF16 = chooseBackend({ ...gpu, shaderF16: false }, { available: [...HUB] });
    expect(noF16).toMatchObject({ device: 'webgpu', dtype: 'fp32' });
    expect(noF16.reason).toMatch(/no shader-f16/);
    // An explicit fp16 is refused without shader-f16.
    const forced = chooseBackend({ ...gpu, shaderF16: false }, { dtype: 'fp16', available: [...HUB] });
    expect(forced.dtype).toBe('fp32');
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
    expect(chooseBackend(gpu, { available: [...HUB] }).deviceReason).toBe('WebGPU on test gpu');
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
