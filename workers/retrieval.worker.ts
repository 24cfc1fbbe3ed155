// Retrieval worker: owns the lexical index of the open shard. Builds BM25 once per (shard, params),
// caches it in IndexedDB as an artifact, and answers batch runs and ad-hoc searches. The page may
// release the index while it needs the memory (a large dense run: about 160 MB at 1M documents); the
// next BM25 call reads it back from the cache (workers/retrieval/bm25-reload.ts).
import * as Comlink from 'comlink';
import {
  Bm25Builder,
  bm25Doc,
  explainBm25,
  searchBm25,
  type Bm25Index,
  type Bm25Params,
} from '../src/lib/core/retrieval/bm25';
import { deserializeBm25, serializeBm25 } from '../src/lib/core/retrieval/bm25-store';
import { loadAnalyzers } from '../src/lib/core/retrieval/analyzers';
import type { Progress, Query } from '../src/lib/core/types';
import { openShardStore } from '../src/lib/platform/storage/shard-store';
import { deleteBm25, getBm25, putBm25 } from '../src/lib/platform/storage/bm25-cache';
import { docBatches, loadQueries } from '../src/lib/platform/storage/shard-batches';
import { throttle } from '../src/lib/core/throttle';
import { freeIndexBuffers, reloadCounters, type Bm25Reload } from './retrieval/bm25-reload';
import {
  createChunkedIndex,
  createDenseIndex,
  searchDenseChunked,
  type ChunkedDenseIndex,
  fuseFeatures,
  fuseScores,
  scoreAll,
  searchDense,
  topKOfScores,
  type DenseIndex,
} from '../src/lib/core/retrieval/dense';

/** Query vectors for a dense run: row i of `text`/`image` is query i's part when `has*[i]` is 1. */
export interface DenseQueries {
  ids: string[];
  dim: number;
  text: Float32Array | null;
  image: Float32Array | null;
  hasText: Uint8Array;
  hasImage: Uint8Array;
  exclude: (string[] | undefined)[];
  /**
   * Chunking `max`: every chunk of each query's text (rows offsets[i] … offsets[i + 1] − 1 of
   * `vectors` are query i's); a document scores its best (query chunk, document chunk) pair.
   */
  textChunks?: { vectors: Float32Array; offsets: Uint32Array };
  /**
   * Multi-image `max`: every image of each multi-image query (rows offsets[i] … offsets[i + 1] − 1;
   * none for queries with one image or none), each fused with the query's text when it has one.
   */
  imageRows?: { vectors: Float32Array; offsets: Uint32Array };
}

/** How a query with both a text and an image is scored (M3Retrieve's two strategies). */
export type QueryFusion = { mode: 'score'; textWeight: number } | { mode: 'feature' };

/** The dense document matrix of the open task; kept until another key replaces it. */
let dense: { key: string; index: DenseIndex | null; chunked: ChunkedDenseIndex | null } | null = null;

/** One ranked list, flattened for cheap structured cloning. */
export interface RankedList {
  queryId: string;
  docIds: string[];
  scores: Float64Array;
  /**
   * This query's own search time where it was ranked, ms: scoring every row and taking the top k
   * (exact search here; the compact store's scan and rescoring in the index worker). Not its
   * embedding, nor messaging. Absent where the query was not searched or the ranker does not time.
   */
  ms?: number;
}

interface Open {
  hash: string;
  queries: Query[];
  key: string;
  params: Bm25Params;
  /** null once released (api.release): the next BM25 call reloads it (indexOf). */
  index: Bm25Index | null;
  indexedDocs: number;
  analyzers: Bm25Index['analyzers'];
}

let open: Open | null = null;
/** The reload in flight (concurrent calls share it), and the last one not yet reported to the page. */
let reloading: Promise<Bm25Index> | null = null;
let lastReload: Bm25Reload | null = null;
/** BM25 calls using an index now: a released index's buffers are freed once none are. */
let using = 0;
/** A released index still used by a call in flight when it was released: freed when that call ends. */
let toFree: Bm25Index | null = null;

/** Frees a released index's buffers (release) once no BM25 call uses an index. */
function freeReleased(index: Bm25Index | null) {
  if (index) toFree = index;
  if (using || !toFree) return;
  reloadCounters.freedBytes += freeIndexBuffers(toFree);
  toFree = null;
}

/** `f` with the open shard's index (reloaded when released), counted in `using`. */
async function withIndex<T>(
  o: Open,
  f: (index: Bm25Index) => T | Promise<T>,
  onProgress?: (p: Progress) => void,
) {
  using++;
  try {
    return await f(await indexOf(o, onProgress));
  } finally {
    using--;
    freeReleased(null);
  }
}

/**
 * The stored index of (hash, params) read back from the cache, else built from the stored documents
 * and stored (a stale or unreadable cache entry is dropped and rebuilt, never trusted).
 */
async function loadOrBuild(
  hash: string,
  key: string,
  params: Bm25Params,
  report: ReturnType<typeof throttle>,
) {
  const store = await openShardStore();
  let index: Bm25Index | null = null;
  let cached = false;
  try {
    const art = await getBm25(store, hash, key);
    if (art) {
      index = deserializeBm25(art);
      // Its analyzers (Snowball's stemmers for some languages) load before any query is analyzed.
      await loadAnalyzers(index.analyzers);
      cached = true;
    }
  } catch (e) {
    // A stale or corrupt cached index is rebuilt, never trusted.
    console.warn('dropping unreadable BM25 cache entry', e);
    await deleteBm25(store, hash);
  }
  if (!index) {
    const { summary } = await loadQueries(store, hash);
    const language = summary.manifest.language;
    // Documents are read in batches and indexed as they come: the corpus is never all in memory.
    const builder = new Bm25Builder(params, { onProgress: report, language, total: summary.counts.docs });
    for await (const docs of docBatches(store, hash)) await builder.add(docs.map(bm25Doc));
    index = builder.finish();
    report({ kind: 'status', message: 'Caching BM25 index' });
    // In pieces (platform/storage/bm25-cache.ts): one record of it made a second copy of the index.
    await putBm25(store, hash, key, serializeBm25(index));
  }
  return { index, cached };
}

/** The open shard's index: held, or read back from the cache after a release (said to the page once). */
async function indexOf(o: Open, onProgress?: (p: Progress) => void): Promise<Bm25Index> {
  if (o.index) return o.index;
  reloading ??= (async () => {
    const t0 = performance.now();
    const report = throttle(onProgress);
    report({ kind: 'status', message: 'Reading the BM25 index back from the cache' });
    const { index, cached } = await loadOrBuild(o.hash, o.key, o.params, report);
    report.flush();
    reloadCounters.reloads++;
    lastReload = { ms: performance.now() - t0, rebuilt: !cached, docs: index.docCount };
    if (open === o) o.index = index;
    return index;
  })().finally(() => {
    reloading = null;
  });
  return reloading;
}

/** A query's `language` metadata, when it is a string. */
const queryLanguage = (q: Query | undefined) =>
  typeof q?.meta.language === 'string' ? q.meta.language : undefined;

// The analysis is checked inside the stored index (analyzer version, and the analyzer each group's
// languages map to), so the key needs no document to be read: bm25-store refuses a stale one.
const paramsKey = (p: Bm25Params) => `bm25:k1=${p.k1};b=${p.b};lossy=${p.lossyLengths ? 1 : 0};v3`;

/** Ranks the corpus for every query of a task (top `depth`) with `index`, honouring each query's exclude_ids. */
async function rankTask(
  o: Open,
  index: Bm25Index,
  taskId: string,
  depth: number,
  onProgress?: (p: Progress) => void,
): Promise<RankedList[]> {
  const report = throttle(onProgress);
  const queries = o.queries.filter((q) => q.task === taskId);
  const out: RankedList[] = [];
  let last = performance.now();
  for (let i = 0; i < queries.length; i++) {
    const q = queries[i];
    const hits = searchBm25(index, q.text, depth, {
      exclude: q.excludeIds,
      queryLanguage: queryLanguage(q),
    });
    out.push({
      queryId: q.id,
      docIds: hits.map((h) => h.docId),
      scores: Float64Array.from(hits, (h) => h.score),
    });
    report({ kind: 'search', done: i + 1, total: queries.length });
    // Yield now and then so a terminate() from the page (cancel) is never stuck behind us.
    if (performance.now() - last > 50) {
      await new Promise((r) => setTimeout(r, 0));
      last = performance.now();
    }
  }
  report.flush();
  return out;
}

const api = {
  /**
   * Opens a cached shard and makes its BM25 index ready: from the artifact cache when present,
   * else built and stored. Returns whether it came from cache and how long each step took.
   */
  async prepare(hash: string, params: Bm25Params, onProgress?: (p: Progress) => void) {
    const report = throttle(onProgress);
    const t0 = performance.now();
    const key = paramsKey(params);
    if (open?.hash === hash && open.key === key)
      return {
        cached: true,
        ms: 0,
        indexedDocs: open.indexedDocs,
        analyzers: open.analyzers,
      };
    const store = await openShardStore();
    report({ kind: 'status', message: 'Reading shard from IndexedDB' });
    const { queries } = await loadQueries(store, hash);
    open = null;
    const { index, cached } = await loadOrBuild(hash, key, params, report);
    report.flush();
    open = {
      hash,
      queries,
      key,
      params,
      index,
      indexedDocs: index.indexedDocCount,
      analyzers: index.analyzers,
    };
    return {
      cached,
      ms: performance.now() - t0,
      indexedDocs: index.indexedDocCount,
      analyzers: index.analyzers,
    };
  },

  /** Ranks the corpus for every query of a task (top `depth`), honouring each query's exclude_ids. */
  async runTask(taskId: string, depth: number, onProgress?: (p: Progress) => void): Promise<RankedList[]> {
    if (!open) throw new Error('no shard prepared');
    return withIndex(open, (index) => rankTask(open!, index, taskId, depth, onProgress), onProgress);
  },

  /** Whether the worker holds the document matrix with this embedding key (no need to send it again). */
  hasDense(key: string): boolean {
    return dense?.key === key;
  },

  /**
   * Takes ownership of a document matrix (transferred) for dense search. With `rowDoc` the matrix
   * holds several rows per document (chunks; row r is document docIds[rowDoc[r]]), scored by the best row.
   */
  setDense(
    key: string,
    vectors: Float32Array,
    dim: number,
    docIds: string[],
    missing: string[],
    rowDoc?: Uint32Array,
  ) {
    dense = rowDoc
      ? { key, index: null, chunked: createChunkedIndex(vectors, dim, rowDoc, docIds, { missing }) }
      : { key, index: createDenseIndex(vectors, dim, docIds, { missing }), chunked: null };
  },

  /**
   * Exact cosine search of every query against the document matrix; queries with a text and an
   * image are fused as `fusion` says, single-part queries use the part they have.
   */
  async denseRun(q: DenseQueries, fusion: QueryFusion, depth: number, onProgress?: (p: Progress) => void) {
    if (!dense) throw new Error('no document embeddings loaded');
    const report = throttle(onProgress);
    const { index, chunked } = dense;
    const out: RankedList[] = [];
    let last = performance.now();
    for (let i = 0; i < q.ids.length; i++) {
      const t = q.hasText[i] && q.text ? q.text.subarray(i * q.dim, (i + 1) * q.dim) : null;
      const v = q.hasImage[i] && q.image ? q.image.subarray(i * q.dim, (i + 1) * q.dim) : null;
      const opts = { exclude: q.exclude[i] };
      let hits: { docId: string; score: number }[] = [];
      // The query's own search: from its vectors (fused here when feature fusion) to its top k.
      const t0 = performance.now();
      let searched = true;
      if (chunked) {
        // Several rows per document (text chunks, or images of multi-image items; max): the query's
        // chunks, its images (each fused with its text), or its one vector (text and image fused).
        const c = q.textChunks;
        const ir = q.imageRows;
        let rows: Float32Array | null = null;
        if (q.hasText[i] && c) rows = c.vectors.subarray(c.offsets[i] * q.dim, c.offsets[i + 1] * q.dim);
        else if (ir && ir.offsets[i + 1] > ir.offsets[i]) {
          rows = ir.vectors.slice(ir.offsets[i] * q.dim, ir.offsets[i + 1] * q.dim);
          if (t)
            for (let r = 0; r * q.dim < rows.length; r++)
              rows.set(fuseFeatures(t, rows.subarray(r * q.dim, (r + 1) * q.dim)), r * q.dim);
        } else rows = t && v ? fuseFeatures(t, v) : (t ?? v);
        if (rows && rows.length) hits = searchDenseChunked(chunked, rows, depth, opts);
        else searched = false;
      } else if (!index) throw new Error('no document embeddings loaded');
      else if (t && v) {
        hits =
          fusion.mode === 'feature'
            ? searchDense(index, fuseFeatures(t, v), depth, opts)
            : topKOfScores(
                index,
                fuseScores(scoreAll(index, t), scoreAll(index, v), fusion.textWeight),
                depth,
                opts.exclude,
              );
      } else if (t || v) hits = searchDense(index, (t ?? v)!, depth, opts);
      else searched = false;
      const ms = performance.now() - t0;
      out.push({
        queryId: q.ids[i],
        docIds: hits.map((h) => h.docId),
        scores: Float64Array.from(hits, (h) => h.score),
        ...(searched ? { ms } : {}),
      });
      report({ kind: 'search', done: i + 1, total: q.ids.length });
      if (performance.now() - last > 50) {
        await new Promise((r) => setTimeout(r, 0));
        last = performance.now();
      }
    }
    report.flush();
    return out;
  },

  /** Ad-hoc search over the prepared shard; `language` is the query's (its stop words are dropped). */
  async search(text: string, k: number, language?: string) {
    if (!open) throw new Error('no shard prepared');
    return withIndex(open, (index) => searchBm25(index, text, k, { queryLanguage: language }));
  },

  /**
   * Drops the BM25 index from memory (a large dense run needs it: about 160 MB at 1M documents); it
   * is stored (prepare() read it from the cache or stored it), so the next BM25 call reads it back.
   * Returns whether an index was released.
   */
  release(): boolean {
    if (!open?.index) return false;
    const index = open.index;
    open.index = null;
    reloadCounters.releases++;
    // Freed now, or when the BM25 calls in flight (a drill-down's "why") have ended.
    freeReleased(index);
    return true;
  },

  /** The reload since the last call, if one happened (said in the BM25 run's details), then forgotten. */
  takeReload(): Bm25Reload | null {
    const r = lastReload;
    lastReload = null;
    return r;
  },

  /**
   * Per-term BM25 contributions of one document for a query ("why this rank"). Without `language`,
   * a shard query with exactly this text lends its language, so the drill-down of a run's query
   * explains the score the run gave.
   */
  async explain(text: string, docId: string, language?: string) {
    if (!open) throw new Error('no shard prepared');
    const lang = language ?? queryLanguage(open.queries.find((q) => q.text === text));
    return withIndex(open, (index) => explainBm25(index, text, docId, lang));
  },
};

export type RetrievalWorkerApi = typeof api;
Comlink.expose(api);
