// Dense retrieval for a task: the corpus is embedded once per (shard, model, dtype, part) in the
// encoder worker (cached in IndexedDB, resumable), queries are embedded, and the retrieval worker
// ranks by exact cosine. Image + text queries are scored with score fusion and/or feature fusion.
import type { Query, TaskInfo } from '../core/types';
import { fuseFeatures } from '../core/retrieval/dense';
import { chunkingFor, isChunked, meanOfChunks, type Chunking } from '../core/retrieval/chunking';
import { fusedItemRows, type MultiImage } from '../core/retrieval/multi-image';
import {
  corpusEmbeddingKey,
  supportsPart,
  type Dtype,
  type EmbedPart,
  type ModelSpec,
} from '../core/retrieval/models';
import type { Device } from '../platform/gpu/backend';
import type { PrefetchLookup } from './query-prefetch';
import { loadEncoder, stopEncoder, type LoadedEncoder } from '../clients/encoder-client';
import { hasDenseDocs, runDense, setDenseDocs } from '../clients/retrieval-client';
import type { QueryFusion } from '../../../workers/retrieval.worker';
import type { JobOptions } from '../clients/worker-client';
import { buildIndex, recallAgainstExact, searchIndex, type RecallReport } from '../clients/index-client';
import { remoteIvfFor } from './dense-remote';
import type { IvfRunInfo } from '../core/retrieval/ivf-report';
import * as compact from './dense-compact';
import { corpusDocCount, denseDocsKey, embedCorpusTo, streamPlan } from './dense-stream';
import { denseLoadOptions, shardSetDtypes } from './set-dtypes';
import { embedQueries, rankQueries } from './dense-queries';

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

/**
 * A run whose corpus goes to the compact store (from COMPACT_FROM_BYTES of vectors: hundreds of
 * thousands of documents) with text queries: the queries are embedded before the corpus, and the
 * encoder worker is then stopped. ORT's memory for the query model (about 260 MiB for a MiniLM in
 * fp32, which a worker never gives back) is then not held beside the store while the corpus is
 * handed over and searched (issue 18: the tab within 1 GB at 1M documents). The corpus's
 * precomputed rows need no model; a batch to embed loads it again (encoder/corpus.ts), and so does
 * the next search. Undefined (nothing done) for every other run.
 */
async function queriesFirst(
  args: DenseTaskArgs,
  plan: ReturnType<typeof densePlan>,
  stream: ReturnType<typeof streamPlan>,
  encoder: LoadedEncoder,
  chunking: Chunking | undefined,
  multiImage: MultiImage | undefined,
  adhoc: boolean,
) {
  if (!stream || adhoc || isChunked(chunking) || multiImage) return undefined;
  if (plan.queryParts.length !== 1 || plan.queryParts[0] !== 'text' || plan.docParts.length !== 1)
    return undefined;
  if ((args.docCount ?? 0) < stream.fromDocs) return undefined;
  const q = await embedQueries(args, plan.queryParts, encoder.dim, new Map(), null, null);
  await stopEncoder();
  plan.notes.push(
    'the query model was stopped once the queries were embedded, to keep its memory out of the corpus search (the next search loads it again)',
  );
  return q;
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
  /** The shard's documents, as its summary counts them (queriesFirst: whether the store takes the corpus). */
  docCount?: number;
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
  // At dtype auto, a dtype the shard has embeddings of this model for (its sets decide, set-dtypes.ts).
  const setDtypes = args.settings.dtype === 'auto' ? await shardSetDtypes(args.shardHash, spec) : [];
  const encoder = await loadEncoder(spec, { ...denseLoadOptions(args.settings, setDtypes), ...args.job });
  args.onEncoder?.(encoder);
  // An explicit dtype and device keep the embedding key stable, so stored batches are reused.
  const load = { device: encoder.device, dtype: encoder.dtype };
  // A shard opened by URL with a packed index for this set: only the queries are embedded.
  const ivf = await remoteIvfFor(args.shardHash, spec, encoder, plan, chunking, multiImage);
  if (ivf) {
    const a = { ...args, settings: { ...args.settings, fusion: 'feature' as const, ann: undefined } };
    const more = [null, adhocImage, reuseCorpus, adhocMore] as const;
    const q = await embedQueries(a, plan.queryParts, encoder.dim, new Map(), ...more);
    const runs = await rankQueries(a, q, reuseCorpus, ivf.rank);
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
      const more = [null, adhocImage, true, adhocMore] as const;
      const q = await embedQueries(args, plan.queryParts, encoder.dim, new Map(), ...more);
      const runs = await rankQueries(args, q, true, held ?? undefined);
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
  const early = await queriesFirst(
    args,
    plan,
    stream,
    encoder,
    chunking,
    multiImage,
    reuseCorpus || !!adhocImage,
  );
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
        ...(early ? { loaded: encoder } : {}),
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
  const queryArgs = [
    args,
    plan.queryParts,
    dim,
    imageRowOf,
    imageCopy,
    adhocImage,
    reuseCorpus,
    adhocMore,
  ] as const;
  const n = corpusDocCount(first);
  if (compact.useCompactStore(n, dim, args.settings, !!chunkRows, plan.queryParts.length)) {
    const rank = await compact.loadCompactStore(key, matrix, dim, first.ids ?? docIds, missing, args.job);
    const q = early ?? (await embedQueries(...queryArgs));
    const runs = await rankQueries(args, q, reuseCorpus, rank);
    const index = compact.compactIndex(args.settings.depth);
    return { encoder, runs, embedded, notes: plan.notes, compact: index, ...chunked };
  }
  // The index worker gets its own copy: the retrieval worker takes ownership of `matrix`.
  const annDocs = args.settings.ann ? matrix.slice() : null;
  await setDenseDocs(key, matrix, dim, docIds, missing, chunkRows?.rowDoc);

  const q = early ?? (await embedQueries(...queryArgs));
  const runs: DenseOutcome['runs'] = await rankQueries(args, q, reuseCorpus);
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
