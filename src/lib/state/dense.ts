// Dense retrieval for a task: the corpus is embedded once per (shard, model, dtype, part) in the
// encoder worker (cached in IndexedDB, resumable), queries are embedded, and the retrieval worker
// ranks by exact cosine. Image + text queries are scored with score fusion and/or feature fusion.
import type { Query, TaskInfo } from '../core/types';
import { fuseFeatures } from '../core/retrieval/dense';
import {
  chunkOffsets,
  chunkingFor,
  isChunked,
  meanOfChunks,
  type Chunking,
} from '../core/retrieval/chunking';
import { fusedItemRows, itemImagePaths, type MultiImage } from '../core/retrieval/multi-image';
import {
  corpusEmbeddingKey,
  supportsPart,
  type Dtype,
  type EmbedPart,
  type ModelSpec,
} from '../core/retrieval/models';
import type { Device } from '../platform/backend';
import { openShardStore } from '../platform/shard-store';
import type { PrefetchLookup } from './query-prefetch';
import {
  activeEncoderKey,
  embedImages,
  embedQuery,
  embedTextChunks,
  embedTexts,
  loadEncoder,
  type LoadedEncoder,
} from '../clients/encoder-client';
import { hasDenseDocs, runDense, setDenseDocs } from '../clients/retrieval-client';
import { stageTook, timeStage } from '../platform/query-timing';
import type { DenseQueries, QueryFusion } from '../../../workers/retrieval.worker';
import type { JobOptions } from '../clients/worker-client';
import { buildIndex, recallAgainstExact, searchIndex, type RecallReport } from '../clients/index-client';
import { remoteIvfFor, type DenseRanker } from './dense-remote';
import type { IvfRunInfo } from '../core/retrieval/ivf-report';
import * as compact from './dense-compact';
import { corpusDocCount, denseDocsKey, embedCorpusTo, streamPlan } from './dense-stream';

/** HNSW parameters of an approximate dense run. */
export interface AnnSettings {
  M: number;
  efConstruction: number;
  efSearch: number;
}

export interface DenseSettings {
  spec: ModelSpec;
  device: 'auto' | Device;
  dtype: 'auto' | Dtype;
  /** Text weight of score fusion (image weight = 1 − it). */
  textWeight: number;
  /** Which fusions to run for queries that have a text and an image. */
  fusion: 'both' | 'score' | 'feature';
  depth: number;
  /** Debug switch (URL `simulate-webgpu-failure=1`): make the WebGPU attempt fail, to see the fallback. */
  simulateWebGpuFailure?: boolean;
  /** Debug switch (URL `simulate-parity-mismatch=1`): perturb the WebGPU vectors of the parity check. */
  simulateParityMismatch?: boolean;
  /** Search with HNSW (single-vector queries: one part, or feature fusion) instead of exact. */
  ann?: AnnSettings;
  /** Texts longer than the model's window: first window (absent), or every window aggregated by mean or max. */
  chunking?: Chunking;
  /** Documents from which exact runs take the compact store (URL `compact-from=N`; default: dense-compact.ts). */
  compactFrom?: number;
  /** Multi-image items: every image, by mean or max (absent: each item's first image). */
  multiImage?: MultiImage;
  /** The corpus has multi-image documents: embed every image of them (else documents keep one image each). */
  multiImageDocs?: boolean;
}

/** What a model can do with a task: which query and document parts it uses, and what it ignores. */
export function densePlan(spec: ModelSpec, task: TaskInfo) {
  const wantQuery: EmbedPart[] =
    task.queryModality === 'image+text' ? ['text', 'image'] : [task.queryModality];
  const wantDocs: EmbedPart[] =
    task.corpusModality === 'image+text' ? ['text', 'image'] : [task.corpusModality];
  const queryParts = wantQuery.filter((p) => supportsPart(spec, p));
  let docParts = wantDocs.filter((p) => supportsPart(spec, p));
  const notes: string[] = [];
  // A text-only encoder ranks an image task by the documents' text, as BM25 does.
  if (docParts.length === 0) {
    docParts = ['text'];
    notes.push(`ranks documents by their text: ${spec.label ?? spec.id} has no image tower`);
  }
  if (queryParts.length < wantQuery.length)
    notes.push(
      queryParts.length
        ? 'uses the query text only (no image tower)'
        : 'cannot embed this task’s image-only queries',
    );
  return { queryParts, docParts, notes, canRun: queryParts.length > 0 };
}

type Lists = Awaited<ReturnType<typeof runDense>>;

export interface DenseOutcome {
  encoder: LoadedEncoder;
  /** One ranked-list set per fusion strategy run (a single one when no query has two parts). */
  runs: { fusion?: QueryFusion; lists: Lists; ann?: AnnSettings & { recallAt10: number } }[];
  /** With HNSW: recall@10 against exact search and queries/s for ef = 16…512 on this task's queries. */
  annCurve?: RecallReport;
  /** Ranked through the compact store (int8 scan + exact rescoring of the top R) instead of float32 exact. */
  compact?: compact.CompactIndex;
  /** The chunking used (absent: first window only), and how many chunks the corpus has. */
  chunking?: Chunking;
  chunks?: { rows: number; docs: number; multiChunkDocs: number };
  /** Multi-image items scored by all their images: how, and how many image rows the corpus has. */
  multiImage?: MultiImage;
  images?: { rows: number; multiImageDocs: number };
  /** Searched through the shard's packed IVF index (range-read): what it cost. */
  ivf?: IvfRunInfo;
  embedded: {
    part: EmbedPart;
    computedBatches: number;
    reusedBatches: number;
    /** Batches taken from precomputed embeddings shipped in the shard. */
    precomputedBatches: number;
    missing: number;
  }[];
  notes: string[];
}

/** Loads the model (WebGPU or WASM with the reason), embeds what is missing, and ranks the task's queries. */
export function denseTask(args: DenseTaskArgs): Promise<DenseOutcome> {
  return denseTaskWith(args, null);
}

interface DenseTaskArgs {
  shardHash: string;
  task: TaskInfo;
  queries: Query[];
  docImageRow?: Map<string, string>;
  settings: DenseSettings;
  job: JobOptions;
  onEncoder?: (e: LoadedEncoder) => void;
  /** Told what could not be saved (the browser's storage is full); the run itself goes on. */
  onWarning?: (text: string) => void;
  /** An ad-hoc query's parts embedded ahead (Search: the image as added, the text on a pause). */
  prefetch?: PrefetchLookup;
}

async function denseTaskWith(
  args: DenseTaskArgs,
  adhocImage: Blob | null,
  reuseCorpus = false,
  adhocMore: Blob[] = [],
): Promise<DenseOutcome> {
  const { spec } = args.settings;
  const plan = densePlan(spec, args.task);
  if (!plan.canRun) throw new Error(`${spec.label ?? spec.id} ${plan.notes.join('; ')}`);
  const { chunking, exact } = chunkingFor(args.settings, plan, plan.notes);
  if (chunking && (chunking !== args.settings.chunking || exact))
    args = {
      ...args,
      settings: { ...args.settings, chunking, ...(exact ? { ann: undefined } : {}) },
    };
  // Multi-image scoring applies where images are embedded; max keeps several rows per document.
  const multiImage =
    plan.docParts.includes('image') || plan.queryParts.includes('image')
      ? args.settings.multiImage
      : undefined;
  if (multiImage === 'max' && plan.docParts.includes('text') && plan.docParts.includes('image'))
    plan.notes.push('max over images: each image is fused with its document’s text (feature fusion)');
  if (multiImage === 'max' && args.settings.ann) {
    plan.notes.push(
      'searches exactly: max over images keeps several vectors per document, an HNSW index one',
    );
    args = { ...args, settings: { ...args.settings, ann: undefined } };
  }
  if (multiImage !== args.settings.multiImage) args = { ...args, settings: { ...args.settings, multiImage } };
  // Every image of the documents only where some have several (single-image corpora keep their key).
  const allDocImages = !!multiImage && !!args.settings.multiImageDocs;
  const encoder = await loadEncoder(spec, {
    device: args.settings.device,
    dtype: args.settings.dtype,
    simulateWebGpuFailure: args.settings.simulateWebGpuFailure,
    simulateParityMismatch: args.settings.simulateParityMismatch,
    ...args.job,
  });
  args.onEncoder?.(encoder);
  // An explicit dtype and device keep the embedding key stable, so stored batches are reused.
  const load = { device: encoder.device, dtype: encoder.dtype };
  // A shard opened by URL with a packed index for this set: only the queries are embedded.
  const ivf = await remoteIvfFor(args.shardHash, spec, encoder, plan, chunking, multiImage);
  if (ivf) {
    const a = { ...args, settings: { ...args.settings, fusion: 'feature' as const, ann: undefined } };
    const more = [null, adhocImage, reuseCorpus, adhocMore, ivf.rank] as const;
    const { runs } = await rankQueries(a, plan.queryParts, encoder.dim, new Map(), ...more);
    return { encoder, runs, ...ivf.outcome(plan.notes) };
  }
  // Ad-hoc queries: once the retrieval worker holds this corpus (from the first query or a run),
  // nothing is read from IndexedDB, copied or sent again; only the query is embedded and ranked.
  if (reuseCorpus && !args.settings.ann) {
    const key = denseDocsKey(
      plan.docParts.map((part) =>
        corpusEmbeddingKey(args.shardHash, spec, encoder.dtype, part, chunking, allDocImages),
      ),
      chunking,
      multiImage,
    );
    const held = plan.queryParts.length === 1 ? await compact.heldCompactRanker(key, args.job) : null;
    if (held || (await hasDenseDocs(key))) {
      const { runs } = await rankQueries(
        args,
        plan.queryParts,
        encoder.dim,
        new Map(),
        null,
        adhocImage,
        true,
        adhocMore,
        held ?? undefined,
      );
      const embedded = plan.docParts.map((part) => ({
        part,
        computedBatches: 0,
        reusedBatches: 0,
        precomputedBatches: 0,
        missing: 0,
      }));
      return {
        encoder,
        runs,
        embedded,
        notes: plan.notes,
        ...(held ? { compact: compact.compactIndex(args.settings.depth) } : {}),
        ...(chunking ? { chunking } : {}),
        ...(multiImage ? { multiImage } : {}),
      };
    }
  }

  const parts = new Map<EmbedPart, Awaited<ReturnType<typeof embedCorpusTo>>>();
  // Through the compact store, the corpus goes there from IndexedDB in pieces (dense-stream.ts).
  const stream = streamPlan(plan.docParts, plan.queryParts, encoder.dim, args.settings, chunking, multiImage);
  let chunkRows: { rowDoc: Uint32Array } | undefined;
  let chunkStats: DenseOutcome['chunks'];
  /** Multi-image max: the image rows and their documents (before any fusion with the text). */
  let imageRowDoc: Uint32Array | undefined;
  let imageStats: DenseOutcome['images'];
  for (const part of plan.docParts) {
    let r = await embedCorpusTo(
      {
        shardHash: args.shardHash,
        spec,
        part,
        batchSize: 32,
        load,
        ...(part === 'text' && chunking ? { chunking } : {}),
        ...(part === 'image' && allDocImages ? { allImages: true } : {}),
      },
      args.job,
      stream,
    );
    if (r.chunks && part === 'image') {
      // Every image of multi-image items: mean → one vector per item; max → every image a row.
      const counts = new Uint32Array(r.docIds.length);
      for (const d of r.chunks.rowDoc) counts[d]++;
      imageStats = { rows: r.chunks.rowDoc.length, multiImageDocs: counts.filter((c) => c > 1).length };
      if (multiImage === 'max') imageRowDoc = r.chunks.rowDoc;
      else r = { ...r, embeddings: meanOfChunks(r.embeddings, counts, r.dim, spec.normalize) };
    } else if (r.chunks) {
      const counts = new Uint32Array(r.docIds.length);
      for (const d of r.chunks.rowDoc) counts[d]++;
      chunkStats = {
        rows: r.chunks.rowDoc.length,
        docs: r.docIds.length - r.missing.length,
        multiChunkDocs: counts.filter((c) => c > 1).length,
      };
      // mean: one vector per document, as without chunking; max: every chunk, mapped to its document.
      if (chunking?.aggregate === 'max') chunkRows = { rowDoc: r.chunks.rowDoc };
      else r = { ...r, embeddings: meanOfChunks(r.embeddings, counts, r.dim, spec.normalize) };
    }
    parts.set(part, r);
  }
  const first = parts.values().next().value!;
  const dim = first.dim;
  const docIds = first.docIds;
  let matrix: Float32Array;
  let missing: string[];
  if (imageRowDoc) {
    const v = parts.get('image')!;
    const t = parts.get('text');
    missing = t ? v.missing.filter((id) => t.missing.includes(id)) : v.missing;
    if (!t) matrix = v.embeddings;
    else {
      const tMiss = new Set(t.missing);
      const fused = fusedItemRows(
        t.embeddings,
        Uint8Array.from(docIds, (id) => (tMiss.has(id) ? 1 : 0)),
        v.embeddings,
        imageRowDoc,
        docIds.length,
        dim,
      );
      matrix = fused.rows;
      imageRowDoc = fused.rowDoc;
    }
    chunkRows = { rowDoc: imageRowDoc };
  } else if (parts.size === 1) {
    matrix = first.embeddings;
    missing = first.missing;
  } else {
    // An image + text document is one vector: the normalised sum of its two parts (or the one it has).
    const t = parts.get('text')!;
    const v = parts.get('image')!;
    const tMiss = new Set(t.missing);
    const vMiss = new Set(v.missing);
    matrix = new Float32Array(docIds.length * dim);
    missing = [];
    docIds.forEach((id, i) => {
      const tr = t.embeddings.subarray(i * dim, (i + 1) * dim);
      const vr = v.embeddings.subarray(i * dim, (i + 1) * dim);
      if (tMiss.has(id) && vMiss.has(id)) missing.push(id);
      else matrix.set(tMiss.has(id) ? vr : vMiss.has(id) ? tr : fuseFeatures(tr, vr), i * dim);
    });
  }
  const key = denseDocsKey(
    [...parts.values()].map((p) => p.key),
    chunking,
    multiImage,
  );
  const embedded = [...parts].map(([part, r]) => ({
    part,
    computedBatches: r.computedBatches,
    reusedBatches: r.reusedBatches,
    precomputedBatches: r.precomputedBatches,
    missing: r.missing.length,
  }));
  // Precomputed embeddings in the shard that did not fit the model: say why the corpus was embedded.
  for (const r of parts.values()) if (r.precomputedNote) plan.notes.push(r.precomputedNote);
  for (const r of parts.values()) if (r.notSaved) args.onWarning?.(r.notSaved);
  // Rows of the document images, so a query image that is a corpus image is not embedded twice.
  // (Not with multi-image rows: a row is then an image of an item, or an item's mean.)
  const imageRows = imageStats ? undefined : parts.get('image');
  const imageRowOf = new Map<string, number>();
  if (imageRows && args.docImageRow)
    for (const [path, docId] of args.docImageRow) {
      const i = imageRows.docIds.indexOf(docId);
      if (i >= 0 && !imageRows.missing.includes(docId)) imageRowOf.set(path, i);
    }
  const imageCopy = imageRows ? imageRows.embeddings.slice() : null;
  const chunked = {
    ...(chunking ? { chunking, ...(chunkStats ? { chunks: chunkStats } : {}) } : {}),
    ...(multiImage ? { multiImage, ...(imageStats ? { images: imageStats } : {}) } : {}),
  };
  const n = corpusDocCount(first);
  if (compact.useCompactStore(n, dim, args.settings, !!chunkRows, plan.queryParts.length)) {
    const rank = await compact.loadCompactStore(key, matrix, dim, first.ids ?? docIds, missing, args.job);
    const a = [args, plan.queryParts, dim, imageRowOf, imageCopy, adhocImage, reuseCorpus] as const;
    const { runs } = await rankQueries(...a, adhocMore, rank);
    const index = compact.compactIndex(args.settings.depth);
    return { encoder, runs, embedded, notes: plan.notes, compact: index, ...chunked };
  }
  // The index worker gets its own copy: the retrieval worker takes ownership of `matrix`.
  const annDocs = args.settings.ann ? matrix.slice() : null;
  await setDenseDocs(key, matrix, dim, docIds, missing, chunkRows?.rowDoc);

  const { q, runs } = await rankQueries(
    args,
    plan.queryParts,
    dim,
    imageRowOf,
    imageCopy,
    adhocImage,
    reuseCorpus,
    adhocMore,
  );
  const qs = args.queries;
  const ann = args.settings.ann;
  if (ann && annDocs) {
    const single = runs.filter((r) => !r.fusion || r.fusion.mode === 'feature');
    if (single.length < runs.length)
      plan.notes.push('uses exact search for score fusion (two searches per query)');
    const built = await buildIndex(
      {
        key,
        shard: args.shardHash,
        vectors: annDocs,
        dim,
        space: 'cosine',
        M: ann.M,
        efConstruction: ann.efConstruction,
        efSearch: ann.efSearch,
        docIds,
      },
      args.job,
    );
    if (built.notSaved) args.onWarning?.(built.notSaved);
    // One vector per query: its single part, or the feature-fused pair.
    const qm = new Float32Array(qs.length * dim);
    qs.forEach((_, i) => {
      const t = q.hasText[i] && q.text ? q.text.subarray(i * dim, (i + 1) * dim) : null;
      const v = q.hasImage[i] && q.image ? q.image.subarray(i * dim, (i + 1) * dim) : null;
      if (t && v) qm.set(fuseFeatures(t, v), i * dim);
      else if (t || v) qm.set((t ?? v)!, i * dim);
    });
    const docIndex = new Map(docIds.map((id, i) => [id, i]));
    const missingIdx = missing.map((id) => docIndex.get(id)!);
    const exclude = qs.map((x) => [
      ...(x.excludeIds ?? []).flatMap((id) => docIndex.get(id) ?? []),
      ...missingIdx,
    ]);
    const { result } = await searchIndex(qm, args.settings.depth, ann.efSearch, {
      exclude,
      signal: args.job.signal,
    });
    const annCurve = await recallAgainstExact(10, {
      queries: qm,
      efSearch: [16, 32, 64, 128, 256, 384, 512],
      // WebGPU on a hardware adapter, else the wasm kernel: the same answers as JS, faster.
      backend: 'auto',
      signal: args.job.signal,
    });
    for (const r of single) {
      const exactTop = new Map(r.lists.map((l) => [l.queryId, l.docIds.slice(0, 10)]));
      let recall = 0;
      let counted = 0;
      const lists: Lists = qs.map((x, i) => {
        // Queries with no part embedded return nothing in either run.
        if (!q.hasText[i] && !q.hasImage[i])
          return { queryId: x.id, docIds: [], scores: new Float64Array(0) };
        const n = result.counts[i];
        const ids: string[] = [];
        const scores = new Float64Array(n);
        for (let j = 0; j < n; j++) {
          ids.push(docIds[result.indices[i * result.k + j]]);
          scores[j] = result.scores[i * result.k + j];
        }
        const truth = exactTop.get(x.id) ?? [];
        if (truth.length) {
          const got = new Set(ids.slice(0, 10));
          recall += truth.filter((d) => got.has(d)).length / truth.length;
          counted++;
        }
        return { queryId: x.id, docIds: ids, scores };
      });
      runs.push({ fusion: r.fusion, lists, ann: { ...ann, recallAt10: counted ? recall / counted : 1 } });
    }
    return { encoder, runs, embedded, notes: plan.notes, annCurve, ...chunked };
  }
  return { encoder, runs, embedded, notes: plan.notes, ...chunked };
}

/**
 * Embeds the task's queries (text, image, or the one ad-hoc image) and ranks them against the
 * retrieval worker's document matrix, once per fusion strategy. `imageRowOf`/`imageCopy`: corpus
 * image vectors, so a query image that is a corpus image is not embedded twice.
 */
async function rankQueries(
  args: DenseTaskArgs,
  queryParts: EmbedPart[],
  dim: number,
  imageRowOf: Map<string, number>,
  imageCopy: Float32Array | null,
  adhocImage: Blob | null,
  adhoc = false,
  adhocMore: Blob[] = [],
  ranker: DenseRanker = runDense,
): Promise<{ q: DenseQueries; runs: DenseOutcome['runs'] }> {
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

  const twoParts = qs.some((_, i) => q.hasText[i] && q.hasImage[i]);
  const fusions: (QueryFusion | undefined)[] = !twoParts
    ? [undefined]
    : args.settings.fusion === 'both'
      ? [{ mode: 'score', textWeight: args.settings.textWeight }, { mode: 'feature' }]
      : args.settings.fusion === 'score'
        ? [{ mode: 'score', textWeight: args.settings.textWeight }]
        : [{ mode: 'feature' }];
  const runs: DenseOutcome['runs'] = [];
  for (const [i, fusion] of fusions.entries()) {
    const rank = () => ranker(q, fusion ?? { mode: 'feature' }, args.settings.depth, args.job);
    // An ad-hoc query's first ranking is its search; the second fusion's is part of fusing.
    runs.push({ fusion, lists: await (adhoc ? timeStage(i === 0 ? 'search' : 'fuse', rank) : rank()) });
  }
  return { q, runs };
}

/**
 * Queries with several images (`images`, or the extra images of an ad-hoc query): every image is
 * embedded; mean → the query's image vector is their normalised mean; max → each is a row of
 * `q.imageRows` (the retrieval worker scores a document by its best pair).
 */
async function multiImageQueries(
  args: DenseTaskArgs,
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

/**
 * One ad-hoc query (text, image or both) against a task's corpus with a dense model. The corpus
 * comes from the embedding cache (computed once if needed). With both parts, both fusions are
 * returned so the UI can show them side by side.
 */
export async function denseAdhoc(args: {
  shardHash: string;
  task: TaskInfo;
  text: string;
  image: Blob | null;
  /** More query images after `image` (a multi-image query; scored as `settings.multiImage` says). */
  moreImages?: Blob[];
  settings: DenseSettings;
  k: number;
  job: JobOptions;
  onEncoder?: (e: LoadedEncoder) => void;
  onWarning?: (text: string) => void;
  prefetch?: PrefetchLookup;
  /** Told what the query cost when it went through the shard's packed IVF index. */
  onIvf?: (info: IvfRunInfo) => void;
}) {
  const hasImage = !!args.image && supportsPart(args.settings.spec, 'image');
  const hasText = !!args.text.trim();
  if (!hasText && !hasImage)
    throw new Error(
      args.image ? `${args.settings.spec.label ?? args.settings.spec.id} cannot embed images` : 'empty query',
    );
  const query: Query = { id: 'adhoc', text: hasText ? args.text : '', task: args.task.id, meta: {} };
  // The image goes in through a one-off path the task plan cannot know; embed it here.
  const task: TaskInfo = {
    ...args.task,
    queryModality: hasText && hasImage ? 'image+text' : hasImage ? 'image' : 'text',
  };
  const out = await denseTaskWith(
    { ...args, task, queries: [query], settings: { ...args.settings, depth: args.k, fusion: 'both' } },
    hasImage ? args.image : null,
    true,
    hasImage ? (args.moreImages ?? []) : [],
  );
  if (out.ivf) args.onIvf?.(out.ivf);
  return out.runs.map((r) => ({
    fusion: r.fusion,
    hits: r.lists[0].docIds.map((docId, i) => ({ docId, score: r.lists[0].scores[i] })),
  }));
}
