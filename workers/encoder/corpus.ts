// The resumable corpus-embedding job: a cached shard's documents embedded batch by batch (texts by
// length within a token budget, chunked or not; images, all of a multi-image item or its first),
// every batch stored in IndexedDB as it is done (core/retrieval/corpus-batches), so a cancelled,
// reloaded or closed run resumes where it stopped; precomputed embeddings shipped in the shard are
// used in place of embedding when they fit the model.
import * as Comlink from 'comlink';
import {
  corpusEmbeddingKey,
  isCrossEncoder,
  supportsPart,
  type Dtype,
  type ModelSpec,
} from '../../src/lib/core/retrieval/models';
import type { EmbedPart } from '../../src/lib/core/types';
import {
  DEFAULT_TOKEN_BUDGET,
  isValidPlan,
  planBatches,
  type BatchPlan,
} from '../../src/lib/core/retrieval/batching';
import { checkChunking, isChunked, meanOfChunks, type Chunking } from '../../src/lib/core/retrieval/chunking';
import {
  EMB_KIND,
  checkBatchSize,
  docText,
  validBatch,
  type EmbBatchRecord,
  type EmbMetaRecord,
} from '../../src/lib/core/retrieval/corpus-batches';
import { precomputedKey, precomputedMismatch } from '../../src/lib/core/shard/precomputed';
import { openPrecomputedSet, type PrecomputedRows } from '../../src/lib/platform/storage/precomputed-store';
import type { Device } from '../../src/lib/platform/gpu/backend';
import { isQuotaError, openShardStore, type ShardStore } from '../../src/lib/platform/storage/shard-store';
import { corpusDocs } from './corpus-docs';
import {
  copyPacked,
  packedAt,
  packedCount,
  packedEquals,
  packedToStrings,
} from '../../src/lib/core/retrieval/packed-ids';
import { decode, embedImageBatch } from './image';
import { load } from './load';
import { flushModelCache } from './model-cache';
import { phased } from './progress';
import { PieceWriter, type CorpusSink, type CorpusStreamRequest } from './stream';
import { current, onActive } from './session';
import { embedTextBatch, textLengths } from './text';
import type { LoadedEncoder, LoadOptions, OnProgress } from './types';
import { embedWindows, textWindows, windowTokens } from './windows';

/** What embedCorpus embeds (a cached shard's text or image part, with one model) and how. */
export interface EmbedCorpusRequest {
  shardHash: string;
  spec: ModelSpec;
  part: EmbedPart;
  /**
   * Most documents per batch (and per stored record). Texts are batched by length (longest first) up
   * to `tokenBudget` padded tokens; images in shard order. A resumed run keeps the plan it started with.
   */
  batchSize: number;
  /** Padded tokens per text batch (batch size × its longest text); default DEFAULT_TOKEN_BUDGET. */
  tokenBudget?: number;
  load?: LoadOptions;
  /**
   * Texts longer than the model's window: `mean`/`max` embed every window (overlapping by
   * `overlap` tokens) and return one row per chunk; `first` or absent truncate (one row per document).
   */
  chunking?: Chunking;
  /**
   * Images of multi-image items (`images: [...]`): every image, one row per image (returned like
   * chunks, `spans` holding [index, index + 1]); absent: the first image of each item.
   */
  allImages?: boolean;
  /**
   * With `chunking` or `allImages`: one row per document, the mean of its chunks' (or images') rows,
   * normalised as the model normalises its vectors; `chunks` still says which rows it had.
   */
  pool?: boolean;
  /**
   * The caller takes the rows as a stream (embedCorpus's `sink`) from this many documents on, when
   * the corpus has one row per document: the result then carries no embeddings (workers/encoder/stream.ts).
   */
  stream?: CorpusStreamRequest;
  /**
   * The model as the page's load answered it (dim, dtype, device…), when the page has stopped the
   * worker since to give back the model's memory: the model is loaded again only when a batch must
   * be embedded (a shard's precomputed rows, or batches stored before, need none). Its load options
   * are `load`, so a load gives the same device and dtype.
   */
  loaded?: LoadedEncoder;
}

/** A corpus embedding: the vectors (transferred), what was reused, computed or taken precomputed, and where it ran. */
export interface EmbedCorpusResult {
  /**
   * Row-major (docs × dim), documents in shard order; rows of `missing` documents are zero. Chunked
   * text: (chunks × dim), the chunks of each document in order, documents in shard order, none for
   * `missing` documents; `chunks` maps them to documents (with `pool`: docs × dim, their means).
   */
  embeddings: Float32Array;
  /** Chunked text only: the document (index into docIds) of each row, and its token span (2 per row). */
  chunks?: { rowDoc: Uint32Array; spans: Uint32Array; overlap: number };
  dim: number;
  docIds: string[];
  /** Documents without that part (no text / no image), skipped. */
  missing: string[];
  key: string;
  /** Most documents per batch. */
  batchSize: number;
  /** Padded tokens per text batch at most (Infinity for images: they are batched by count). */
  tokenBudget: number;
  totalBatches: number;
  computedBatches: number;
  reusedBatches: number;
  /** Batches taken from precomputed embeddings shipped in the shard (not embedded here). */
  precomputedBatches: number;
  /** Why the shard's precomputed embeddings for this model were not used, when it has some. */
  precomputedNote?: string;
  /**
   * Set when the browser's storage filled up: from that batch on, vectors were computed but not
   * saved (this run has them all; the next one resumes from the saved batches). What happened and
   * what to do, for the user.
   */
  notSaved?: string;
  ms: number;
  backend: {
    device: Device;
    dtype: Dtype;
    threads: number;
    deviceReason: string;
    fallbackReason?: string;
    /** With `req.loaded`: no batch needed the model, so the worker holds none (nothing is active). */
    idle?: true;
  };
  /**
   * The rows went to the sink (req.stream): `embeddings` is empty and `docIds` too (the sink's
   * begin() had them).
   */
  streamed?: boolean;
}

/** Documents embedded by embedCorpus since the worker started (stored batches and precomputed rows excluded). */
const counters = {
  docsEmbedded: 0,
  batchesEmbedded: 0,
  batchesReused: 0,
  precomputedRows: 0,
  /** Batches computed but not saved (the browser's storage was full). */
  batchesNotSaved: 0,
  /** Chunks (windows) embedded for chunked corpora (mean/max), and documents that took more than one. */
  chunksEmbedded: 0,
  multiChunkDocs: 0,
  /** Images embedded as rows of multi-image items (allImages). */
  itemImagesEmbedded: 0,
  /** Rows sent to a sink (req.stream) instead of returned, in how many pieces, the largest piece. */
  streamedRows: 0,
  streamedPieces: 0,
  largestPiece: 0,
  reusedPieces: 0,
};
// Readable from a test through the worker's global (Playwright evaluates in workers), as well as api.counters().
(self as unknown as { loupeEncoderCounters: typeof counters }).loupeEncoderCounters = counters;

/** Corpus documents embedded, batches computed or reused, precomputed rows taken, since the worker started. */
export function corpusCounters() {
  return { ...counters };
}

let storePromise: Promise<ShardStore> | null = null;
/** The shard cache, opened once per worker (the corpus job and the reference check read it). */
export function shardStore(): Promise<ShardStore> {
  storePromise ??= openShardStore({ sweep: false }).catch((e: unknown) => {
    storePromise = null;
    throw e;
  });
  return storePromise;
}

/** Embeds a cached shard's documents (text or image part), reusing every stored batch; transferred. */
export async function embedCorpus(
  req: EmbedCorpusRequest,
  onProgress?: OnProgress,
  sink?: CorpusSink,
): Promise<EmbedCorpusResult> {
  const t0 = performance.now();
  const { shardHash, spec, part } = req;
  checkBatchSize(req.batchSize);
  if (isCrossEncoder(spec))
    throw new Error(`${spec.id} is a cross-encoder: it scores query–document pairs and cannot embed`);
  if (!supportsPart(spec, part)) throw new Error(`${spec.id} is a text encoder: it cannot embed images`);
  const report = phased(onProgress);
  report({ kind: 'status', message: 'Reading shard from IndexedDB' });
  const db = await shardStore();
  // Ids and part flags only; the documents are loaded when a batch must be embedded (`corpus.full()`).
  const corpus = await corpusDocs(db, shardHash, part);
  const docIds = corpus.ids;
  // With req.loaded, the model is loaded only before the first batch that must be embedded.
  // A long job: the model's files go to the browser cache before it starts (model-cache.ts), rather
  // than being held queued through it.
  let loaded = req.loaded ?? (await load(spec, req.load, onProgress));
  if (!req.loaded) await flushModelCache();
  let modelLoaded = !req.loaded;
  const model = async () => {
    if (modelLoaded) return;
    const l = await load(spec, req.load, onProgress);
    await flushModelCache();
    if (l.dim !== loaded.dim || l.dtype !== loaded.dtype)
      throw new Error(
        `${spec.id} loaded again as ${l.dtype}, ${l.dim} dimensions; the run began with ${loaded.dtype}, ${loaded.dim}`,
      );
    loaded = l;
    modelLoaded = true;
  };
  const dim = loaded.dim;
  // Only text is chunked; `first` is the truncating path (and key) of before.
  const chunking = part === 'text' && isChunked(req.chunking) ? checkChunking(req.chunking) : undefined;
  // Every image of multi-image items, one row each (the page asks only for shards that have them).
  const allImages = part === 'image' && !!req.allImages;
  const key = corpusEmbeddingKey(shardHash, spec, loaded.dtype, part, chunking, allImages);
  const multiRow = !!chunking || allImages;

  const { rows, missingRows } = corpus;
  const missing = missingRows.map((i) => packedAt(docIds, i));
  // Streamed: every row goes to the sink in pieces (its begin() may say it holds them already).
  let pieces: PieceWriter | null = null;
  const streamed = !!sink && !!req.stream && !multiRow && packedCount(docIds) >= req.stream.fromDocs;
  if (streamed) {
    const ids = copyPacked(docIds);
    const info = Comlink.transfer({ key, dim, ids, missing }, [ids.bytes.buffer, ids.offsets.buffer]);
    if (await sink.begin(info)) pieces = new PieceWriter(sink, dim, counters);
    await pieces?.zeros(missingRows);
  }

  // Precomputed embeddings shipped in the shard for this model and dtype (checked against the
  // documents at import): used in place of embedding when they fit the loaded model exactly.
  let pre: PrecomputedRows | undefined;
  let precomputedNote: string | undefined;
  try {
    // Read a piece at a time (platform/storage/precomputed-store.ts): never the whole set at once.
    pre = await openPrecomputedSet(db, shardHash, precomputedKey(spec.id, loaded.dtype, part));
  } catch {
    pre = undefined;
  }
  // Precomputed sets hold one truncated vector per document: they cannot stand for chunks.
  if (pre && chunking) {
    precomputedNote = `precomputed ${part} embeddings for ${spec.id} (${loaded.dtype}) not used: they hold one truncated vector per document, and long texts are chunked (${chunking.aggregate}); embedding the chunks instead`;
    pre = undefined;
  }
  if (pre && allImages) {
    precomputedNote = `precomputed ${part} embeddings for ${spec.id} (${loaded.dtype}) not used: they hold one vector per item, and every image of multi-image items is embedded; embedding the images instead`;
    pre = undefined;
  }
  if (pre) {
    const why = precomputedMismatch(pre.sidecar, spec, loaded.dtype, dim);
    if (
      pre.sidecar.doc_ids.length !== rows.length ||
      pre.sidecar.doc_ids.some((id, i) => !packedEquals(docIds, rows[i], id))
    )
      why.push('document order differs from the shard');
    if (why.length) {
      precomputedNote = `precomputed ${part} embeddings for ${spec.id} (${loaded.dtype}) not used: ${why.join('; ')}; embedding the corpus instead`;
      console.warn(`loupe: ${precomputedNote}`);
      pre = undefined;
    }
    // Checked: the sidecar's id strings (a million at 1M) are not kept through the run.
    else pre = { ...pre, sidecar: { ...pre.sidecar, doc_ids: [] } };
  }

  // A resumed run keeps the stored plan, so that its batches stay reusable.
  const metaKey = `${key}#meta`;
  let meta: EmbMetaRecord | undefined;
  try {
    meta = await db.getArtifact<EmbMetaRecord>(shardHash, EMB_KIND, metaKey);
  } catch (e) {
    console.warn('loupe: unreadable embedding meta record, recomputing', e);
  }
  const resumable =
    meta?.v === 2 &&
    meta.dim === dim &&
    meta.total === rows.length &&
    meta.batchSize > 0 &&
    isValidPlan(meta, rows.length);
  let plan: BatchPlan;
  let batchSize: number;
  let tokenBudget: number;
  if (resumable) {
    plan = { order: meta!.order, bounds: meta!.bounds, paddedTokens: 0 };
    batchSize = meta!.batchSize;
    tokenBudget = meta!.tokenBudget;
  } else {
    batchSize = req.batchSize;
    // Texts by length within a padded-token budget; images all cost the same: shard order.
    tokenBudget = part === 'text' ? (req.tokenBudget ?? DEFAULT_TOKEN_BUDGET) : Infinity;
    let lengths: Uint32Array;
    // With the shard's precomputed rows nothing is embedded: batches in shard order, no tokenizing.
    if (part === 'text' && !pre) {
      report({ kind: 'status', message: 'Counting tokens' });
      await model();
      const docs = await corpus.full();
      const texts = rows.map((r) => docText(docs[r]));
      // Chunked: a document costs the tokens of all its windows; batches group documents of
      // similar cost, and their windows are batched by length again when embedded.
      lengths = await onActive(async (enc) =>
        chunking ? windowTokens(enc, spec, texts, chunking) : textLengths(enc, spec, texts, 'document'),
      );
    } else lengths = new Uint32Array(rows.length).fill(1);
    plan = planBatches(lengths, { tokenBudget, maxBatch: batchSize });
  }
  const totalBatches = plan.bounds.length - 1;
  const writeMeta = (complete: boolean) =>
    db.putArtifact(shardHash, EMB_KIND, metaKey, {
      v: 2,
      key,
      modelId: spec.id,
      hubId: spec.hubId,
      revision: spec.revision,
      dtype: loaded.dtype,
      part,
      dim,
      batchSize,
      tokenBudget,
      total: rows.length,
      totalBatches,
      order: plan.order,
      bounds: plan.bounds,
      missing,
      complete,
      updatedAt: Date.now(),
    } satisfies EmbMetaRecord);

  // A full storage stops the saving, not the run: each batch is one record (saved whole or not at
  // all), the meta record stays incomplete, and the next run resumes from the batches saved.
  let notSaved: string | undefined;
  const full = (batchNo: number) =>
    `the browser's storage filled up while saving the corpus embeddings of ${spec.label ?? spec.id} ` +
    `(batch ${batchNo + 1} of ${totalBatches}): this run has them all, but only the batches before ` +
    'were saved, so the next run embeds the rest again. Delete cached shards or runs you no longer ' +
    'need (Shards view), or allow this site more storage in the browser settings, then run again to ' +
    'save them';
  const saveBatch = async (
    recKey: string,
    batchNo: number,
    ids: string[],
    vectors: Float32Array,
    chunks?: { chunks: Uint32Array; spans: Uint32Array },
  ) => {
    if (notSaved) {
      counters.batchesNotSaved++;
      return;
    }
    try {
      await db.putArtifact(shardHash, EMB_KIND, recKey, {
        v: 2,
        batchNo,
        ids,
        dim,
        vectors,
        ...(chunks ?? {}),
        writtenAt: Date.now(),
      } satisfies EmbBatchRecord);
    } catch (e) {
      if (!isQuotaError(e)) throw e;
      counters.batchesNotSaved++;
      notSaved = full(batchNo);
    }
  };
  if (!resumable)
    await writeMeta(false).catch((e: unknown) => {
      if (!isQuotaError(e)) throw e;
      notSaved = full(0);
    });

  // Row-major (docs × dim) in shard order; rows of documents without the part stay zero.
  // Chunked: each document's chunk rows and spans, put together in shard order at the end.
  const embeddings = new Float32Array(multiRow || streamed ? 0 : packedCount(docIds) * dim);
  const docChunks: { vectors: Float32Array; spans: Uint32Array }[] = [];
  let computedBatches = 0;
  let reusedBatches = 0;
  let precomputedBatches = 0;
  let preScratch = new Float32Array(0);
  let done = 0;
  let computedDocs = 0;
  let computeMs = 0;
  let precomputedDocs = 0;
  let reusedDocs = 0;
  const tick = () => {
    const docsPerSec = computeMs > 0 ? (computedDocs / computeMs) * 1000 : 0;
    const remaining = rows.length - done;
    report({
      kind: 'embed',
      done,
      total: rows.length,
      docsPerSec,
      ...(docsPerSec > 0 ? { etaSeconds: remaining / docsPerSec } : {}),
      ...(pre ? { from: 'precomputed' as const } : {}),
      precomputed: precomputedDocs,
      reused: reusedDocs,
    });
  };
  tick();
  for (let b = 0; b < totalBatches; b++) {
    const batchRows = Array.from(plan.order.subarray(plan.bounds[b], plan.bounds[b + 1]), (p) => rows[p]);
    const ids = batchRows.map((r) => packedAt(docIds, r));
    const recKey = `${key}#${b}`;
    let rec: unknown;
    try {
      rec = await db.getArtifact(shardHash, EMB_KIND, recKey);
    } catch {
      rec = undefined; // a failed cache read recomputes
    }
    let vectors: Float32Array;
    let chunkInfo: { chunks: Uint32Array; spans: Uint32Array } | undefined;
    if (validBatch(rec, ids, dim, multiRow)) {
      vectors = rec.vectors;
      if (multiRow) chunkInfo = { chunks: rec.chunks!, spans: rec.spans! };
      reusedBatches++;
      reusedDocs += ids.length;
      counters.batchesReused++;
    } else if (pre) {
      // float16 rows of the shard's precomputed set (row p = rows[p], shard order). Not stored again
      // as a batch: the set itself is in the shard cache, and the next run reads it the same way.
      // Through one scratch buffer: the rows are copied on below (to the piece or the matrix).
      const order = plan.order.subarray(plan.bounds[b], plan.bounds[b + 1]);
      if (preScratch.length < order.length * dim) preScratch = new Float32Array(order.length * dim);
      vectors = await pre.read(order, dim, preScratch);
      precomputedBatches++;
      precomputedDocs += ids.length;
      counters.precomputedRows += ids.length;
    } else {
      await model();
      const tb = performance.now();
      const docs = await corpus.full();
      if (part === 'text' && chunking) {
        const texts = batchRows.map((r) => docText(docs[r]));
        const w = await onActive(async (enc) => {
          const win = textWindows(enc, spec, texts, 'document', chunking);
          return { ...win, vectors: await embedWindows(enc, spec, 'document', win.rows, batchSize) };
        });
        vectors = w.vectors;
        chunkInfo = { chunks: w.counts, spans: w.spans };
        counters.chunksEmbedded += w.rows.length;
        counters.multiChunkDocs += w.counts.filter((c) => c > 1).length;
      } else if (part === 'text') {
        const texts = batchRows.map((r) => docText(docs[r]));
        vectors = await onActive((enc) => embedTextBatch(enc, spec, texts, 'document'));
      } else {
        // Each document's images (all of a multi-image item with allImages, else its first).
        const paths = batchRows.map((r) =>
          allImages && docs[r].images ? docs[r].images!.map((x) => x.path) : [docs[r].image!],
        );
        const images = await Promise.all(
          paths.flatMap((list, i) =>
            list.map(async (path) => {
              const d = docs[batchRows[i]];
              const blob = await db.getImage(shardHash, path);
              if (!blob) throw new Error(`image ${path} of document ${d.id} is not in the shard cache`);
              return decode(blob, `${path} (document ${d.id})`);
            }),
          ),
        );
        vectors = await onActive((enc) => embedImageBatch(enc, spec, images));
        if (allImages) {
          const counts = Uint32Array.from(paths, (l) => l.length);
          const spans = new Uint32Array(2 * images.length);
          let at = 0;
          for (const c of counts)
            for (let k = 0; k < c; k++, at++) {
              spans[2 * at] = k;
              spans[2 * at + 1] = k + 1;
            }
          chunkInfo = { chunks: counts, spans };
          counters.itemImagesEmbedded += images.length;
        }
      }
      const rowsOut = chunkInfo ? chunkInfo.spans.length / 2 : ids.length;
      if (vectors.length !== rowsOut * dim)
        throw new Error(`batch ${b}: got ${vectors.length / rowsOut} dimensions, expected ${dim}`);
      await saveBatch(recKey, b, ids, vectors, chunkInfo);
      computeMs += performance.now() - tb;
      computedDocs += ids.length;
      computedBatches++;
      counters.batchesEmbedded++;
      counters.docsEmbedded += ids.length;
    }
    if (chunkInfo) {
      let off = 0;
      batchRows.forEach((r, i) => {
        const c = chunkInfo.chunks[i];
        docChunks[r] = {
          vectors: vectors.subarray(off * dim, (off + c) * dim),
          spans: chunkInfo.spans.subarray(2 * off, 2 * (off + c)),
        };
        off += c;
      });
    } else if (pieces) await pieces.add(vectors, batchRows);
    else if (!streamed)
      batchRows.forEach((r, i) => embeddings.set(vectors.subarray(i * dim, (i + 1) * dim), r * dim));
    done += ids.length;
    tick();
  }
  if (!notSaved && (!resumable || !meta?.complete || computedBatches > 0 || precomputedBatches > 0))
    await writeMeta(true);
  await pieces?.flush();
  report.flush();
  const enc = modelLoaded ? current() : loaded;
  let out = embeddings;
  let chunks: EmbedCorpusResult['chunks'];
  if (multiRow) {
    let total = 0;
    for (const c of docChunks) if (c) total += c.spans.length / 2;
    out = new Float32Array(total * dim);
    const rowDoc = new Uint32Array(total);
    const spans = new Uint32Array(2 * total);
    const pooled = new Float32Array(req.pool ? packedCount(docIds) * dim : 0);
    let at = 0;
    docChunks.forEach((c, r) => {
      if (!c) return;
      const n = c.spans.length / 2;
      out.set(c.vectors, at * dim);
      if (req.pool) pooled.set(meanOfChunks(c.vectors, [n], dim, req.spec.normalize), r * dim);
      spans.set(c.spans, 2 * at);
      rowDoc.fill(r, at, at + n);
      at += n;
    });
    chunks = { rowDoc, spans, overlap: chunking?.overlap ?? 0 };
    if (req.pool) out = pooled;
  }
  const result: EmbedCorpusResult = {
    embeddings: out,
    ...(chunks ? { chunks } : {}),
    dim,
    docIds: streamed ? [] : packedToStrings(docIds),
    missing,
    key,
    batchSize,
    tokenBudget,
    totalBatches,
    computedBatches,
    reusedBatches,
    precomputedBatches,
    ...(precomputedNote ? { precomputedNote } : {}),
    ...(notSaved ? { notSaved } : {}),
    ...(streamed ? { streamed } : {}),
    ms: performance.now() - t0,
    backend: {
      device: enc.device,
      dtype: enc.dtype,
      threads: enc.threads,
      deviceReason: loaded.deviceReason,
      ...(loaded.fallbackReason ? { fallbackReason: loaded.fallbackReason } : {}),
      ...(modelLoaded ? {} : { idle: true as const }),
    },
  };
  // Transferred: the page owns the embeddings buffer afterwards.
  return Comlink.transfer(result, [
    out.buffer,
    ...(chunks ? [chunks.rowDoc.buffer, chunks.spans.buffer] : []),
  ] as ArrayBuffer[]);
}
