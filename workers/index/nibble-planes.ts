// The compact vector store's codes as two 4-bit planes, and its two-pass candidate search
// (src/lib/core/retrieval/nibble-scan.ts has the layout and the arithmetic): the high plane of
// every row is scanned by the wasm kernel (workers/kernels/nibble-kernel.ts; relaxed SIMD, else plain SIMD,
// else JS: the same integers), the best `candidates` rows get their low plane added (their int8
// score), and the best `keep` of those go on to the store's exact rescoring.
//
// The low plane may live in a row store instead of the wasm memory (`loStore`: the compact store's
// OPFS file beside its float32 rows): the memory then holds the high plane only (192 MB instead of
// 384 MB at 1M × 384), and the second pass reads its candidates' low rows (W bytes each, one read per
// run of consecutive rows) into a scratch area of the memory: the same integers, so the same
// candidates, ids and scores as with both planes in memory.
import {
  combinePlanes,
  encodeNibbleRows,
  nibbleWidth,
  quantiseQueryNibbles,
  scanNibblesJs,
} from '../../src/lib/core/retrieval/nibble-scan';
import { CandidateHeap, topCandidates } from '../../src/lib/core/retrieval/int8-scan';
import { rowRuns } from '../../src/lib/core/retrieval/ivf';
import { nibbleKernel, nibbleKernelSupported, type NibbleKernel } from '../kernels/nibble-kernel';
import type { RowStore } from './chunked-exact';

type Scan = (plane: number, q: number, out: number, n: number, W: number) => void;

/** Byte offsets of the planes and the query codes in the store's wasm memory. */
export interface PlanesLayout {
  hiAt: number;
  loAt: number;
  /** int8 query codes (2W bytes), then the same as int16 (4W bytes). */
  q8At: number;
  q16At: number;
  /** With the low plane in a row store: where its candidates' rows are read to, and how many fit. */
  scratchAt: number;
  scratchRows: number;
  /** Bytes from hiAt to the end of the int16 query (and of the scratch rows). */
  bytes: number;
}

/** Low-plane rows read per step of the second pass when the plane is in a row store (384 KiB at 384). */
export const LO_SCRATCH_ROWS = 2048;

/** Rows the planes hold: n rounded up to 4 (the relaxed kernel scores four rows per step). */
export const planeRows = (n: number) => Math.ceil(n / 4) * 4;

/**
 * Where the planes of n rows of `dim` go from byte `at` (16-aligned) on; `loInMemory` false: the
 * high plane only, and a scratch area for LO_SCRATCH_ROWS low rows read back from the row store.
 */
export function planesLayout(n: number, dim: number, at: number, loInMemory = true): PlanesLayout {
  const W = nibbleWidth(dim);
  const hiAt = Math.ceil(at / 16) * 16;
  const loAt = hiAt + planeRows(n) * W;
  const q8At = loAt + (loInMemory ? planeRows(n) * W : 0);
  const q16At = q8At + 2 * W;
  const scratchAt = q16At + 4 * W;
  const scratchRows = loInMemory ? 0 : LO_SCRATCH_ROWS;
  return { hiAt, loAt, q8At, q16At, scratchAt, scratchRows, bytes: scratchAt + scratchRows * W - hiAt };
}

export class NibblePlanes {
  readonly W: number;
  readonly hi: Uint8Array;
  readonly lo: Uint8Array;
  private readonly q8: Int8Array;
  private readonly q16: Int16Array;
  /** The first pass's kernel (null: JS), and the plain one for single candidate rows. */
  private readonly scan: Scan | null;
  private readonly scanRow: Scan | null;
  readonly kernel: NibbleKernel | 'js';
  /** Low-plane bytes read back from the row store (second passes). */
  loBytesRead = 0;
  /** encode()'s high rows before they are copied in (with the low plane in a row store). */
  private hiScratch: Uint8Array | null = null;

  constructor(
    memory: WebAssembly.Memory,
    private readonly layout: PlanesLayout,
    readonly n: number,
    readonly dim: number,
    /** The kernel to use instead of the best this engine runs (tests: 'js', as without wasm SIMD). */
    use?: NibbleKernel | 'js',
    /** Where the low plane lives when not in `memory` (row r: W bytes as W / 4 floats; see the header). */
    private readonly loStore?: RowStore,
  ) {
    const W = (this.W = nibbleWidth(dim));
    const rows = planeRows(n);
    if (loStore && layout.scratchRows === 0) throw new Error('a low plane in a row store needs scratch rows');
    this.hi = new Uint8Array(memory.buffer, layout.hiAt, rows * W);
    this.lo = loStore
      ? new Uint8Array(memory.buffer, layout.scratchAt, layout.scratchRows * W)
      : new Uint8Array(memory.buffer, layout.loAt, rows * W);
    // Padding rows hold code 0 (their scores are never read).
    this.hi.fill(0x88, n * W);
    this.q8 = new Int8Array(memory.buffer, layout.q8At, 2 * W);
    this.q16 = new Int16Array(memory.buffer, layout.q16At, 2 * W);
    const best = use ?? nibbleKernelSupported();
    const k = best === 'js' ? null : best;
    this.kernel = k ?? 'js';
    this.scan = k ? nibbleKernel(memory, k) : null;
    this.scanRow = k ? (k === 'wasm-simd' ? this.scan : nibbleKernel(memory, 'wasm-simd')) : null;
  }

  /** Codes of `rows` (m × dim) as rows `first` … of the planes. */
  encode(rows: Float32Array, scales: Float32Array, first: number): void {
    if (!this.loStore) return encodeNibbleRows(rows, this.dim, scales, this.hi, this.lo, first);
    // The low rows through a scratch (at most the scratch area's rows at a time) to the row store.
    const { W, dim } = this;
    const step = this.lo.length / W;
    const hi = (this.hiScratch ??= new Uint8Array(step * W));
    for (let r = 0; r < rows.length / dim; r += step) {
      const m = Math.min(step, rows.length / dim - r);
      encodeNibbleRows(rows.subarray(r * dim, (r + m) * dim), dim, scales, hi, this.lo, 0);
      this.hi.set(hi.subarray(0, m * W), (first + r) * W);
      this.loStore.write(new Float32Array(this.lo.buffer, this.lo.byteOffset, (m * W) / 4), first + r);
    }
  }

  /**
   * The best `keep` rows by int8 score among the best `candidates` by 4-bit score (rows in
   * `exclude` skipped), in ascending row order. `block` (a multiple of 4 rows, at byte `outAt` of
   * the memory) is the caller's scratch; the candidates are taken from each block as it is scanned.
   */
  select(
    q: Float32Array,
    qo: number,
    scales: Float32Array,
    candidates: number,
    keep: number,
    exclude: ReadonlySet<number> | null,
    block: Int32Array,
    outAt: number,
  ): Int32Array {
    const { W, n, layout } = this;
    quantiseQueryNibbles(q, qo, this.dim, scales, this.q8);
    for (let j = 0; j < 2 * W; j++) this.q16[j] = this.q8[j];
    const qFirst = this.kernel === 'wasm-relaxed-simd' ? layout.q8At : layout.q16At;
    const heap = new CandidateHeap(Math.max(candidates, keep));
    for (let r0 = 0; r0 < n; r0 += block.length) {
      const c = Math.min(block.length, n - r0);
      if (this.scan) this.scan(layout.hiAt + r0 * W, qFirst, outAt, planeRows(c), W);
      else scanNibblesJs(this.hi, r0, c, W, this.q8, block);
      heap.offer(block, c, r0, exclude);
    }
    const { rows: cand, scores: a } = heap.result();
    if (cand.length <= keep) return cand;
    // Second pass: each candidate's low plane, making its int8 score.
    const b = this.loStore ? this.lowScores(cand, block, outAt) : new Int32Array(cand.length);
    const one = block.subarray(0, 1);
    for (let i = 0; i < cand.length && !this.loStore; i++) {
      if (this.scanRow) {
        this.scanRow(layout.loAt + cand[i] * W, layout.q16At, outAt, 1, W);
        b[i] = one[0];
      } else {
        scanNibblesJs(this.lo, cand[i], 1, W, this.q8, one);
        b[i] = one[0];
      }
    }
    const best = topCandidates(combinePlanes(a, b, cand.length), cand.length, keep);
    return best.map((i) => cand[i]);
  }

  /**
   * The low-plane scores of `cand` (rows) read back from the row store: in row order, one read per
   * run of consecutive rows, a scratch area at a time, scored there by the plain kernel (or JS).
   */
  private lowScores(cand: Int32Array, block: Int32Array, outAt: number): Int32Array {
    const { W, layout } = this;
    const store = this.loStore!;
    const b = new Int32Array(cand.length);
    const order = Array.from(cand.keys()).sort((x, y) => cand[x] - cand[y]);
    const step = Math.min(layout.scratchRows, block.length);
    const into = new Float32Array(this.lo.buffer, this.lo.byteOffset, (step * W) / 4);
    for (let s = 0; s < order.length; s += step) {
      const part = order.slice(s, s + step);
      let at = 0;
      for (const [first, count] of rowRuns(part.map((i) => cand[i]))) {
        store.read(first, count, into.subarray((at * W) / 4));
        at += count;
      }
      this.loBytesRead += part.length * W;
      if (this.scanRow) this.scanRow(layout.scratchAt, layout.q16At, outAt, part.length, W);
      else scanNibblesJs(this.lo, 0, part.length, W, this.q8, block);
      part.forEach((i, j) => (b[i] = block[j]));
    }
    return b;
  }

  /** Bytes of the planes held in memory (the high plane only when the low one is in a row store). */
  bytes(): number {
    return (this.loStore ? 1 : 2) * planeRows(this.n) * this.W;
  }
}
