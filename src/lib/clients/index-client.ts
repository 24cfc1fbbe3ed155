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
