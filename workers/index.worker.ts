// Index worker: dense search over one embedding matrix. Approximate search is HNSW: hnswlib compiled
// to wasm with SIMD by scripts/build-wasm.sh (workers/index/hnsw-engine.ts). Exact search is the ground
// truth recall is measured against: on WebGPU when a hardware adapter exists, else through the wasm
// candidate kernels, with plain JS as the reference; all three give the same ids and scores.
// The HNSW graph is persisted in Loupe's own IndexedDB (a shard artifact), never trusted on load:
// any header mismatch or checksum failure means a rebuild.
//
// This file only wires the modules in workers/index/ and exposes their calls:
//   build.ts       HNSW build, cache load and save (artifact.ts: the stored graph's key and checks)
//   session.ts     the open index;  search.ts  HNSW search with exclusions
//   exact.ts       exact search: gpu.ts (WebGPU), wasm-exact.ts (wasm kernels), else JS
//   recall.ts      recall@k of HNSW against exact search
//   corpus.ts      the chunked exact corpus (workers/index/chunked-exact.ts) for 1M-scale exact search
//   ivf-remote.ts  IVF-int8 search over a packed index on a static host (Range reads, OPFS cache)
//   compact.ts     the compact vector store (int8 codes in memory, float32 rows in OPFS, top R rescored)
import * as Comlink from 'comlink';
import { hnswModule } from './index/hnsw-engine';
import { build } from './index/build';
import {
  exactCorpusAdd,
  exactCorpusClose,
  exactCorpusInfo,
  exactCorpusOpen,
  exactCorpusSearch,
} from './index/corpus';
import {
  compactAdd,
  compactAddAt,
  compactClose,
  compactFinish,
  compactInfo,
  compactOpen,
  compactSearch,
} from './index/compact';
import { exactTopK } from './index/exact';
import {
  ivfRemoteClearCache,
  ivfRemoteClose,
  ivfRemoteFlush,
  ivfRemoteForget,
  ivfRemoteRows,
  ivfRemoteSearch,
} from './index/ivf-remote';
import { recallAgainstExact } from './index/recall';
import { search } from './index/search';
import { closeOpen, indexInfo } from './index/session';

export {
  ADD_BATCH,
  DEFAULT_EF_CONSTRUCTION,
  DEFAULT_EF_SEARCH,
  DEFAULT_M,
  DEFAULT_SEED,
} from './index/build';
export { INDEX_FORMAT_VERSION, hnswArtifactKey } from './index/artifact';
export { OVERFETCH_MAX } from './index/search';
export { RECALL_SAMPLE } from './index/recall';
export type { CompactInfo, CompactOptions, CompactResult, CompactStats } from './index/compact-types';
export { DEFAULT_RERANK } from './index/compact-store';
export type { IvfQueryStats, IvfRemoteRequest, IvfRemoteResult } from './index/ivf-types';
export type {
  BuildRequest,
  BuildResult,
  ExactBackend,
  ExactCorpusInfo,
  ExactCorpusOptions,
  ExactCorpusResult,
  ExactResult,
  HnswParams,
  IndexArtifact,
  IndexHeader,
  IndexInfo,
  RecallPoint,
  RecallReport,
  SearchOptions,
  SearchResult,
  Space,
  WasmExactStats,
  WasmKernel,
} from './index/types';

const api = {
  /**
   * Makes an HNSW index over `vectors` ready: the persisted one when its header and checksum match
   * this request exactly, else a fresh build (in batches, with progress), which is then persisted.
   */
  build,
  /** HNSW top-k for each query (n × dim, row-major); exclusions over-fetched or skipped in the graph. */
  search,
  /** Exact top-k, same answers on every backend ('auto': WebGPU on a hardware adapter, else wasm, else JS). */
  exactSearch: exactTopK,
  /** Recall@k of HNSW against exact search, at the open index's efSearch or at each of `efSearch`. */
  recallAgainstExact,
  /** Starts an empty chunked exact corpus (closing any previous one); rows arrive with exactCorpusAdd. */
  exactCorpusOpen,
  /** Appends rows (n × dim, transferred; normalised here for cosine); returns the row count. */
  exactCorpusAdd,
  /** Exact top-k over the chunked corpus, equal to exactSearch() over all its rows. */
  exactCorpusSearch,
  /** What the chunked exact corpus holds. */
  exactCorpusInfo,
  /** Frees the chunked exact corpus (wasm chunks, OPFS file). */
  exactCorpusClose,
  /** Top-k per query from a packed IVF-int8 index on a static host (Range reads, OPFS cache), with bytes per query. */
  ivfRemoteSearch,
  /** Stored rows of a packed index's vectors, from its cache or by Range and cached (the reference-vector check's probe). */
  ivfRemoteRows,
  /** Forgets the open remote indexes (their OPFS cache stays). */
  ivfRemoteClose,
  /** Waits for the remote index's cache writes (queries never wait for them). */
  ivfRemoteFlush,
  /** Removes every cached remote index from OPFS. */
  ivfRemoteClearCache,
  /** Forgets the remote indexes at these URLs and removes their OPFS cache. */
  ivfRemoteForget,
  /** Starts an empty compact vector store (int8 codes in memory, float32 rows in OPFS). */
  compactOpen,
  /** Appends rows to it (transferred; normalised here for cosine); returns the row count. */
  compactAdd,
  /** compactAdd by position; the row buffers come back (transferred) for the sender's next piece. */
  compactAddAt,
  /** Encodes the rows into int8 codes; the store is then searchable. */
  compactFinish,
  /** Top-k per query: int8 scan of every code, exact rescoring of the best R rows read from OPFS. */
  compactSearch,
  /** What the compact store holds. */
  compactInfo,
  /** Frees the compact store (codes, OPFS file). */
  compactClose,
  /** What is open. */
  info: indexInfo,
  /** Bytes of the wasm heap (hnswlib's memory, graph and its own copy of the vectors). */
  async wasmHeapBytes(): Promise<number> {
    return (await hnswModule()).HEAPU8.byteLength;
  },
  /** Frees the index (wasm memory) and any GPU buffers. */
  close(): void {
    closeOpen();
  },
};

export type IndexWorkerApi = typeof api;
Comlink.expose(api);
