// Dense retrieval for a task: the corpus is embedded once per (shard, model, dtype, part) in the
// encoder worker (cached in IndexedDB, resumable), queries are embedded, and the retrieval worker
// ranks by exact cosine. Image + text queries are scored with score fusion and/or feature fusion.
// The plan (core/retrieval/dense-plan.ts) decides the steps and this file's executor walks them:
// the queries (text, images, several images per query, chunked texts, an ad-hoc query's parts
// embedded ahead) are embedded in the encoder worker and ranked once per fusion strategy.
import type { Query, TaskInfo } from '../core/types';
import type { Chunking } from '../core/retrieval/chunking';
import type { MultiImage } from '../core/retrieval/multi-image';
import type { Dtype, EmbedPart, ModelSpec } from '../core/retrieval/models';
import { denseDocsKey, describePlan, planDenseRun, type DenseFacts } from '../core/retrieval/dense-plan';
import type { Device } from '../platform/gpu/backend';
import {
  embedCorpus,
  embedRunQueries,
  fuseDocParts,
  loadEncoder,
  stopEncoder,
  type CorpusSink,
  type EmbedCorpusRequest,
  type EmbedCorpusResult,
  type LoadedEncoder,
  type PrefetchLookup,
} from '../clients/encoder-client';
import {
  freeBm25,
  hasDenseDocs,
  rankFusions,
  releaseBm25,
  setDenseDocs,
  type DenseRanker,
} from '../clients/retrieval-client';
import type { DenseQueries, QueryFusion, RankedList } from '../../../workers/retrieval.worker';
import type { JobOptions } from '../clients/worker-client';
import {
  addRowsAtToCompactStore,
  beginCompactFill,
  buildIndex,
  compactIndex,
  endCompactFill,
  heldCompactRanker,
  loadCompactStore,
  searchHnswRuns,
  type CompactIndex,
  type RecallReport,
} from '../clients/index-client';
import { packedCount, type PackedStrings } from '../core/retrieval/packed-ids';
import type { QueryLatency } from '../core/eval/approximation';
import type { IvfRunInfo } from '../core/retrieval/ivf-report';
import type { ReferenceCheck } from '../core/retrieval/reference-check';
import {
  checkReferenceStep,
  denseLoadOptions,
  referenceSetsFor,
  remoteIvfFor,
  shardSetDtypes,
  type ShardSets,
  type ProbeDocs,
  type ReferenceSets,
} from './dense-sets';

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
  /** A packed IVF index on the shard's host: lists probed (default: the index's), or `skip` it (exact search). */
  packed?: { nprobe?: number; skip?: boolean; cold?: boolean };
  /** Documents from which exact runs take the compact store (URL `compact-from=N`; default: core/retrieval/dense-plan.ts). */
  compactFrom?: number;
  /** Multi-image items: every image, by mean or max (absent: each item's first image). */
  multiImage?: MultiImage;
  /** The corpus has multi-image documents: embed every image of them (else documents keep one image each). */
  multiImageDocs?: boolean;
}

export interface DenseOutcome {
  encoder: LoadedEncoder;
  /** One ranked-list set per fusion strategy run (a single one when no query has two parts). */
  runs: {
    fusion?: QueryFusion;
    lists: RankedList[];
    ann?: AnnSettings & { recallAt10: number; latency?: QueryLatency };
    /** Exact search or the compact store: each query's own search time in its worker, summarised. */
    latency?: QueryLatency;
  }[];
  /** With HNSW: recall@10 against exact search and queries/s for ef = 16…512 on this task's queries. */
  annCurve?: RecallReport;
  /** Ranked through the compact store (int8 scan + exact rescoring of the top R) instead of float32 exact. */
  compact?: CompactIndex;
  /** The chunking used (absent: first window only), and how many chunks the corpus has. */
  chunking?: Chunking;
  chunks?: { rows: number; docs: number; multiChunkDocs: number };
  /** Multi-image items scored by all their images: how, and how many image rows the corpus has. */
  multiImage?: MultiImage;
  images?: { rows: number; multiImageDocs: number };
  /** Searched through the shard's packed IVF index (range-read): what it cost. */
  ivf?: IvfRunInfo;
  /** What was done, and why (core/retrieval/dense-plan.ts): the run's details show it. */
  plan: { does: string; why: string }[];
  /** The check of the shard's reference vectors this run took its corpus vectors from. */
  reference?: ReferenceCheck;
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
  /** The shard's sets of precomputed vectors, held for the open shard (its hash: `sets.hash`). */
  sets: ShardSets;
  task: TaskInfo;
  queries: Query[];
  docImageRow?: Map<string, string>;
  settings: DenseSettings;
  job: JobOptions;
  onEncoder?: (e: LoadedEncoder) => void;
  /** Told what could not be saved (the browser's storage is full); the run itself goes on. */
  onWarning?: (text: string) => void;
  /** Told when the idle BM25 worker was stopped (its next call prepares again). */
  onBm25Stopped?: () => void;
  /** An ad-hoc query's parts embedded ahead (Search: the image as added, the text on a pause). */
  prefetch?: PrefetchLookup;
  /** The shard's documents, as its summary counts them (the plan: BM25 stopped, queries first). */
  docCount?: number;
  /** The shard's documents by id: the probe of its reference vectors (none: not checked). */
  docs?: ProbeDocs;
  /** `skip`: run anyway after a failed check of the reference vectors (the run is marked unchecked). */
  reference?: 'skip';
}

/**
 * The executor of a dense run's plan (core/retrieval/dense-plan.ts): walks its steps and calls the
 * clients; the plan is made again once the model is loaded and once the corpus is embedded.
 */
async function denseTaskWith(
  args: DenseTaskArgs,
  adhoc: { image: Blob | null; more: Blob[] } | null,
): Promise<DenseOutcome> {
  const reuseCorpus = !!adhoc;
  const { spec, dtype } = args.settings;
  // The facts known before the model loads, gathered once: at dtype auto, the dtypes the shard has
  // embeddings of this model at (its sets decide, dense-sets.ts), and the load options they give.
  const setDtypes = dtype === 'auto' ? shardSetDtypes(args.sets, spec) : [];
  const load = denseLoadOptions(args.settings, setDtypes);
  const { task, docCount: docs, prefetch } = args;
  const shardHash = args.sets.hash;
  const facts: DenseFacts<AnnSettings> = {
    spec,
    task,
    settings: args.settings,
    docs,
    setDtypes,
    adhoc: reuseCorpus,
    shardHash,
  };
  facts.prefetch = !!prefetch;
  let plan = planDenseRun(facts);
  if (!plan.parts.canRun) {
    // An ad-hoc query of one image, and a model without an image tower.
    const imageOnly = adhoc && task.queryModality === 'image';
    throw new Error(
      `${spec.label ?? spec.id} ${imageOnly ? 'cannot embed images' : plan.parts.notes.join('; ')}`,
    );
  }
  const { notes, chunking, multiImage, allDocImages } = plan;
  args = { ...args, settings: { ...args.settings, ...plan.settings } };
  const { queryParts, docParts } = plan.parts;
  let encoder!: LoadedEncoder;
  let ivf: Awaited<ReturnType<typeof remoteIvfFor>> = null;
  let ranker: DenseRanker | undefined;
  let q: DenseQueries | undefined;
  let early = false;
  const runs: DenseOutcome['runs'] = [];
  const parts = new Map<EmbedPart, CorpusResult>();
  let chunkRows: Uint32Array | undefined;
  let chunkStats: DenseOutcome['chunks'];
  /** Multi-image max: the image rows and their documents (before any fusion with the text). */
  let imageRowDoc: Uint32Array | undefined;
  let imageStats: DenseOutcome['images'];
  const imageRowOf = new Map<string, number>();
  let imageCopy: Float32Array | null = null;
  let corpus: Awaited<ReturnType<typeof corpusMatrix>> | undefined;
  let annCurve: RecallReport | undefined;
  let refSets: ReferenceSets | null = null;
  let reference: ReferenceCheck | undefined;
  for (let i = 0; i < plan.steps.length; i++) {
    const step = plan.steps[i];
    if (step.kind === 'free-bm25') {
      if ((await freeBm25()) === 'stopped') args.onBm25Stopped?.();
    } else if (step.kind === 'load-model') {
      encoder = await loadEncoder(spec, { ...load, ...args.job });
      args.onEncoder?.(encoder);
      // A shard opened by URL with a packed index for this set: only the queries are embedded.
      const { skip, ...packed } = args.settings.packed ?? {};
      const where = [args.sets, spec, encoder, { ...plan.parts, notes }, chunking, multiImage] as const;
      ivf = skip ? null : await remoteIvfFor(...where, packed);
      if (ivf) {
        notes.push(...ivf.notes);
        args = { ...args, settings: { ...args.settings, fusion: 'feature', ann: undefined } };
      }
      Object.assign(facts, { encoder, packedIndex: ivf?.set.ivfUrl });
      // Ad-hoc queries: once a worker holds this corpus (from the first query or a run), nothing is
      // read from IndexedDB, copied or sent again; only the query is embedded and ranked.
      if (!ivf && reuseCorpus && !args.settings.ann) {
        const key = planDenseRun(facts).corpusKey!;
        ranker =
          queryParts.length === 1 ? ((await heldCompactRanker(key, args.job)) ?? undefined) : undefined;
        facts.held = ranker ? 'compact' : (await hasDenseDocs(key)) ? 'matrix' : undefined;
      }
      // The shard's sets this run takes corpus vectors from: their probe is checked next.
      refSets = args.docs
        ? await referenceSetsFor(args.sets, spec, encoder, docParts, ivf, chunking, allDocImages, notes)
        : null;
      if (refSets) facts.reference = { sets: refSets.names, cached: !!refSets.check, skip: !!args.reference };
      plan = planDenseRun(facts);
    } else if (step.kind === 'check-reference') {
      reference = await checkReferenceStep(refSets!, args.docs!, !!args.reference, args.job);
    } else if (step.kind === 'embed-queries') {
      q = await embedRunQueries(
        {
          shardHash,
          queries: args.queries,
          parts: queryParts,
          dim: corpus?.dim ?? encoder.dim,
          chunking,
          multiImage,
          corpusImages: { rowOf: imageRowOf, rows: imageCopy },
          ...(adhoc ? { adhoc: { ...adhoc, prefetch } } : {}),
        },
        args.job,
      );
    } else if (step.kind === 'free-encoder') {
      await stopEncoder();
      early = true;
      notes.push(
        'the query model was stopped once the queries were embedded, to keep its memory out of the corpus search (the next search loads it again)',
      );
    } else if (step.kind === 'search-packed-index') {
      runs.push(...(await rankFusions(q!, args.settings, args.job, reuseCorpus, ivf!.rank)));
    } else if (step.kind === 'embed-corpus') {
      const { part } = step;
      let r = await embedCorpusTo(
        {
          shardHash,
          spec,
          part,
          batchSize: 32,
          // An explicit dtype and device keep the embedding key stable, so stored batches are reused.
          load: { device: encoder.device, dtype: encoder.dtype },
          ...(part === 'text' && chunking ? { chunking } : {}),
          ...(part === 'image' && allDocImages ? { allImages: true } : {}),
          // mean → one vector per document (the worker pools); max → every chunk or image a row.
          pool: part === 'image' ? multiImage !== 'max' : chunking?.aggregate !== 'max',
          ...(early ? { loaded: encoder } : {}),
        },
        args.job,
        plan.stream,
      );
      if (r.chunks) {
        // Every image of multi-image items, or every window of long texts.
        const counts = new Uint32Array(r.docIds.length);
        for (const d of r.chunks.rowDoc) counts[d]++;
        const several = counts.filter((c) => c > 1).length;
        const image = part === 'image';
        if (image) imageStats = { rows: r.chunks.rowDoc.length, multiImageDocs: several };
        else
          chunkStats = {
            rows: r.chunks.rowDoc.length,
            docs: r.docIds.length - r.missing.length,
            multiChunkDocs: several,
          };
        if (image && multiImage === 'max') imageRowDoc = r.chunks.rowDoc;
        else if (!image && chunking?.aggregate === 'max') chunkRows = r.chunks.rowDoc;
      }
      parts.set(part, r);
      if (parts.size < docParts.length) continue;
      // Rows of the document images, so a query image that is a corpus image is not embedded twice
      // (not with multi-image rows: a row is then an image of an item, or an item's mean). Copied
      // before the parts go to the encoder worker to be fused.
      const imageRows = imageStats ? undefined : parts.get('image');
      imageCopy = imageRows ? imageRows.embeddings.slice() : null;
      corpus = await corpusMatrix(parts, imageRowDoc, chunking, multiImage, args.job);
      chunkRows = corpus.rowDoc ?? chunkRows;
      const first = parts.values().next().value!;
      // Precomputed embeddings in the shard that did not fit the model: say why the corpus was embedded.
      for (const r of parts.values()) if (r.precomputedNote) notes.push(r.precomputedNote);
      for (const r of parts.values()) if (r.notSaved) args.onWarning?.(r.notSaved);
      if (imageRows && args.docImageRow?.size) {
        // One lookup per query image (an indexOf each was queries × documents on the main thread).
        const rowOfDoc = new Map(imageRows.docIds.map((id, i) => [id, i]));
        for (const id of imageRows.missing) rowOfDoc.delete(id);
        for (const [path, docId] of args.docImageRow) {
          const i = rowOfDoc.get(docId);
          if (i !== undefined) imageRowOf.set(path, i);
        }
      }
      const rows = { corpusRows: corpusDocCount(first), rowsPerDoc: !!chunkRows };
      plan = planDenseRun({ ...facts, ...rows });
    } else if (step.kind === 'store' && step.store === 'compact') {
      const { key, matrix, dim, docIds, missing } = corpus!;
      const ids = parts.values().next().value!.ids ?? docIds;
      ranker = await loadCompactStore(key, matrix, dim, ids, missing, args.job);
    } else if (step.kind === 'store') {
      const { key, matrix, dim, docIds, missing } = corpus!;
      // The index worker gets its own copy: the retrieval worker takes ownership of `matrix`.
      if (plan.ann) corpus = { ...corpus!, matrix: matrix.slice() };
      await setDenseDocs(key, matrix, dim, docIds, missing, chunkRows);
    } else if (step.kind === 'rank' && step.index !== 'hnsw') {
      runs.push(...(await rankFusions(q!, args.settings, args.job, reuseCorpus, ranker)));
    } else if (step.kind === 'build-hnsw') {
      const { key, matrix, dim, docIds } = corpus!;
      const { M, efConstruction, efSearch } = plan.ann as AnnSettings;
      const req = { key, shard: shardHash, vectors: matrix, dim, docIds, M, efConstruction, efSearch };
      const built = await buildIndex({ ...req, space: 'cosine' }, args.job);
      if (built.notSaved) args.onWarning?.(built.notSaved);
    } else if (step.kind === 'rank') {
      const single = runs.filter((r) => !r.fusion || r.fusion.mode === 'feature');
      if (single.length < runs.length)
        notes.push('uses exact search for score fusion (two searches per query)');
      const hnsw = await searchHnswRuns(
        q!,
        corpus!,
        args.settings.depth,
        args.settings.ann!,
        single,
        args.job.signal,
      );
      runs.push(...hnsw.runs);
      annCurve = hnsw.annCurve;
    } else {
      // A step the plan may make and this executor does not run: a type error here, not a skipped step.
      const unknown: never = step.kind;
      throw new Error(`the dense run has no executor for the step ${String(unknown)}`);
    }
  }
  const none = { computedBatches: 0, reusedBatches: 0, precomputedBatches: 0, missing: 0 };
  return {
    encoder,
    runs,
    notes,
    plan: describePlan(plan.steps),
    ...(reference ? { reference } : {}),
    embedded: parts.size
      ? [...parts].map(([part, r]) => {
          const { computedBatches, reusedBatches, precomputedBatches } = r;
          return { part, computedBatches, reusedBatches, precomputedBatches, missing: r.missing.length };
        })
      : docParts.map((part) => ({ part, ...none })),
    ...(ivf?.info() ? { ivf: ivf.info()! } : {}),
    ...(ranker ? { compact: compactIndex(args.settings.depth) } : {}),
    ...(annCurve ? { annCurve } : {}),
    ...(chunking ? { chunking, ...(chunkStats ? { chunks: chunkStats } : {}) } : {}),
    ...(multiImage ? { multiImage, ...(imageStats ? { images: imageStats } : {}) } : {}),
  };
}

/** A corpus's result, with its ids as the packed table the stream began with when it was streamed. */
type CorpusResult = EmbedCorpusResult & { ids?: PackedStrings };

/** How many documents a corpus result covers (streamed: `ids`, its docIds being empty). */
const corpusDocCount = (r: CorpusResult) => (r.ids ? packedCount(r.ids) : r.docIds.length);

/**
 * embedCorpus, with the rows streamed into the compact store when `plan` says so and the corpus is
 * large enough: the result then has no embeddings and no docIds (its `ids` are the packed table the
 * stream began with: strings are made only for the hits), and the store holds the corpus, so
 * the index client's loadCompactStore finds it there.
 */
async function embedCorpusTo(
  req: EmbedCorpusRequest,
  job: JobOptions,
  plan?: { fromDocs: number; storeKey: (embeddingKey: string) => string },
): Promise<CorpusResult> {
  if (!plan) return embedCorpus(req, job);
  type Begun = { key: string; ids: PackedStrings; missing: string[]; filling: boolean };
  const state: { begun?: Begun } = {};
  const sink: CorpusSink = {
    async begin(info) {
      // A corpus this large: the BM25 index (stored) leaves the retrieval worker's memory meanwhile.
      await releaseBm25();
      const key = plan.storeKey(info.key);
      const filling = await beginCompactFill(key, info.dim, info.ids, job);
      state.begun = { key, ids: info.ids, missing: info.missing, filling };
      return filling;
    },
    // The piece's buffers come back from the index worker and go on to the encoder worker (reused).
    rows: (piece) => addRowsAtToCompactStore(piece.vectors, piece.at, job.signal),
  };
  const r = await embedCorpus({ ...req, stream: { fromDocs: plan.fromDocs } }, { ...job, sink });
  if (!r.streamed) return r;
  const b = state.begun;
  if (!b) throw new Error('the encoder worker streamed a corpus without beginning it');
  if (b.filling) await endCompactFill(b.key, b.ids, b.missing, job);
  return { ...r, docIds: [], ids: b.ids };
}

/**
 * The corpus as one matrix: one part as embedded; text and image parts fused in the encoder worker
 * (an image + text document is one vector, the normalised sum of its two parts, or the one it has;
 * multi-image max rows fused with their text). The parts' rows go to the worker (transferred).
 */
async function corpusMatrix(
  parts: Map<EmbedPart, CorpusResult>,
  imageRowDoc: Uint32Array | undefined,
  chunking: Chunking | undefined,
  multiImage: MultiImage | undefined,
  job: JobOptions,
) {
  const first = parts.values().next().value!;
  const { dim, docIds } = first;
  const key = denseDocsKey(
    [...parts.values()].map((p) => p.key),
    chunking,
    multiImage,
  );
  const t = parts.get('text');
  const v = parts.get('image');
  if (!t || !v)
    return imageRowDoc
      ? { key, dim, docIds, missing: v!.missing, matrix: v!.embeddings, rowDoc: imageRowDoc }
      : { key, dim, docIds, missing: first.missing, matrix: first.embeddings };
  return { key, dim, docIds, ...(await fuseDocParts(docIds, dim, t, v, imageRowDoc, job)) };
}

/**
 * One ad-hoc query (text, image or both) against a task's corpus with a dense model. The corpus
 * comes from the embedding cache (computed once if needed). With both parts, both fusions are
 * returned so the UI can show them side by side.
 */
export async function denseAdhoc(args: {
  sets: ShardSets;
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
  docs?: ProbeDocs;
  reference?: 'skip';
  /** Told the check of the shard's reference vectors the query's corpus came from. */
  onReference?: (check: ReferenceCheck) => void;
}) {
  const { image } = args;
  const hasText = !!args.text.trim();
  if (!hasText && !image) throw new Error('empty query');
  const query: Query = { id: 'adhoc', text: hasText ? args.text : '', task: args.task.id, meta: {} };
  // The query's parts as typed: the plan keeps those the model embeds (an image needs an image tower).
  const task: TaskInfo = {
    ...args.task,
    queryModality: hasText && image ? 'image+text' : image ? 'image' : 'text',
  };
  const out = await denseTaskWith(
    { ...args, task, queries: [query], settings: { ...args.settings, depth: args.k, fusion: 'both' } },
    { image, more: args.moreImages ?? [] },
  );
  if (out.ivf) args.onIvf?.(out.ivf);
  if (out.reference) args.onReference?.(out.reference);
  return out.runs.map((r) => ({
    fusion: r.fusion,
    hits: r.lists[0].docIds.map((docId, i) => ({ docId, score: r.lists[0].scores[i] })),
  }));
}
