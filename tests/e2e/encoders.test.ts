// Neural encoders in a real Chromium, offline: generated random-weight models load from /models/,
// WebGPU (SwiftShader) and WASM give the same vectors, a WebGPU failure falls back to WASM with its
// reason, the vqa-rad and medquad corpora embed through the worker, and an interrupted corpus run
// resumes from its stored batches without recomputing them.
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { BrowserContext, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { EncoderHarness } from '../browser/encoder-harness';
import { harnessCaller, launch, pageErrors, type Session, isolatedWasmThreads } from './browser';

const baseUrl = inject('baseUrl');
const HARNESS = `${baseUrl}/tests/browser/encoder-harness.html`;
const BERT = 'loupe-test/bert-tiny-random';
const CLIP = 'loupe-test/clip-tiny-random';
const OFFLINE = { allowRemoteModels: false } as const;

const TEXTS = [
  'pneumothorax',
  'Organ: chest. Modality: X-ray. Findings include: cardiomegaly; pleural effusion.',
  'What are the symptoms of the common cold?',
  'Axial CT of the head without contrast shows a hyperdense lesion in the left basal ganglia.',
  'a',
];
const IMAGES = [
  'images/synpic100132.jpg',
  'images/synpic100176.jpg',
  'images/synpic100228.jpg',
  'images/synpic676.jpg',
  'images/synpic9872.jpg',
];

type Result<K extends keyof EncoderHarness> = Awaited<ReturnType<EncoderHarness[K]>>;

/** Calls `window.encoderHarness[fn](...args)` in the page. */
const call = harnessCaller<EncoderHarness>('encoderHarness');

async function openHarness(page: Page, how: 'goto' | 'reload' = 'goto') {
  if (how === 'goto') await page.goto(HARNESS);
  else await page.reload();
  await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
}

function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
}

function loaded<T extends { ok: boolean }>(r: T): Extract<T, { ok: true }> {
  if (!r.ok) throw new Error(`failed: ${JSON.stringify(r)}`);
  return r as Extract<T, { ok: true }>;
}

/** Batch records (not the meta record) of one embedding key. */
function batchRecords(records: Result<'embRecords'>, key: string) {
  return records.filter((r) => r.key.startsWith(`${key}#`) && r.batchNo !== null);
}

/** ONNX Runtime's wasm files as fetched (not the dev server's `?url` module requests). */
const PLAIN_WASM = /\/ort-wasm-simd-threaded(-[\w-]+)?\.wasm$/;
const ASYNCIFY_WASM = /\/ort-wasm-simd-threaded\.asyncify(-[\w-]+)?\.wasm$/;

describe('neural encoders in a worker (Chromium, offline)', () => {
  let session: Session;
  let context: BrowserContext;
  let page: Page;
  /** Every URL the browser requested (page and workers). */
  const requests: string[] = [];
  const cosines: Record<string, number> = {};
  /** WASM threads on this machine: 2, or 1 where the browser sees one core (test:slow pins to one). */
  let threads = 0;

  beforeAll(async () => {
    session = await launch();
    context = session.context;
    page = session.page;
    context.on('request', (r) => void requests.push(r.url()));
    await openHarness(page);
    threads = await isolatedWasmThreads(page);
  });

  afterAll(async () => {
    if (Object.keys(cosines).length) console.log('WebGPU vs WASM min cosine:', cosines);
    await session?.dispose();
  });

  it('loads the generated text and CLIP models from /models/ without leaving 127.0.0.1', async () => {
    expect(await call(page, 'registryErrors')).toEqual([]);
    const bert = loaded(await call(page, 'load', BERT, { device: 'wasm', dtype: 'fp32', ...OFFLINE }));
    expect(bert.info).toMatchObject({ modelId: BERT, device: 'wasm', dtype: 'fp32', dim: 64, threads });
    expect(bert.info.fallbackReason).toBeUndefined();
    expect(bert.progress.some((p) => p.startsWith('download:'))).toBe(true);

    const vecs = await call(page, 'embedTexts', TEXTS, 'query', 2);
    expect(vecs).toHaveLength(TEXTS.length);
    for (const v of vecs) {
      expect(v).toHaveLength(64);
      expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    }
    // Batching does not change a text's vector.
    const single = await call(page, 'embedTexts', [TEXTS[1]], 'query', 1);
    expect(cosine(single[0], vecs[1])).toBeGreaterThan(0.9999);

    const clip = loaded(await call(page, 'load', CLIP, { device: 'wasm', dtype: 'q8', ...OFFLINE }));
    expect(clip.info).toMatchObject({ device: 'wasm', dtype: 'q8', dim: 32 });
    const img = await call(page, 'embedShardImages', 'vqa-rad', IMAGES.slice(0, 2), 2);
    expect(img).toHaveLength(2);
    expect(img[0]).toHaveLength(32);

    const modelFiles = requests.filter((u) => u.includes('/models/generated/loupe-test/'));
    expect(modelFiles.some((u) => u.endsWith('bert-tiny-random/onnx/model.onnx'))).toBe(true);
    expect(modelFiles.some((u) => u.endsWith('clip-tiny-random/onnx/vision_model_quantized.onnx'))).toBe(
      true,
    );
    // No hardware WebGPU here: the worker runs ONNX Runtime's plain WASM build, not the asyncify one.
    expect(bert.info.ortBuild).toBe('plain');
    expect(clip.info.ortBuild).toBe('plain');
    expect(requests.some((u) => PLAIN_WASM.test(u))).toBe(true);
    expect(requests.some((u) => ASYNCIFY_WASM.test(u))).toBe(false);
    const outside = requests.filter((u) => !/^(http:\/\/127\.0\.0\.1[:/]|blob:|data:)/.test(u));
    expect(outside).toEqual([]);
  });

  it('WebGPU (SwiftShader) and WASM give the same fp32 vectors for texts and images', async () => {
    const probe = await call(page, 'probe');
    expect(probe.probe.webgpu, probe.probe.webgpuReason).toBe(true);

    for (const id of [BERT, CLIP]) {
      const gpu = loaded(await call(page, 'load', id, { device: 'webgpu', dtype: 'fp32', ...OFFLINE }));
      expect(gpu.info.device, gpu.info.fallbackReason).toBe('webgpu');
      expect(gpu.info.dtype).toBe('fp32');
      // The worker of the test above ran the plain build, which has no WebGPU: the load went to a
      // fresh worker on the asyncify build, and the WASM loads below run there too.
      expect(gpu.info.ortBuild).toBe('asyncify');
      expect(requests.some((u) => ASYNCIFY_WASM.test(u))).toBe(true);
      const gpuText = await call(page, 'embedTexts', TEXTS, 'document', 3);
      const gpuImg = id === CLIP ? await call(page, 'embedShardImages', 'vqa-rad', IMAGES, 2) : [];

      const cpu = loaded(await call(page, 'load', id, { device: 'wasm', dtype: 'fp32', ...OFFLINE }));
      expect(cpu.info.device).toBe('wasm');
      expect(cpu.info.ortBuild).toBe('asyncify');
      const cpuText = await call(page, 'embedTexts', TEXTS, 'document', 3);
      const cpuImg = id === CLIP ? await call(page, 'embedShardImages', 'vqa-rad', IMAGES, 2) : [];

      const textCos = gpuText.map((v, i) => cosine(v, cpuText[i]));
      cosines[`${id} text`] = Math.min(...textCos);
      for (const c of textCos) expect(c).toBeGreaterThanOrEqual(0.999);
      if (id === CLIP) {
        const imgCos = gpuImg.map((v, i) => cosine(v, cpuImg[i]));
        cosines[`${id} image`] = Math.min(...imgCos);
        for (const c of imgCos) expect(c).toBeGreaterThanOrEqual(0.999);
      }
    }
  });

  it('auto does not take the SwiftShader adapter: it runs on WASM and says why', async () => {
    const probe = await call(page, 'probe');
    expect(probe.probe).toMatchObject({ webgpu: true, fallbackAdapter: true, software: 'SwiftShader' });
    expect(probe).toMatchObject({
      device: 'wasm',
      deviceReason: 'software WebGPU adapter (SwiftShader) — using WASM',
    });
    const auto = loaded(await call(page, 'load', BERT, { device: 'auto', dtype: 'fp32', ...OFFLINE }));
    expect(auto.info).toMatchObject({
      device: 'wasm',
      dtype: 'fp32',
      threads,
      deviceReason: 'software WebGPU adapter (SwiftShader) — using WASM',
    });
    expect(auto.info.fallbackReason).toBeUndefined();
    expect(auto.info.reason).toMatch(
      new RegExp(`^software WebGPU adapter \\(SwiftShader\\) — using WASM; ${threads} WASM threads?`),
    );
    expect(await call(page, 'backend')).toMatchObject({
      device: 'wasm',
      deviceReason: auto.info.deviceReason,
    });
    // Forced, the software adapter is used (correct, slow), and the reason says so.
    const forced = loaded(await call(page, 'load', BERT, { device: 'webgpu', dtype: 'fp32', ...OFFLINE }));
    expect(forced.info.device).toBe('webgpu');
    expect(forced.info.deviceReason).toMatch(/^WebGPU as requested on .*software adapter SwiftShader/);
    // The vectors agree (auto = WASM here; the parity test above covers texts and images in depth).
    const gpuVecs = await call(page, 'embedTexts', TEXTS, 'document', 5);
    loaded(await call(page, 'load', BERT, { device: 'auto', dtype: 'fp32', ...OFFLINE }));
    const autoVecs = await call(page, 'embedTexts', TEXTS, 'document', 5);
    autoVecs.forEach((v, i) => expect(cosine(v, gpuVecs[i])).toBeGreaterThanOrEqual(0.999));
  });

  it('falls back to WASM with the reason when WebGPU fails', async () => {
    const r = loaded(
      await call(page, 'load', BERT, {
        device: 'webgpu',
        dtype: 'fp32',
        simulateWebGpuFailure: true,
        ...OFFLINE,
      }),
    );
    expect(r.info.device).toBe('wasm');
    expect(r.info.fallbackReason).toMatch(/WebGPU failed \(simulated WebGPU session failure/);
    const v = await call(page, 'embedTexts', ['still works'], 'query');
    expect(v[0]).toHaveLength(64);

    // A lost GPU device (driver reset) moves the running model to WASM; later WebGPU loads fall back.
    const gpu = loaded(await call(page, 'load', BERT, { device: 'webgpu', dtype: 'fp32', ...OFFLINE }));
    expect(gpu.info.device).toBe('webgpu');
    const before = await call(page, 'embedTexts', TEXTS, 'query');
    expect(await call(page, 'loseGpuDevice')).toBe(true);
    const after = await call(page, 'embedTexts', TEXTS, 'query');
    after.forEach((v, i) => expect(cosine(v, before[i])).toBeGreaterThanOrEqual(0.999));
    const now = await call(page, 'backend');
    expect(now).toMatchObject({ device: 'wasm', dtype: 'fp32' });
    expect(now?.fallbackReason).toMatch(/^WebGPU failed \(.*lost/i);

    // A WebGPU failure with an automatic dtype falls back to a dtype valid for WASM.
    const autoDtype = loaded(
      await call(page, 'load', CLIP, { device: 'webgpu', simulateWebGpuFailure: true, ...OFFLINE }),
    );
    expect(autoDtype.info).toMatchObject({ device: 'wasm', dtype: 'fp32' });
    expect(autoDtype.info.fallbackReason).toMatch(/simulated/);
    expect(autoDtype.info.deviceReason).toBe(autoDtype.info.fallbackReason);
  });

  it('embeds the vqa-rad corpus: 315 images through the vision tower, passages through the text tower', async () => {
    const hash = await call(page, 'importShard', 'vqa-rad');
    const load = { device: 'wasm', dtype: 'fp32', ...OFFLINE } as const;

    const img = loaded(await call(page, 'embedCorpus', hash, CLIP, 'image', 32, load));
    expect(img).toMatchObject({
      dim: 32,
      docs: 315,
      missing: [],
      totalBatches: 10,
      computedBatches: 10,
      reusedBatches: 0,
    });
    expect(img.bufferBytes).toBe(315 * 32 * 4);
    expect(img.presentNorm.min).toBeCloseTo(1, 4);
    expect(img.presentNorm.max).toBeCloseTo(1, 4);
    expect(img.backend).toMatchObject({ device: 'wasm', dtype: 'fp32' });
    expect(img.progress.some((p) => p === 'embed:315/315')).toBe(true);

    const text = loaded(await call(page, 'embedCorpus', hash, CLIP, 'text', 64, load));
    expect(text).toMatchObject({ dim: 32, docs: 315, tokenBudget: 4096, computedBatches: text.totalBatches });
    // Batched by length: at most 64 passages, and at most 4096 / 77 = 53 of the longest (77 tokens).
    expect(text.totalBatches).toBeGreaterThanOrEqual(Math.ceil(314 / 64));
    // One vqa-rad document has an image but no passage: skipped, reported, an all-zero row.
    expect(text.missing).toHaveLength(1);
    expect(text.missingMaxAbs).toBe(0);
    expect(text.presentNorm.min).toBeCloseTo(1, 4);

    // Passages cut into windows of 30 tokens (32 with the two special ones), chunked by mean: the
    // worker pools each document's chunk rows into its one row, as the mean of the rows it returns
    // unpooled.
    const pool = await call(page, 'pooledChunks', hash, CLIP, load, { maxTokens: 32 });
    expect(pool).toMatchObject({ docs: 315, pooledRows: 315, pooledChunkRows: pool.chunkRows, reused: true });
    expect(pool.severalChunks).toBeGreaterThan(0);
    expect(pool.chunkRows).toBeGreaterThan(314);
    expect(pool.maxDiff).toBeLessThan(1e-6);

    // A second call reuses everything.
    const again = loaded(await call(page, 'embedCorpus', hash, CLIP, 'image', 32, load));
    expect(again).toMatchObject({ computedBatches: 0, reusedBatches: 10, checksum: img.checksum });
    console.log(
      `vqa-rad: 315 images in ${img.ms.toFixed(0)} ms, 314 passages in ${text.ms.toFixed(0)} ms (clip-tiny, WASM)`,
    );
  });

  it('embeds medquad with bert-tiny and resumes after a worker kill and after a page reload', async () => {
    const hash = await call(page, 'importShard', 'medquad');
    const load = { device: 'wasm', dtype: 'fp32', ...OFFLINE } as const;
    const BATCH = 32;
    // medquad passages are long: 128 tokens instead of 512 keeps this test at seconds, not a minute.
    const short = { maxTokens: 128 };

    // 1. Cancel (terminate the worker) once about a third is done.
    const cancelled = await call(page, 'embedCorpus', hash, BERT, 'text', BATCH, load, {
      abortAtDone: 1000,
      overrides: short,
    });
    expect(cancelled).toMatchObject({ ok: false, error: { name: 'AbortError' } });
    const all1 = await call(page, 'embRecords', hash);
    const meta = all1.find((r) => r.key.endsWith('#meta'));
    expect(meta).toBeDefined();
    const key = meta!.key.slice(0, -'#meta'.length);
    // Batched by length (longest first) within 4096 padded tokens and 32 documents: the plan is stored.
    const TOTAL = meta!.totalBatches!;
    expect(TOTAL).toBeGreaterThanOrEqual(Math.ceil(3000 / BATCH));
    const stored1 = batchRecords(all1, key);
    for (const r of stored1) expect(r.size).toBeLessThanOrEqual(BATCH);
    const k1 = stored1.length;
    expect(k1).toBeGreaterThanOrEqual(Math.floor(1000 / BATCH));
    expect(k1).toBeLessThan(TOTAL);

    // 2. Start again, reload the page half way (the worker dies with it).
    await call(page, 'startCorpus', 'r1', hash, BERT, 'text', BATCH, load, short);
    const half = Math.floor(TOTAL / 2);
    for (let i = 0; ; i++) {
      const n = batchRecords(await call(page, 'embRecords', hash), key).length;
      if (n >= half) break;
      if (i > 600) throw new Error(`only ${n} batches stored after 60 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const status = await call(page, 'runStatus', 'r1');
    await openHarness(page, 'reload');
    const stored2 = batchRecords(await call(page, 'embRecords', hash), key);
    const k2 = stored2.length;
    expect(k2).toBeGreaterThanOrEqual(half);
    // The second run reused the first run's batches: their records were not rewritten.
    const stamp1 = new Map(stored1.map((r) => [r.batchNo, r.writtenAt]));
    for (const r of stored2) if (stamp1.has(r.batchNo)) expect(r.writtenAt).toBe(stamp1.get(r.batchNo));
    expect(status?.done ?? null).toBeNull(); // it really was interrupted

    // 3. Resume to the end, asking for another batch size: the stored one is kept.
    const done = loaded(await call(page, 'embedCorpus', hash, BERT, 'text', 50, load, { overrides: short }));
    expect(done).toMatchObject({ dim: 64, docs: 3000, missing: [], batchSize: BATCH, totalBatches: TOTAL });
    expect(done.reusedBatches).toBe(k2);
    expect(done.computedBatches).toBe(TOTAL - k2);
    expect(done.presentNorm.min).toBeCloseTo(1, 4);
    const stored3 = batchRecords(await call(page, 'embRecords', hash), key);
    expect(stored3).toHaveLength(TOTAL);
    const stamp2 = new Map(stored2.map((r) => [r.batchNo, r.writtenAt]));
    const rewritten = stored3.filter((r) => stamp2.has(r.batchNo) && r.writtenAt !== stamp2.get(r.batchNo));
    expect(rewritten).toEqual([]);
    expect(stored3.filter((r) => !stamp2.has(r.batchNo))).toHaveLength(TOTAL - k2);
    const meta3 = (await call(page, 'embRecords', hash)).find((r) => r.key === `${key}#meta`);
    expect(meta3?.complete).toBe(true);

    // 4. A fresh run from scratch in a new key space would give the same vectors: check by
    //    re-running fully cached (nothing computed, same checksum).
    const cached = loaded(
      await call(page, 'embedCorpus', hash, BERT, 'text', BATCH, load, { overrides: short }),
    );
    expect(cached).toMatchObject({ computedBatches: 0, reusedBatches: TOTAL, checksum: done.checksum });

    // 5. Ad-hoc queries (the Search view's path): the first reads the stored corpus and hands it to
    //    the retrieval worker; the next ones find it there and rank the same.
    await call(page, 'importShard', 'medquad');
    const q = 'What are the treatments for Ledderhose disease ?';
    const adhoc = await call(page, 'adhocDense', hash, 'qa-answer-retrieval', BERT, [q, q, q], load);
    expect(adhoc[0].hits).toHaveLength(20);
    expect(adhoc[1].hits).toEqual(adhoc[0].hits);
    expect(adhoc[2].hits).toEqual(adhoc[0].hits);
    console.log(
      `ad-hoc query: ${adhoc.map((a) => a.ms.toFixed(1)).join(', ')} ms (first reads the stored corpus)`,
    );
    console.log(
      `medquad resume: cancel after ${k1} of ${TOTAL} batches, reload after ${k2}; resumed run reused ${done.reusedBatches}, computed ${done.computedBatches} (${done.ms.toFixed(0)} ms)`,
    );
    // The GPU device lost on purpose above ('falls back to WASM…') may have its failed run logged by
    // transformers.js late, whenever the dying worker's console reaches the page: expected, not this
    // test's. Any other error fails it.
    const lostOnPurpose = /Device was lost|Inputs given to model/;
    expect(
      pageErrors(page).filter((e) => !/Failed to load resource/.test(e) && !lostOnPurpose.test(e)),
    ).toEqual([]);
  });

  it('caches model files once the load is over, whole; a cancelled worker leaves none behind', async () => {
    const ONNX = 'bert-tiny-random/onnx/model.onnx';
    const size = statSync(
      resolve(import.meta.dirname, '../../models/generated/loupe-test/bert-tiny-random/onnx/model.onnx'),
    ).size;
    // Requests for the file: one per download (transformers.js, given a progress callback, would
    // first ask for the whole file once more to learn its size; the fetch hook counts it instead).
    const asked: string[] = [];
    const onRequest = (r: Request) => {
      if (r.url().endsWith(`/${ONNX}`)) asked.push(r.url());
    };
    context.on('request', onRequest);
    const downloads = () => asked.length;
    const load = { device: 'wasm', dtype: 'fp32', ...OFFLINE } as const;
    // A fresh worker and an empty model cache, as on a first visit.
    await call(page, 'stop');
    await call(page, 'clearModelCache');
    const n0 = downloads();
    const first = loaded(await call(page, 'load', BERT, load));
    expect(downloads()).toBe(n0 + 1);
    const n1 = downloads();
    // Its download is reported as it is read: the file, then its bytes up to the whole, then the
    // session's preparation.
    const p = first.progress;
    const started = p.indexOf('status:Loading onnx/model.onnx');
    const whole = p.indexOf(`download:onnx/model.onnx:${size}/${size}`);
    expect(started, JSON.stringify(p)).toBeGreaterThanOrEqual(0);
    expect(whole, JSON.stringify(p)).toBeGreaterThan(started);
    expect(p.slice(whole).some((x) => x.startsWith('status:Preparing the model'))).toBe(true);
    // The session was built from the downloaded bytes; their copy into the cache waits for the page
    // to be quiet (half a second after the load here).
    expect(first.info.cacheQueued).toBeGreaterThanOrEqual(1);
    expect(await call(page, 'cachedModelFiles', ONNX)).toEqual([]);
    await expect
      .poll(() => call(page, 'cachedModelFiles', ONNX), { timeout: 30_000 })
      .toEqual([{ path: expect.stringMatching(new RegExp(`/${ONNX}$`)), bytes: size }]);
    // A fresh worker loads it from the cache, not from the network, and embeds the same.
    const v1 = await call(page, 'embedTexts', TEXTS, 'query');
    await call(page, 'stop');
    const second = loaded(await call(page, 'load', BERT, load));
    expect(second.info.cacheQueued).toBe(0);
    expect(downloads()).toBe(n1);
    const v2 = await call(page, 'embedTexts', TEXTS, 'query');
    v2.forEach((v, i) => expect(cosine(v, v1[i])).toBeGreaterThan(0.99999));

    // A cancel right after a load terminates its worker with the files still queued: nothing of them
    // is in the cache (not even part of one), and the next load downloads them again.
    await call(page, 'stop');
    await call(page, 'clearModelCache');
    loaded(await call(page, 'load', BERT, load));
    expect(await call(page, 'cancelEmbed')).toBe('AbortError');
    await new Promise((r) => setTimeout(r, 1500));
    expect(await call(page, 'cachedModelFiles', ONNX)).toEqual([]);
    const n2 = downloads();
    const third = loaded(await call(page, 'load', BERT, load));
    expect(downloads()).toBe(n2 + 1);
    expect(third.info.cacheQueued).toBeGreaterThanOrEqual(1);
    // Ended on purpose (not a cancel): the files are written before the worker goes.
    await call(page, 'stop');
    expect(await call(page, 'cachedModelFiles', ONNX)).toEqual([
      { path: expect.stringMatching(new RegExp(`/${ONNX}$`)), bytes: size },
    ]);
    context.off('request', onRequest);
  });
});
