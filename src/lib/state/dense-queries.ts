// The queries of a dense run: embedded in the encoder worker (text, images, several images per
// query, chunked texts, an ad-hoc query's parts embedded ahead), then ranked once per fusion
// strategy. Split from dense.ts so that a run can embed its queries before its corpus (dense.ts:
// the compact store's runs free the query model before the corpus is handed over).
import type { Query } from '../core/types';
import { chunkOffsets, isChunked, meanOfChunks, type Chunking } from '../core/retrieval/chunking';
import { itemImagePaths, type MultiImage } from '../core/retrieval/multi-image';
import type { EmbedPart, ModelSpec } from '../core/retrieval/models';
import { openShardStore } from '../platform/storage/shard-store';
import { stageTook, timeStage } from '../platform/page/query-timing';
import {
  activeEncoderKey,
  embedImages,
  embedQuery,
  embedTextChunks,
  embedTexts,
} from '../clients/encoder-client';
import { runDense } from '../clients/retrieval-client';
import type { JobOptions } from '../clients/worker-client';
import type { DenseQueries, QueryFusion } from '../../../workers/retrieval.worker';
import type { PrefetchLookup } from './query-prefetch';
import type { DenseRanker } from './dense-remote';

/** What embedding and ranking a task's queries needs of a dense run's arguments. */
export interface QueryTaskArgs {
  shardHash: string;
  queries: Query[];
  settings: {
    spec: ModelSpec;
    chunking?: Chunking;
    multiImage?: MultiImage;
    fusion: 'both' | 'score' | 'feature';
    textWeight: number;
    depth: number;
  };
  job: JobOptions;
  prefetch?: PrefetchLookup;
}

/** One ranked-list set per fusion strategy run. */
export type RankedRuns = { fusion?: QueryFusion; lists: Awaited<ReturnType<typeof runDense>> }[];

/**
 * Embeds the task's queries (text, image, or the one ad-hoc image). `imageRowOf`/`imageCopy`: corpus
 * image vectors, so a query image that is a corpus image is not embedded twice.
 */
export async function embedQueries(
  args: QueryTaskArgs,
  queryParts: EmbedPart[],
  dim: number,
  imageRowOf: Map<string, number>,
  imageCopy: Float32Array | null,
  adhocImage: Blob | null,
  adhoc = false,
  adhocMore: Blob[] = [],
): Promise<DenseQueries> {
  const qs = args.queries;
  const q: DenseQueries = {
    ids: qs.map((x) => x.id),
    dim,
    text: null,
    image: null,
    hasText: new Uint8Array(qs.length),
    hasImage: new Uint8Array(qs.length),
    exclude: qs.map((x) => x.excludeIds),
  };
  const chunking = args.settings.chunking;
  if (isChunked(chunking) && queryParts.includes('text')) {
    // Every window of each query's text: mean → one vector per query; max → all its chunks.
    const idx = qs.flatMap((x, i) => (x.text ? [i] : []));
    const r = await embedTextChunks(
      idx.map((i) => qs[i].text),
      'query',
      chunking,
      args.job,
    );
    const mean = meanOfChunks(r.vectors, r.counts, dim, args.settings.spec.normalize);
    q.text = new Float32Array(qs.length * dim);
    const counts = new Uint32Array(qs.length);
    idx.forEach((qi, j) => {
      q.text!.set(mean.subarray(j * dim, (j + 1) * dim), qi * dim);
      q.hasText[qi] = 1;
      counts[qi] = r.counts[j];
    });
    // Queries without text have no chunks, so the chunk rows are already in query order.
    if (chunking.aggregate === 'max') q.textChunks = { vectors: r.vectors, offsets: chunkOffsets(counts) };
  }
  if (adhoc && qs.length === 1) {
    // One worker call for the text and the image, with the time of each stage.
    let text = queryParts.includes('text') && qs[0].text && !q.text ? qs[0].text : null;
    let image = queryParts.includes('image') ? adhocImage : null;
    // Parts embedded ahead by the same encoder (the image as it was added, the text on a pause).
    const encoderKey = activeEncoderKey();
    if (args.prefetch && encoderKey) {
      const ahead = args.prefetch.take(encoderKey, text, image);
      if (ahead.text || ahead.image) {
        const [t, i] = await timeStage('encode', () => Promise.all([ahead.text, ahead.image]));
        if (t) {
          q.text = t;
          q.hasText[0] = 1;
          text = null;
        }
        if (i) {
          q.image = i;
          q.hasImage[0] = 1;
          image = null;
        }
      }
      await args.prefetch.settled();
    }
    if (text || image) {
      const t0 = performance.now();
      const r = await embedQuery(text, image, args.job);
      const s = r.stages;
      // Only the stages of the parts embedded now (a part embedded ahead has none here).
      if (text) stageTook('tokenize', t0, s.tokenizeMs);
      if (image) stageTook('preprocess', t0 + s.tokenizeMs, s.preprocessMs);
      stageTook('encode', t0 + s.tokenizeMs + s.preprocessMs, s.encodeMs);
      if (r.text) {
        q.text = r.text;
        q.hasText[0] = 1;
      }
      if (r.image) {
        q.image = r.image;
        q.hasImage[0] = 1;
      }
    }
  } else if (queryParts.includes('text') && !q.text) {
    const idx = qs.flatMap((x, i) => (x.text ? [i] : []));
    const vecs = await embedTexts(
      idx.map((i) => qs[i].text),
      'query',
      args.job,
    );
    q.text = new Float32Array(qs.length * dim);
    idx.forEach((qi, j) => {
      q.text!.set(vecs.subarray(j * dim, (j + 1) * dim), qi * dim);
      q.hasText[qi] = 1;
    });
  }
  if (!adhoc && queryParts.includes('image')) {
    q.image = new Float32Array(qs.length * dim);
    const todo: number[] = [];
    if (adhocImage) {
      const vec = await embedImages([adhocImage], args.job);
      q.image.set(vec.subarray(0, dim), 0);
      q.hasImage[0] = 1;
    }
    qs.forEach((x, i) => {
      if (!x.image) return;
      const row = imageRowOf.get(x.image);
      if (row !== undefined && imageCopy) {
        q.image!.set(imageCopy.subarray(row * dim, (row + 1) * dim), i * dim);
        q.hasImage[i] = 1;
      } else todo.push(i);
    });
    if (todo.length) {
      const store = await openShardStore();
      const blobs = await Promise.all(todo.map((i) => store.getImage(args.shardHash, qs[i].image!)));
      const ok = todo.filter((_, j) => blobs[j]);
      const vecs = await embedImages(
        blobs.filter((b): b is Blob => !!b),
        args.job,
      );
      ok.forEach((qi, j) => {
        q.image!.set(vecs.subarray(j * dim, (j + 1) * dim), qi * dim);
        q.hasImage[qi] = 1;
      });
    }
  }

  if (args.settings.multiImage && queryParts.includes('image') && q.image)
    await multiImageQueries(args, q, dim, adhoc ? [adhocMore] : null);
  return q;
}

/**
 * Ranks embedded queries with `ranker` (the retrieval worker's document matrix by default), once per
 * fusion strategy (`adhoc`: one query typed in the Search view, its stages timed).
 */
export async function rankQueries(
  args: QueryTaskArgs,
  q: DenseQueries,
  adhoc = false,
  ranker: DenseRanker = runDense,
): Promise<RankedRuns> {
  const twoParts = args.queries.some((_, i) => q.hasText[i] && q.hasImage[i]);
  const fusions: (QueryFusion | undefined)[] = !twoParts
    ? [undefined]
    : args.settings.fusion === 'both'
      ? [{ mode: 'score', textWeight: args.settings.textWeight }, { mode: 'feature' }]
      : args.settings.fusion === 'score'
        ? [{ mode: 'score', textWeight: args.settings.textWeight }]
        : [{ mode: 'feature' }];
  const runs: RankedRuns = [];
  for (const [i, fusion] of fusions.entries()) {
    const rank = () => ranker(q, fusion ?? { mode: 'feature' }, args.settings.depth, args.job);
    // An ad-hoc query's first ranking is its search; the second fusion's is part of fusing.
    runs.push({ fusion, lists: await (adhoc ? timeStage(i === 0 ? 'search' : 'fuse', rank) : rank()) });
  }
  return runs;
}

/**
 * Queries with several images (`images`, or the extra images of an ad-hoc query): every image is
 * embedded; mean → the query's image vector is their normalised mean; max → each is a row of
 * `q.imageRows` (the retrieval worker scores a document by its best pair).
 */
async function multiImageQueries(
  args: QueryTaskArgs,
  q: DenseQueries,
  dim: number,
  adhocExtra: Blob[][] | null,
): Promise<void> {
  const qs = args.queries;
  const extra: Blob[][] = adhocExtra ?? qs.map(() => []);
  if (!adhocExtra) {
    const store = await openShardStore();
    for (const [i, x] of qs.entries()) {
      const more = itemImagePaths(x).slice(1);
      if (!more.length || !q.hasImage[i]) continue;
      const blobs = await Promise.all(more.map((p) => store.getImage(args.shardHash, p)));
      extra[i] = blobs.filter((b): b is Blob => !!b);
    }
  }
  const todo = extra.flatMap((l, i) => (l.length && q.hasImage[i] ? [i] : []));
  if (!todo.length) return;
  const vecs = await embedImages(
    todo.flatMap((i) => extra[i]),
    args.job,
  );
  const counts = new Uint32Array(qs.length);
  const rows: Float32Array[] = [];
  let at = 0;
  for (const i of todo) {
    const n = extra[i].length + 1;
    const all = new Float32Array(n * dim);
    all.set(q.image!.subarray(i * dim, (i + 1) * dim), 0);
    all.set(vecs.subarray(at * dim, (at + n - 1) * dim), dim);
    at += n - 1;
    q.image!.set(meanOfChunks(all, [n], dim, true), i * dim);
    counts[i] = n;
    rows[i] = all;
  }
  if (args.settings.multiImage === 'max') {
    const offsets = chunkOffsets(counts);
    const vectors = new Float32Array(offsets[qs.length] * dim);
    for (const i of todo) vectors.set(rows[i], offsets[i] * dim);
    q.imageRows = { vectors, offsets };
  }
}
