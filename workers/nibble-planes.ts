// The compact vector store's codes as two 4-bit planes, and its two-pass candidate search
// (src/lib/core/retrieval/nibble-scan.ts has the layout and the arithmetic): the high plane of
// every row is scanned by the wasm kernel (workers/nibble-kernel.ts; relaxed SIMD, else plain SIMD,
// else JS: the same integers), the best `candidates` rows get their low plane added (their int8
// score), and the best `keep` of those go on to the store's exact rescoring.
import {
  combinePlanes,
  encodeNibbleRows,
  nibbleWidth,
  quantiseQueryNibbles,
  scanNibblesJs,
} from '../src/lib/core/retrieval/nibble-scan';
import { CandidateHeap, topCandidates } from '../src/lib/core/retrieval/int8-scan';
import { nibbleKernel, nibbleKernelSupported, type NibbleKernel } from './nibble-kernel';

type Scan = (plane: number, q: number, out: number, n: number, W: number) => void;

/** Byte offsets of the planes and the query codes in the store's wasm memory. */
export interface PlanesLayout {
  hiAt: number;
  loAt: number;
  /** int8 query codes (2W bytes), then the same as int16 (4W bytes). */
  q8At: number;
  q16At: number;
  /** Bytes from hiAt to the end of the int16 query. */
  bytes: number;
}

/** Rows the planes hold: n rounded up to 4 (the relaxed kernel scores four rows per step). */
export const planeRows = (n: number) => Math.ceil(n / 4) * 4;

/** Where the planes of n rows of `dim` go from byte `at` (16-aligned) on. */
export function planesLayout(n: number, dim: number, at: number): PlanesLayout {
  const W = nibbleWidth(dim);
  const hiAt = Math.ceil(at / 16) * 16;
  const loAt = hiAt + planeRows(n) * W;
  const q8At = loAt + planeRows(n) * W;
  const q16At = q8At + 2 * W;
  return { hiAt, loAt, q8At, q16At, bytes: q16At + 4 * W - hiAt };
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

  constructor(
    memory: WebAssembly.Memory,
    private readonly layout: PlanesLayout,
    readonly n: number,
    readonly dim: number,
    /** The kernel to use instead of the best this engine runs (tests: 'js', as without wasm SIMD). */
    use?: NibbleKernel | 'js',
  ) {
    const W = (this.W = nibbleWidth(dim));
    const rows = planeRows(n);
    this.hi = new Uint8Array(memory.buffer, layout.hiAt, rows * W);
    this.lo = new Uint8Array(memory.buffer, layout.loAt, rows * W);
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
    encodeNibbleRows(rows, this.dim, scales, this.hi, this.lo, first);
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
    const b = new Int32Array(cand.length);
    const one = block.subarray(0, 1);
    for (let i = 0; i < cand.length; i++) {
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

  /** Bytes of the two planes. */
  bytes(): number {
    return 2 * planeRows(this.n) * this.W;
  }
}
