// The 4-bit plane scan of the compact vector store's two-pass search (src/lib/core/retrieval/
// nibble-scan.ts has the layout and the JS reference, scanNibblesJs), hand-assembled as
// workers/kernels/int8-kernel.ts is. One exported function in each of two modules,
//
//   scan(plane, q, out, n, W)   for r in 0 … n − 1:  out[r] = Σ_d q_d · nibble_d(plane row r)
//
// with plane rows W bytes wide (16 per group of 32 dimensions: byte i holds dimension 32g + i low,
// 32g + 16 + i high), nibbles 0 … 15 and int32 sums.
//
// - 'wasm-relaxed-simd' (int8 query codes at q, 2W bytes; n a multiple of 4): four rows per step
//   sharing the query's loads; per row and 16 plane bytes, one load, an and and a shift split the
//   nibbles, two i16x8.relaxed_dot_i8x16_i7x16_s multiply them by 32 query codes and two int16 adds
//   keep the sums. The relaxed instruction is deterministic here: its second operand (the nibbles)
//   is in 0 … 127 and its pair sums (at most 2 · 128 · 15) cannot saturate; the int16 sums cannot
//   wrap, as the query's codes stay within nibbleQmax(W). So every engine gives scanNibblesJs's
//   integers.
// - 'wasm-simd' (the same codes as int16 at q, 4W bytes), for engines without relaxed SIMD: four
//   unsigned extensions to int16 and four i32x4.dot_i16x8_s per 16 plane bytes.

import {
  ADD4,
  BLOCK,
  BR,
  BR_IF,
  DOT,
  END,
  GET,
  I32,
  I32_ADD,
  I32_CONST,
  I32_GE_U,
  I32_LT_U,
  I32_SHL,
  I32_STORE,
  LANE,
  LOOP,
  section,
  SET,
  simd,
  sleb,
  str,
  TEE,
  uleb,
  V128,
  V128_LOAD,
  V128_ZERO,
  VOID,
} from './wasm-asm';

export type NibbleKernel = 'wasm-relaxed-simd' | 'wasm-simd';

const I8_SPLAT = simd(0x0f); // i8x16.splat
const AND = simd(0x4e); // v128.and
const SHR_U = simd(0x6d); // i8x16.shr_u
const EXTEND_LOW_U = simd(0x89); // i16x8.extend_low_i8x16_u
const EXTEND_HIGH_U = simd(0x8a); // i16x8.extend_high_i8x16_u

// Locals: params plane 0, q 1, out 2, n 3, W 4; then row 5, j 6 (i32), acc 7, v 8, mask 9, low 10 (v128).
const [PLANE, Q, OUT, N, W, ROW, J, ACC, V, MASK, LOW] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

/** q + (j << shift): the query codes of plane bytes j … j + 15 (shift 1: int8 codes, 2: int16). */
const qAt = (shift: number) => [GET, Q, GET, J, I32_CONST, ...sleb(shift), I32_SHL, I32_ADD];
/** acc ← acc + dot(int16 lanes on the stack, int16 query at offset). */
const dot16 = (offset: number) => [...qAt(2), ...V128_LOAD(offset), ...DOT, GET, ACC, ...ADD4, SET, ACC];

// Plain SIMD: the low and high nibbles widened to int16 in halves, each dotted with the int16 query.
// prettier-ignore
const plainInner = [
  GET, PLANE, GET, J, I32_ADD, ...V128_LOAD(0), TEE, V, GET, MASK, ...AND, TEE, LOW,
  ...EXTEND_LOW_U, ...dot16(0),
  GET, LOW, ...EXTEND_HIGH_U, ...dot16(16),
  GET, V, I32_CONST, 4, ...SHR_U, TEE, V,
  ...EXTEND_LOW_U, ...dot16(32),
  GET, V, ...EXTEND_HIGH_U, ...dot16(48),
];

// prettier-ignore
function plainBody(inner: number[]): number[] {
  return [
    ...[2, ...uleb(2), I32, ...uleb(4), V128], // local declarations
    I32_CONST, 15, ...I8_SPLAT, SET, MASK,
    BLOCK, VOID,
    LOOP, VOID,
    GET, ROW, GET, N, I32_GE_U, BR_IF, 1,
    ...V128_ZERO, SET, ACC,
    I32_CONST, 0, SET, J,
    LOOP, VOID,
    ...inner,
    GET, J, I32_CONST, ...sleb(16), I32_ADD, TEE, J, GET, W, I32_LT_U, BR_IF, 0,
    END,
    // out[row] = the four lanes' sum
    GET, OUT, GET, ROW, I32_CONST, ...sleb(2), I32_SHL, I32_ADD,
    GET, ACC, ...LANE(0), GET, ACC, ...LANE(1), I32_ADD, GET, ACC, ...LANE(2), I32_ADD,
    GET, ACC, ...LANE(3), I32_ADD,
    I32_STORE, 2, 0,
    GET, PLANE, GET, W, I32_ADD, SET, PLANE,
    GET, ROW, I32_CONST, ...sleb(1), I32_ADD, SET, ROW,
    BR, 0,
    END,
    END,
    END, // function
  ];
}

const I16_ADD = simd(0x8e); // i16x8.add
const RELAXED_DOT16 = simd(0x112); // i16x8.relaxed_dot_i8x16_i7x16_s (a: i8, b: i7)
const EXTADD = simd(0x7e); // i32x4.extadd_pairwise_i16x8_s

/**
 * The relaxed kernel: four rows per step (n a multiple of 4), sharing each 32 query codes; per row
 * and 16 plane bytes one load, the nibbles split (and; shift), two i16x8.relaxed_dot_i8x16_i7x16_s
 * and two int16 adds. The int16 sums hold: each lane adds 4 products a group, so at most
 * 4 · (W / 16) · 15 · qmax, kept ≤ 32,767 by the query's qmax (nibbleQmax).
 */
function relaxedBody(): number[] {
  // Locals: params plane 0, q 1, out 2, n 3, W 4; i32 row 5, j 6, b 7, w2 8, w3 9, qa 10;
  // v128 acc0 … acc3 11–14, v 15, mask 16, ql 17, qh 18.
  const [ROW4, J4, B, W2, W3, QA, A0, V4, MASK4, QL, QH] = [5, 6, 7, 8, 9, 10, 11, 15, 16, 17, 18];
  const rowAt = (k: number) => (k === 0 ? [GET, B] : [GET, B, GET, [W, W2, W3][k - 1], I32_ADD]);
  // b = plane + j; ql, qh = the query codes of the group's low and high nibbles.
  // prettier-ignore
  const inner: number[] = [
    GET, PLANE, GET, J4, I32_ADD, SET, B,
    GET, Q, GET, J4, I32_CONST, 1, I32_SHL, I32_ADD, TEE, QA, ...V128_LOAD(0), SET, QL,
    GET, QA, ...V128_LOAD(16), SET, QH,
  ];
  // Row k: acc_k += dot(ql, v & 15) + dot(qh, v >> 4), v its 16 bytes.
  // prettier-ignore
  for (let k = 0; k < 4; k++)
    inner.push(
      GET, QL, ...rowAt(k), ...V128_LOAD(0), TEE, V4, GET, MASK4, ...AND, ...RELAXED_DOT16,
      GET, A0 + k, ...I16_ADD, SET, A0 + k,
      GET, QH, GET, V4, I32_CONST, 4, ...SHR_U, ...RELAXED_DOT16,
      GET, A0 + k, ...I16_ADD, SET, A0 + k,
    );
  // out[row + k] = the sum of acc_k's eight int16 lanes (pairwise to int32, then the four).
  const store: number[] = [];
  // prettier-ignore
  for (let k = 0; k < 4; k++)
    store.push(
      GET, OUT, GET, ROW4, I32_CONST, ...sleb(k), I32_ADD, I32_CONST, 2, I32_SHL, I32_ADD,
      GET, A0 + k, ...EXTADD, SET, A0 + k,
      GET, A0 + k, ...LANE(0), GET, A0 + k, ...LANE(1), I32_ADD, GET, A0 + k, ...LANE(2), I32_ADD,
      GET, A0 + k, ...LANE(3), I32_ADD,
      I32_STORE, 2, 0,
    );
  // prettier-ignore
  return [
    ...[2, ...uleb(6), I32, ...uleb(8), V128], // local declarations
    I32_CONST, 15, ...I8_SPLAT, SET, MASK4,
    GET, W, I32_CONST, 1, I32_SHL, SET, W2,
    GET, W2, GET, W, I32_ADD, SET, W3,
    BLOCK, VOID,
    LOOP, VOID,
    GET, ROW4, GET, N, I32_GE_U, BR_IF, 1,
    ...V128_ZERO, SET, A0, ...V128_ZERO, SET, A0 + 1, ...V128_ZERO, SET, A0 + 2, ...V128_ZERO, SET, A0 + 3,
    I32_CONST, 0, SET, J4,
    LOOP, VOID,
    ...inner,
    GET, J4, I32_CONST, ...sleb(16), I32_ADD, TEE, J4, GET, W, I32_LT_U, BR_IF, 0,
    END,
    ...store,
    GET, PLANE, GET, W, I32_CONST, 2, I32_SHL, I32_ADD, SET, PLANE,
    GET, ROW4, I32_CONST, 4, I32_ADD, SET, ROW4,
    BR, 0,
    END,
    END,
    END, // function
  ];
}

function moduleBytes(code: number[]): Uint8Array<ArrayBuffer> {
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00], // "\0asm", version 1
    ...section(1, [1, 0x60, 5, I32, I32, I32, I32, I32, 0]), // type 0: (i32 × 5) → ()
    ...section(2, [1, ...str('e'), ...str('m'), 0x02, 0x00, 1]), // import "e" "m": a memory
    ...section(3, [1, 0]),
    ...section(7, [1, ...str('scan'), 0x00, 0]),
    ...section(10, [1, ...uleb(code.length), ...code]),
  ]);
}

/** The modules' bytes (exported for tests). */
export const NIBBLE_KERNEL_WASM: Record<NibbleKernel, Uint8Array<ArrayBuffer>> = {
  'wasm-relaxed-simd': moduleBytes(relaxedBody()),
  'wasm-simd': moduleBytes(plainBody(plainInner)),
};

/** The best kernel this engine runs (relaxed SIMD, else plain SIMD), or null (then scanNibblesJs). */
export function nibbleKernelSupported(): NibbleKernel | null {
  for (const k of ['wasm-relaxed-simd', 'wasm-simd'] as const)
    try {
      if (WebAssembly.validate(NIBBLE_KERNEL_WASM[k])) return k;
    } catch {
      // not this one
    }
  return null;
}

const compiled = new Map<NibbleKernel, WebAssembly.Module>();

/** Kernel `kind` bound to `memory`: scan(planePtr, queryPtr, outPtr, rows, W), byte addresses. */
export function nibbleKernel(
  memory: WebAssembly.Memory,
  kind: NibbleKernel,
): (plane: number, q: number, out: number, n: number, W: number) => void {
  let m = compiled.get(kind);
  if (!m) compiled.set(kind, (m = new WebAssembly.Module(NIBBLE_KERNEL_WASM[kind])));
  const inst = new WebAssembly.Instance(m, { e: { m: memory } });
  return inst.exports.scan as (plane: number, q: number, out: number, n: number, W: number) => void;
}
