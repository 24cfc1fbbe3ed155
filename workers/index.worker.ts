// Index worker: dense search over one embedding matrix. Approximate search is HNSW: hnswlib compiled
// to wasm with SIMD by scripts/build-wasm.sh (workers/hnsw-engine.ts). Exact search is the ground
// truth recall is measured against: on WebGPU when a hardware adapter exists, else through the wasm
// candidate kernels, with plain JS as the reference; all three give the same ids and scores.
// The HNSW graph is persisted in Loupe's own IndexedDB (a shard artifact), never trusted on load:
// any header mismatch or checksum failure means a rebuild.
import * as Comlink from 'comlink';
import { ChunkedCorpus, type ChunkedExactStats, type RowStoreKind } from './chunked-exact';
import { ENGINE, HnswIndex, WasmMatrix, hnswModule, type Candidates, type KnnBatch } from './hnsw-engine';
import {
  checkK,
  emptyResult,
  exactScore,
  exactSearch,
  indexTieBreak,
  normalizeRows,
  recallAtK,
  trecTieBreak,
  type Exclusions,
  type KnnResult,
  type Matrix,
} from '../src/lib/core/retrieval/exact';
import { TopK, type TieBreak } from '../src/lib/core/retrieval/topk';
import { throttle } from '../src/lib/core/throttle';
import type { Progress } from '../src/lib/core/types';
import { isQuotaError, openShardStore } from '../src/lib/platform/shard-store';
import { formatBytes } from '../src/lib/core/shard/limits';
import { softwareReason } from '../src/lib/platform/backend';
import {
  createGpuExact,
  probeWebGpu,
  type GpuExact,
  type GpuProbe,
  type GpuSearchStats,
} from '../src/lib/platform/gpu-exact';

// Defaults: keep equal to INDEX_DEFAULTS in src/lib/clients/index-client.ts (the e2e test checks).
/** DEFAULT_M: HNSW graph degree (links per node per layer; 2·M on the base layer). */
export const DEFAULT_M = 16;
/** DEFAULT_EF_CONSTRUCTION: candidate list size while inserting. */
export const DEFAULT_EF_CONSTRUCTION = 200;
/**
 * DEFAULT_EF_SEARCH: candidate list size while searching, chosen for recall@10 ≥ 0.99 against exact
 * search on the hardest case measured here. Clustered vectors need little: 128 gives 0.996 at
 * 100k × 384 (scripts/bench-index.ts). Medquad embedded by the random-weight bert-tiny (every pair of
 * documents at cosine ≈ 0.97: nearly unstructured, HNSW's worst case) needs more: 128 → 0.962,
 * 256 → 0.990, 384 → 0.996 (M 16, efC 200; `npm run bench -- … --index hnsw --efSearch N`).
 * At 100k × 384, ef 384 still answers a query in about a millisecond.
 */
export const DEFAULT_EF_SEARCH = 384;
/** DEFAULT_SEED: hnswlib's level-assignment seed. */
export const DEFAULT_SEED = 100;
/** INDEX_FORMAT_VERSION: version of the persisted artifact (header + bytes). Bump on any change. */
export const INDEX_FORMAT_VERSION = 2;
/** ADD_BATCH: vectors per insert call (one progress tick each). */
export const ADD_BATCH = 512;
/** OVERFETCH_MAX: exclusion lists up to this long are over-fetched; longer ones are skipped in the graph. */
export const OVERFETCH_MAX = 64;
/** RECALL_SAMPLE: corpus rows used as queries by recallAgainstExact when none are given. */
export const RECALL_SAMPLE = 200;

export type Space = 'cosine' | 'ip';

export interface HnswParams {
  M: number;
  efConstruction: number;
  seed: number;
}

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

export interface WasmExactStats {
  /** Candidates kept per query by the int16 pass (k + margin + the longest exclusion list). */
  candidatesPerQuery: number;
  /** Queries whose int16 cut was too close to call, redone by the float32 kernel. */
  float32Queries: number;
  /** Queries whose float32 cut was too close to call as well, recomputed by the JS path. */
  cpuFallbackQueries: number;
}

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

export interface RecallPoint {
  efSearch: number;
  recall: number;
  ms: number;
  qps: number;
}

export interface RecallReport {
  k: number;
  queries: number;
  exactBackend: ExactBackend;
  exactMs: number;
  points: RecallPoint[];
}

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

interface Open {
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

export interface ExactCorpusResult {
  result: KnnResult;
  stats: ChunkedExactStats;
  /** Search time inside the worker. */
  ms: number;
}

/** The chunked exact corpus, separate from the HNSW index (either can be open). */
let corpus: {
  c: ChunkedCorpus;
  space: Space;
  reason?: string;
  docIds?: string[];
} | null = null;

/** The WebGPU adapter probe, once per worker (for the choice; devices come from fresh adapters). */
let probePromise: Promise<GpuProbe> | null = null;
let open: Open | null = null;

async function sha256Hex(data: ArrayBufferView | ArrayBuffer): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', data as BufferSource));
  return Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The shard-artifact key of a graph: (embeddings key, space, M, efConstruction). */
export function hnswArtifactKey(key: string, space: Space, M: number, efConstruction: number): string {
  return `${key}|space=${space}|M=${M}|efC=${efConstruction}`;
}

/**
 * Fields of hnswlib's own binary header that must agree with ours (wasm32: size_t is 4 bytes):
 * offset 8 cur_element_count, 36 maxM0_, 40 M_, 52 ef_construction_.
 */
function hnswlibHeader(bytes: Uint8Array): {
  count: number;
  maxM0: number;
  M: number;
  efConstruction: number;
} {
  if (bytes.length < 56) throw new Error('index bytes are shorter than hnswlib’s header');
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return {
    count: dv.getUint32(8, true),
    maxM0: dv.getUint32(36, true),
    M: dv.getUint32(40, true),
    efConstruction: dv.getUint32(52, true),
  };
}

/** Why a stored artifact cannot be used for this request, or null when it can. */
async function checkArtifact(
  art: unknown,
  want: Omit<IndexHeader, 'format' | 'byteLength' | 'sha256' | 'engine' | 'createdAt'>,
): Promise<string | null> {
  const a = art as Partial<IndexArtifact> | null;
  const h = a?.header;
  if (!h || typeof h !== 'object' || !(a?.bytes instanceof ArrayBuffer)) return 'stored entry is malformed';
  if (h.format !== 'loupe-hnsw' || h.version !== want.version)
    return `format ${String(h.format)} v${h.version} (expected v${want.version})`;
  for (const f of ['count', 'dim', 'space', 'M', 'efConstruction', 'seed'] as const)
    if (h[f] !== want[f]) return `${f} is ${String(h[f])}, expected ${String(want[f])}`;
  if (h.vectorsSha256 !== want.vectorsSha256) return 'built from different vectors';
  if (h.byteLength !== a.bytes.byteLength)
    return `${a.bytes.byteLength} bytes stored, header says ${h.byteLength}`;
  if ((await sha256Hex(a.bytes)) !== h.sha256) return 'checksum mismatch (corrupted bytes)';
  const inner = hnswlibHeader(new Uint8Array(a.bytes));
  if (inner.count !== want.count || inner.M !== want.M || inner.efConstruction !== want.efConstruction)
    return 'hnswlib header disagrees with ours';
  return null;
}

function closeOpen(): void {
  if (!open) return;
  open.index.free();
  open.wasmDocs?.free();
  void open.gpu?.then((g) => g.destroy()).catch(() => undefined);
  open = null;
}

function closeCorpus(): void {
  corpus?.c.free();
  corpus = null;
}

async function corpusInfo(): Promise<ExactCorpusInfo> {
  if (!corpus) return { open: false };
  const { c } = corpus;
  return {
    open: true,
    n: c.n,
    dim: c.dim,
    space: corpus.space,
    chunkRows: c.chunkRows,
    store: c.storeKind,
    storeReason: corpus.reason,
    codeBytes: c.codeBytes(),
    storeMemoryBytes: c.storeMemoryBytes(),
    wasmHeapBytes: (await hnswModule()).HEAPU8.byteLength,
  };
}

function requireOpen(): Open {
  if (!open) throw new Error('no index: call build() first');
  return open;
}

function asMatrix(data: Float32Array, dim: number, what: string): Matrix {
  if (!Number.isInteger(dim) || dim <= 0) throw new RangeError(`dimension must be a positive integer`);
  if (data.length % dim !== 0)
    throw new RangeError(`${what}: ${data.length} values is not a multiple of ${dim}`);
  return { data, n: data.length / dim, dim };
}

const api = {
  /**
   * Makes an HNSW index over `vectors` ready: the persisted one when its header and checksum match
   * this request exactly, else a fresh build (in batches, with progress), which is then persisted.
   */
  async build(req: BuildRequest, onProgress?: (p: Progress) => void): Promise<BuildResult> {
    const t0 = performance.now();
    const report = throttle(onProgress);
    const engine = await hnswModule();
    closeOpen();
    const params: HnswParams = {
      M: req.M ?? DEFAULT_M,
      efConstruction: req.efConstruction ?? DEFAULT_EF_CONSTRUCTION,
      seed: req.seed ?? DEFAULT_SEED,
    };
    const efSearch = req.efSearch ?? DEFAULT_EF_SEARCH;
    const vectors = asMatrix(req.vectors, req.dim, 'vectors');
    const { n, dim } = vectors;
    if (req.docIds && req.docIds.length !== n)
      throw new RangeError(`${req.docIds.length} document ids for ${n} vectors`);
    // Cosine = inner product of normalised rows: normalise once here, and use hnswlib's 'ip' space.
    if (req.space === 'cosine') normalizeRows(vectors);
    const tieBreak = req.docIds ? trecTieBreak(req.docIds) : indexTieBreak;
    const out: BuildResult = {
      source: 'built',
      n,
      dim,
      space: req.space,
      params,
      efSearch,
      persisted: false,
      bytes: 0,
      timings: { totalMs: 0 },
    };

    const store = req.shard ? await openShardStore({ sweep: false }) : null;
    const artifactKey = hnswArtifactKey(req.key, req.space, params.M, params.efConstruction);
    if (req.shard) out.artifact = { shard: req.shard, kind: 'hnsw', key: artifactKey };
    const want = {
      version: INDEX_FORMAT_VERSION,
      count: n,
      dim,
      space: req.space,
      ...params,
      vectorsSha256: req.shard ? await sha256Hex(vectors.data) : '',
    };
    let index: HnswIndex | null = null;
    try {
      if (store && req.shard && !req.force) {
        report({ kind: 'status', message: 'Looking for a cached HNSW index' });
        const tl = performance.now();
        try {
          const art = await store.getArtifact<IndexArtifact>(req.shard, 'hnsw', artifactKey);
          const why = art === undefined ? 'no cached index' : await checkArtifact(art, want);
          if (why === null) {
            index = HnswIndex.load(engine, new Uint8Array(art!.bytes), dim, n);
            if (index.count() !== n) {
              index.free();
              index = null;
              out.cacheMiss = 'hnswlib read a different element count';
            } else {
              out.source = 'cache';
              out.persisted = true;
              out.bytes = art!.bytes.byteLength;
            }
          } else out.cacheMiss = why;
        } catch (e) {
          // A cached index that cannot be read is rebuilt, never trusted.
          out.cacheMiss = `unreadable cached index: ${(e as Error)?.message ?? String(e)}`;
          index?.free();
          index = null;
        }
        out.timings.loadMs = performance.now() - tl;
      }

      if (!index) {
        const ta = performance.now();
        index = HnswIndex.create(engine, dim, Math.max(1, n), params.M, params.efConstruction, params.seed);
        report({ kind: 'index', done: 0, total: n });
        for (let s = 0; s < n; s += ADD_BATCH) {
          const e = Math.min(n, s + ADD_BATCH);
          index.add(vectors.data.subarray(s * dim, e * dim), s);
          report({ kind: 'index', done: e, total: n });
        }
        out.timings.addMs = performance.now() - ta;
        if (store && req.shard) {
          report({ kind: 'status', message: 'Saving the HNSW index' });
          const ts = performance.now();
          const bytes = index.save();
          out.timings.serializeMs = performance.now() - ts;
          const tw = performance.now();
          const inner = hnswlibHeader(bytes);
          if (inner.count !== n || inner.M !== params.M || inner.efConstruction !== params.efConstruction)
            throw new Error('hnswlib wrote a header that disagrees with the build parameters');
          const header: IndexHeader = {
            format: 'loupe-hnsw',
            ...want,
            byteLength: bytes.byteLength,
            sha256: await sha256Hex(bytes),
            engine: ENGINE,
            createdAt: Date.now(),
          };
          out.bytes = bytes.byteLength;
          try {
            await store.putArtifact(req.shard, 'hnsw', artifactKey, {
              header,
              bytes: bytes.buffer,
            } satisfies IndexArtifact);
            out.persisted = true;
          } catch (e) {
            // A full storage costs the saved copy, not the index: it is in memory and searches here.
            // The put is one transaction, so nothing of it is left behind.
            if (!isQuotaError(e)) throw e;
            out.notSaved =
              `the browser's storage filled up while saving the HNSW index (${formatBytes(bytes.byteLength)}): ` +
              'it works in this tab but was not saved, so it is built again next time. Delete cached ' +
              'shards or runs you no longer need (Shards view), or allow this site more storage in the ' +
              'browser settings';
          }
          out.timings.storeMs = performance.now() - tw;
        }
      }
    } catch (e) {
      index?.free();
      throw e;
    } finally {
      await store?.close();
    }
    index.setEf(efSearch);
    open = { index, vectors, space: req.space, params, efSearch, tieBreak };
    report({ kind: 'index', done: n, total: n });
    report.flush();
    out.timings.totalMs = performance.now() - t0;
    return out;
  },

  /**
   * HNSW top-k for each query (n × dim, row-major), in one engine call for the queries without
   * exclusions. A query with up to OVERFETCH_MAX exclusions asks hnswlib for k + |exclude| and drops
   * them (the k best allowed documents are among those); a longer list is skipped inside the graph
   * search (the engine marks those nodes deleted for that one search).
   */
  search(queries: Float32Array, k: number, efSearch?: number, opts: SearchOptions = {}): SearchResult {
    const o = requireOpen();
    const q = asMatrix(o.space === 'cosine' ? queries.slice() : queries, o.vectors.dim, 'queries');
    if (o.space === 'cosine') normalizeRows(q);
    const ef = efSearch ?? o.efSearch;
    const t0 = performance.now();
    const result = hnswSearch(o, q, k, ef, opts);
    const ms = performance.now() - t0;
    // The worker gives up these buffers: the caller owns them after the transfer.
    return Comlink.transfer({ result, efSearch: ef, ms }, [result.indices.buffer, result.scores.buffer]);
  },

  /**
   * Exact top-k, same answers on either backend. 'auto': WebGPU on a hardware adapter, else JS (the
   * result says which, and why not WebGPU); 'webgpu' forces it (a software adapter included).
   */
  async exactSearch(
    queries: Float32Array,
    k: number,
    opts: {
      exclude?: number[][];
      backend?: 'auto' | ExactBackend;
      maxChunkDocs?: number;
      /** The wasm backend's first kernel: int16 (default) or float32 (benchmarks compare them). */
      wasmKernel?: WasmKernel;
    } = {},
  ): Promise<ExactResult> {
    const o = requireOpen();
    const q = asMatrix(o.space === 'cosine' ? queries.slice() : queries, o.vectors.dim, 'queries');
    if (o.space === 'cosine') normalizeRows(q);
    const r = await exact(o, q, k, opts.exclude, opts.backend ?? 'auto', opts.maxChunkDocs, opts.wasmKernel);
    return Comlink.transfer(r, [r.result.indices.buffer, r.result.scores.buffer]);
  },

  /**
   * Recall@k of HNSW against exact search, at the open index's efSearch or at each of `efSearch`.
   * Without `queries`, RECALL_SAMPLE corpus rows are the queries, each excluded from its own results
   * (so a vector finding itself does not count).
   */
  async recallAgainstExact(
    k: number,
    opts: { queries?: Float32Array; efSearch?: number[]; backend?: 'auto' | ExactBackend } = {},
  ): Promise<RecallReport> {
    const o = requireOpen();
    let q: Matrix;
    let exclude: number[][] | undefined;
    if (opts.queries) {
      q = asMatrix(o.space === 'cosine' ? opts.queries.slice() : opts.queries, o.vectors.dim, 'queries');
      if (o.space === 'cosine') normalizeRows(q);
    } else {
      const { n, dim } = o.vectors;
      const m = Math.min(RECALL_SAMPLE, n);
      const rows = Array.from({ length: m }, (_, i) => Math.floor((i * n) / m));
      q = { data: new Float32Array(m * dim), n: m, dim };
      rows.forEach((r, i) => q.data.set(o.vectors.data.subarray(r * dim, r * dim + dim), i * dim));
      exclude = rows.map((r) => [r]);
    }
    const truth = await exact(o, q, k, exclude, opts.backend ?? 'auto');
    const points: RecallPoint[] = [];
    for (const ef of opts.efSearch ?? [o.efSearch]) {
      const t0 = performance.now();
      const approx = hnswSearch(o, q, k, ef, { exclude, rescore: false });
      const ms = performance.now() - t0;
      points.push({ efSearch: ef, recall: recallAtK(approx, truth.result, k), ms, qps: (q.n * 1000) / ms });
    }
    return { k, queries: q.n, exactBackend: truth.backend, exactMs: truth.ms, points };
  },

  /**
   * Starts an empty chunked exact corpus (closing any previous one): int16 codes in wasm chunks,
   * float32 rows in OPFS (or memory). Rows then arrive with exactCorpusAdd, in order.
   */
  async exactCorpusOpen(opts: ExactCorpusOptions): Promise<ExactCorpusInfo> {
    const engine = await hnswModule();
    closeCorpus();
    const tieBreak = opts.docIds ? trecTieBreak(opts.docIds) : indexTieBreak;
    const { corpus: c, reason } = await ChunkedCorpus.open(engine, opts.dim, {
      chunkRows: opts.chunkRows,
      store: opts.store,
      tieBreak,
    });
    corpus = { c, space: opts.space, reason, docIds: opts.docIds };
    return corpusInfo();
  },

  /** Appends rows (n × dim, transferred; normalised here for cosine); returns the row count. */
  exactCorpusAdd(vectors: Float32Array): number {
    if (!corpus) throw new Error('no exact corpus: call exactCorpusOpen() first');
    const m = asMatrix(vectors, corpus.c.dim, 'vectors');
    if (corpus.docIds && corpus.c.n + m.n > corpus.docIds.length)
      throw new RangeError(`${corpus.c.n + m.n} rows for ${corpus.docIds.length} document ids`);
    if (corpus.space === 'cosine') normalizeRows(m);
    return corpus.c.add(m.data);
  },

  /**
   * Exact top-k over the chunked corpus, equal to exactSearch() over all its rows. Progress: one
   * 'search' tick per (query block, chunk) pass. Cancel = terminate (the client's signal): the
   * corpus is gone with the worker and must be added again.
   */
  exactCorpusSearch(
    queries: Float32Array,
    k: number,
    opts: { exclude?: number[][] } = {},
    onProgress?: (p: Progress) => void,
  ): ExactCorpusResult {
    if (!corpus) throw new Error('no exact corpus: call exactCorpusOpen() first');
    if (corpus.docIds && corpus.docIds.length !== corpus.c.n)
      throw new RangeError(`${corpus.docIds.length} document ids for ${corpus.c.n} rows`);
    const report = throttle(onProgress);
    const q = asMatrix(corpus.space === 'cosine' ? queries.slice() : queries, corpus.c.dim, 'queries');
    if (corpus.space === 'cosine') normalizeRows(q);
    const t0 = performance.now();
    const { result, stats } = corpus.c.search(q, k, opts.exclude, (done, total) =>
      report({ kind: 'search', done, total }),
    );
    report.flush();
    const ms = performance.now() - t0;
    return Comlink.transfer({ result, stats, ms }, [result.indices.buffer, result.scores.buffer]);
  },

  /** What the chunked exact corpus holds. */
  async exactCorpusInfo(): Promise<ExactCorpusInfo> {
    return corpusInfo();
  },

  /** Frees the chunked exact corpus (wasm chunks, OPFS file). */
  exactCorpusClose(): void {
    closeCorpus();
  },

  /** What is open. */
  async info(): Promise<IndexInfo> {
    if (!open) return { open: false as const };
    return {
      open: true as const,
      n: open.vectors.n,
      dim: open.vectors.dim,
      space: open.space,
      params: open.params,
      efSearch: open.efSearch,
      vectorBytes: open.vectors.data.byteLength,
    };
  },

  /** Bytes of the wasm heap (hnswlib's memory, graph and its own copy of the vectors). */
  async wasmHeapBytes(): Promise<number> {
    return (await hnswModule()).HEAPU8.byteLength;
  },

  /** Frees the index (wasm memory) and any GPU buffers. */
  close(): void {
    closeOpen();
  },
};

function hnswSearch(o: Open, q: Matrix, k: number, ef: number, opts: SearchOptions): KnnResult {
  const { n, dim } = o.vectors;
  const nq = q.n;
  const result = emptyResult(nq, checkK(k));
  if (k === 0 || n === 0) return result;
  o.index.setEf(ef);
  const rescore = opts.rescore ?? true;
  /** Query i's hits from row `row` (`width` wide) of a batch, less `drop`, re-ranked into the top k. */
  const take = (i: number, b: KnnBatch, row: number, width: number, drop: Set<number> | null) => {
    const top = new TopK(k, o.tieBreak);
    for (let j = 0; j < b.counts[row]; j++) {
      const d = b.labels[row * width + j];
      if (drop?.has(d)) continue;
      // 'ip' distance is 1 − q·d in float32.
      top.push(rescore ? exactScore(o.vectors, d, q, i) : Math.fround(1 - b.distances[row * width + j]), d);
    }
    const hits = top.drain();
    hits.forEach((h, j) => {
      result.indices[i * k + j] = h.index;
      result.scores[i * k + j] = h.score;
    });
    result.counts[i] = hits.length;
  };
  const kk = Math.min(k, n);
  const ex = opts.exclude;
  const plain: number[] = [];
  for (let i = 0; i < nq; i++) if (!ex?.[i]?.length) plain.push(i);
  // Queries without exclusions: one call for all of them.
  if (plain.length) {
    let rows = q.data;
    if (plain.length < nq) {
      rows = new Float32Array(plain.length * dim);
      plain.forEach((i, r) => rows.set(q.data.subarray(i * dim, (i + 1) * dim), r * dim));
    }
    const b = o.index.search(rows, kk);
    plain.forEach((i, r) => take(i, b, r, kk, null));
  }
  // The others, one by one. A short list: over-fetch k + |exclusions| and drop them (the k best
  // allowed are among those). A long one: the engine skips the excluded nodes during the search.
  if (ex)
    for (let i = 0; i < nq; i++) {
      if (!ex[i]?.length) continue;
      const drop = new Set(ex[i]);
      const v = q.data.subarray(i * dim, (i + 1) * dim);
      if (drop.size <= OVERFETCH_MAX) {
        const width = Math.min(k + drop.size, n);
        take(i, o.index.search(v, width), 0, width, drop);
      } else take(i, o.index.searchExcluding(v, kk, Int32Array.from(drop)), 0, kk, null);
    }
  return result;
}

async function exact(
  o: Open,
  q: Matrix,
  k: number,
  exclude: Exclusions | undefined,
  backend: 'auto' | ExactBackend,
  maxChunkDocs?: number,
  wasmKernel: WasmKernel = 'int16',
): Promise<ExactResult> {
  const reasons: string[] = [];
  if (backend === 'auto' || backend === 'webgpu') {
    try {
      probePromise ??= probeWebGpu();
      const probe = await probePromise;
      if (!probe.ok) throw new Error(probe.reason);
      // A software adapter (SwiftShader, WARP) emulates the GPU on the CPU: correct but far slower
      // than the JS path, so 'auto' only takes real hardware.
      if (backend === 'auto' && probe.software) throw new Error(softwareReason(probe.software, 'the CPU'));
      if (o.gpu && o.gpuChunkDocs !== maxChunkDocs) {
        // Another chunking asked for (tests exercise the cross-chunk merge): upload again.
        void o.gpu.then((g) => g.destroy()).catch(() => undefined);
        o.gpu = undefined;
      }
      o.gpuChunkDocs = maxChunkDocs;
      // A fresh adapter: an adapter gives out one device only.
      o.gpu ??= createGpuExact(o.vectors, { maxChunkDocs });
      const g = await o.gpu.catch((e: unknown) => {
        o.gpu = undefined;
        throw e;
      });
      const { result, stats } = await g.search(q, { k, tieBreak: o.tieBreak, exclude });
      return { result, backend: 'webgpu', fallbackAdapter: g.fallbackAdapter, gpu: stats, ms: stats.ms };
    } catch (e) {
      if (backend === 'webgpu') throw e;
      reasons.push(`WebGPU: ${(e as Error)?.message ?? String(e)}`);
    }
  }
  if (backend === 'auto' || backend === 'wasm') {
    try {
      const t0 = performance.now();
      const { result, stats } = await wasmExact(o, q, k, exclude, wasmKernel);
      return { result, backend: 'wasm', wasm: stats, reason: reasons[0], ms: performance.now() - t0 };
    } catch (e) {
      if (backend === 'wasm') throw e;
      reasons.push(`wasm: ${(e as Error)?.message ?? String(e)}`);
    }
  }
  const t0 = performance.now();
  const result = exactSearch(o.vectors, q, { k, tieBreak: o.tieBreak, exclude });
  return { result, backend: 'js', reason: reasons.join('; ') || undefined, ms: performance.now() - t0 };
}

/** WASM_QUERY_BLOCK: queries per kernel pass (bounds the candidate buffers). */
const WASM_QUERY_BLOCK = 256;
/** WASM_MARGIN: candidates kept beyond k, so that near-ties at the cut rarely need another pass. */
const WASM_MARGIN = 16;

/**
 * Exact top-k through the wasm kernels, identical to exactSearch(). Each query's candidates come
 * from the int16 kernel (twice the multiply-adds per instruction); every candidate is rescored with
 * exactScore() and ranked with the same TopK and tie-break. The candidates are complete, so the
 * answer exact, when the kernel's cut plus its error bound stays below the k-th exact score. A query
 * that fails the check gets a float32 pass (a far tighter bound), and one that fails that too is
 * recomputed by the JS path. Each step is counted.
 */
async function wasmExact(
  o: Open,
  q: Matrix,
  k: number,
  exclude: Exclusions | undefined,
  kernel: WasmKernel,
): Promise<{ result: KnnResult; stats: WasmExactStats }> {
  const { n, dim } = o.vectors;
  const nq = q.n;
  const result = emptyResult(nq, checkK(k));
  const stats: WasmExactStats = { candidatesPerQuery: 0, float32Queries: 0, cpuFallbackQueries: 0 };
  if (k === 0 || n === 0 || nq === 0) return { result, stats };
  const w = (o.wasmDocs ??= WasmMatrix.upload(await hnswModule(), o.vectors.data, dim));
  const maxNorm = (o.maxNorm ??= maxRowNorm(o.vectors));
  const qNorm = (i: number) => {
    let s = 0;
    for (let j = 0; j < dim; j++) s += q.data[i * dim + j] ** 2;
    return Math.sqrt(s);
  };
  /**
   * Ranks query i's candidates (row r of c); false when the cut is too close to call: a document
   * left out scored at most `cut` approximately, so at most cut + bound exactly.
   */
  const settle = (i: number, c: Candidates, r: number, bound: (cut: number) => number): boolean => {
    const ex = exclude?.[i]?.length ? new Set(Array.from(exclude[i]!)) : null;
    const top = new TopK(k, o.tieBreak);
    let cut = Infinity;
    for (let j = 0; j < c.kp; j++) {
      const d = c.index[r * c.kp + j];
      cut = Math.min(cut, c.score[r * c.kp + j]);
      if (ex?.has(d)) continue;
      top.push(exactScore(o.vectors, d, q, i), d);
    }
    const hits = top.drain();
    if (c.kp < n) {
      const kth = hits.length === k ? hits[k - 1].score : -Infinity;
      if (!(bound(cut) < kth)) return false;
    }
    hits.forEach((h, j) => {
      result.indices[i * k + j] = h.index;
      result.scores[i * k + j] = h.score;
    });
    result.counts[i] = hits.length;
    return true;
  };
  /** The rows of `ids` as one matrix, and the widest candidate list they need. */
  const gather = (ids: number[], margin: number) => {
    const rows = new Float32Array(ids.length * dim);
    let maxEx = 0;
    ids.forEach((i, r) => {
      rows.set(q.data.subarray(i * dim, (i + 1) * dim), r * dim);
      maxEx = Math.max(maxEx, exclude?.[i]?.length ?? 0);
    });
    return { rows, kp: Math.min(n, k + margin + maxEx) };
  };
  const all = Array.from({ length: nq }, (_, i) => i);
  let pending: number[] = kernel === 'float32' ? all : [];
  for (let b0 = 0; kernel === 'int16' && b0 < nq; b0 += WASM_QUERY_BLOCK) {
    const ids = all.slice(b0, b0 + WASM_QUERY_BLOCK);
    const { rows, kp } = gather(ids, WASM_MARGIN);
    stats.candidatesPerQuery = Math.max(stats.candidatesPerQuery, kp);
    const c = w.candidatesI16(rows, kp);
    ids.forEach((i, r) => {
      // Float rounding of the kernel's products and of exactScore: a few ulps of ‖q‖ · max‖d‖.
      const slack = 8 * 2 ** -24 * qNorm(i) * maxNorm;
      if (!settle(i, c, r, (cut) => cut + c.bound[r] + slack)) pending.push(i);
    });
  }
  if (pending.length) {
    stats.float32Queries = pending.length;
    const retry = pending;
    pending = [];
    for (let b0 = 0; b0 < retry.length; b0 += WASM_QUERY_BLOCK) {
      const ids = retry.slice(b0, b0 + WASM_QUERY_BLOCK);
      // A retry keeps more candidates: its cut was close to the k-th score.
      const { rows, kp } = gather(ids, kernel === 'float32' ? WASM_MARGIN : 4 * WASM_MARGIN);
      stats.candidatesPerQuery = Math.max(stats.candidatesPerQuery, kp);
      const c = w.candidatesF32(rows, kp);
      ids.forEach((i, r) => {
        const eps = 2 * dim * 2 ** -22 * qNorm(i) * maxNorm;
        if (!settle(i, c, r, (cut) => cut + eps)) pending.push(i);
      });
    }
  }
  if (pending.length) {
    stats.cpuFallbackQueries = pending.length;
    const { rows } = gather(pending, 0);
    const cpu = exactSearch(
      o.vectors,
      { data: rows, n: pending.length, dim },
      { k, tieBreak: o.tieBreak, exclude: exclude ? pending.map((i) => exclude[i]) : undefined },
    );
    pending.forEach((i, r) => {
      result.indices.set(cpu.indices.subarray(r * k, (r + 1) * k), i * k);
      result.scores.set(cpu.scores.subarray(r * k, (r + 1) * k), i * k);
      result.counts[i] = cpu.counts[r];
    });
  }
  return { result, stats };
}

function maxRowNorm(m: Matrix): number {
  let max = 0;
  for (let r = 0; r < m.n; r++) {
    let s = 0;
    for (let j = 0; j < m.dim; j++) s += m.data[r * m.dim + j] ** 2;
    max = Math.max(max, Math.sqrt(s));
  }
  return max;
}

export type IndexWorkerApi = typeof api;
Comlink.expose(api);
