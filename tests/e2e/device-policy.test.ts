// The WebGPU device policy in a real Chromium on its SwiftShader adapter (forced with device=webgpu):
// the parity check at load passes (cosine ≥ 0.9999) and the model stays on WebGPU; with the test hook
// that perturbs the WebGPU vectors (simulate-parity-mismatch) the load continues on WASM and the
// reason carries the measured cosine, which this test recomputes from the two backends' own vectors;
// single text queries go to the device timed faster at load (WASM on SwiftShader); q8 never runs on
// WebGPU. The pure rules are in tests/unit/device-policy.test.ts.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PARITY_TEXTS, cosine, perturbVector } from '../../src/lib/platform/gpu/device-policy';
import type { EncoderHarness } from '../browser/encoder-harness';
import { join } from 'node:path';
import { DATA_DIR } from '../paths';
import { harnessCaller, launch, pageErrors, type Session } from './browser';
import { writeImageSubset } from './shard-fixtures';

const baseUrl = inject('baseUrl');
const HARNESS = `${baseUrl}/tests/browser/encoder-harness.html`;
const BERT = 'loupe-test/bert-tiny-random';
const CLIP = 'loupe-test/clip-tiny-random';
const GPU = { device: 'webgpu', dtype: 'fp32', allowRemoteModels: false } as const;
/** Page errors other than the browser's log line for a 404 (the harness page's favicon). */
const realErrors = (page: Page) => pageErrors(page).filter((e) => !/Failed to load resource/.test(e));
const call = harnessCaller<EncoderHarness>('encoderHarness');

function loaded<T extends { ok: boolean }>(r: T): Extract<T, { ok: true }> {
  if (!r.ok) throw new Error(`failed: ${JSON.stringify(r)}`);
  return r as Extract<T, { ok: true }>;
}

describe('device policy on WebGPU (Chromium, SwiftShader)', () => {
  let session: Session;
  let page: Page;

  beforeAll(async () => {
    // The app test's shard: a vqa-rad subset (first 80 documents, the queries judging them) written
    // into gitignored generated-shards/e2e-device-policy, so the run embeds tens of passages.
    writeImageSubset(
      join(DATA_DIR, 'vqa-rad'),
      join(import.meta.dirname, '../../generated-shards/e2e-device-policy/vqa-rad-sub'),
      { docs: 80, name: 'vqa-rad-sub' },
    );
    session = await launch();
    page = session.page;
    await page.goto(HARNESS);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
  });

  /** The cosine the forced mismatch measured on bert-tiny (deterministic: the app run must show it too). */
  let mismatchCosine = '';
  /** Reasons as the runs record them (printed: README quotes their form). */
  const seen: string[] = [];

  afterAll(async () => {
    if (seen.length) console.log(`device reasons:\n${seen.join('\n')}`);
    await session?.dispose();
  });

  it('a forced parity mismatch moves the load to WASM, with the measured cosine in its reason', async () => {
    const r = loaded(await call(page, 'load', BERT, { ...GPU, simulateParityMismatch: true }));
    expect(r.info).toMatchObject({ device: 'wasm', dtype: 'fp32' });
    const m =
      /^WebGPU parity check failed: cosine (0\.\d{6}) < 0\.9999 on text "[^"]+" \(fp32 WebGPU vs WASM fp32, lowest of 4 fixed inputs\) \(simulated mismatch\); running on WASM \(fp32\)$/.exec(
        r.info.fallbackReason ?? '',
      );
    expect(m, r.info.fallbackReason).not.toBeNull();
    expect(r.info.deviceReason).toBe(r.info.fallbackReason);
    seen.push(r.info.deviceReason);
    expect(r.info.parity).toMatchObject({
      ok: false,
      simulated: true,
      threshold: 0.9999,
      inputs: 4,
      cached: false,
    });
    expect(r.info.queryDevice).toBeUndefined();
    expect(r.progress.some((p) => p.startsWith('status:Checking WebGPU against WASM'))).toBe(true);
    expect(await call(page, 'backend')).toMatchObject({
      device: 'wasm',
      fallbackReason: r.info.fallbackReason,
    });
    // The run goes on, on WASM.
    const v = await call(page, 'embedTexts', ['still answers'], 'query');
    expect(v[0]).toHaveLength(64);

    // The reported cosine is the measured one: the same texts on WebGPU (perturbed the same way here)
    // against WASM, lowest over the inputs.
    loaded(await call(page, 'load', BERT, GPU));
    const onGpu = await call(page, 'embedTexts', [...PARITY_TEXTS], 'document', 8);
    loaded(await call(page, 'load', BERT, { ...GPU, device: 'wasm' }));
    const onWasm = await call(page, 'embedTexts', [...PARITY_TEXTS], 'document', 8);
    const lowest = Math.min(...onGpu.map((g, i) => cosine(perturbVector(Float32Array.from(g)), onWasm[i])));
    expect(lowest).toBeLessThan(0.95);
    expect(Number(m![1])).toBeCloseTo(lowest, 4);
    mismatchCosine = m![1];
    expect(r.info.parity!.cosine).toBeCloseTo(lowest, 4);

    // Asked again: the cached verdict, no second check.
    const again = loaded(await call(page, 'load', BERT, { ...GPU, simulateParityMismatch: true }));
    expect(again.info).toMatchObject({ device: 'wasm', fallbackReason: r.info.fallbackReason });
    expect(again.info.parity?.cached).toBe(true);
    expect(again.progress.some((p) => p.startsWith('status:Checking WebGPU'))).toBe(false);
    // …and no WebGPU session first: the known failure sends the load straight to WASM.
    expect(again.progress.filter((p) => /^status:Loading .* for WebGPU/.test(p))).toEqual([]);
    // The WASM encoder loaded above is the one used: held by the worker, not loaded (nor said) again.
    expect(again.info.cached).toBe(true);
    expect(again.progress.some((p) => /^status:Loading .* for WASM/.test(p))).toBe(false);
    expect(realErrors(page)).toEqual([]);
  });

  it('without the hook the check passes on SwiftShader and the model stays on WebGPU; one text query runs on the faster WASM', async () => {
    // A fresh page: no verdict from the first test (the page keeps them across worker restarts).
    await page.reload();
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
    const r = loaded(await call(page, 'load', BERT, GPU));
    expect(r.info).toMatchObject({ device: 'webgpu', dtype: 'fp32' });
    expect(r.info.fallbackReason).toBeUndefined();
    expect(r.info.parity).toMatchObject({ ok: true, simulated: false, inputs: 4, cached: false });
    expect(r.info.parity!.cosine).toBeGreaterThanOrEqual(0.9999);
    // SwiftShader emulates the GPU on the CPU: one bert-tiny query is faster on WASM, as measured.
    const q = r.info.queryDevice!;
    expect(q).toMatchObject({ device: 'wasm', runs: 3 });
    expect(q.wasmMs).toBeLessThan(q.webgpuMs);
    expect(r.info.deviceReason).toMatch(
      /^WebGPU as requested on .*SwiftShader.*; WebGPU parity check passed: cosine (0\.9999\d\d|1\.000000) ≥ 0\.9999 vs WASM fp32 \(lowest of 4 fixed inputs\); single text queries on WASM: [\d.]+ ms vs [\d.]+ ms on WebGPU \(median of 3 at load\)$/,
    );
    seen.push(r.info.deviceReason);
    expect(await call(page, 'backend')).toMatchObject({ device: 'webgpu', queryDevice: 'wasm' });
    // One query (on WASM) and the same text in a batch (on WebGPU) agree.
    const texts = ['pleural effusion on chest x-ray', 'a', 'what causes anaemia'];
    const batch = await call(page, 'embedTexts', texts, 'query', 8);
    const one = await call(page, 'embedTexts', [texts[0]], 'query', 1);
    expect(cosine(one[0], batch[0])).toBeGreaterThanOrEqual(0.9999);
    // Benchmarks pin single queries to the model's device: the verdict is reused, the query stays on WebGPU.
    const pinned = loaded(await call(page, 'load', BERT, { ...GPU, pinQueries: true }));
    expect(pinned.info.parity?.cached).toBe(true);
    expect(await call(page, 'backend')).not.toHaveProperty('queryDevice');
    // A restarted worker (a cancel terminates it) gets the page's verdict back: no second check.
    await call(page, 'stop');
    const restarted = loaded(await call(page, 'load', BERT, GPU));
    expect(restarted.info.parity).toMatchObject({ cached: true, cosine: r.info.parity!.cosine });
    expect(restarted.info.queryDevice).toEqual(q);
    expect(restarted.progress.some((p) => p.startsWith('status:Checking WebGPU'))).toBe(false);
    expect(await call(page, 'backend')).toMatchObject({ device: 'webgpu', queryDevice: 'wasm' });
    expect(realErrors(page)).toEqual([]);
  });

  it('checks an image–text model on a generated image too', async () => {
    // The check passing on text and a generated image (CLIP on WebGPU, parity ok over 5 inputs) is
    // fp16.test.ts's CLIP case, the same load; here only the failing check and its fallback, so that
    // the suite loads CLIP on SwiftShader once for each outcome, not twice for the passing one.
    const bad = loaded(await call(page, 'load', CLIP, { ...GPU, simulateParityMismatch: true }));
    expect(bad.info.device).toBe('wasm');
    expect(bad.info.fallbackReason).toMatch(
      /^WebGPU parity check failed: cosine 0\.\d{6} < 0\.9999 on (text "|generated image 64×64)/,
    );
  });

  it('never runs q8 on WebGPU: an explicit q8 with device=webgpu runs on WASM and says why', async () => {
    const r = loaded(await call(page, 'load', BERT, { ...GPU, dtype: 'q8' }));
    expect(r.info).toMatchObject({ device: 'wasm', dtype: 'q8' });
    expect(r.info.deviceReason).toBe(
      'q8 runs on WASM, never on WebGPU: its quantised ops are not accelerated there (measured no faster than WASM, BENCHMARKS.md)',
    );
    expect(r.info.parity).toBeUndefined();
    expect(realErrors(page)).toEqual([]);
  });

  it('in the app: a forced mismatch on device=webgpu completes a vqa-rad run (its passages) on WASM and records the parity failure', async () => {
    expect(mismatchCosine).not.toBe('');
    await page.goto(
      `${baseUrl}/?shard=/generated-shards/e2e-device-policy/vqa-rad-sub/&retriever=dense&model=${BERT}&device=webgpu&dtype=fp32&simulate-parity-mismatch=1&run=1`,
    );
    await page.waitForSelector(
      '[data-testid="app"][data-phase="done"], [data-testid="app"][data-phase="error"]',
      {
        timeout: 300_000,
      },
    );
    expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
    const backend = page.locator('[data-testid="backend"]');
    expect(await backend.getAttribute('data-device')).toBe('wasm');
    expect(await backend.getAttribute('data-parity')).toBe('failed');
    const failure = `WebGPU parity check failed: cosine ${mismatchCosine} < 0.9999 on text "`;
    expect(await page.locator('[data-testid="fallback-reason"]').innerText()).toContain(
      `fell back to WASM: ${failure}`,
    );
    expect(await page.locator('[data-testid="device-policy"]').innerText()).toMatch(/never q8/);
    // The run itself: on WASM, with the parity failure as its device reason.
    const desc = await page.locator('[data-testid="runs-table"] td.small').last().innerText();
    expect(desc).toContain(`${BERT} (fp32, wasm)`);
    expect(desc).toContain(failure);
    expect(desc).toMatch(/\(simulated mismatch\); running on WASM \(fp32\)$/);
    // The long reasons wrap: no horizontal overflow at phone, tablet and desktop widths.
    for (const width of [390, 1024, 1440]) {
      await page.setViewportSize({ width, height: 860 });
      const [sw, iw] = await page.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
      expect(sw, `${width} px`).toBeLessThanOrEqual(iw);
      expect(await page.locator('[data-testid="fallback-reason"]').isVisible()).toBe(true);
    }
    expect(realErrors(page)).toEqual([]);
  });
});
