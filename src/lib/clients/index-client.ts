// Page-side handle on the index worker (HNSW + exact search). Starts it lazily; cancelling a build
// terminates it (hnswlib's inserts are synchronous wasm: nothing else can stop them), and the next
// call starts a fresh worker, which must build or load again.
import * as Comlink from 'comlink';
import type {
  BuildRequest,
  BuildResult,
  CompactInfo,
  CompactOptions,
  CompactResult,
  ExactBackend,
  ExactCorpusInfo,
  ExactCorpusOptions,
  ExactCorpusResult,
  ExactResult,
  IndexInfo,
  IndexWorkerApi,
  IvfRemoteRequest,
  IvfRemoteResult,
  RecallReport,
  SearchOptions,
  SearchResult,
  WasmKernel,
} from '../../../workers/index.worker';
export type { ChunkedExactStats, RowStoreKind } from '../../../workers/index/chunked-exact';
import type { CompactScan } from '../../../workers/index/compact-types';
import type { DenseQueries, QueryFusion, RankedList } from '../../../workers/retrieval.worker';
import { fuseFeatures } from '../core/retrieval/dense';
import { queryLatency, type QueryLatency } from '../core/eval/approximation';
import { FIRST_PASS_CANDIDATES } from '../core/retrieval/nibble-scan';
import type { VectorIndex } from '../core/retrieval/runs';
import {
  copyPacked,
  packStrings,
  packedAt,
  packedCount,
  packedPositions,
  type PackedStrings,
} from '../core/retrieval/packed-ids';
import { WorkerClient, proxyProgress, type JobOptions } from './worker-client';

export type {
  BuildRequest,
  BuildResult,
  CompactInfo,
  CompactOptions,
  CompactResult,
  CompactStats,
  ExactBackend,
  ExactCorpusInfo,
  ExactCorpusOptions,
  ExactCorpusResult,
  ExactResult,
  IndexArtifact,
  IndexHeader,
  IndexInfo,
  IvfQueryStats,
  IvfRemoteRequest,
  IvfRemoteResult,
  RecallPoint,
  RecallReport,
  SearchOptions,
  SearchResult,
  Space,
  WasmExactStats,
  WasmKernel,
} from '../../../workers/index.worker';

/**
 * INDEX_DEFAULTS: HNSW parameters the worker uses when a request omits them (graph degree M,
 * insert-time candidate list efConstruction, query-time candidate list efSearch, level seed).
 * efSearch 384 keeps recall@10 ≥ 0.99 even on nearly unstructured embeddings (see DEFAULT_EF_SEARCH
 * in workers/index.worker.ts); clustered 100k × 384 vectors need only 128.
 */
export const INDEX_DEFAULTS = { M: 16, efConstruction: 200, efSearch: 384, seed: 100 } as const;

const client = new WorkerClient<IndexWorkerApi>(
  () => new Worker(new URL('../../../workers/index.worker.ts', import.meta.url), { type: 'module' }),
);

/**
 * Builds (or loads from the shard's artifacts, when `req.shard` is set and the stored graph checks
 * out) the HNSW index over `req.vectors`. The vectors are transferred: `req.vectors` is detached
 * afterwards; keep a copy if the page needs them. Omitted parameters take INDEX_DEFAULTS (applied in the
 * worker, reported back in the result).
 */
export function buildIndex(req: BuildRequest, opts: JobOptions = {}): Promise<BuildResult> {
  return client.run(
    (r) => r.build(Comlink.transfer(req, [req.vectors.buffer]), proxyProgress(opts.onProgress)),
    opts.signal,
  );
}

/** HNSW top-k per query (rows of `queries`); `efSearch` defaults to the index's. */
export function searchIndex(
  queries: Float32Array,
  k: number,
  efSearch?: number,
  opts: SearchOptions & { signal?: AbortSignal } = {},
): Promise<SearchResult> {
  const { signal, ...rest } = opts;
  return client.run((r) => r.search(queries, k, efSearch, rest), signal);
}

/** Queries timed one at a time per HNSW run (issue 37 item 2: query p50/p99 in the approximation table). */
export const LATENCY_SAMPLE = 100;

/**
 * A dense run's HNSW search, after the index is built: each query's one vector (its single part, or
 * the feature-fused pair) searched in the index, a run added for each single-vector exact run in
 * `exact` with its recall@10 against it; recall@10 against exact search and queries/s for
 * ef = 16…512 on these queries; and per-query times: the run's own search is one batch, which says
 * nothing of one query's latency, so up to LATENCY_SAMPLE of its queries (evenly spaced) are searched
 * again one at a time at the run's ef (the worker's own time for each, no messaging).
 */
export async function searchHnswRuns<A extends { efSearch: number }>(
  q: DenseQueries,
  corpus: { dim: number; docIds: string[]; missing: string[] },
  depth: number,
  ann: A,
  exact: { fusion?: QueryFusion; lists: RankedList[] }[],
  signal?: AbortSignal,
) {
  const { ids } = q;
  const { dim, docIds, missing } = corpus;
  const qm = new Float32Array(ids.length * dim);
  ids.forEach((_, i) => {
    const t = q.hasText[i] && q.text ? q.text.subarray(i * dim, (i + 1) * dim) : null;
    const v = q.hasImage[i] && q.image ? q.image.subarray(i * dim, (i + 1) * dim) : null;
    if (t && v) qm.set(fuseFeatures(t, v), i * dim);
    else if (t || v) qm.set((t ?? v)!, i * dim);
  });
  const docIndex = new Map(docIds.map((id, i) => [id, i]));
  const missingIdx = missing.map((id) => docIndex.get(id)!);
  const exclude = q.exclude.map((x) => [...(x ?? []).flatMap((id) => docIndex.get(id) ?? []), ...missingIdx]);
  const { result } = await searchIndex(qm, depth, ann.efSearch, { exclude, signal });
  const annCurve = await recallAgainstExact(10, {
    queries: qm,
    efSearch: [16, 32, 64, 128, 256, 384, 512],
    // WebGPU on a hardware adapter, else the wasm kernel: the same answers as JS, faster.
    backend: 'auto',
    signal,
  });
  const m = Math.min(ids.length, LATENCY_SAMPLE);
  const ms: number[] = [];
  for (let j = 0; j < m; j++) {
    const i = Math.floor((j * ids.length) / m);
    ms.push((await searchIndex(qm.slice(i * dim, (i + 1) * dim), depth, ann.efSearch, { signal })).ms);
  }
  const latency: QueryLatency | null = queryLatency(ms);
  const runs = exact.map((r) => {
    const exactTop = new Map(r.lists.map((l) => [l.queryId, l.docIds.slice(0, 10)]));
    let recall = 0;
    let counted = 0;
    const lists: RankedList[] = ids.map((queryId, i) => {
      // Queries with no part embedded return nothing in either run.
      if (!q.hasText[i] && !q.hasImage[i]) return { queryId, docIds: [], scores: new Float64Array(0) };
      const n = result.counts[i];
      const found: string[] = [];
      const scores = new Float64Array(n);
      for (let j = 0; j < n; j++) {
        found.push(docIds[result.indices[i * result.k + j]]);
        scores[j] = result.scores[i * result.k + j];
      }
      const truth = exactTop.get(queryId) ?? [];
      if (truth.length) {
        const got = new Set(found.slice(0, 10));
        recall += truth.filter((d) => got.has(d)).length / truth.length;
        counted++;
      }
      return { queryId, docIds: found, scores };
    });
    const recallAt10 = counted ? recall / counted : 1;
    return { fusion: r.fusion, lists, ann: { ...ann, recallAt10, ...(latency ? { latency } : {}) } };
  });
  return { runs, annCurve };
}

/**
 * Exact top-k over the indexed vectors: WebGPU on a hardware adapter, else the wasm kernels, else
 * JS; the result says which, and why not a faster one.
 */
export function exactSearchIndex(
  queries: Float32Array,
  k: number,
  opts: {
    exclude?: number[][];
    backend?: 'auto' | ExactBackend;
    maxChunkDocs?: number;
    wasmKernel?: WasmKernel;
    signal?: AbortSignal;
  } = {},
): Promise<ExactResult> {
  const { signal, ...rest } = opts;
  return client.run((r) => r.exactSearch(queries, k, rest), signal);
}

/** Recall@k of HNSW vs exact search (at the index's efSearch, or at each given value). */
export function recallAgainstExact(
  k: number,
  opts: {
    queries?: Float32Array;
    efSearch?: number[];
    backend?: 'auto' | ExactBackend;
    signal?: AbortSignal;
  } = {},
): Promise<RecallReport> {
  const { signal, ...rest } = opts;
  return client.run((r) => r.recallAgainstExact(k, rest), signal);
}

/**
 * Starts an empty chunked exact corpus in the index worker, for exact search at a scale whose
 * float32 rows do not fit the tab (1M × 384): int16 codes in wasm chunks, float32 rows in OPFS
 * (or memory, said in the result). Feed it with addToExactCorpus, then searchExactCorpus.
 */
export function openExactCorpus(opts: ExactCorpusOptions, signal?: AbortSignal): Promise<ExactCorpusInfo> {
  return client.run((r) => r.exactCorpusOpen(opts) as Promise<ExactCorpusInfo>, signal);
}

/** Appends rows to the chunked exact corpus; `vectors` is transferred (detached afterwards). */
export function addToExactCorpus(vectors: Float32Array, signal?: AbortSignal): Promise<number> {
  return client.run((r) => r.exactCorpusAdd(Comlink.transfer(vectors, [vectors.buffer])), signal);
}

/**
 * Exact top-k of each query over the chunked corpus, in the worker, with progress. Aborting
 * terminates the worker: the corpus must then be opened and added again.
 */
export function searchExactCorpus(
  queries: Float32Array,
  k: number,
  opts: JobOptions & { exclude?: number[][] } = {},
): Promise<ExactCorpusResult> {
  const { signal, onProgress, ...rest } = opts;
  return client.run((r) => r.exactCorpusSearch(queries, k, rest, proxyProgress(onProgress)), signal);
}

/** What the chunked exact corpus holds. */
export function exactCorpusInfo(): Promise<ExactCorpusInfo> {
  return client.run((r) => r.exactCorpusInfo() as Promise<ExactCorpusInfo>);
}

/** Frees the chunked exact corpus (the HNSW index, if any, stays open). */
export function closeExactCorpus(): Promise<void> {
  return client.run((r) => r.exactCorpusClose());
}

/** Starts an empty compact vector store in the index worker (int8 codes in memory, float32 rows in OPFS). */
export function openCompactStore(opts: CompactOptions, signal?: AbortSignal): Promise<CompactInfo> {
  return client.run((r) => r.compactOpen(opts) as Promise<CompactInfo>, signal);
}

/** Appends rows to the compact store; `vectors` is transferred (detached afterwards). */
export function addToCompactStore(vectors: Float32Array, signal?: AbortSignal): Promise<number> {
  return client.run((r) => r.compactAdd(Comlink.transfer(vectors, [vectors.buffer])), signal);
}

/**
 * Writes rows of a streamed corpus to the compact store: row i is document at[i]'s; both transferred
 * there and back: the result holds the two buffers, marked for transfer (a sink returns it to the
 * encoder worker, which fills them again).
 */
export async function addRowsAtToCompactStore(
  vectors: Float32Array,
  at: Uint32Array,
  signal?: AbortSignal,
): Promise<{ count: number; vectors: Float32Array; at: Uint32Array }> {
  const back = await client.run(
    (r) => r.compactAddAt(Comlink.transfer(vectors, [vectors.buffer, at.buffer]), at),
    signal,
  );
  return Comlink.transfer(back, [back.vectors.buffer, back.at.buffer] as ArrayBuffer[]);
}

/** Encodes the compact store's rows into int8 codes (progress per block read back); then it is searchable. */
export function finishCompactStore(opts: JobOptions = {}): Promise<CompactInfo> {
  return client.run(
    (r) => r.compactFinish(proxyProgress(opts.onProgress)) as Promise<CompactInfo>,
    opts.signal,
  );
}

/** Top-k per query from the compact store: its scan (or `scan`), exact rescoring of the best `rerank`. */
export function searchCompactStore(
  queries: Float32Array,
  k: number,
  opts: { exclude?: number[][]; rerank?: number; scan?: CompactScan; signal?: AbortSignal } = {},
): Promise<CompactResult> {
  const { signal, ...rest } = opts;
  return client.run((r) => r.compactSearch(queries, k, rest), signal);
}

/** What the compact store holds. */
export function compactStoreInfo(): Promise<CompactInfo> {
  return client.run((r) => r.compactInfo() as Promise<CompactInfo>);
}

/** Frees the compact store. */
export function closeCompactStore(): Promise<void> {
  return client.run((r) => r.compactClose());
}

// ---- the compact store of a dense run over a large corpus ---------------------------------------
// Dense runs over large corpora go through the index worker's compact vector store (int8 codes as
// two 4-bit planes, the high one in memory and the low one in OPFS beside the float32 rows; a 4-bit
// first pass, int8 scores of its best FIRST_PASS_CANDIDATES, exact rescoring of the best
// COMPACT_RERANK per query; see workers/index/compact-store.ts) instead of the retrieval worker's
// float32 matrix. When: core/retrieval/dense-plan.ts (useCompactStore: from COMPACT_FROM_BYTES of
// float32 rows, about 175,000 documents at 384 dimensions, single-vector queries, exact search; the
// URL's `compact-from=N` moves it). Below it the float32 matrix fits beside everything else in the
// tab's 1 GB and is exact by construction; above it the matrix alone grows past a quarter of the
// budget (1M × 384 is 1.5 GB), while the store holds an eighth of it (192 MB at 1M) and answers in
// one 4-bit scan, 2,000 low-plane reads and R row reads (issue 18 item 4).
// The corpus goes there from where it is stored (the shard's precomputed rows, the encoder worker's
// stored batches) a piece at a time, never as one matrix in the page: the encoder worker sends each
// piece (workers/encoder/stream.ts) to the page, which forwards it here and drops it (state/dense.ts
// embedCorpusTo), keeping only the document ids (one packed UTF-8 table) and the missing list.

/** Candidates rescored exactly per query (recall@10 vs exact in BENCHMARKS.md, issue 18 item 4). */
export const COMPACT_RERANK = 100;
/** Rows per piece sent to the index worker while filling the store. */
const PIECE = 16_384;

/** The run's index, as stored in its configuration (described by core's describeVectorIndex). */
export type CompactIndex = VectorIndex;

/**
 * The index of a run through the compact store at `depth`: its two-pass scan (FIRST_PASS_CANDIDATES,
 * or R when more) and R = COMPACT_RERANK, or the depth when deeper.
 */
export function compactIndex(depth: number): CompactIndex {
  const rerank = Math.max(COMPACT_RERANK, depth);
  return {
    kind: 'int8-rescore',
    rerank,
    firstPass: { bits: 4, candidates: Math.max(FIRST_PASS_CANDIDATES, rerank) },
  };
}

/** The corpus the store was last filled with by this page: its key, document ids (packed) and missing ones. */
let held: { key: string; ids: PackedStrings; missing: string[] } | null = null;

/** Whether the index worker's compact store holds the corpus `key` (filled by this page). */
export async function hasCompactStore(key: string): Promise<boolean> {
  if (held?.key !== key) return false;
  const info = await compactStoreInfo();
  return info.open && info.ready && info.key === key;
}

/** The ranker over the corpus `key` when the compact store holds it (an ad-hoc query's reuse), else null. */
export async function heldCompactRanker(key: string, job: JobOptions) {
  return held && (await hasCompactStore(key)) ? compactRanker(held.ids, held.missing, job) : null;
}

/**
 * Fills the compact store with `matrix` (n × dim, one row per document of `docIds`: strings, or the
 * packed table of a streamed corpus), in pieces, unless it holds `key` already (the page's `matrix`
 * can be dropped afterwards); returns its ranker.
 */
export async function loadCompactStore(
  key: string,
  matrix: Float32Array,
  dim: number,
  docIds: string[] | PackedStrings,
  missing: string[],
  job: JobOptions,
): Promise<ReturnType<typeof compactRanker>> {
  const ids = Array.isArray(docIds) ? packStrings(docIds) : docIds;
  const rank = compactRanker(ids, missing, job);
  if (!(await beginCompactFill(key, dim, ids, job))) return rank;
  const n = packedCount(ids);
  // A corpus streamed into the store (embedCorpusTo) is held by now: no matrix came to the page.
  if (matrix.length !== n * dim) throw new Error('the compact store lost the streamed corpus');
  for (let s = 0; s < n; s += PIECE) {
    const e = Math.min(n, s + PIECE);
    await addToCompactStore(matrix.slice(s * dim, e * dim), job.signal);
    job.onProgress?.({ kind: 'store', done: e, total: n });
  }
  await endCompactFill(key, ids, missing, job);
  return rank;
}

/**
 * Opens an empty store for the corpus `key` unless it holds it already (then false: nothing to send).
 * The index worker gets its own copy of the packed ids (for trec_eval's tie order and its messages).
 */
export async function beginCompactFill(key: string, dim: number, ids: PackedStrings, job: JobOptions) {
  if (await hasCompactStore(key)) return false;
  held = null;
  await openCompactStore({ dim, space: 'cosine', key, ids: copyPacked(ids) }, job.signal);
  return true;
}

/** Encodes the rows sent since beginCompactFill; the store then holds the corpus `key` for this page. */
export async function endCompactFill(key: string, ids: PackedStrings, missing: string[], job: JobOptions) {
  await finishCompactStore(job);
  held = { key, ids, missing };
}

type Lists = { queryId: string; docIds: string[]; scores: Float64Array; ms?: number }[];

/**
 * Ranks queries with one vector each (their one part) against the compact store: the stand-in for
 * the retrieval worker's exact ranking. Excluded and missing documents are never returned.
 */
export function compactRanker(docIds: PackedStrings, missing: string[], job: JobOptions) {
  // Positions of the few ids that are excluded or missing, found by one scan of the packed bytes when
  // there are any (a Map of every id cost 0.7 s of main thread and its garbage at 1M documents).
  const positions = (ids: Iterable<string>) => packedPositions(docIds, ids);
  const missingAt = positions(missing);
  const missingIdx = missing.flatMap((id) => missingAt.get(id) ?? []);
  return async (q: DenseQueries, _fusion: QueryFusion, depth: number): Promise<Lists> => {
    const { dim } = q;
    const nq = q.ids.length;
    const rows: number[] = [];
    const qm = new Float32Array(nq * dim);
    for (let i = 0; i < nq; i++) {
      const v = q.hasText[i] && q.text ? q.text : q.hasImage[i] && q.image ? q.image : null;
      // A zero query has no cosine with anything: an empty list, as exact search gives.
      if (!v || v.subarray(i * dim, (i + 1) * dim).every((x) => x === 0)) continue;
      qm.set(v.subarray(i * dim, (i + 1) * dim), rows.length * dim);
      rows.push(i);
    }
    const excludedAt = positions(rows.flatMap((i) => q.exclude[i] ?? []));
    const exclude = rows.map((i) => [
      ...(q.exclude[i] ?? []).flatMap((id) => excludedAt.get(id) ?? []),
      ...missingIdx,
    ]);
    const { result, stats } = rows.length
      ? await searchCompactStore(qm.subarray(0, rows.length * dim), depth, {
          exclude,
          rerank: compactIndex(depth).rerank,
          signal: job.signal,
        })
      : { result: null, stats: null };
    const lists: Lists = q.ids.map((id) => ({ queryId: id, docIds: [], scores: new Float64Array(0) }));
    rows.forEach((i, r) => {
      const n = result!.counts[r];
      const ids: string[] = [];
      const scores = new Float64Array(n);
      for (let j = 0; j < n; j++) {
        ids.push(packedAt(docIds, result!.indices[r * result!.k + j]));
        scores[j] = result!.scores[r * result!.k + j];
      }
      // Its own time in the index worker: the two-pass (or int8) scan, the rows read and rescored.
      const ms = stats!.queryMs[r];
      lists[i] = { queryId: q.ids[i], docIds: ids, scores, ...(ms === undefined ? {} : { ms }) };
    });
    return lists;
  };
}

/**
 * Top-k per query (rows of `queries`) from a packed IVF-int8 index on a static host, read with
 * HTTP Range requests and cached in OPFS; the result has the bytes each query transferred.
 */
export function searchRemoteIvf(
  req: IvfRemoteRequest,
  queries: Float32Array,
  signal?: AbortSignal,
): Promise<IvfRemoteResult> {
  return client.run((r) => r.ivfRemoteSearch(req, queries), signal);
}

/** Rows of a packed index's float16 vectors as float32, read by Range and not cached (the reference probe). */
export function remoteIvfRows(
  req: Pick<IvfRemoteRequest, 'url' | 'vectorsUrl'>,
  rows: number[],
  signal?: AbortSignal,
) {
  return client.run((r) => r.ivfRemoteRows(req, rows), signal);
}

/** Waits until what remote IVF searches fetched is written to the OPFS cache. */
export function flushRemoteIvfCache(): Promise<void> {
  return client.run((r) => r.ivfRemoteFlush());
}

/** Removes every cached remote IVF index from OPFS (and forgets the open ones). */
export function clearRemoteIvfCache(): Promise<void> {
  return client.run((r) => r.ivfRemoteClearCache());
}

/** Forgets the remote IVF indexes at `urls` and removes their OPFS cache folders. */
export function forgetRemoteIvf(urls: string[]): Promise<void> {
  return client.run((r) => r.ivfRemoteForget(urls));
}

/** What the worker has open. */
export function indexInfo(): Promise<IndexInfo> {
  return client.run((r) => r.info() as Promise<IndexInfo>);
}

/** Bytes of hnswlib-wasm's heap in the worker. */
export function indexWasmHeapBytes(): Promise<number> {
  return client.run((r) => r.wasmHeapBytes());
}

/** Drops the worker and everything it holds (wasm heap, GPU buffers). */
export function stopIndexWorker(): void {
  client.terminate();
}
