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

/** Unsigned LEB128 (exported with the helpers below for workers/nibble-kernel.ts). */
export function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

/** Signed LEB128 (small constants only). */
export function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

export const str = (s: string) => [...uleb(s.length), ...new TextEncoder().encode(s)];
export const section = (id: number, body: number[]) => [id, ...uleb(body.length), ...body];

// Opcodes (core, then SIMD after the 0xfd prefix, LEB128 sub-opcodes).
const I32 = 0x7f;
const V128 = 0x7b;
const BLOCK = 0x02;
const LOOP = 0x03;
const VOID = 0x40;
const END = 0x0b;
const BR = 0x0c;
const BR_IF = 0x0d;
const GET = 0x20;
const SET = 0x21;
const TEE = 0x22;
const I32_STORE = 0x36;
const I32_CONST = 0x41;
const I32_GE_U = 0x4f;
const I32_LT_U = 0x49;
const I32_ADD = 0x6a;
const I32_SHL = 0x74;
const simd = (op: number) => [0xfd, ...uleb(op)];
const V128_LOAD = (offset: number) => [...simd(0x00), 0, ...uleb(offset)];
const V128_ZERO = [...simd(0x0c), ...new Array(16).fill(0)];
const EXTEND_LOW_S = simd(0x87); // i16x8.extend_low_i8x16_s
const EXTEND_HIGH_S = simd(0x88); // i16x8.extend_high_i8x16_s
const DOT = simd(0xba); // i32x4.dot_i16x8_s
const ADD4 = simd(0xae); // i32x4.add
const LANE = (i: number) => [...simd(0x1b), i]; // i32x4.extract_lane

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
