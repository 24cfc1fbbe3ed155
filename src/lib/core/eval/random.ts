// Seeded random numbers for the resampling tests: xoshiro128** (Blackman & Vigna) with the seeding and
// Lemire's exactly uniform integers described in stats.ts's header. Deterministic for a given seed.

function fmix32(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) | 0;
}

/** The four state words xoshiro128** starts from for `seed` (for generators inlined in hot loops). */
export function seedState(seed: number): [number, number, number, number] {
  if (!Number.isFinite(seed)) throw new RangeError(`seed must be a finite number, got ${seed}`);
  const s = Math.trunc(seed) >>> 0;
  return [1, 2, 3, 4].map((i) => fmix32((s + i * 0x9e3779b9) | 0)) as [number, number, number, number];
}

/** xoshiro128** with the seeding described in the file header. */
export class Xoshiro128 {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number) {
    [this.s0, this.s1, this.s2, this.s3] = seedState(seed);
  }

  /** Next output, an integer in [0, 2^32). */
  nextUint32(): number {
    const s1 = this.s1;
    const m = Math.imul(s1, 5);
    const result = Math.imul((m << 7) | (m >>> 25), 9) >>> 0;
    const t = s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= s1;
    this.s1 = s1 ^ this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = (this.s3 << 11) | (this.s3 >>> 21);
    return result;
  }

  /** A float in [0, 1) with 32 random bits: nextUint32() / 2^32. */
  nextFloat(): number {
    return this.nextUint32() / 4294967296;
  }

  /** An exactly uniform integer in [0, n), 1 ≤ n ≤ 2^21 (see the file header). */
  nextInt(n: number): number {
    if (!(Number.isInteger(n) && n >= 1 && n <= MAX_INT_RANGE)) throw new RangeError(`bad range ${n}`);
    return uniformBelow(this, n, 4294967296 % n);
  }
}

/** Largest n of `Xoshiro128.nextInt` (u·n stays an exact double below 2^53). */
export const MAX_INT_RANGE = 2 ** 21;

/** Lemire's method with `threshold` = 2^32 mod n precomputed; n ≤ 2^21. */
export function uniformBelow(rng: Xoshiro128, n: number, threshold: number): number {
  for (;;) {
    const m = rng.nextUint32() * n;
    const hi = Math.floor(m / 4294967296);
    if (m - hi * 4294967296 >= threshold) return hi;
  }
}
