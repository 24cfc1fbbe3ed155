// Types of the emscripten glue scripts/build-wasm.sh writes to generated/hnsw.mjs (copied there as
// hnsw.d.mts). Pointers are byte offsets into the wasm heap.
export interface HnswModule {
  HEAPU8: Uint8Array;
  HEAP32: Int32Array;
  HEAPF32: Float32Array;
  UTF8ToString(ptr: number): string;
  _malloc(bytes: number): number;
  _free(ptr: number): void;
  _loupe_hnsw_error(): number;
  _loupe_hnsw_create(
    dim: number,
    maxElements: number,
    M: number,
    efConstruction: number,
    seed: number,
  ): number;
  _loupe_hnsw_free(index: number): void;
  _loupe_hnsw_add(index: number, data: number, n: number, firstLabel: number): number;
  _loupe_hnsw_set_ef(index: number, ef: number): void;
  _loupe_hnsw_count(index: number): number;
  _loupe_hnsw_dim(index: number): number;
  _loupe_hnsw_search(
    index: number,
    queries: number,
    nq: number,
    k: number,
    labels: number,
    distances: number,
    counts: number,
  ): number;
  _loupe_hnsw_search_excluding(
    index: number,
    query: number,
    k: number,
    excluded: number,
    nExcluded: number,
    labels: number,
    distances: number,
  ): number;
  _loupe_hnsw_save(index: number): number;
  _loupe_hnsw_saved(): number;
  _loupe_hnsw_release_saved(): void;
  _loupe_hnsw_load(bytes: number, size: number, dim: number, maxElements: number): number;
  _loupe_exact_candidates(
    docs: number,
    d0: number,
    d1: number,
    dim: number,
    queries: number,
    nq: number,
    kp: number,
    outIndex: number,
    outScore: number,
    sizes: number,
  ): number;
  _loupe_exact_candidates_i16(
    docs: number,
    docScales: number,
    d0: number,
    d1: number,
    paddedDim: number,
    queries: number,
    queryScales: number,
    nq: number,
    kp: number,
    outIndex: number,
    outScore: number,
    sizes: number,
  ): number;
}

export interface HnswModuleOptions {
  /** Instantiates the wasm with the glue's imports (the glue cannot fetch it from a module worker). */
  instantiateWasm(
    imports: WebAssembly.Imports,
    done: (instance: WebAssembly.Instance, module?: WebAssembly.Module) => void,
  ): Record<string, never>;
}

export default function createHnswModule(options: HnswModuleOptions): Promise<HnswModule>;
