// The index worker's shapes: build requests and results, the persisted artifact's header, search,
// exact-search and recall results, the chunked exact corpus's options and info, and the open index.
import type { HnswIndex, WasmMatrix } from './hnsw-engine';
import type { ChunkedExactStats, RowStoreKind } from './chunked-exact';
import type { KnnResult, Matrix } from '../../src/lib/core/retrieval/exact';
import type { TieBreak } from '../../src/lib/core/retrieval/topk';
import type { GpuExact, GpuSearchStats } from '../../src/lib/platform/gpu/gpu-exact';

/** The similarity an index ranks by: cosine (rows normalised here) or inner product. */
export type Space = 'cosine' | 'ip';

/** HNSW build parameters (hnswlib's M, ef_construction and level seed). */
export interface HnswParams {
  M: number;
  efConstruction: number;
  seed: number;
}

/** A build: the vectors (transferred), their space, the parameters and where to persist the graph. */
export interface BuildRequest {
  /** What produced the vectors (model, revision, dtype, pooling…): part of the cache key. */
  key: string;
  /** Content hash of the cached shard the vectors belong to; without it nothing is persisted. */
  shard?: string;
  /** n × dim, row-major. Transferred: the worker owns (and, for cosine, normalises) it. */
  vectors: Float32Array;
  dim: number;
  space: Space;
  M?: number;
  efConstruction?: number;
  seed?: number;
  efSearch?: number;
  /** Document ids, for trec_eval's tie order (id descending); default: index order. */
  docIds?: string[];
  /** Build even when a valid cached index exists (benchmarks). */
  force?: boolean;
}

/** The persisted artifact's header; everything in it is checked before the bytes are used. */
export interface IndexHeader {
  format: 'loupe-hnsw';
  version: number;
  byteLength: number;
  count: number;
  dim: number;
  space: Space;
  M: number;
  efConstruction: number;
  seed: number;
  /** Hex SHA-256 of the serialized graph. */
  sha256: string;
  /** Hex SHA-256 of the (normalised) vectors it was built from. */
  vectorsSha256: string;
  /** What built it (informational; the format version decides compatibility). */
  engine: string;
  createdAt: number;
}

export interface IndexArtifact {
  header: IndexHeader;
  bytes: ArrayBuffer;
}

/** What build() did: built or loaded from the cache, persisted or not, sizes and timings. */
export interface BuildResult {
  source: 'built' | 'cache';
  /** Why the cached index was not used, when there was one to look for. */
  cacheMiss?: string;
  n: number;
  dim: number;
  space: Space;
  params: HnswParams;
  efSearch: number;
  persisted: boolean;
  /** Why a built index was not saved (the browser's storage is full): it works in this tab only. */
  notSaved?: string;
  /** Where it is persisted: shard artifact kind and key. */
  artifact?: { shard: string; kind: string; key: string };
  /** Serialized graph size in bytes (0 when not serialized). */
  bytes: number;
  timings: { totalMs: number; addMs?: number; serializeMs?: number; storeMs?: number; loadMs?: number };
}

export interface SearchOptions {
  /** `exclude[q]`: document indices never returned for query q. */
  exclude?: number[][];
  /** Replace hnswlib's scores by exact float inner products of the returned ids (default true). */
  rescore?: boolean;
}

/** HNSW top-k for a batch of queries, at an efSearch, with the time inside the worker. */
export interface SearchResult {
  result: KnnResult;
  efSearch: number;
  /** Search time inside the worker (excludes messaging). */
  ms: number;
}

/**
 * Exact search backends: 'webgpu' (compute shaders), 'wasm' (SIMD kernel for candidates, rescored
 * in JS) and 'js' (the reference: blocked dot products in float64, rounded to float32). All three
 * return the same ids and scores.
 */
export type ExactBackend = 'webgpu' | 'wasm' | 'js';

export type WasmKernel = 'int16' | 'float32';

/** What the wasm exact path did: candidates per query and the queries redone by slower passes. */
export interface WasmExactStats {
  /** Candidates kept per query by the int16 pass (k + margin + the longest exclusion list). */
  candidatesPerQuery: number;
  /** Queries whose int16 cut was too close to call, redone by the float32 kernel. */
  float32Queries: number;
  /** Queries whose float32 cut was too close to call as well, recomputed by the JS path. */
  cpuFallbackQueries: number;
}

/** Exact top-k and the backend that computed it (with why not a faster one). */
export interface ExactResult {
  result: KnnResult;
  backend: ExactBackend;
  /** Why a faster backend was not used (WebGPU, then wasm), when it was not. */
  reason?: string;
  /** Software adapter (SwiftShader): correct, but its speed says nothing about real GPUs. */
  fallbackAdapter?: boolean;
  gpu?: GpuSearchStats;
  wasm?: WasmExactStats;
  ms: number;
}

/** Recall@k of HNSW against exact search at one efSearch, with its speed. */
export interface RecallPoint {
  efSearch: number;
  recall: number;
  ms: number;
  qps: number;
}

/** recallAgainstExact's answer: one point per efSearch. */
export interface RecallReport {
  k: number;
  queries: number;
  exactBackend: ExactBackend;
  exactMs: number;
  points: RecallPoint[];
}

/** What is open (the HNSW index), or nothing. */
export type IndexInfo =
  | { open: false }
  | {
      open: true;
      n: number;
      dim: number;
      space: Space;
      params: HnswParams;
      efSearch: number;
      vectorBytes: number;
    };

/** The open HNSW index with its vectors and the exact paths' cached copies of them. */
export interface Open {
  index: HnswIndex;
  vectors: Matrix;
  space: Space;
  params: HnswParams;
  efSearch: number;
  tieBreak: TieBreak;
  gpu?: Promise<GpuExact>;
  /** The maxChunkDocs `gpu` was uploaded with (undefined: the device's limit). */
  gpuChunkDocs?: number;
  /** The vectors in the wasm heap, for the wasm exact kernel (copied on first use). */
  wasmDocs?: WasmMatrix;
  /** Largest vector norm (for the kernel's float32 error bound). */
  maxNorm?: number;
}

/** Options of a chunked exact corpus (exact search at a scale whose float32 rows do not fit the tab). */
export interface ExactCorpusOptions {
  dim: number;
  space: Space;
  /** Rows per int16 code chunk in the wasm heap (default CHUNK_ROWS; tests force small ones). */
  chunkRows?: number;
  /** Where the float32 rows live: 'auto' (default) takes OPFS when available, else memory. */
  store?: 'auto' | RowStoreKind;
  /** Document ids, for trec_eval's tie order (id descending); default: index order. */
  docIds?: string[];
}

/** What the chunked exact corpus holds. */
export type ExactCorpusInfo =
  | { open: false }
  | {
      open: true;
      n: number;
      dim: number;
      space: Space;
      chunkRows: number;
      store: RowStoreKind;
      /** Why the rows are not in OPFS, when 'auto' fell back to memory. */
      storeReason?: string;
      /** Wasm heap bytes of the int16 codes and scales. */
      codeBytes: number;
      /** Float32 row bytes in the worker's memory (0 with OPFS). */
      storeMemoryBytes: number;
      /** The wasm heap's size (everything the engine holds). */
      wasmHeapBytes: number;
    };

/** Exact top-k over the chunked corpus, with its pass counts and time. */
export interface ExactCorpusResult {
  result: KnnResult;
  stats: ChunkedExactStats;
  /** Search time inside the worker. */
  ms: number;
}
