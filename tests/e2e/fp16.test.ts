// fp16 in a real Chromium. The generated models' fp16 variants (onnx/model_fp16.onnx: the fp32 weights
// rounded to float16) load through the app's encoder worker and give the fp32 vectors to fp16
// precision (on WASM, where ONNX Runtime computes around the fp16 weights). On WebGPU the dtype follows
// the adapter's real features: this Chromium's SwiftShader adapter has no `shader-f16` (onnxruntime-web
// refuses fp16 kernels there: "requires f16 but the device does not support it"), so `auto` and an
// explicit fp16 both run fp32, and the load's device reason says which dtype and why; with a forced
// parity mismatch the load falls back to WASM and says that fp16 was not used as well. On an adapter
// with shader-f16 the same tests expect fp16 on WebGPU, checked against WASM fp32 at cosine ≥ 0.999.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PARITY_MIN, PARITY_TEXTS, cosine } from '../../src/lib/platform/gpu/device-policy';
import type { EncoderHarness } from '../browser/encoder-harness';
import { harnessCaller, launch, pageErrors, type Session } from './browser';

const baseUrl = inject('baseUrl');
const HARNESS = `${baseUrl}/tests/browser/encoder-harness.html`;
const BERT = 'loupe-test/bert-tiny-random';
const CLIP = 'loupe-test/clip-tiny-random';
const OFFLINE = { allowRemoteModels: false } as const;
const realErrors = (page: Page) => pageErrors(page).filter((e) => !/Failed to load resource/.test(e));
const call = harnessCaller<EncoderHarness>('encoderHarness');

function loaded<T extends { ok: boolean }>(r: T): Extract<T, { ok: true }> {
  if (!r.ok) throw new Error(`failed: ${JSON.stringify(r)}`);
  return r as Extract<T, { ok: true }>;
}

describe('fp16 (Chromium: WASM, and WebGPU on the SwiftShader adapter)', () => {
  let session: Session;
  let page: Page;
  /** Whether this Chromium's adapter has shader-f16, asked of the adapter itself. */
  let shaderF16 = false;
  const seen: string[] = [];

  beforeAll(async () => {
    session = await launch();
    page = session.page;
    await page.goto(HARNESS);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
    shaderF16 = await page.evaluate(async () => {
      const a = await navigator.gpu?.requestAdapter();
      if (!a) throw new Error('no WebGPU adapter in this Chromium');
      return a.features.has('shader-f16');
    });
  });

  afterAll(async () => {
    if (seen.length) console.log(`device reasons (shader-f16: ${shaderF16}):\n${seen.join('\n')}`);
    await session?.dispose();
  });

  it('the registry offers fp16 for the generated bi-encoders, and the files are there', () => {
    const registry = JSON.parse(
      readFileSync(join(import.meta.dirname, '../../models/registry.json'), 'utf8'),
    ) as { models: { id: string; dtypes: string[]; localPath?: string }[] };
    for (const [id, file] of [
      [BERT, 'onnx/model_fp16.onnx'],
      [CLIP, 'onnx/vision_model_fp16.onnx'],
    ]) {
      const m = registry.models.find((x) => x.id === id)!;
      expect(m.dtypes).toContain('fp16');
      // WASM's default stays fp32 (the first listed): fp16 is for WebGPU.
      expect(m.dtypes[0]).toBe('fp32');
      expect(
        readFileSync(join(import.meta.dirname, '../../models', m.localPath!, file)).length,
      ).toBeGreaterThan(0);
    }
  });

  it('the fp16 variant runs in the browser (WASM): the fp32 vectors to fp16 precision, not the same numbers', async () => {
    const fetched: string[] = [];
    page.on('request', (r) => fetched.push(r.url()));
    const f16 = loaded(await call(page, 'load', BERT, { device: 'wasm', dtype: 'fp16', ...OFFLINE }));
    expect(f16.info).toMatchObject({ device: 'wasm', dtype: 'fp16', dim: 64 });
    expect(fetched.some((u) => u.endsWith(`${BERT}/onnx/model_fp16.onnx`))).toBe(true);
    const a = await call(page, 'embedTexts', [...PARITY_TEXTS], 'document');
    loaded(await call(page, 'load', BERT, { device: 'wasm', dtype: 'fp32', ...OFFLINE }));
    const b = await call(page, 'embedTexts', [...PARITY_TEXTS], 'document');
    const cos = a.map((v, i) => cosine(v, b[i]));
    console.log(
      `bert-tiny fp16 vs fp32 on WASM, per parity text: ${cos.map((c) => c.toFixed(7)).join(', ')}`,
    );
    // Well above the fp16 parity threshold: rounding the weights alone costs almost nothing.
    for (const c of cos) expect(c).toBeGreaterThanOrEqual(0.9999);
    expect(a).not.toEqual(b);
    expect(realErrors(page)).toEqual([]);
  });

  it('device=webgpu with dtype auto on a model with fp16 weights: the dtype follows shader-f16, and the device reason says which and why', async () => {
    const probe = await call(page, 'probe');
    expect(probe.probe.shaderF16).toBe(shaderF16);
    const r = loaded(await call(page, 'load', BERT, { device: 'webgpu', ...OFFLINE }));
    seen.push(r.info.deviceReason);
    expect(r.info.device).toBe('webgpu');
    if (!shaderF16) {
      expect(r.info.dtype).toBe('fp32');
      expect(r.info.deviceReason).toMatch(
        /^WebGPU as requested on .*SwiftShader.*; fp32 \(no shader-f16\); WebGPU parity check passed: cosine [\d.]+ ≥ 0\.9999 vs WASM fp32 /,
      );
    } else {
      expect(r.info.dtype).toBe('fp16');
      expect(r.info.parity).toMatchObject({ ok: true, threshold: PARITY_MIN.fp16, referenceDtype: 'fp32' });
      expect(r.info.deviceReason).toMatch(
        /; fp16 \(shader-f16 available, the model has fp16 weights; checked against WASM fp32\); WebGPU parity check passed: cosine [\d.]+ ≥ 0\.999 vs WASM fp32 /,
      );
    }
    expect(await call(page, 'backend')).toMatchObject({ device: 'webgpu', dtype: r.info.dtype });
    expect(realErrors(page)).toEqual([]);
  });

  it('an explicit fp16 with a forced parity mismatch falls back, and says so', async () => {
    const r = loaded(
      await call(page, 'load', BERT, {
        device: 'webgpu',
        dtype: 'fp16',
        simulateParityMismatch: true,
        ...OFFLINE,
      }),
    );
    seen.push(r.info.deviceReason);
    expect(r.info.device).toBe('wasm');
    expect(r.info.fallbackReason).toBe(r.info.deviceReason);
    expect(r.info.parity).toMatchObject({ ok: false, simulated: true });
    if (!shaderF16) {
      // fp16 never reaches the GPU; fp32 is checked, fails the forced mismatch, and runs on WASM.
      expect(r.info.dtype).toBe('fp32');
      expect(r.info.deviceReason).toMatch(
        /^WebGPU parity check failed: cosine 0\.\d{6} < 0\.9999 on (text "|generated image).*\(fp32 WebGPU vs WASM fp32, lowest of 4 fixed inputs\) \(simulated mismatch\); running on WASM \(fp32\); fp16 was not used: the adapter has no shader-f16$/,
      );
    } else {
      // An explicit fp16 is compared with WASM fp32 at the fp16 threshold and, failing, runs there.
      expect(r.info.dtype).toBe('fp32');
      expect(r.info.deviceReason).toMatch(
        /^WebGPU parity check failed: cosine 0\.\d{6} < 0\.999 on .*\(fp16 WebGPU vs WASM fp32, lowest of 4 fixed inputs\) \(simulated mismatch\); running on WASM \(fp32\)$/,
      );
    }
    // The run goes on, on WASM.
    expect((await call(page, 'embedTexts', ['still answers'], 'query'))[0]).toHaveLength(64);
    expect(realErrors(page)).toEqual([]);
  });

  it('in the app: a dense run on device=webgpu (dtype auto) records the dtype and why in its description', async () => {
    await page.goto(
      `${baseUrl}/?shard=/shards/r2med-demo/&retriever=dense&model=${BERT}&device=webgpu&run=1`,
    );
    await page.waitForSelector(
      '[data-testid="app"][data-phase="done"], [data-testid="app"][data-phase="error"]',
      { timeout: 300_000 },
    );
    expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
    const desc = await page.locator('[data-testid="runs-table"] td.small').last().innerText();
    seen.push(desc);
    const dtype = shaderF16 ? 'fp16' : 'fp32';
    expect(desc).toContain(`${BERT} (${dtype}, webgpu)`);
    expect(desc).toContain(
      shaderF16
        ? '; fp16 (shader-f16 available, the model has fp16 weights'
        : '; fp32 (no shader-f16); WebGPU parity check passed',
    );
    expect(realErrors(page)).toEqual([]);
    await page.goto(HARNESS);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
  });

  it('an image–text model too: CLIP on device=webgpu, dtype auto, checked on text and a generated image', async () => {
    const r = loaded(await call(page, 'load', CLIP, { device: 'webgpu', ...OFFLINE }));
    seen.push(r.info.deviceReason);
    expect(r.info).toMatchObject({ device: 'webgpu', dtype: shaderF16 ? 'fp16' : 'fp32' });
    expect(r.info.parity).toMatchObject({ ok: true, inputs: 5, referenceDtype: 'fp32' });
    expect(r.info.deviceReason).toContain(
      shaderF16 ? '; fp16 (shader-f16 available' : '; fp32 (no shader-f16)',
    );
    expect(realErrors(page)).toEqual([]);
  });
});
