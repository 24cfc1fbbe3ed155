// Exact search over corpora too large to hold as float32 in the tab (1M × 384 is 1.5 GB): the
// index worker keeps int16 codes in the wasm heap, in chunks of `chunkRows` rows (each its own
// allocation, scanned by the int16 kernel of src/lib/wasm/hnsw.cpp), and the float32 rows in a
// row store outside the JS heap: a file in the origin-private file system (OPFS), read back row by
// row through a synchronous access handle, or plain memory where OPFS is missing.
//
// Exactness, chunk by chunk: each chunk's kernel pass gives every query its kp best documents by
// approximate score; those that can still enter the query's top k are rescored exactly (float64
// sums of the float32 rows, rounded to float32, as exactScore does) and merged into one TopK with
// the same tie-break as the JS reference. A document the pass left out scored at most the chunk's
// cut approximately, so at most cut + bound exactly; when that is not below the running k-th exact
// score (which only rises), the query's whole chunk is rescored from the row store. So the answer
// equals exactSearch() over the full float32 matrix, ids and scores.
import type { HnswModule } from '../../src/lib/wasm/generated/hnsw.mjs';
import { DOC_CHUNK, i16Qmax, i16Width, quantizeI16Row } from './hnsw-engine';
import {
  checkK,
  emptyResult,
  type Exclusions,
  type KnnResult,
  type Matrix,
} from '../../src/lib/core/retrieval/exact';
import { TopK, type TieBreak } from '../../src/lib/core/retrieval/topk';

/** Where the float32 rows live: a file in the origin-private file system, or the worker's memory. */
export type RowStoreKind = 'opfs' | 'memory';

/** CHUNK_ROWS: rows per code chunk by default (65,536 × 384 int16 = 48 MiB per allocation). */
export const CHUNK_ROWS = 65_536;
/** QUERY_BLOCK: queries per kernel pass (bounds the candidate buffers). */
const QUERY_BLOCK = 256;
/** MARGIN: candidates kept beyond k per chunk, so that a chunk's cut rarely needs a full rescore. */
const MARGIN = 16;
/** READ_ROWS: rows per read when a whole chunk is rescored. */
const READ_ROWS = 4096;
/** OPFS file names start with this; files of workers that died are swept on the next open. */
const FILE_PREFIX = 'loupe-exact-rows-';

/** Float32 rows by row number (written once, in order; read at random). */
export interface RowStore {
  readonly kind: RowStoreKind;
  write(rows: Float32Array, firstRow: number): void;
  /** Rows first … first + count − 1 into `out` (count × dim floats). */
  read(first: number, count: number, out: Float32Array): void;
  /** Bytes the store holds in the tab's memory (OPFS: none; the file is on disk). */
  memoryBytes(): number;
  close(): void;
}

export class MemoryRows implements RowStore {
  readonly kind = 'memory' as const;
  private parts: Float32Array[] = [];
  constructor(
    private readonly dim: number,
    private readonly partRows: number,
  ) {}
  write(rows: Float32Array, firstRow: number): void {
    const n = rows.length / this.dim;
    for (let r = 0; r < n;) {
      const row = firstRow + r;
      const p = Math.floor(row / this.partRows);
      const at = row - p * this.partRows;
      const m = Math.min(n - r, this.partRows - at);
      this.parts[p] ??= new Float32Array(this.partRows * this.dim);
      this.parts[p].set(rows.subarray(r * this.dim, (r + m) * this.dim), at * this.dim);
      r += m;
    }
  }
  read(first: number, count: number, out: Float32Array): void {
    for (let r = 0; r < count;) {
      const row = first + r;
      const p = Math.floor(row / this.partRows);
      const at = row - p * this.partRows;
      const m = Math.min(count - r, this.partRows - at);
      out.set(this.parts[p].subarray(at * this.dim, (at + m) * this.dim), r * this.dim);
      r += m;
    }
  }
  memoryBytes(): number {
    return this.parts.reduce((s, p) => s + p.byteLength, 0);
  }
  close(): void {
    this.parts = [];
  }
}

/** The parts of FileSystemSyncAccessHandle used here (lib.dom does not declare it). */
interface SyncHandle {
  write(buffer: ArrayBufferView, options: { at: number }): number;
  read(buffer: ArrayBufferView, options: { at: number }): number;
  flush(): void;
  close(): void;
}

export class OpfsRows implements RowStore {
  readonly kind = 'opfs' as const;
  private constructor(
    private readonly dir: FileSystemDirectoryHandle,
    private readonly name: string,
    private readonly handle: SyncHandle,
    private readonly dim: number,
  ) {}

  static async open(dim: number): Promise<OpfsRows> {
    const dir = await navigator.storage.getDirectory();
    // Files left by workers that were terminated (cancel) or tabs that closed. A file another
    // worker still holds open cannot be removed: that error is expected and ignored.
    for await (const name of (dir as unknown as { keys(): AsyncIterable<string> }).keys())
      if (name.startsWith(FILE_PREFIX)) await dir.removeEntry(name).catch(() => undefined);
    const name = `${FILE_PREFIX}${Date.now()}-${Math.random().toString(36).slice(2)}.f32`;
    const file = await dir.getFileHandle(name, { create: true });
    const open = (file as unknown as { createSyncAccessHandle?: () => Promise<SyncHandle> })
      .createSyncAccessHandle;
    if (!open) throw new Error('this browser has no synchronous OPFS access in workers');
    return new OpfsRows(dir, name, await open.call(file), dim);
  }

  write(rows: Float32Array, firstRow: number): void {
    const at = firstRow * this.dim * 4;
    if (this.handle.write(rows, { at }) !== rows.byteLength)
      throw new Error(`short write to the OPFS row file at byte ${at} (disk full?)`);
  }
  read(first: number, count: number, out: Float32Array): void {
    const view = out.subarray(0, count * this.dim);
    if (this.handle.read(view, { at: first * this.dim * 4 }) !== view.byteLength)
      throw new Error(`short read from the OPFS row file at row ${first}`);
  }
  memoryBytes(): number {
    return 0;
  }
  close(): void {
    this.handle.close();
    void this.dir.removeEntry(this.name).catch(() => undefined);
  }
}

/** One chunk of int16 codes in the wasm heap, with what the error bound needs. */
interface Chunk {
  first: number;
  rows: number;
  codes: number;
  scales: number;
  /** max s_d, max s_d · Σ|d̂| and max ‖d‖ over the chunk's rows. */
  maxScale: number;
  maxScaleL1: number;
  maxNorm: number;
}

/** What a chunked search did, for reports. */
export interface ChunkedExactStats {
  chunks: number;
  chunkRows: number;
  /** Candidates per query and chunk from the int16 pass. */
  candidatesPerQuery: number;
  /** Candidates rescored exactly (the others could not reach the running k-th score). */
  rescored: number;
  /** (query, chunk) pairs whose cut was too close to call: the whole chunk rescored exactly. */
  chunkRescans: number;
  store: RowStoreKind;
}

/** A corpus of int16 code chunks in the wasm heap plus a float32 row store, searched exactly. */
/**
 * Where float32 rows are kept: OPFS when asked or, under 'auto', when this worker can open it (else
 * memory in chunks of `memoryChunkRows`, with the reason OPFS was not taken); 'opfs' throws instead.
 */
export async function openRowStore(
  dim: number,
  want: 'auto' | RowStoreKind,
  memoryChunkRows: number,
): Promise<{ store: RowStore; reason?: string }> {
  if (want !== 'memory') {
    try {
      return { store: await OpfsRows.open(dim) };
    } catch (e) {
      if (want === 'opfs') throw e;
      return {
        store: new MemoryRows(dim, memoryChunkRows),
        reason: `OPFS: ${(e as Error)?.message ?? String(e)}`,
      };
    }
  }
  return { store: new MemoryRows(dim, memoryChunkRows) };
}

export class ChunkedCorpus {
  readonly P: number;
  readonly qmax: number;
  private chunks: Chunk[] = [];
  private rowsTotal = 0;

  private constructor(
    private readonly m: HnswModule,
    readonly dim: number,
    readonly chunkRows: number,
    private readonly store: RowStore,
    private readonly tieBreak: TieBreak,
  ) {
    this.P = i16Width(dim);
    this.qmax = i16Qmax(this.P);
  }

  /**
   * An empty corpus. `store` 'auto' takes OPFS when the worker has synchronous access to it, else
   * memory; the returned reason says why not OPFS.
   */
  static async open(
    m: HnswModule,
    dim: number,
    opts: { chunkRows?: number; store?: 'auto' | RowStoreKind; tieBreak: TieBreak },
  ): Promise<{ corpus: ChunkedCorpus; reason?: string }> {
    if (!Number.isInteger(dim) || dim <= 0) throw new RangeError(`dimension must be a positive integer`);
    const chunkRows = opts.chunkRows ?? CHUNK_ROWS;
    if (!Number.isInteger(chunkRows) || chunkRows < 1)
      throw new RangeError(`chunkRows must be a positive integer, got ${chunkRows}`);
    const { store, reason } = await openRowStore(dim, opts.store ?? 'auto', chunkRows);
    return { corpus: new ChunkedCorpus(m, dim, chunkRows, store, opts.tieBreak), reason };
  }

  get n(): number {
    return this.rowsTotal;
  }

  get storeKind(): RowStoreKind {
    return this.store.kind;
  }

  /** Wasm heap bytes held by the codes and scales. */
  codeBytes(): number {
    return this.chunks.length * this.chunkRows * (this.P * 2 + 4);
  }

  /** Bytes of float32 rows held in the worker's memory (0 with OPFS). */
  storeMemoryBytes(): number {
    return this.store.memoryBytes();
  }

  /** Appends rows (n × dim): codes into the wasm chunks, float32 rows into the store. */
  add(rows: Float32Array): number {
    const dim = this.dim;
    if (rows.length % dim !== 0) throw new RangeError(`${rows.length} values is not a multiple of ${dim}`);
    const n = rows.length / dim;
    this.store.write(rows, this.rowsTotal);
    for (let r = 0; r < n;) {
      let c = this.chunks.at(-1);
      if (!c || c.rows === this.chunkRows) c = this.newChunk();
      const m = Math.min(n - r, this.chunkRows - c.rows);
      // Views after any allocation: a growing heap replaces the buffer.
      const codes = new Int16Array(this.m.HEAPU8.buffer, c.codes, this.chunkRows * this.P);
      const scales = new Float32Array(this.m.HEAPU8.buffer, c.scales, this.chunkRows);
      for (let i = 0; i < m; i++) {
        const { scale, l1 } = quantizeI16Row(rows, r + i, dim, this.P, this.qmax, codes, c.rows + i);
        scales[c.rows + i] = scale;
        c.maxScale = Math.max(c.maxScale, scale);
        c.maxScaleL1 = Math.max(c.maxScaleL1, scale * l1);
        let s = 0;
        for (let j = (r + i) * dim, e = j + dim; j < e; j++) s += rows[j] * rows[j];
        c.maxNorm = Math.max(c.maxNorm, Math.sqrt(s));
      }
      c.rows += m;
      this.rowsTotal += m;
      r += m;
    }
    return this.rowsTotal;
  }

  /**
   * Exact top-k of each query row, identical to exactSearch() over all rows added (same tie-break).
   * `onStep(done, total)` after each (query block, chunk) pass.
   */
  search(
    q: Matrix,
    k: number,
    exclude?: Exclusions,
    onStep?: (done: number, total: number) => void,
  ): { result: KnnResult; stats: ChunkedExactStats } {
    const { dim, m } = this;
    if (q.dim !== dim) throw new RangeError(`query dimension ${q.dim} differs from the corpus's ${dim}`);
    const nq = q.n;
    const result = emptyResult(nq, checkK(k));
    const stats: ChunkedExactStats = {
      chunks: this.chunks.length,
      chunkRows: this.chunkRows,
      candidatesPerQuery: 0,
      rescored: 0,
      chunkRescans: 0,
      store: this.store.kind,
    };
    if (k === 0 || nq === 0 || this.rowsTotal === 0) return { result, stats };
    const blocks = Math.ceil(nq / QUERY_BLOCK);
    const total = blocks * this.chunks.length;
    const row = new Float32Array(dim);
    const block = new Float32Array(READ_ROWS * dim);
    /** exactScore's arithmetic: float64 sum in index order, rounded to float32. */
    const score = (qi: number, d: Float32Array, at: number) => {
      let s = 0;
      for (let j = 0, p = qi * dim, o = at * dim; j < dim; j++) s += q.data[p + j] * d[o + j];
      return Math.fround(s);
    };
    let step = 0;
    for (let b0 = 0; b0 < nq; b0 += QUERY_BLOCK) {
      const nb = Math.min(QUERY_BLOCK, nq - b0);
      let maxEx = 0;
      for (let i = b0; i < b0 + nb; i++) maxEx = Math.max(maxEx, exclude?.[i]?.length ?? 0);
      const kp = k + MARGIN + maxEx;
      stats.candidatesPerQuery = kp;
      const tops = Array.from({ length: nb }, () => new TopK(k, this.tieBreak));
      const excluded = Array.from({ length: nb }, (_, r) =>
        exclude?.[b0 + r]?.length ? new Set(Array.from(exclude[b0 + r]!)) : null,
      );
      const qc = m._malloc(nb * this.P * 2);
      const qs = m._malloc(nb * 4);
      const ip = m._malloc(nb * kp * 4);
      const sp = m._malloc(nb * kp * 4);
      const sz = m._malloc(nb * 4);
      try {
        if (!(qc > 0 && qs > 0 && ip > 0 && sp > 0 && sz > 0))
          throw new Error('out of wasm memory for exact search');
        const qcodes = new Int16Array(m.HEAPU8.buffer, qc, nb * this.P);
        const qscales = new Float32Array(m.HEAPU8.buffer, qs, nb);
        const qScale = new Float64Array(nb);
        const qL1 = new Float64Array(nb);
        const qNorm = new Float64Array(nb);
        for (let r = 0; r < nb; r++) {
          const { scale, l1 } = quantizeI16Row(q.data, b0 + r, dim, this.P, this.qmax, qcodes, r);
          qscales[r] = qScale[r] = scale;
          qL1[r] = l1;
          let s = 0;
          for (let j = (b0 + r) * dim, e = j + dim; j < e; j++) s += q.data[j] ** 2;
          qNorm[r] = Math.sqrt(s);
        }
        for (const c of this.chunks) {
          m.HEAP32.fill(0, sz >> 2, (sz >> 2) + nb);
          for (let d0 = 0; d0 < c.rows; d0 += DOC_CHUNK) {
            const d1 = Math.min(c.rows, d0 + DOC_CHUNK);
            if (
              m._loupe_exact_candidates_i16(c.codes, c.scales, d0, d1, this.P, qc, qs, nb, kp, ip, sp, sz) !==
              0
            )
              throw new Error(`exact kernel rejected rows ${c.first + d0}… (nq=${nb}, kp=${kp})`);
          }
          const index = m.HEAP32.subarray(ip >> 2, (ip >> 2) + nb * kp);
          const approx = m.HEAPF32.subarray(sp >> 2, (sp >> 2) + nb * kp);
          const sizes = m.HEAP32.subarray(sz >> 2, (sz >> 2) + nb);
          for (let r = 0; r < nb; r++) {
            const qi = b0 + r;
            const top = tops[r];
            const ex = excluded[r];
            // The int16 error bound (see WasmMatrix.candidatesI16) with this chunk's maxima, plus a
            // few ulps of ‖q‖ · max‖d‖ for float rounding in the kernel and in the exact sums.
            const bound =
              (qScale[r] / 2) * (c.maxScale * (qL1[r] + dim / 2) + c.maxScaleL1) +
              8 * 2 ** -24 * qNorm[r] * c.maxNorm;
            const pushed = new Set<number>();
            let cut = Infinity;
            for (let j = 0; j < sizes[r]; j++) {
              const a = approx[r * kp + j];
              cut = Math.min(cut, a);
              const d = c.first + index[r * kp + j];
              if (ex?.has(d) || a + bound < top.threshold) continue;
              this.store.read(d, 1, row);
              top.push(score(qi, row, 0), d);
              pushed.add(d);
              stats.rescored++;
            }
            // Every row was a candidate, or the ones left out cannot reach the k-th score.
            if (sizes[r] >= c.rows || cut + bound < top.threshold) continue;
            stats.chunkRescans++;
            for (let s = 0; s < c.rows; s += READ_ROWS) {
              const cnt = Math.min(READ_ROWS, c.rows - s);
              this.store.read(c.first + s, cnt, block);
              for (let i = 0; i < cnt; i++) {
                const d = c.first + s + i;
                if (!pushed.has(d) && !ex?.has(d)) top.push(score(qi, block, i), d);
              }
            }
          }
          onStep?.(++step, total);
        }
        tops.forEach((top, r) => {
          const i = b0 + r;
          const hits = top.drain();
          hits.forEach((h, j) => {
            result.indices[i * k + j] = h.index;
            result.scores[i * k + j] = h.score;
          });
          result.counts[i] = hits.length;
        });
      } finally {
        for (const p of [qc, qs, ip, sp, sz]) if (p > 0) m._free(p);
      }
    }
    return { result, stats };
  }

  /** Frees the wasm chunks and the row store; the corpus is unusable afterwards. */
  free(): void {
    for (const c of this.chunks) {
      this.m._free(c.codes);
      this.m._free(c.scales);
    }
    this.chunks = [];
    this.rowsTotal = 0;
    this.store.close();
  }

  private newChunk(): Chunk {
    const bytes = this.chunkRows * this.P * 2;
    const codes = this.m._malloc(bytes);
    const scales = codes > 0 ? this.m._malloc(this.chunkRows * 4) : 0;
    // A pointer past 2 GiB comes back negative from the glue: treat it as out of memory too.
    if (!(codes > 0 && scales > 0)) {
      if (codes > 0) this.m._free(codes);
      throw new Error(
        `out of wasm memory for chunk ${this.chunks.length + 1} (${bytes} bytes of int16 codes; ` +
          `${this.codeBytes()} bytes held for ${this.rowsTotal} rows)`,
      );
    }
    const c: Chunk = {
      first: this.rowsTotal,
      rows: 0,
      codes,
      scales,
      maxScale: 0,
      maxScaleL1: 0,
      maxNorm: 0,
    };
    this.chunks.push(c);
    return c;
  }
}
