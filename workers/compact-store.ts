// The compact vector store: dense search over corpora whose float32 rows do not fit the tab (1M ×
// 384 is 1.5 GB) in about a quarter of it. Rows arrive in batches; the float32 rows go to a row
// store outside the JS heap (a file in the origin-private file system, read through a synchronous
// access handle; memory where OPFS is missing) while the per-dimension maxima of ivf.ts's int8
// quantiser are taken. finish() reads the rows back in blocks and writes their int8 codes into a
// wasm memory (n × P bytes, P = dim rounded up to 16). A query then scans every code with the wasm
// SIMD kernel (workers/int8-kernel.ts; JS where wasm SIMD is missing: same integers), keeps the R
// best rows, reads only those R float32 rows back (one read per run of consecutive rows) and ranks
// them by exact score. Scores are exact search's; ids are exact search's whenever the true top k is
// among the R candidates (recall@10 against exact is measured by `npm run bench:vectors`).
import { rowRuns } from '../src/lib/core/retrieval/ivf';
import {
  ScaleAccumulator,
  encodeRows,
  int8Width,
  quantiseQuery,
  rescoreCandidates,
  scanJs,
  topCandidates,
} from '../src/lib/core/retrieval/int8-scan';
import {
  checkK,
  emptyResult,
  type Exclusions,
  type KnnResult,
  type Matrix,
} from '../src/lib/core/retrieval/exact';
import type { TieBreak } from '../src/lib/core/retrieval/topk';
import { formatBytes } from '../src/lib/core/shard/limits';
import { isQuotaError } from '../src/lib/platform/shard-store';
import { CHUNK_ROWS, openRowStore, type RowStore, type RowStoreKind } from './chunked-exact';
import { int8Kernel, int8KernelSupported } from './int8-kernel';

/** DEFAULT_RERANK: candidates rescored exactly per query (recall@10 ≥ 0.99 at 1M in bench:vectors). */
export const DEFAULT_RERANK = 100;
/** READ_ROWS: rows per read while encoding (1.5 MiB of float32 at 384). */
const READ_ROWS = 1024;
/** SCAN_ROWS: rows per kernel call. */
const SCAN_ROWS = 65_536;

/** What a compact search did, for reports and tests. */
export interface CompactStats {
  kernel: 'wasm-simd' | 'js';
  rerank: number;
  /** float32 rows read back from the row store (all queries). */
  rowsRead: number;
  /** Reads issued (one per run of consecutive candidate rows). */
  reads: number;
  store: RowStoreKind;
  /** Time in the int8 scan and candidate selection, and in reading and rescoring, summed over queries. */
  scanMs: number;
  rescoreMs: number;
}

export class CompactStore {
  private readonly acc: ScaleAccumulator;
  private rowsTotal = 0;
  private sealed: {
    scales: Float32Array;
    memory: WebAssembly.Memory;
    codes: Int8Array;
    qAt: number;
    outAt: number;
    scan: ((codes: number, q: number, out: number, n: number, P: number) => void) | null;
  } | null = null;
  /** Bytes read back from the row store since open (encoding and rescoring). */
  bytesRead = 0;

  private constructor(
    readonly dim: number,
    private readonly store: RowStore,
    private readonly tieBreak: TieBreak,
  ) {
    this.acc = new ScaleAccumulator(dim);
  }

  /** An empty store; 'auto' takes OPFS when the worker has synchronous access to it (reason: why not). */
  static async open(
    dim: number,
    opts: { store?: 'auto' | RowStoreKind; tieBreak: TieBreak },
  ): Promise<{ store: CompactStore; reason?: string }> {
    if (!Number.isInteger(dim) || dim <= 0) throw new RangeError(`dimension must be a positive integer`);
    const { store: rows, reason } = await openRowStore(dim, opts.store ?? 'auto', CHUNK_ROWS);
    return { store: new CompactStore(dim, rows, opts.tieBreak), reason };
  }

  get n(): number {
    return this.rowsTotal;
  }
  get storeKind(): RowStoreKind {
    return this.store.kind;
  }
  get ready(): boolean {
    return this.sealed !== null;
  }
  /** Bytes of the int8 codes (the store's memory in the tab, besides a row store in memory). */
  codeBytes(): number {
    return this.rowsTotal * int8Width(this.dim);
  }
  /** Bytes of the wasm memory holding codes, query and scores. */
  memoryBytes(): number {
    return this.sealed?.memory.buffer.byteLength ?? 0;
  }
  storeMemoryBytes(): number {
    return this.store.memoryBytes();
  }
  kernel(): 'wasm-simd' | 'js' {
    return this.sealed && !this.sealed.scan ? 'js' : int8KernelSupported() ? 'wasm-simd' : 'js';
  }

  /** Appends rows (n × dim, already normalised for cosine): to the row store, and into the scales. */
  add(rows: Float32Array): number {
    if (this.sealed) throw new Error('the compact store is finished: open a new one to add rows');
    if (rows.length % this.dim !== 0)
      throw new RangeError(`vectors: ${rows.length} values is not a multiple of ${this.dim}`);
    try {
      this.store.write(rows, this.rowsTotal);
    } catch (e) {
      // A full origin-private file system: say what the store needed, not just that a write failed.
      if (!isQuotaError(e) && !/short write/.test((e as Error)?.message ?? '')) throw e;
      throw new Error(
        `the browser's storage filled up at row ${this.rowsTotal} of the compact vector store: its float32 rows ` +
          `need ${formatBytes(4 * this.dim * (this.rowsTotal + rows.length / this.dim))} or more in the ` +
          `origin-private file system. Delete cached shards or runs you no longer need (Shards view), or ` +
          `allow this site more storage in the browser settings`,
      );
    }
    this.acc.observe(rows);
    this.rowsTotal += rows.length / this.dim;
    return this.rowsTotal;
  }

  /** Encodes every row (read back in blocks) into the int8 codes; `onStep(done, total)` per block. */
  finish(onStep?: (done: number, total: number) => void): void {
    if (this.sealed) return;
    const { dim } = this;
    const n = this.rowsTotal;
    const P = int8Width(dim);
    const scales = this.acc.scales();
    // Codes, then the query (int16, P wide), then one block of scores.
    const qAt = n * P;
    const outAt = qAt + 2 * P + ((16 - ((qAt + 2 * P) % 16)) % 16);
    const bytes = outAt + 4 * Math.min(Math.max(n, 1), SCAN_ROWS);
    let memory: WebAssembly.Memory;
    try {
      memory = new WebAssembly.Memory({ initial: Math.ceil(bytes / 65_536) });
    } catch (e) {
      throw new Error(
        `no memory for the int8 codes of ${n} rows (${bytes} bytes): ${(e as Error)?.message ?? String(e)}`,
      );
    }
    const codes = new Int8Array(memory.buffer, 0, n * P);
    const block = new Float32Array(READ_ROWS * dim);
    for (let s = 0; s < n; s += READ_ROWS) {
      const c = Math.min(READ_ROWS, n - s);
      this.store.read(s, c, block);
      this.bytesRead += c * dim * 4;
      encodeRows(block.subarray(0, c * dim), dim, scales, codes, s);
      onStep?.(s + c, n);
    }
    const scan = int8KernelSupported() ? int8Kernel(memory) : null;
    this.sealed = { scales, memory, codes, qAt, outAt, scan };
  }

  /** Top-k of each query row: int8 scan of every code, exact rescoring of the best `rerank`. */
  search(
    q: Matrix,
    k: number,
    opts: { exclude?: Exclusions; rerank?: number } = {},
  ): { result: KnnResult; stats: CompactStats } {
    const s = this.sealed;
    if (!s) throw new Error('the compact store is not finished: call finish() after the last rows');
    const { dim } = this;
    if (q.dim !== dim) throw new RangeError(`query dimension ${q.dim} differs from the store's ${dim}`);
    const rerank = opts.rerank ?? DEFAULT_RERANK;
    if (!Number.isInteger(rerank) || rerank < 1)
      throw new RangeError(`rerank must be a positive integer, got ${rerank}`);
    const n = this.rowsTotal;
    const P = int8Width(dim);
    const result = emptyResult(q.n, checkK(k));
    const stats: CompactStats = {
      kernel: s.scan ? 'wasm-simd' : 'js',
      rerank,
      rowsRead: 0,
      reads: 0,
      store: this.store.kind,
      scanMs: 0,
      rescoreMs: 0,
    };
    if (k === 0 || n === 0) return { result, stats };
    const buf = s.memory.buffer;
    const qc = new Int16Array(buf, s.qAt, P);
    const block = new Int32Array(buf, s.outAt, Math.min(n, SCAN_ROWS));
    const all = new Int32Array(n);
    const rows = new Float32Array(Math.max(rerank, k) * dim);
    for (let i = 0; i < q.n; i++) {
      const t0 = performance.now();
      const ex = opts.exclude?.[i]?.length ? new Set(Array.from(opts.exclude[i]!)) : null;
      quantiseQuery(q.data, i * dim, dim, s.scales, qc);
      for (let r0 = 0; r0 < n; r0 += SCAN_ROWS) {
        const c = Math.min(SCAN_ROWS, n - r0);
        if (s.scan) s.scan(r0 * P, s.qAt, s.outAt, c, P);
        else scanJs(s.codes, r0, c, P, qc, block);
        all.set(block.subarray(0, c), r0);
      }
      // At least k candidates, so that every query has k rows to rank when it can.
      const cand = topCandidates(all, n, Math.max(rerank, k), ex);
      const t1 = performance.now();
      let at = 0;
      for (const [first, count] of rowRuns(Array.from(cand))) {
        this.store.read(first, count, rows.subarray(at * dim, (at + count) * dim));
        at += count;
        stats.reads++;
      }
      stats.rowsRead += cand.length;
      this.bytesRead += cand.length * dim * 4;
      const hits = rescoreCandidates(q.data, i * dim, dim, cand, rows, k, this.tieBreak);
      hits.forEach((h, j) => {
        result.indices[i * k + j] = h.index;
        result.scores[i * k + j] = h.score;
      });
      result.counts[i] = hits.length;
      stats.scanMs += t1 - t0;
      stats.rescoreMs += performance.now() - t1;
    }
    return { result, stats };
  }

  /** Frees the codes and the row store (its OPFS file is removed); unusable afterwards. */
  free(): void {
    this.sealed = null;
    this.rowsTotal = 0;
    this.store.close();
  }
}
