// Hand-assembling WebAssembly for the compact store's scan kernels (workers/kernels/int8-kernel.ts,
// workers/kernels/nibble-kernel.ts): LEB128 numbers, names and sections of the binary format, and the opcodes
// both kernels use (core, then SIMD after the 0xfd prefix with LEB128 sub-opcodes), as the WebAssembly
// core and SIMD specifications number them.

/** Unsigned LEB128. */
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

// Opcodes both kernels use.
export const I32 = 0x7f;
export const V128 = 0x7b;
export const BLOCK = 0x02;
export const LOOP = 0x03;
export const VOID = 0x40;
export const END = 0x0b;
export const BR = 0x0c;
export const BR_IF = 0x0d;
export const GET = 0x20;
export const SET = 0x21;
export const TEE = 0x22;
export const I32_STORE = 0x36;
export const I32_CONST = 0x41;
export const I32_GE_U = 0x4f;
export const I32_LT_U = 0x49;
export const I32_ADD = 0x6a;
export const I32_SHL = 0x74;
export const simd = (op: number) => [0xfd, ...uleb(op)];
export const V128_LOAD = (offset: number) => [...simd(0x00), 0, ...uleb(offset)];
export const V128_ZERO = [...simd(0x0c), ...new Array(16).fill(0)];
export const DOT = simd(0xba); // i32x4.dot_i16x8_s
export const ADD4 = simd(0xae); // i32x4.add
export const LANE = (i: number) => [...simd(0x1b), i]; // i32x4.extract_lane
