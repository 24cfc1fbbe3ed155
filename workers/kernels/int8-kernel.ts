// The int8 scan kernel of the compact vector store: a few dozen bytes of WebAssembly with 128-bit
// SIMD, assembled here (no toolchain: the module is small enough to write out opcode by opcode, see
// the WebAssembly core and SIMD specifications' binary format). One exported function,
//
//   scan(codes, q, out, n, P)   for r in 0 … n − 1:  out[r] = Σ_{d < P} q[d] · codes[r·P + d]
//
// with int8 codes (rows P bytes wide, P a multiple of 16), int16 query codes and int32 sums; the
// caller keeps P · 127 · max|q| below 2³¹ (queryQmax), so no sum wraps and the answer equals
// scanJs() in src/lib/core/retrieval/int8-scan.ts exactly. Per 16 codes: one load, two sign
// extensions to int16, two i32x4.dot_i16x8_s against the query, two adds.
//
// The module imports its memory, so the store decides its size: the codes live in it (a view of
// it is the store's Int8Array), with the query and the scores beside them.

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

// Opcodes of this kernel alone (the shared ones are in wasm-asm.ts).
const EXTEND_LOW_S = simd(0x87); // i16x8.extend_low_i8x16_s
const EXTEND_HIGH_S = simd(0x88); // i16x8.extend_high_i8x16_s

// Locals: params codes 0, q 1, out 2, n 3, P 4; then row 5, j 6 (i32), acc 7, v 8 (v128).
const [CODES, Q, OUT, N, P, ROW, J, ACC, V] = [0, 1, 2, 3, 4, 5, 6, 7, 8];

/** q + 2j: the int16 query codes matching codes j … j + 15. */
const qAt = [GET, Q, GET, J, I32_CONST, ...sleb(1), I32_SHL, I32_ADD];

// prettier-ignore
const body = [
  ...[2, ...uleb(2), I32, ...uleb(2), V128], // local declarations
  BLOCK, VOID,
  LOOP, VOID,
  GET, ROW, GET, N, I32_GE_U, BR_IF, 1,
  ...V128_ZERO, SET, ACC,
  I32_CONST, 0, SET, J,
  LOOP, VOID,
  // acc += dot(low 8 codes, q[j … j+7]) + dot(high 8 codes, q[j+8 … j+15])
  GET, CODES, GET, J, I32_ADD, ...V128_LOAD(0), TEE, V,
  ...EXTEND_LOW_S, ...qAt, ...V128_LOAD(0), ...DOT, GET, ACC, ...ADD4, SET, ACC,
  GET, V, ...EXTEND_HIGH_S, ...qAt, ...V128_LOAD(16), ...DOT, GET, ACC, ...ADD4, SET, ACC,
  GET, J, I32_CONST, ...sleb(16), I32_ADD, TEE, J, GET, P, I32_LT_U, BR_IF, 0,
  END,
  // out[row] = the four lanes' sum
  GET, OUT, GET, ROW, I32_CONST, ...sleb(2), I32_SHL, I32_ADD,
  GET, ACC, ...LANE(0), GET, ACC, ...LANE(1), I32_ADD, GET, ACC, ...LANE(2), I32_ADD,
  GET, ACC, ...LANE(3), I32_ADD,
  I32_STORE, 2, 0,
  GET, CODES, GET, P, I32_ADD, SET, CODES,
  GET, ROW, I32_CONST, ...sleb(1), I32_ADD, SET, ROW,
  BR, 0,
  END,
  END,
  END, // function
];

/** The module's bytes (exported for tests: WebAssembly.validate, and the opcode listing above). */
export const INT8_KERNEL_WASM = new Uint8Array([
  ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00], // "\0asm", version 1
  // type 0: (i32 × 5) → ()
  ...section(1, [1, 0x60, 5, I32, I32, I32, I32, I32, 0]),
  // import "e" "m": a memory of at least one page
  ...section(2, [1, ...str('e'), ...str('m'), 0x02, 0x00, 1]),
  ...section(3, [1, 0]),
  ...section(7, [1, ...str('scan'), 0x00, 0]),
  ...section(10, [1, ...uleb(body.length), ...body]),
]);

let compiled: WebAssembly.Module | null = null;

/** Whether this engine runs the kernel (wasm SIMD); the store falls back to scanJs when not. */
export function int8KernelSupported(): boolean {
  try {
    return WebAssembly.validate(INT8_KERNEL_WASM);
  } catch {
    return false;
  }
}

/** The kernel bound to `memory`: scan(codesPtr, queryPtr, outPtr, rows, P), byte addresses. */
export function int8Kernel(
  memory: WebAssembly.Memory,
): (codes: number, q: number, out: number, n: number, P: number) => void {
  compiled ??= new WebAssembly.Module(INT8_KERNEL_WASM);
  const inst = new WebAssembly.Instance(compiled, { e: { m: memory } });
  return inst.exports.scan as (codes: number, q: number, out: number, n: number, P: number) => void;
}
