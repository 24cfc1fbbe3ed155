// Typed handle on Loupe's HNSW engine: hnswlib compiled to wasm with SIMD by scripts/build-wasm.sh
// (source: src/lib/wasm/hnsw.cpp). Whole batches cross into the wasm heap in one copy and one call;
// every pointer is freed in a `finally`, and C++ errors come back as Error messages.
import createHnswModule, { type HnswModule } from '../../src/lib/wasm/generated/hnsw.mjs';
import wasmUrl from '../../src/lib/wasm/generated/hnsw.wasm?url';

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

  /**
   * k nearest to one query (dim floats), never returning the labels in `excluded`: the engine marks
   * them deleted for this search only (hnswlib walks through them but does not return them).
   */
  searchExcluding(query: Float32Array, k: number, excluded: Int32Array): KnnBatch {
    const out: KnnBatch = {
      labels: new Int32Array(k).fill(-1),
      distances: new Float32Array(k).fill(Infinity),
      counts: new Int32Array(1),
    };
    if (k === 0) return out;
    const q = this.alloc(query.byteLength);
    const ex = this.alloc(excluded.byteLength);
    const lab = this.alloc(k * 4);
    const dist = this.alloc(k * 4);
    try {
      this.m.HEAPF32.set(query, q >> 2);
      this.m.HEAP32.set(excluded, ex >> 2);
      const m = this.m._loupe_hnsw_search_excluding(this.live(), q, k, ex, excluded.length, lab, dist);
      if (m < 0) throw new Error(`hnswlib search failed: ${lastError(this.m)}`);
      out.counts[0] = m;
      out.labels.set(this.m.HEAP32.subarray(lab >> 2, (lab >> 2) + m));
      out.distances.set(this.m.HEAPF32.subarray(dist >> 2, (dist >> 2) + m));
    } finally {
      for (const p of [q, ex, lab, dist]) this.m._free(p);
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

/** Row width of int16 codes: dim rounded up to a multiple of 8 (one SIMD register). */
export function i16Width(dim: number): number {
  return Math.ceil(dim / 8) * 8;
}

/** Largest int16 code for rows P wide: P · QMAX² must stay below 2³¹ (the kernel's int32 sums). */
export function i16Qmax(P: number): number {
  return Math.min(2047, Math.floor(Math.sqrt((2 ** 31 - 1) / P)));
}

/**
 * Symmetric int16 codes of row r of `src` (dim wide) into row `at` of `codes` (P wide; the padding
 * is zeroed). Returns the row's scale (a float32, as the kernel multiplies by it) and Σ|codes|, the
 * two numbers the kernels' error bound needs.
 */
export function quantizeI16Row(
  src: Float32Array,
  r: number,
  dim: number,
  P: number,
  qmax: number,
  codes: Int16Array,
  at: number,
): { scale: number; l1: number } {
  const o = r * dim;
  let max = 0;
  for (let j = 0; j < dim; j++) max = Math.max(max, Math.abs(src[o + j]));
  const scale = max > 0 ? Math.fround(max / qmax) : 1;
  let l1 = 0;
  const c = at * P;
  for (let j = 0; j < dim; j++) {
    const v = Math.max(-qmax, Math.min(qmax, Math.round(src[o + j] / scale)));
    codes[c + j] = v;
    l1 += Math.abs(v);
  }
  for (let j = dim; j < P; j++) codes[c + j] = 0;
  return { scale, l1 };
}

/** DOC_CHUNK: documents per exact-kernel call (V8 swaps in optimised code between calls, not within). */
export const DOC_CHUNK = 4096;

/** Candidate rows from the exact kernels: row q of index/score is query q's kp best documents. */
export interface Candidates {
  kp: number;
  index: Int32Array;
  score: Float32Array;
}

/**
 * A matrix in the wasm heap, for exact search: int16 codes (per-row scale, rows zero-padded to a
 * multiple of 8) for the fast candidate pass, and a float32 copy, made on first use, for the
 * precise one. The kernels (src/lib/wasm/hnsw.cpp) return each query's kp best documents by
 * approximate score; callers rescore them and check the cut against the error bounds given here.
 */
export class WasmMatrix {
  /** Largest per-row code: P · QMAX² must stay below 2³¹ (int32 sums). */
  readonly qmax: number;
  /** Row width of the codes (dim rounded up to a multiple of 8). */
  readonly P: number;
  /** max over rows of the scale s_d, and of s_d · Σ|codes|: the document side of the int16 bound. */
  private maxScale = 0;
  private maxScaleL1 = 0;
  private codes = 0;
  private scales = 0;
  private f32 = 0;

  private constructor(
    private readonly m: HnswModule,
    private readonly data: Float32Array,
    readonly n: number,
    readonly dim: number,
  ) {
    this.P = i16Width(dim);
    this.qmax = i16Qmax(this.P);
  }

  /** Quantizes `data` (n × dim) into the heap; the float32 copy waits until it is needed. */
  static upload(m: HnswModule, data: Float32Array, dim: number): WasmMatrix {
    const w = new WasmMatrix(m, data, data.length / dim, dim);
    w.codes = m._malloc(Math.max(16, w.n * w.P * 2));
    w.scales = m._malloc(Math.max(4, w.n * 4));
    if (!w.codes || !w.scales) {
      w.free();
      throw new Error(`out of wasm memory for ${w.n} × ${w.P} int16 codes`);
    }
    const codes = new Int16Array(m.HEAPU8.buffer, w.codes, w.n * w.P);
    const scales = new Float32Array(m.HEAPU8.buffer, w.scales, w.n);
    for (let r = 0; r < w.n; r++) {
      const { scale, l1 } = w.quantizeRow(data, r, codes, r);
      scales[r] = scale;
      w.maxScale = Math.max(w.maxScale, scale);
      w.maxScaleL1 = Math.max(w.maxScaleL1, scale * l1);
    }
    return w;
  }

  /**
   * Int16 candidates. `bound[q]` bounds |approximate − true| inner product for query q and any
   * document: with x = s·x̂ + e, |e_j| ≤ s/2, the error of s_q·s_d·q̂·d̂ is at most
   * (s_q/2)·(max s_d · (Σ|q̂| + dim/2) + max s_d·Σ|d̂|). Float rounding is the caller's to add.
   */
  candidatesI16(queries: Float32Array, kp: number): Candidates & { bound: Float64Array } {
    const nq = queries.length / this.dim;
    const m = this.m;
    const qc = m._malloc(Math.max(16, nq * this.P * 2));
    const qs = m._malloc(Math.max(4, nq * 4));
    const bound = new Float64Array(nq);
    try {
      if (!qc || !qs) throw new Error('out of wasm memory for exact search');
      const codes = new Int16Array(m.HEAPU8.buffer, qc, nq * this.P);
      const scales = new Float32Array(m.HEAPU8.buffer, qs, nq);
      for (let q = 0; q < nq; q++) {
        const { scale, l1 } = this.quantizeRow(queries, q, codes, q);
        scales[q] = scale;
        bound[q] = (scale / 2) * (this.maxScale * (l1 + this.dim / 2) + this.maxScaleL1);
      }
      const c = this.run(nq, kp, (d0, d1, ip, sp, sz) =>
        m._loupe_exact_candidates_i16(this.codes, this.scales, d0, d1, this.P, qc, qs, nq, kp, ip, sp, sz),
      );
      return { ...c, bound };
    } finally {
      if (qc) m._free(qc);
      if (qs) m._free(qs);
    }
  }

  /** Float32 candidates (scores within dim · 2⁻²⁴ · ‖q‖ · ‖d‖ of the true inner products). */
  candidatesF32(queries: Float32Array, kp: number): Candidates {
    const m = this.m;
    if (!this.f32) {
      this.f32 = m._malloc(Math.max(4, this.data.byteLength));
      if (!this.f32) throw new Error(`out of wasm memory for ${this.data.byteLength} bytes of vectors`);
      m.HEAPF32.set(this.data, this.f32 >> 2);
    }
    const nq = queries.length / this.dim;
    const q = m._malloc(Math.max(4, queries.byteLength));
    try {
      if (!q) throw new Error('out of wasm memory for exact search');
      m.HEAPF32.set(queries, q >> 2);
      return this.run(nq, kp, (d0, d1, ip, sp, sz) =>
        m._loupe_exact_candidates(this.f32, d0, d1, this.dim, q, nq, kp, ip, sp, sz),
      );
    } finally {
      if (q) m._free(q);
    }
  }

  /** Heap bytes held (codes, scales, and the float32 copy once made). */
  bytes(): number {
    return this.n * this.P * 2 + this.n * 4 + (this.f32 ? this.data.byteLength : 0);
  }

  free(): void {
    for (const p of [this.codes, this.scales, this.f32]) if (p) this.m._free(p);
    this.codes = this.scales = this.f32 = 0;
  }

  /** Symmetric int16 codes of row r of `src` into row `at` of `codes` (P wide; padding stays 0). */
  private quantizeRow(
    src: Float32Array,
    r: number,
    codes: Int16Array,
    at: number,
  ): { scale: number; l1: number } {
    return quantizeI16Row(src, r, this.dim, this.P, this.qmax, codes, at);
  }

  /** Runs a kernel over the corpus in DOC_CHUNK calls, carrying the heaps between them. */
  private run(
    nq: number,
    kp: number,
    call: (d0: number, d1: number, index: number, score: number, sizes: number) => number,
  ): Candidates {
    if (kp < 1 || kp > this.n) throw new RangeError(`kp ${kp} outside 1..${this.n}`);
    const m = this.m;
    const ip = m._malloc(nq * kp * 4);
    const sp = m._malloc(nq * kp * 4);
    const sz = m._malloc(nq * 4);
    try {
      if (!ip || !sp || !sz) throw new Error('out of wasm memory for exact search');
      m.HEAP32.fill(0, sz >> 2, (sz >> 2) + nq);
      for (let d0 = 0; d0 < this.n; d0 += DOC_CHUNK)
        if (call(d0, Math.min(this.n, d0 + DOC_CHUNK), ip, sp, sz) !== 0)
          throw new Error(`exact kernel rejected documents ${d0}… (nq=${nq}, kp=${kp})`);
      return {
        kp,
        index: m.HEAP32.slice(ip >> 2, (ip >> 2) + nq * kp),
        score: m.HEAPF32.slice(sp >> 2, (sp >> 2) + nq * kp),
      };
    } finally {
      for (const p of [ip, sp, sz]) if (p) m._free(p);
    }
  }
}
