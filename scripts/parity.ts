// Parity of the browser encoder with native ONNX Runtime, on the same ONNX files:
//
// Text (bert-tiny-random, minilm-l6-random; fp32 and q8): the same medquad documents and queries
// embedded (a) by native onnxruntime-node (transformers.js's tokenizer in Node, mean pooling over
// the attention mask, L2 normalisation, as the registry spec says) and (b) in headless Chromium by
// the product's encoder worker on WASM, and on WebGPU (SwiftShader) for fp32. Cosine per text.
//
// Images (CLIP vision towers: clip-tiny-random, and clip-vit-b16-random when generated): the same
// vqa-rad images embedded by the browser worker, by transformers.js in Node (sharp decode and
// resize), and by native ORT fed with the browser's own pixel tensor. That separates the resize
// difference (browser canvas vs sharp) from the ORT difference (WASM vs native MLAS), and the pixel
// tensors themselves are compared (decode stage and after preprocessing).
//
//   npx tsx scripts/parity.ts [--texts 200] [--images 32] [--batch 8] [--no-webgpu]
//     [--out bench-results/parity.json]
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CLIPVisionModelWithProjection, Tensor, type RawImage } from '@huggingface/transformers';
import type { Dtype, ModelSpec } from '../src/lib/core/retrieval/models';
import { call, launchHarness, startDevServer } from './lib/bench-harness';
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
  type CosineStats,
} from './lib/native-encoder';
import {
  comparePixels,
  medquadDocs,
  medquadQueries,
  readVqaRadImages,
  vqaRadImages,
  type PixelDiff,
} from './lib/parity-data';

const ROOT = resolve(import.meta.dirname, '..');
const TEXT_MODELS = ['loupe-test/bert-tiny-random', 'loupe-test/minilm-l6-random'];
const CLIP_MODELS = ['loupe-test/clip-tiny-random', 'loupe-test/clip-vit-b16-random'];
const DTYPES: Dtype[] = ['fp32', 'q8'];

const { values: argv } = parseArgs({
  options: {
    texts: { type: 'string', default: '200' },
    images: { type: 'string', default: '32' },
    batch: { type: 'string', default: '8' },
    'webgpu-texts': { type: 'string', default: '16' },
    'webgpu-images': { type: 'string', default: '4' },
    'no-webgpu': { type: 'boolean', default: false },
    out: { type: 'string', default: join(ROOT, 'bench-results/parity.json') },
  },
});
const N_TEXTS = Number(argv.texts);
const N_IMAGES = Number(argv.images);
const BATCH = Number(argv.batch);
const WEBGPU = !argv['no-webgpu'];
const N_GPU_IMAGES = Math.min(N_IMAGES, Number(argv['webgpu-images']));
/** WebGPU here is SwiftShader (a CPU emulation): fewer texts, or minilm at 512 tokens takes many minutes. */
const N_GPU_TEXTS = Math.min(N_TEXTS, Number(argv['webgpu-texts']));

const log = (...a: unknown[]) => console.log(`[${new Date().toISOString().slice(11, 19)}]`, ...a);
const f = (x: number, d = 6) => x.toFixed(d);

interface TextRow {
  model: string;
  dtype: Dtype;
  device: string;
  threads: number;
  texts: number;
  cos: CosineStats;
  fallbackReason?: string;
}

interface ImageRow {
  model: string;
  dtype: Dtype;
  device: string;
  images: number;
  /** Browser worker vs transformers.js in Node (different decode/resize, different ORT build). */
  browserVsNode: CosineStats;
  /** Browser worker vs native ORT fed with the browser's pixel tensor (same pixels: ORT only). */
  browserVsNativeSamePixels: CosineStats;
  /** Native ORT on browser pixels vs transformers.js in Node (same ORT: preprocessing only). */
  pixelsOnly: CosineStats;
  /** transformers.js in Node vs native ORT on Node's own pixels (sanity: the same computation). */
  nodeVsNativeNodePixels: CosineStats;
}

async function main() {
  configureTransformers();
  const docs = medquadDocs(Math.ceil(N_TEXTS / 2));
  const queries = medquadQueries(Math.floor(N_TEXTS / 2));
  const imagePaths = vqaRadImages(N_IMAGES);
  const clipModels = CLIP_MODELS.filter((id) =>
    existsSync(join(localName(registrySpec(id)), 'onnx/vision_model.onnx')),
  );
  for (const id of CLIP_MODELS)
    if (!clipModels.includes(id))
      log(`${id} is not generated (npx tsx scripts/generate-models.ts --set bench): skipped`);

  log(`${docs.length} documents + ${queries.length} queries; ${imagePaths.length} vqa-rad images`);
  const { server, base } = await startDevServer();
  const session = await launchHarness(base, (s) => log(s));
  const page = session.page;
  const textRows: TextRow[] = [];
  const imageRowsOut: ImageRow[] = [];
  let pixelDiff: PixelDiff | null = null;
  const t0 = performance.now();
  try {
    // ---- text -------------------------------------------------------------------------------------
    for (const id of TEXT_MODELS) {
      const spec = registrySpec(id);
      for (const dtype of DTYPES) {
        const native = await NativeTextEncoder.load(spec, dtype, { threads: 2 });
        const refVecs = new Float32Array([
          ...(await native.embed(docs, 'document', BATCH)),
          ...(await native.embed(queries, 'query', BATCH)),
        ]);
        await native.release();
        const devices = WEBGPU && dtype === 'fp32' ? ['wasm', 'webgpu'] : ['wasm'];
        for (const device of devices) {
          await call(page, 'open');
          const loaded = await call(page, 'load', spec, { device: device as 'wasm' | 'webgpu', dtype });
          if (!loaded.ok) throw new Error(`${id} ${dtype} ${device}: ${loaded.error.message}`);
          // On WebGPU: the first documents and queries only (same batches as the reference).
          const nd = device === 'webgpu' ? Math.min(docs.length, Math.ceil(N_GPU_TEXTS / 2)) : docs.length;
          const nq =
            device === 'webgpu' ? Math.min(queries.length, Math.floor(N_GPU_TEXTS / 2)) : queries.length;
          const d = await call(page, 'embedTexts', docs.slice(0, nd), 'document', BATCH);
          const q = await call(page, 'embedTexts', queries.slice(0, nq), 'query', BATCH);
          const got = new Float32Array([...fromBase64(d.b64), ...fromBase64(q.b64)]);
          const dim = refVecs.length / (docs.length + queries.length);
          const ref = new Float32Array([
            ...refVecs.subarray(0, nd * dim),
            ...refVecs.subarray(docs.length * dim, (docs.length + nq) * dim),
          ]);
          const row: TextRow = {
            model: id,
            dtype,
            device: loaded.info.device,
            threads: loaded.info.threads,
            texts: nd + nq,
            cos: cosineStats(got, ref, nd + nq),
            ...(loaded.info.fallbackReason ? { fallbackReason: loaded.info.fallbackReason } : {}),
          };
          textRows.push(row);
          log(
            `text ${id} ${dtype} ${row.device}: min cos ${f(row.cos.min, 8)} mean ${f(row.cos.mean, 8)} ` +
              `max|Δ| ${row.cos.maxAbs.toExponential(2)} (${((d.ms + q.ms) / 1000).toFixed(1)} s)`,
          );
        }
      }
    }

    // ---- images -----------------------------------------------------------------------------------
    if (clipModels.length > 0) {
      const urls = imagePaths.map((p) => `${base}/shards/vqa-rad/${p}`);
      const nodeImages = await readVqaRadImages(imagePaths);
      // The browser's pixel tensor (page main thread, the same transformers.js web code the worker runs).
      const bp = await call(page, 'pixelValues', registrySpec(clipModels[0]), urls);
      const browserPixels = fromBase64(bp.b64);
      const nodePx = await nodePixelValues(registrySpec(clipModels[0]), nodeImages);
      pixelDiff = comparePixels(bp, browserPixels, nodeImages, nodePx.data);
      log(
        `pixels: decode max|Δ| ${pixelDiff.decode.maxAbs} levels; after preprocessing max|Δ| ` +
          `${f(pixelDiff.preprocessed.maxAbsLevels, 2)} levels (${f(pixelDiff.preprocessed.maxAbsNormalized, 4)} normalised), ` +
          `mean ${f(pixelDiff.preprocessed.meanAbsLevels, 3)}, ${(100 * pixelDiff.preprocessed.overOneLevel).toFixed(2)} % > 1 level`,
      );

      for (const id of clipModels) {
        const spec = registrySpec(id);
        for (const dtype of DTYPES) {
          // transformers.js in Node (its own preprocessing; onnxruntime-node underneath).
          const model = await CLIPVisionModelWithProjection.from_pretrained(localName(spec), {
            dtype,
            device: 'cpu',
          });
          const nodeVecs = await embedNodeImages(model, spec, nodeImages, BATCH);
          await model.dispose();
          const vis = await NativeVisionEncoder.load(spec, dtype, { threads: 2 });
          const onBrowserPx = await vis.runBatches(browserPixels, bp.dims, BATCH);
          const onNodePx = await vis.runBatches(nodePx.data, nodePx.dims, BATCH);
          await vis.release();
          const devices = WEBGPU && dtype === 'fp32' ? ['wasm', 'webgpu'] : ['wasm'];
          for (const device of devices) {
            const n = device === 'webgpu' ? N_GPU_IMAGES : imagePaths.length;
            await call(page, 'open');
            const loaded = await call(page, 'load', spec, { device: device as 'wasm' | 'webgpu', dtype });
            if (!loaded.ok) throw new Error(`${id} ${dtype} ${device}: ${loaded.error.message}`);
            const r = await call(page, 'embedImages', urls.slice(0, n), BATCH);
            const got = fromBase64(r.b64);
            const dim = got.length / n;
            const head = (m: Float32Array) => m.subarray(0, n * dim);
            const row: ImageRow = {
              model: id,
              dtype,
              device: loaded.info.device,
              images: n,
              browserVsNode: cosineStats(got, head(nodeVecs), n),
              browserVsNativeSamePixels: cosineStats(got, head(onBrowserPx), n),
              pixelsOnly: cosineStats(head(onBrowserPx), head(nodeVecs), n),
              nodeVsNativeNodePixels: cosineStats(head(nodeVecs), head(onNodePx), n),
            };
            imageRowsOut.push(row);
            log(
              `image ${id} ${dtype} ${row.device}: browser vs Node min ${f(row.browserVsNode.min)}, ` +
                `same pixels min ${f(row.browserVsNativeSamePixels.min, 8)}, pixels only min ${f(row.pixelsOnly.min)}`,
            );
          }
        }
      }
    }
  } finally {
    await session.close();
    await server.close();
  }

  const result = {
    date: new Date().toISOString(),
    seconds: (performance.now() - t0) / 1000,
    texts: { docs: docs.length, queries: queries.length, batch: BATCH, webgpuTexts: N_GPU_TEXTS },
    images: imagePaths.length,
    text: textRows,
    pixels: pixelDiff,
    image: imageRowsOut,
  };
  mkdirSync(dirname(argv.out), { recursive: true });
  writeFileSync(argv.out, JSON.stringify(result, null, 2) + '\n');
  console.log('\n' + markdown(result));
  log(`wrote ${argv.out}`);
  const bad = textRows.filter((r) => r.cos.min < 0.9999 || r.fallbackReason);
  if (bad.length > 0) {
    console.error(`text parity below 0.9999 (or not on the requested device): ${bad.map(label).join(', ')}`);
    process.exitCode = 1;
  }
}

const label = (r: { model: string; dtype: string; device: string }) =>
  `${r.model.replace('loupe-test/', '')} ${r.dtype} ${r.device}`;

function markdown(r: {
  texts: { docs: number; queries: number; webgpuTexts: number };
  text: TextRow[];
  pixels: PixelDiff | null;
  image: ImageRow[];
}): string {
  const md: string[] = [];
  md.push(
    `Text: ${r.texts.docs} medquad documents + ${r.texts.queries} queries (WebGPU: the first ${r.texts.webgpuTexts}); ` +
      'browser encoder worker vs native onnxruntime-node on the same ONNX file, same tokenizer, mean pooling + L2.',
    '',
    '| model | dtype | browser device | texts | min cosine | mean cosine | max abs diff |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  );
  for (const t of r.text)
    md.push(
      `| ${t.model.replace('loupe-test/', '')} | ${t.dtype} | ${t.device} (${t.threads} thr) | ${t.texts} | ${f(t.cos.min, 8)} | ${f(t.cos.mean, 8)} | ${t.cos.maxAbs.toExponential(2)} |`,
    );
  if (r.pixels) {
    const p = r.pixels;
    md.push(
      '',
      `Pixels (${p.images} vqa-rad images): decode (browser createImageBitmap vs sharp) max |Δ| ${p.decode.maxAbs} levels, mean ${f(p.decode.meanAbs, 4)}; ` +
        `after resize + crop + normalise (browser canvas drawImage vs sharp affine bicubic): max |Δ| ${f(p.preprocessed.maxAbsLevels, 2)} levels ` +
        `(${f(p.preprocessed.maxAbsNormalized, 4)} in normalised units), mean ${f(p.preprocessed.meanAbsLevels, 3)} levels, ` +
        `median ${f(p.preprocessed.p50Levels, 2)}, p99 ${f(p.preprocessed.p99Levels, 2)}, p99.9 ${f(p.preprocessed.p999Levels, 2)}, ` +
        `${(100 * p.preprocessed.overOneLevel).toFixed(2)} % of values more than 1 level apart.`,
      '',
      '| model | dtype | browser device | images | browser vs Node (min / mean) | browser vs native on browser pixels (min / mean) | pixels only: native on browser vs Node pixels (min / mean) |',
      '| --- | --- | --- | --- | --- | --- | --- |',
    );
    for (const i of r.image)
      md.push(
        `| ${i.model.replace('loupe-test/', '')} | ${i.dtype} | ${i.device} | ${i.images} | ${f(i.browserVsNode.min)} / ${f(i.browserVsNode.mean)} | ` +
          `${f(i.browserVsNativeSamePixels.min, 8)} / ${f(i.browserVsNativeSamePixels.mean, 8)} | ${f(i.pixelsOnly.min)} / ${f(i.pixelsOnly.mean)} |`,
      );
  }
  return md.join('\n');
}

/** transformers.js in Node: its processor (sharp) and CLIPVisionModelWithProjection (onnxruntime-node). */
async function embedNodeImages(
  model: Awaited<ReturnType<typeof CLIPVisionModelWithProjection.from_pretrained>>,
  spec: ModelSpec,
  images: RawImage[],
  batch: number,
): Promise<Float32Array> {
  const parts: Float32Array[] = [];
  for (let i = 0; i < images.length; i += batch) {
    const px = await nodePixelValues(spec, images.slice(i, i + batch));
    const out = (await model({ pixel_values: new Tensor('float32', px.data, px.dims) })) as Record<
      string,
      Tensor
    >;
    const v = (out.image_embeds.data as Float32Array).slice();
    if (spec.normalize) l2normalizeRows(v, out.image_embeds.dims[1] as number);
    parts.push(v);
  }
  return concat(parts);
}

await main();
