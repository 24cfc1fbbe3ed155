// The compact vector store: dense search over corpora whose float32 rows do not fit the tab (1M ×
// 384 is 1.5 GB) in about a quarter of it. Rows arrive in batches; the float32 rows go to a row
// store outside the JS heap (a file in the origin-private file system, read through a synchronous
// access handle; memory where OPFS is missing) while the per-dimension maxima of ivf.ts's int8
// quantiser are taken. finish() reads the rows back in blocks and writes their int8 codes into a
// wasm memory (n × P bytes, P = dim rounded up to 16). A query then finds R candidate rows, reads
// only those R float32 rows back (one read per run of consecutive rows) and ranks them by exact
// score. Scores are exact search's; ids are exact search's whenever the true top k is among the R
// candidates (recall@10 against exact is measured by `npm run bench:vectors`). The candidates come
// from one of two scans (CompactScan):
// - 'two-pass' (the default): the codes are held as two 4-bit planes (workers/index/nibble-planes.ts,
//   same bytes); the high plane of every row is scanned (half the bytes of the codes), the best
//   FIRST_PASS_CANDIDATES get their full int8 score from the low plane, and the best R of those go
//   on. Only the high plane is in memory (192 MB at 1M × 384): the low plane is written to a second
//   row store (OPFS beside the float32 rows, where the rows are) and its candidates' rows read back
//   (the same integers: the same results as with both planes in memory, for half the codes' memory). Its kernel reads the 1M codes in about half the time, and a query at 1M took 16–33% less
//   time than the full scan in alternated rounds (BENCHMARKS.md, issue 18 item 4).
// - 'int8': every code scanned in full by workers/kernels/int8-kernel.ts, the best R go on (the first
//   version; kept as the benchmark's baseline). 'both' holds both layouts (twice the codes' memory:
//   benchmarks only) and lets each search pick.
import { rowRuns } from '../../src/lib/core/retrieval/ivf';
import { FIRST_PASS_CANDIDATES, nibbleWidth } from '../../src/lib/core/retrieval/nibble-scan';
import {
  ScaleAccumulator,
  encodeRows,
  int8Width,
  quantiseQuery,
  rescoreCandidates,
  scanJs,
  topCandidates,
} from '../../src/lib/core/retrieval/int8-scan';
import {
  checkK,
  emptyResult,
  type Exclusions,
  type KnnResult,
  type Matrix,
} from '../../src/lib/core/retrieval/exact';
import type { TieBreak } from '../../src/lib/core/retrieval/topk';
import { formatBytes } from '../../src/lib/core/shard/limits';
import { isQuotaError } from '../../src/lib/platform/storage/shard-store';
import { CHUNK_ROWS, openRowStore, type RowStore, type RowStoreKind } from './chunked-exact';
import { int8Kernel, int8KernelSupported } from '../kernels/int8-kernel';
import { nibbleKernelSupported, type NibbleKernel } from '../kernels/nibble-kernel';
import { NibblePlanes, planeRows, planesLayout } from './nibble-planes';

/** DEFAULT_RERANK: candidates rescored exactly per query (recall@10 ≥ 0.99 at 1M in bench:vectors). */
export const DEFAULT_RERANK = 100;
/** READ_ROWS: rows per read while encoding (1.5 MiB of float32 at 384). */
const READ_ROWS = 1024;
/** SCAN_ROWS: rows per kernel call. */
const SCAN_ROWS = 65_536;

/** How a compact store finds its candidates (see the file's header). */
export type CompactScan = 'two-pass' | 'int8';

/** What a compact search did, for reports and tests. */
export interface CompactStats {
  scan: CompactScan;
  kernel: NibbleKernel | 'js';
  /** Rows given their int8 score (two-pass: the first pass's best; int8: every row). */
  candidates: number;
  rerank: number;
  /** float32 rows read back from the row store (all queries). */
  rowsRead: number;
  /** Reads issued (one per run of consecutive candidate rows). */
  reads: number;
  store: RowStoreKind;
  /** Time in the int8 scan and candidate selection, and in reading and rescoring, summed over queries. */
  scanMs: number;
  rescoreMs: number;
  /** Each query's own search time, ms: its scan, candidate selection, row reads and rescoring to its top k. */
  queryMs: number[];
}

export class CompactStore {
  private readonly acc: ScaleAccumulator;
  private rowsTotal = 0;
  private sealed: {
    scales: Float32Array;
    memory: WebAssembly.Memory;
    /** The full int8 codes ('int8' and 'both'). */
    codes: Int8Array | null;
    /** The two 4-bit planes ('two-pass' and 'both'). */
    planes: NibblePlanes | null;
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
    /** The layouts held: 'both' only for benchmarks (twice the memory). */
    readonly layouts: CompactScan | 'both',
    /** 'two-pass' only: where the low plane lives (W / 4 floats per row; see the file's header). */
    private readonly loStore: RowStore | null,
  ) {
    this.acc = new ScaleAccumulator(dim);
  }

  /** An empty store; 'auto' takes OPFS when the worker has synchronous access to it (reason: why not). */
  static async open(
    dim: number,
    opts: { store?: 'auto' | RowStoreKind; tieBreak: TieBreak; scan?: CompactScan | 'both' },
  ): Promise<{ store: CompactStore; reason?: string }> {
    if (!Number.isInteger(dim) || dim <= 0) throw new RangeError(`dimension must be a positive integer`);
    const { store: rows, reason } = await openRowStore(dim, opts.store ?? 'auto', CHUNK_ROWS);
    const scan = opts.scan ?? 'two-pass';
    let lo: RowStore | null = null;
    try {
      // Where the float32 rows went (OPFS, or memory when OPFS could not be opened).
      if (scan === 'two-pass') lo = (await openRowStore(nibbleWidth(dim) / 4, rows.kind, CHUNK_ROWS)).store;
    } catch (e) {
      rows.close();
      throw e;
    }
    return { store: new CompactStore(dim, rows, opts.tieBreak, scan, lo), reason };
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
  /** Bytes of the codes in either layout, both when both are held (the store's memory in the tab). */
  codeBytes(): number {
    const n = this.rowsTotal;
    return (
      (this.layouts !== 'two-pass' ? n * int8Width(this.dim) : 0) +
      (this.layouts !== 'int8' ? (this.loStore ? 1 : 2) * planeRows(n) * nibbleWidth(this.dim) : 0)
    );
  }
  /** The scan a search takes unless told otherwise. */
  get scanKind(): CompactScan {
    return this.layouts === 'int8' ? 'int8' : 'two-pass';
  }
  /** Bytes of the wasm memory holding codes, query and scores. */
  memoryBytes(): number {
    return this.sealed?.memory.buffer.byteLength ?? 0;
  }
  storeMemoryBytes(): number {
    return this.store.memoryBytes() + (this.loStore?.memoryBytes() ?? 0);
  }
  /** Where the low plane is ('memory': in the codes' wasm memory; else its row store's kind). */
  get lowPlane(): RowStoreKind | 'codes' | null {
    return this.layouts === 'int8' ? null : (this.loStore?.kind ?? 'codes');
  }
  /** Low-plane bytes read back from its row store by searches. */
  get lowBytesRead(): number {
    return this.sealed?.planes?.loBytesRead ?? 0;
  }
  /** The kernel of the default scan. */
  kernel(): NibbleKernel | 'js' {
    if (this.scanKind === 'two-pass') return this.sealed?.planes?.kernel ?? nibbleKernelSupported() ?? 'js';
    return this.sealed && !this.sealed.scan ? 'js' : int8KernelSupported() ? 'wasm-simd' : 'js';
  }

  /**
   * Writes rows (n × dim, already normalised for cosine) at row `first` (default: after the last
   * row; a streamed corpus arrives out of order), to the row store and into the scales (maxima:
   * the order rows arrive in does not change them). Returns the rows spanned so far.
   */
  add(rows: Float32Array, first = this.rowsTotal): number {
    if (this.sealed) throw new Error('the compact store is finished: open a new one to add rows');
    if (rows.length % this.dim !== 0)
      throw new RangeError(`vectors: ${rows.length} values is not a multiple of ${this.dim}`);
    try {
      this.store.write(rows, first);
    } catch (e) {
      // A full origin-private file system: say what the store needed, not just that a write failed.
      if (!isQuotaError(e) && !/short write/.test((e as Error)?.message ?? '')) throw e;
      throw new Error(
        `the browser's storage filled up at row ${first} of the compact vector store: its float32 rows ` +
          `need ${formatBytes(4 * this.dim * Math.max(this.rowsTotal, first + rows.length / this.dim))} or more in the ` +
          `origin-private file system. Delete cached shards or runs you no longer need (Shards view), or ` +
          `allow this site more storage in the browser settings`,
      );
    }
    this.acc.observe(rows);
    this.rowsTotal = Math.max(this.rowsTotal, first + rows.length / this.dim);
    return this.rowsTotal;
  }

  /** Encodes every row (read back in blocks) into the int8 codes; `onStep(done, total)` per block. */
  finish(onStep?: (done: number, total: number) => void): void {
    if (this.sealed) return;
    const { dim } = this;
    const n = this.rowsTotal;
    const P = int8Width(dim);
    const scales = this.acc.scales();
    // int8 codes (when held), then their query (int16, P wide), then the planes and their query
    // (when held), then one block of scores.
    const int8 = this.layouts !== 'two-pass';
    const qAt = int8 ? n * P : 0;
    const layout = this.layouts !== 'int8' ? planesLayout(n, dim, qAt + 2 * P, !this.loStore) : null;
    const end = layout ? layout.hiAt + layout.bytes : qAt + 2 * P;
    const outAt = Math.ceil(end / 16) * 16;
    const bytes = outAt + 4 * Math.min(planeRows(Math.max(n, 1)), SCAN_ROWS);
    let memory: WebAssembly.Memory;
    try {
      memory = new WebAssembly.Memory({ initial: Math.ceil(bytes / 65_536) });
    } catch (e) {
      throw new Error(
        `no memory for the int8 codes of ${n} rows (${bytes} bytes): ${(e as Error)?.message ?? String(e)}`,
      );
    }
    const codes = int8 ? new Int8Array(memory.buffer, 0, n * P) : null;
    const planes = layout
      ? new NibblePlanes(memory, layout, n, dim, undefined, this.loStore ?? undefined)
      : null;
    const block = new Float32Array(READ_ROWS * dim);
    for (let s = 0; s < n; s += READ_ROWS) {
      const c = Math.min(READ_ROWS, n - s);
      this.store.read(s, c, block);
      this.bytesRead += c * dim * 4;
      if (codes) encodeRows(block.subarray(0, c * dim), dim, scales, codes, s);
      try {
        planes?.encode(block.subarray(0, c * dim), scales, s);
      } catch (e) {
        if (!isQuotaError(e) && !/short write/.test((e as Error)?.message ?? '')) throw e;
        throw new Error(
          `the browser's storage filled up while writing the low plane of the compact vector store's codes ` +
            `(row ${s} of ${n}; ${formatBytes(planeRows(n) * nibbleWidth(dim))} in the origin-private file system). ` +
            `Delete cached shards or runs you no longer need (Shards view), or allow this site more storage ` +
            `in the browser settings`,
        );
      }
      onStep?.(s + c, n);
    }
    const scan = codes && int8KernelSupported() ? int8Kernel(memory) : null;
    this.sealed = { scales, memory, codes, planes, qAt, outAt, scan };
  }

  /**
   * Top-k of each query row: the best `rerank` rows of the scan (`scan`: the store's default, see
   * the file's header), rescored exactly.
   */
  search(
    q: Matrix,
    k: number,
    opts: { exclude?: Exclusions; rerank?: number; scan?: CompactScan; candidates?: number } = {},
  ): { result: KnnResult; stats: CompactStats } {
    const s = this.sealed;
    if (!s) throw new Error('the compact store is not finished: call finish() after the last rows');
    const { dim } = this;
    if (q.dim !== dim) throw new RangeError(`query dimension ${q.dim} differs from the store's ${dim}`);
    const rerank = opts.rerank ?? DEFAULT_RERANK;
    if (!Number.isInteger(rerank) || rerank < 1)
      throw new RangeError(`rerank must be a positive integer, got ${rerank}`);
    const scan = opts.scan ?? this.scanKind;
    const planes = scan === 'two-pass' ? s.planes : null;
    if (scan === 'two-pass' ? !planes : !s.codes)
      throw new Error(
        `this compact store holds no codes for the ${scan} scan (it was opened for ${this.layouts})`,
      );
    const candidates = opts.candidates ?? FIRST_PASS_CANDIDATES;
    if (!Number.isInteger(candidates) || candidates < 1)
      throw new RangeError(`candidates must be a positive integer, got ${candidates}`);
    const n = this.rowsTotal;
    const P = int8Width(dim);
    const result = emptyResult(q.n, checkK(k));
    const stats: CompactStats = {
      scan,
      kernel: planes ? planes.kernel : s.scan ? 'wasm-simd' : 'js',
      candidates: planes ? Math.min(n, Math.max(candidates, rerank, k)) : n,
      rerank,
      rowsRead: 0,
      reads: 0,
      store: this.store.kind,
      scanMs: 0,
      rescoreMs: 0,
      queryMs: [],
    };
    if (k === 0 || n === 0) return { result, stats };
    const buf = s.memory.buffer;
    const qc = new Int16Array(buf, s.qAt, P);
    const block = new Int32Array(buf, s.outAt, Math.min(planeRows(n), SCAN_ROWS));
    // The full int8 scan's scores of every row (the two-pass scan selects block by block instead).
    const all = planes ? null : new Int32Array(n);
    const rows = new Float32Array(Math.max(rerank, k) * dim);
    for (let i = 0; i < q.n; i++) {
      const t0 = performance.now();
      const ex = opts.exclude?.[i]?.length ? new Set(Array.from(opts.exclude[i]!)) : null;
      let cand: Int32Array;
      // At least k candidates, so that every query has k rows to rank when it can.
      if (planes)
        cand = planes.select(q.data, i * dim, s.scales, candidates, Math.max(rerank, k), ex, block, s.outAt);
      else {
        quantiseQuery(q.data, i * dim, dim, s.scales, qc);
        for (let r0 = 0; r0 < n; r0 += SCAN_ROWS) {
          const c = Math.min(SCAN_ROWS, n - r0);
          if (s.scan) s.scan(r0 * P, s.qAt, s.outAt, c, P);
          else scanJs(s.codes!, r0, c, P, qc, block);
          all!.set(block.subarray(0, c), r0);
        }
        cand = topCandidates(all!, n, Math.max(rerank, k), ex);
      }
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
      const t2 = performance.now();
      stats.scanMs += t1 - t0;
      stats.rescoreMs += t2 - t1;
      stats.queryMs.push(t2 - t0);
    }
    return { result, stats };
  }

  /** Frees the codes and the row store (its OPFS file is removed); unusable afterwards. */
  free(): void {
    this.sealed = null;
    this.rowsTotal = 0;
    this.store.close();
    this.loStore?.close();
  }
}
