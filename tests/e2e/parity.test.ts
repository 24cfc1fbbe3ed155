// Parity of the browser encoder with native ONNX Runtime (scripts/parity.ts is the full report):
// the product's encoder worker in Chromium and onnxruntime-node in this process embed the same
// medquad texts and vqa-rad images with the same ONNX files.
//
// Bounds (established by scripts/parity.ts on 200 texts and 32 images, see BENCHMARKS.md):
// - text, same dtype, WASM and WebGPU: cosine ≥ 0.9999 for every text (observed: fp32 ≥ 0.99999999,
//   q8 ≥ 0.999993 on minilm-l6);
// - images on clip-tiny-random: JPEG decoding gives the same bytes in both; the resize differs
//   (browser: canvas drawImage, which ignores `resample`; Node: sharp's bicubic affine). With the
//   browser's own pixel tensor native ORT matches the worker (≥ 0.9999, observed 1.00000000); with
//   Node's pixels the cosine is ≥ IMAGE_NODE_MIN (observed ≥ 0.999985), and pixel_values differ by
//   ≤ PIXEL_MEAN_LEVELS on average and ≤ PIXEL_MAX_LEVELS at worst (observed 2.6 and 150 levels).
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CLIPVisionModelWithProjection, Tensor } from '@huggingface/transformers';
import type { Dtype } from '../../src/lib/core/retrieval/models';
import { call, openHarness } from '../../scripts/lib/bench-harness';
import {
  NativeTextEncoder,
  NativeVisionEncoder,
  concat,
  configureTransformers,
  cosineStats,
  fromBase64,
  l2normalizeRows,
  localName,
  nodePixelValues,
  registrySpec,
} from '../../scripts/lib/native-encoder';
import {
  comparePixels,
  medquadDocs,
  medquadQueries,
  readVqaRadImages,
  vqaRadImages,
} from '../../scripts/lib/parity-data';
import { launch, pageErrors, type Session } from './browser';

const baseUrl = inject('baseUrl');
const TEXT_MIN = 0.9999;
/** Worker vs native ORT on the browser's own pixels (ORT differences only). */
const IMAGE_SAME_PIXELS_MIN = 0.9999;
/** Worker vs transformers.js in Node (canvas vs sharp resize), clip-tiny-random. */
const IMAGE_NODE_MIN = 0.999;
/** pixel_values difference, browser vs Node, in 8-bit levels: mean over all values, and largest. */
const PIXEL_MEAN_LEVELS = 4;
const PIXEL_MAX_LEVELS = 160;
/** Decoded JPEG bytes, browser vs sharp (identical here; a different libjpeg IDCT may move a level or two). */
const DECODE_MAX_LEVELS = 2;
const BATCH = 8;
const MINILM = 'loupe-test/minilm-l6-random';
/** minilm at the registry's 512 tokens takes over a minute per dtype on a busy 2-core CI machine; the
 * truncation is the same on both sides, and bert-tiny covers 512 tokens. */
const MINILM_MAX_TOKENS = 128;

const DOCS = medquadDocs(24);
const QUERIES = medquadQueries(24);
/** 8 images: each is embedded four times (fp32 and q8, in Chromium and natively); the bounds come from
 * scripts/parity.ts on 32. */
const IMAGES = vqaRadImages(8);

describe('browser encoder = native onnxruntime (same ONNX files)', () => {
  let session: Session;
  let page: Page;

  beforeAll(async () => {
    configureTransformers();
    session = await launch();
    page = session.page;
    await openHarness(page, baseUrl);
    expect(await call(page, 'crossOriginIsolated')).toBe(true);
  });

  afterAll(async () => {
    await call(page, 'close').catch(() => undefined);
    await session?.dispose();
  });

  async function textParity(
    id: string,
    dtype: Dtype,
    device: 'wasm' | 'webgpu',
    docs: string[],
    queries: string[],
  ) {
    const spec = registrySpec(id, id === MINILM ? { maxTokens: MINILM_MAX_TOKENS } : {});
    const native = await NativeTextEncoder.load(spec, dtype, { threads: 2 });
    const ref = concat([
      await native.embed(docs, 'document', BATCH),
      await native.embed(queries, 'query', BATCH),
    ]);
    await native.release();
    await call(page, 'open');
    const loaded = await call(page, 'load', spec, { device, dtype });
    if (!loaded.ok) throw new Error(loaded.error.message);
    expect(loaded.info.device).toBe(device);
    expect(loaded.info.dtype).toBe(dtype);
    expect(loaded.info.fallbackReason).toBeUndefined();
    const d = await call(page, 'embedTexts', docs, 'document', BATCH);
    const q = await call(page, 'embedTexts', queries, 'query', BATCH);
    const got = concat([fromBase64(d.b64), fromBase64(q.b64)]);
    return cosineStats(got, ref, docs.length + queries.length);
  }

  for (const id of ['loupe-test/bert-tiny-random', MINILM])
    for (const dtype of ['fp32', 'q8'] as const)
      it(`text: ${id.replace('loupe-test/', '')} ${dtype} on WASM ≥ ${TEXT_MIN} cosine`, async () => {
        const s = await textParity(id, dtype, 'wasm', DOCS, QUERIES);
        expect(s.n).toBe(48);
        expect(s.min).toBeGreaterThanOrEqual(TEXT_MIN);
      });

  it(`text: bert-tiny fp32 on WebGPU (SwiftShader) ≥ ${TEXT_MIN} cosine`, async () => {
    const s = await textParity(
      'loupe-test/bert-tiny-random',
      'fp32',
      'webgpu',
      DOCS.slice(0, 8),
      QUERIES.slice(0, 8),
    );
    expect(s.min).toBeGreaterThanOrEqual(TEXT_MIN);
  });

  it('images: clip-tiny on WASM matches native on the same pixels; Node resize stays within the bound', async () => {
    const spec = registrySpec('loupe-test/clip-tiny-random');
    const urls = IMAGES.map((p) => `${baseUrl}/shards/vqa-rad/${p}`);
    const nodeImages = await readVqaRadImages(IMAGES);
    const nodePx = await nodePixelValues(spec, nodeImages);
    const bp = await call(page, 'pixelValues', spec, urls);
    const browserPx = fromBase64(bp.b64);
    const pixels = comparePixels(bp, browserPx, nodeImages, nodePx.data);
    expect(pixels.decode.sizesEqual).toBe(true);
    expect(pixels.decode.maxAbs).toBeLessThanOrEqual(DECODE_MAX_LEVELS);
    expect(pixels.preprocessed.meanAbsLevels).toBeLessThanOrEqual(PIXEL_MEAN_LEVELS);
    expect(pixels.preprocessed.maxAbsLevels).toBeLessThanOrEqual(PIXEL_MAX_LEVELS);

    for (const dtype of ['fp32', 'q8'] as const) {
      const model = await CLIPVisionModelWithProjection.from_pretrained(localName(spec), {
        dtype,
        device: 'cpu',
      });
      const out = (await model({ pixel_values: new Tensor('float32', nodePx.data, nodePx.dims) })) as Record<
        string,
        Tensor
      >;
      const nodeVecs = (out.image_embeds.data as Float32Array).slice();
      l2normalizeRows(nodeVecs, out.image_embeds.dims[1] as number);
      await model.dispose();
      const vis = await NativeVisionEncoder.load(spec, dtype, { threads: 2 });
      const samePixels = await vis.runBatches(browserPx, bp.dims, BATCH);
      await vis.release();

      await call(page, 'open');
      const loaded = await call(page, 'load', spec, { device: 'wasm', dtype });
      if (!loaded.ok) throw new Error(loaded.error.message);
      const got = fromBase64((await call(page, 'embedImages', urls, BATCH)).b64);
      const same = cosineStats(got, samePixels, IMAGES.length);
      const vsNode = cosineStats(got, nodeVecs, IMAGES.length);
      expect(same.min, `${dtype}: worker vs native on the browser's pixels`).toBeGreaterThanOrEqual(
        IMAGE_SAME_PIXELS_MIN,
      );
      expect(vsNode.min, `${dtype}: worker vs transformers.js in Node`).toBeGreaterThanOrEqual(
        IMAGE_NODE_MIN,
      );
    }
  });

  it('left no page errors', () => {
    expect(pageErrors(page)).toEqual([]);
  });
});
