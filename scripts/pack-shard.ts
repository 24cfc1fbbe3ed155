// Packs precomputed corpus embeddings into a shard, so that a first visit encodes only the query:
//
//   npm run pack-shard -- --shard ../shared/data/medquad --model loupe-test/bert-tiny-random [--dtype fp32] [--out DIR]
//   npm run pack-shard -- --demo --out dist/shards     (every demo shard of LOUPE_DATA_DIR, generated test models)
//   … --index ivf [--nlist N]   also packs a Range-readable IVF-int8 index per set (scripts/lib/pack-ivf.ts)
//   … --offsets                 also writes corpus.offsets.bin (version 2: each document's line in
//                               corpus.jsonl, the ids in blocks, read by Range; scripts/lib/pack-offsets.ts)
//                               and names it in shard.json, records the checksum of the queries and qrels
//                               when every document they name is in the corpus, and writes `corpus_order`
//                               instead of `doc_ids` in sidecars whose rows are the corpus order: with
//                               --index ivf, the app opens the shard by URL reading a few kilobytes
//   npm run pack-shard -- --shard DIR --offsets   (no --model: only corpus.offsets.bin)
//   … --images                  also writes the shard's images into images.zip (stored; split over
//                               images-1.zip, images-2.zip… past 60,000 images or 2 GiB) and names it in
//                               shard.json (`images_pack`): a shard imported by URL then reads its images
//                               with one request per pack, not one per image (scripts/lib/pack-images.ts)
//   npm run pack-shard -- --shard DIR --images    (no --model: only the image packs)
//
// The corpus is embedded by the app's own encoder worker in headless Chromium (the same code,
// model files and pooling as a visitor's browser; WASM), then written as
// DIR/embeddings/<model-id>/<dtype>/{text,image}.npy (float16) with sidecar-{text,image}.json, and
// listed in DIR/embeddings/index.json. DIR defaults to the shard folder itself; --demo writes under
// --out/<shard>/ and never into the data folder.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { shardsToCopy } from './lib/demo-shards';
import { packIvf } from './lib/pack-ivf';
import { writeDocOffsets } from './lib/pack-offsets';
import { packImages } from './lib/pack-images';
import { ShardValidationError, issueLocation } from '../src/lib/core/shard/source';
import type { PackHarness } from './lib/pack-harness';
import {
  PRECOMPUTED_FORMAT,
  PRECOMPUTED_INDEX,
  parsePrecomputedIndex,
  precomputedPath,
  type PrecomputedEntry,
} from '../src/lib/core/shard/precomputed';
import { isParquetEntry } from '../src/lib/core/shard/precomputed-parquet';
import type { Dtype } from '../src/lib/core/retrieval/models';

const ROOT = resolve(import.meta.dirname, '..');
const { values: args } = parseArgs({
  options: {
    shard: { type: 'string' },
    model: { type: 'string', multiple: true },
    dtype: { type: 'string', default: 'fp32' },
    out: { type: 'string' },
    demo: { type: 'boolean', default: false },
    index: { type: 'string' },
    nlist: { type: 'string' },
    offsets: { type: 'boolean', default: false },
    images: { type: 'boolean', default: false },
  },
});

/** Generated test models for the demo shards: a text encoder, and CLIP where documents have images. */
const DEMO_TEXT_MODEL = 'loupe-test/bert-tiny-random';
const DEMO_IMAGE_MODEL = 'loupe-test/clip-tiny-random';

interface Job {
  dir: string;
  out: string;
  models: string[];
}

function fail(msg: string): never {
  console.error(`pack-shard: ${msg}`);
  process.exit(1);
}

if (args.index !== undefined && args.index !== 'ivf')
  fail(`--index must be "ivf", got ${JSON.stringify(args.index)}`);
const nlist = args.nlist === undefined ? undefined : Number(args.nlist);
if (nlist !== undefined && !(Number.isInteger(nlist) && nlist >= 1))
  fail(`--nlist must be a whole number ≥ 1, got ${JSON.stringify(args.nlist)}`);

const dataDir = resolve(process.env.LOUPE_DATA_DIR ?? join(ROOT, '../shared/data'));
let jobs: Job[];
if (args.demo) {
  if (!args.out) fail('--demo needs --out (e.g. dist/shards): it never writes into the data folder');
  // The shards the build copied (LOUPE_DEMO_SHARDS, else the demo list), never the rest of the folder.
  jobs = shardsToCopy(dataDir, process.env.LOUPE_DEMO_SHARDS).map((name) => {
    const hasImages = readFileSync(join(dataDir, name, 'corpus.jsonl'), 'utf8').includes('"image"');
    return {
      dir: join(dataDir, name),
      out: join(resolve(args.out!), name),
      models: hasImages ? [DEMO_IMAGE_MODEL] : [DEMO_TEXT_MODEL],
    };
  });
} else if (args.shard && (args.offsets || args.images) && !args.model?.length) {
  // Only the document offsets and/or the image packs (no embedding, no browser): e.g. a shard whose
  // vectors were made elsewhere.
  const dir = resolve(args.shard);
  if (!existsSync(join(dir, 'corpus.jsonl'))) fail(`${dir} has no corpus.jsonl`);
  const t = performance.now();
  if (args.offsets) {
    const r = await writeDocOffsets(dir, resolve(args.out ?? dir));
    console.log(
      `${basename(dir)}: ${r.docs} document offsets (${r.bytes} bytes) → ${r.file} (${((performance.now() - t) / 1000).toFixed(1)} s)`,
    );
  }
  if (args.images) await writeImagePacks(dir, resolve(args.out ?? dir));
  process.exit(0);
} else {
  if (!args.shard || !args.model?.length)
    fail('usage: --shard DIR --model ID [--model ID…] [--dtype fp32] [--out DIR]');
  const dir = resolve(args.shard);
  if (!existsSync(join(dir, 'corpus.jsonl'))) fail(`${dir} has no corpus.jsonl`);
  jobs = [{ dir, out: resolve(args.out ?? dir), models: args.model }];
}
if (
  !existsSync(join(ROOT, 'models/generated')) &&
  jobs.some((j) => j.models.some((m) => m.startsWith('loupe-test/')))
)
  fail('the generated test models are missing: run npm run models');

/**
 * Names embeddings/index.json in the packed shard's shard.json (`"embeddings"`): a shard read over
 * HTTP asks for its embeddings only then (no 404 for shards without). When DIR has no shard.json of
 * its own (embeddings written beside a shard elsewhere), says what to add.
 */
function declareEmbeddings(job: Job): void {
  const file = join(job.out, 'shard.json');
  if (!existsSync(file)) {
    console.log(
      `pack-shard: ${job.out} has no shard.json: add "embeddings": "${PRECOMPUTED_INDEX}" to the shard's shard.json`,
    );
    return;
  }
  const text = readFileSync(file, 'utf8');
  const manifest = JSON.parse(text) as Record<string, unknown>;
  if (manifest.embeddings === PRECOMPUTED_INDEX) return;
  writeFileSync(file, JSON.stringify({ ...manifest, embeddings: PRECOMPUTED_INDEX }, null, 2) + '\n');
}

/** `--images`: the image packs, reported (a shard without images gets none, and says so). */
async function writeImagePacks(dir: string, out: string): Promise<void> {
  const t = performance.now();
  try {
    const r = await packImages(dir, out);
    console.log(
      r.packs.length
        ? `${basename(dir)}: ${r.images} images (${(r.bytes / 2 ** 20).toFixed(1)} MiB) → ${r.packs.join(', ')} (${((performance.now() - t) / 1000).toFixed(1)} s)`
        : `${basename(dir)}: no images to pack`,
    );
  } catch (e) {
    if (e instanceof ShardValidationError)
      fail(
        `${dir} is not a valid shard, nothing packed: ${e.issues.map((i) => `${issueLocation(i)}: ${i.message}`).join('; ')}`,
      );
    fail((e as Error).message);
  }
}

// Vite and Playwright are loaded only when a model is to embed (below): offsets and image packs need neither.
const harness = async () => {
  const [{ harnessCaller }, { openBrowser, startDevServer }] = await Promise.all([
    import('../tests/e2e/browser'),
    import('./lib/bench-harness'),
  ]);
  return { call: harnessCaller<PackHarness>('packHarness'), openBrowser, startDevServer };
};
const t0 = performance.now();
for (const parent of new Set(jobs.map((j) => dirname(j.dir)))) {
  // The dev server serves LOUPE_DATA_DIR at /shards/: point it at the folder holding these shards.
  process.env.LOUPE_DATA_DIR = parent;
  process.env.LOUPE_DEMO_SHARDS = jobs
    .filter((j) => dirname(j.dir) === parent)
    .map((j) => basename(j.dir))
    .join(',');
  // The encoder runs in Chromium: the server and the browser start only when a model is to embed
  // (offsets and image packs are written here, in Node).
  const embeds = jobs.some((j) => dirname(j.dir) === parent && j.models.length > 0);
  const h = embeds ? await harness() : null;
  const { server, base } = h ? await h.startDevServer() : { server: null, base: '' };
  const browser = h
    ? await h.openBrowser({ harness: { base, path: 'scripts/lib/pack-harness.html' } })
    : null;
  try {
    for (const job of jobs.filter((j) => dirname(j.dir) === parent)) {
      const name = basename(job.dir);
      const indexFile = join(job.out, PRECOMPUTED_INDEX);
      const index: unknown = existsSync(indexFile) ? JSON.parse(readFileSync(indexFile, 'utf8')) : null;
      let sets: PrecomputedEntry[] = index ? parsePrecomputedIndex(index, indexFile) : [];
      // Sets read from a Parquet column (made elsewhere) are kept as they are.
      const parquetSets = index ? (index as { sets: unknown[] }).sets.filter(isParquetEntry) : [];
      for (const model of job.models) {
        const tm = performance.now();
        const parts = await h!.call(
          browser!.page,
          'pack',
          `${base}/shards/${encodeURIComponent(name)}/`,
          model,
          args.dtype as Dtype,
        );
        if (!parts.length) fail(`${model} embeds no part of ${name}'s corpus`);
        const dtype = parts[0].sidecar.dtype;
        const path = precomputedPath(model, dtype);
        const folder = join(job.out, 'embeddings', path);
        mkdirSync(folder, { recursive: true });
        for (const p of parts) {
          writeFileSync(join(folder, p.sidecar.vectors), Buffer.from(p.npyBase64, 'base64'));
          writeFileSync(join(folder, `sidecar-${p.sidecar.part}.json`), JSON.stringify(p.sidecar) + '\n');
        }
        sets = [
          ...sets.filter((s) => !(s.model_id === model && s.dtype === dtype)),
          { model_id: model, dtype, path },
        ];
        writeFileSync(
          indexFile,
          JSON.stringify({ format: PRECOMPUTED_FORMAT, sets: [...sets, ...parquetSets] }, null, 2) + '\n',
        );
        declareEmbeddings(job);
        const rows = parts
          .map((p) => `${p.sidecar.part} ${p.sidecar.doc_ids.length}×${p.sidecar.dim}`)
          .join(', ');
        console.log(
          `${name}: ${model} ${dtype}: ${rows} → ${folder} (${((performance.now() - tm) / 1000).toFixed(1)} s)`,
        );
        if (args.index === 'ivf')
          for (const p of parts) {
            const r = packIvf(folder, p.sidecar.part, { nlist });
            if (r)
              console.log(`${name}: ${model} ${dtype} ${p.sidecar.part}: IVF ${r.nlist} lists → ${r.file}`);
          }
      }
      if (args.offsets) {
        const r = await writeDocOffsets(job.dir, job.out);
        console.log(`${name}: ${r.docs} document offsets (${r.bytes} bytes) → ${r.file}`);
      }
      if (args.images) await writeImagePacks(job.dir, job.out);
    }
  } finally {
    await browser?.close();
    await server?.close();
  }
}
console.log(`pack-shard: done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
