// Typed handle on Loupe's HNSW engine: hnswlib compiled to wasm with SIMD by scripts/build-wasm.sh
// (source: src/lib/wasm/hnsw.cpp). Whole batches cross into the wasm heap in one copy and one call;
// every pointer is freed in a `finally`, and C++ errors come back as Error messages.
import createHnswModule, { type HnswModule } from '../src/lib/wasm/generated/hnsw.mjs';
import wasmUrl from '../src/lib/wasm/generated/hnsw.wasm?url';

/** ENGINE: what builds and reads the graphs (recorded in persisted headers). */
export const ENGINE = 'hnswlib 0.6.2, wasm SIMD (scripts/build-wasm.sh)';

let modulePromise: Promise<HnswModule> | null = null;

/** The wasm module, instantiated once per worker (streaming compile from its own URL). */
export function hnswModule(): Promise<HnswModule> {
  modulePromise ??= new Promise<HnswModule>((resolve, reject) => {
    createHnswModule({
      // The glue cannot locate its wasm from a module worker (no importScripts): hand it over.
      instantiateWasm(imports, done) {
        WebAssembly.instantiateStreaming(fetch(wasmUrl), imports).then(
          (r) => done(r.instance, r.module),
          (e: unknown) => reject(new Error(`the HNSW engine (${wasmUrl}) failed to load: ${String(e)}`)),
        );
        return {};
      },
    }).then(resolve, reject);
  }).catch((e: unknown) => {
    modulePromise = null;
    throw e;
  });
  return modulePromise;
}

export interface KnnBatch {
  /** nq × k labels, nearest first; unused slots −1. */
  labels: Int32Array;
  /** nq × k inner-product distances (1 − q·d), matching `labels`. */
  distances: Float32Array;
  /** Hits per query (k unless the index has fewer elements). */
  counts: Int32Array;
}

export class HnswIndex {
  private constructor(
    private readonly m: HnswModule,
    private ptr: number,
    readonly dim: number,
  ) {}

  /** An empty index for up to `maxElements` vectors (inner-product space). */
  static create(m: HnswModule, dim: number, maxElements: number, M: number, efC: number, seed: number) {
    const ptr = m._loupe_hnsw_create(dim, maxElements, M, efC, seed);
    if (!ptr) throw new Error(`hnswlib could not create the index: ${lastError(m)}`);
    return new HnswIndex(m, ptr, dim);
  }

  /** An index from bytes written by save(); throws on bytes hnswlib rejects. */
  static load(m: HnswModule, bytes: Uint8Array, dim: number, maxElements: number): HnswIndex {
    const p = m._malloc(bytes.byteLength);
    if (!p) throw new Error(`out of wasm memory for ${bytes.byteLength} index bytes`);
    try {
      m.HEAPU8.set(bytes, p);
      const ptr = m._loupe_hnsw_load(p, bytes.byteLength, dim, Math.max(1, maxElements));
      if (!ptr) throw new Error(`hnswlib could not read the index: ${lastError(m)}`);
      return new HnswIndex(m, ptr, dim);
    } finally {
      m._free(p);
    }
  }

  /** Inserts rows `data` (n × dim) with labels firstLabel… in one call. */
  add(data: Float32Array, firstLabel: number): void {
    const n = data.length / this.dim;
    const p = this.alloc(data.byteLength);
    try {
      this.m.HEAPF32.set(data, p >> 2);
      if (this.m._loupe_hnsw_add(this.live(), p, n, firstLabel) !== 0)
        throw new Error(`hnswlib addPoint failed: ${lastError(this.m)}`);
    } finally {
      this.m._free(p);
    }
  }

  setEf(ef: number): void {
    this.m._loupe_hnsw_set_ef(this.live(), ef);
  }

  count(): number {
    return this.m._loupe_hnsw_count(this.live());
  }

  /** k nearest for each row of `queries` (nq × dim), in one call. */
  search(queries: Float32Array, k: number): KnnBatch {
    const nq = queries.length / this.dim;
    const out: KnnBatch = {
      labels: new Int32Array(nq * k).fill(-1),
      distances: new Float32Array(nq * k).fill(Infinity),
      counts: new Int32Array(nq),
    };
    if (nq === 0 || k === 0) return out;
    const q = this.alloc(queries.byteLength);
    const lab = this.alloc(nq * k * 4);
    const dist = this.alloc(nq * k * 4);
    const cnt = this.alloc(nq * 4);
    try {
      this.m.HEAPF32.set(queries, q >> 2);
      this.m.HEAP32.fill(-1, lab >> 2, (lab >> 2) + nq * k);
      if (this.m._loupe_hnsw_search(this.live(), q, nq, k, lab, dist, cnt) !== 0)
        throw new Error(`hnswlib search failed: ${lastError(this.m)}`);
      // Views are taken after the call: the heap may have grown (and moved) during it.
      out.labels.set(this.m.HEAP32.subarray(lab >> 2, (lab >> 2) + nq * k));
      out.counts.set(this.m.HEAP32.subarray(cnt >> 2, (cnt >> 2) + nq));
      const d = this.m.HEAPF32.subarray(dist >> 2, (dist >> 2) + nq * k);
      for (let i = 0; i < nq; i++)
        for (let j = 0; j < out.counts[i]; j++) out.distances[i * k + j] = d[i * k + j];
    } finally {
      for (const p of [q, lab, dist, cnt]) this.m._free(p);
    }
    return out;
  }

  /** hnswlib's serialisation of the graph (and its copy of the vectors), as a fresh buffer. */
  save(): Uint8Array<ArrayBuffer> {
    const size = this.m._loupe_hnsw_save(this.live());
    if (size < 0) throw new Error(`hnswlib could not save the index: ${lastError(this.m)}`);
    try {
      const p = this.m._loupe_hnsw_saved();
      return this.m.HEAPU8.slice(p, p + size);
    } finally {
      this.m._loupe_hnsw_release_saved();
    }
  }

  /** Frees the wasm memory; the handle is unusable afterwards. */
  free(): void {
    if (this.ptr) this.m._loupe_hnsw_free(this.ptr);
    this.ptr = 0;
  }

  private live(): number {
    if (!this.ptr) throw new Error('the HNSW index was freed');
    return this.ptr;
  }

  private alloc(bytes: number): number {
    const p = this.m._malloc(Math.max(4, bytes));
    if (!p) throw new Error(`out of wasm memory (${bytes} bytes requested)`);
    return p;
  }
}

function lastError(m: HnswModule): string {
  return m.UTF8ToString(m._loupe_hnsw_error()) || 'unknown error';
}
