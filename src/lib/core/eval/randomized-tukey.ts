// The randomized Tukey HSD test (Carterette 2012, "Multiple testing in statistical analysis of
// systems-based information retrieval experiments", ACM TOIS 30(1); Sakai 2014, "Statistical reform in
// information retrieval?", SIGIR Forum 48(1)): a permutation version of Tukey's HSD that needs no
// normality. Under the null hypothesis that the N runs are interchangeable, each query's N scores may
// be shuffled among the runs. Each trial shuffles every query's scores independently (a uniformly
// random permutation per query) and records the range (max − min) of the N runs' means; a pair's
// adjusted p is the share of trials whose range reaches the pair's observed |difference of means|.
// Comparing every pair with the distribution of the largest difference is what controls the
// family-wise error over all pairs, as the studentized range does for Tukey's HSD.
//
// Conventions (fixed here so that results can be reproduced):
// - Statistics are sums over queries (the means times Q). A trial reaches a pair when
//   range(S*) ≥ |S_b − S_a| − 1e-9·Σ_q (max_r x_qr − min_r x_qr): the tolerance absorbs summation
//   rounding, so that arrangements equal to the observed one in exact arithmetic count.
// - Monte Carlo: p = (count + 1) / (B + 1), the observed arrangement counting as one of the trials
//   (never 0; 1 for a pair with no difference), as stats.ts's randomization test; its standard error
//   is reported as √(p(1 − p)/B).
// - Exact: every one of the N!^Q arrangements (the observed one included), p = count / N!^Q, se 0.
// - Random numbers: xoshiro128** seeded as random.ts, one stream for all trials and queries in order.
//   An arrangement is an array `order` (run r takes the score of run order[r]), the identity at the
//   start and never reset: each query, in each trial, shuffles it further by a Fisher–Yates pass
//   (positions i = N − 1 down to 1, order[i] swapped with order[j], j uniform in [0, i]) and reads its
//   scores through it. A uniform permutation composed with any independent one is uniform, so every
//   query's arrangement is uniform and independent of the others; not resetting saves the copy.
//   The choices j are the mixed-radix digits (radices N, N − 1, …, 2) of 32-bit draws u: consecutive
//   choices are grouped so that the product P of their radices stays ≤ 2^32, u is drawn again while
//   u ≥ ⌊2^32 / P⌋·P (so the digits are exactly uniform and independent), and the digits are read
//   from the lowest (u mod N first). For N ≤ 12 that is one draw per query and trial.
import { seedState } from './random';
import { RANDOMIZATION_TOLERANCE } from './stats';
import {
  DEFAULT_ALPHA,
  checkAlpha,
  runGroups,
  scoreMatrix,
  type MultiComparison,
  type PairComparison,
  type ScoreMatrix,
} from './multi-compare';

export const RANDOMIZED_TUKEY_METHOD = 'Randomized Tukey HSD (scores permuted within queries)';
export const DEFAULT_RANDOMIZED_TUKEY_TRIALS = 1000;
/** Largest N!^Q the exact version enumerates. */
export const MAX_EXACT_ARRANGEMENTS = 2 ** 22;

export interface RandomizedTukeyOptions {
  /** Trials B. Default 1000. */
  trials?: number;
  /** PRNG seed (any number, taken modulo 2^32). Default 0. */
  seed?: number;
  /** Significance level. Default 0.05. */
  alpha?: number;
}

const TWO32 = 4294967296;

/** The tolerance of "reaches" (see the file header). */
function tolerance(m: ScoreMatrix): number {
  const { runs: N, queries: Q, x } = m;
  let spread = 0;
  for (let q = 0; q < Q; q++) {
    let lo = Infinity;
    let hi = -Infinity;
    for (let r = 0; r < N; r++) {
      const v = x[q * N + r];
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    spread += hi - lo;
  }
  return RANDOMIZATION_TOLERANCE * spread;
}

/**
 * The range (max − min) of the N runs' score sums in each of B trials, each query's scores permuted
 * among the runs (see the file header for the random draws). Typed arrays only, nothing allocated per
 * trial.
 */
export function permutedRanges(m: ScoreMatrix, trials: number, seed: number): Float64Array {
  const { runs: N, queries: Q, x } = m;
  // Group the Fisher–Yates choices (radices N, N − 1, …, 2) into draws of one 32-bit word each.
  const groupSize: number[] = [];
  const groupLimit: number[] = [];
  for (let radix = N; radix >= 2;) {
    let product = 1;
    let size = 0;
    while (radix >= 2 && product * radix <= TWO32) {
      product *= radix;
      radix--;
      size++;
    }
    groupSize.push(size);
    groupLimit.push(Math.floor(TWO32 / product) * product);
  }
  const G = groupSize.length;
  const sizes = Int32Array.from(groupSize);
  const limits = Float64Array.from(groupLimit);
  const inverse = new Float64Array(N + 1);
  for (let k = 1; k <= N; k++) inverse[k] = 1 / k;
  const ranges = new Float64Array(trials);
  const sums = new Float64Array(N);
  // The current arrangement: run r takes the score of column order[r] (see the file header).
  const order = new Int32Array(N);
  for (let r = 0; r < N; r++) order[r] = r;
  let [s0, s1, s2, s3] = seedState(seed);
  for (let t = 0; t < trials; t++) {
    sums.fill(0);
    for (let q = 0, base = 0; q < Q; q++, base += N) {
      let i = N - 1;
      for (let g = 0; g < G; g++) {
        const limit = limits[g];
        let u: number;
        do {
          // xoshiro128** (random.ts), inlined.
          const mul = Math.imul(s1, 5);
          u = Math.imul((mul << 7) | (mul >>> 25), 9) >>> 0;
          const sh = s1 << 9;
          s2 ^= s0;
          s3 ^= s1;
          s1 ^= s2;
          s0 ^= s3;
          s2 ^= sh;
          s3 = (s3 << 11) | (s3 >>> 21);
        } while (u >= limit);
        for (let k = sizes[g]; k > 0; k--, i--) {
          // j = u mod (i + 1), u = ⌊u / (i + 1)⌋: a multiplication by the reciprocal, off by at most
          // one (u < 2^32), then corrected.
          const radix = i + 1;
          let next = Math.floor(u * inverse[radix]);
          let j = u - next * radix;
          if (j < 0) {
            next--;
            j += radix;
          } else if (j >= radix) {
            next++;
            j -= radix;
          }
          u = next;
          const v = order[j];
          order[j] = order[i];
          order[i] = v;
          sums[i] += x[base + v];
        }
      }
      sums[0] += x[base + order[0]];
    }
    let lo = sums[0];
    let hi = sums[0];
    for (let r = 1; r < N; r++) {
      const v = sums[r];
      if (v < lo) lo = v;
      else if (v > hi) hi = v;
    }
    ranges[t] = hi - lo;
  }
  return ranges;
}

/** The ranges of all N!^Q arrangements (each query's scores in every order), in enumeration order. */
export function allArrangementRanges(m: ScoreMatrix): Float64Array {
  const { runs: N, queries: Q, x } = m;
  const perms = permutations(N);
  const P = perms.length / N;
  const total = P ** Q;
  if (!(total <= MAX_EXACT_ARRANGEMENTS))
    throw new RangeError(
      `exact randomized Tukey HSD would enumerate ${N}!^${Q} = ${total} arrangements (at most ${MAX_EXACT_ARRANGEMENTS})`,
    );
  const ranges = new Float64Array(total);
  // partial[d·N + r]: run r's sum over the first d queries in the current arrangement.
  const partial = new Float64Array((Q + 1) * N);
  let next = 0;
  const visit = (d: number) => {
    if (d === Q) {
      let lo = partial[Q * N];
      let hi = lo;
      for (let r = 1; r < N; r++) {
        const v = partial[Q * N + r];
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
      ranges[next++] = hi - lo;
      return;
    }
    for (let p = 0; p < P; p++) {
      for (let r = 0; r < N; r++) partial[(d + 1) * N + r] = partial[d * N + r] + x[d * N + perms[p * N + r]];
      visit(d + 1);
    }
  };
  visit(0);
  return ranges;
}

/** All permutations of 0..n−1, n values each, in lexicographic order. */
function permutations(n: number): Int32Array {
  const out: number[] = [];
  const cur: number[] = [];
  const used = new Array<boolean>(n).fill(false);
  const rec = () => {
    if (cur.length === n) {
      out.push(...cur);
      return;
    }
    for (let v = 0; v < n; v++)
      if (!used[v]) {
        used[v] = true;
        cur.push(v);
        rec();
        cur.pop();
        used[v] = false;
      }
  };
  rec();
  return Int32Array.from(out);
}

/** Counts, for each pair, the ranges ≥ its threshold, and assembles the comparison. */
function fromRanges(
  runs: readonly string[],
  m: ScoreMatrix,
  ranges: Float64Array,
  alpha: number,
  exact: boolean,
  seed: number | undefined,
): MultiComparison {
  const { runs: N, queries: Q, sums } = m;
  const B = ranges.length;
  const sorted = Float64Array.from(ranges).sort();
  const tol = tolerance(m);
  const means = Array.from(sums, (s) => s / Q);
  const pairs: PairComparison[] = [];
  for (let i = 0; i < N; i++)
    for (let j = i + 1; j < N; j++) {
      const thr = Math.abs(sums[j] - sums[i]) - tol;
      // First index whose range reaches thr (binary search in the sorted ranges).
      let lo = 0;
      let hi = B;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (sorted[mid] >= thr) hi = mid;
        else lo = mid + 1;
      }
      const count = B - lo;
      const pAdj = exact ? count / B : (count + 1) / (B + 1);
      pairs.push({
        a: runs[i],
        b: runs[j],
        diff: means[j] - means[i],
        pAdj,
        se: exact ? 0 : Math.sqrt((pAdj * (1 - pAdj)) / B),
        significant: pAdj < alpha,
      });
    }
  return {
    method: exact ? `${RANDOMIZED_TUKEY_METHOD}, exact` : RANDOMIZED_TUKEY_METHOD,
    alpha,
    runs: [...runs],
    queries: Q,
    means,
    pairs,
    trials: B,
    ...(exact ? {} : { seed }),
    exact,
    ...runGroups(runs, means, pairs, alpha),
  };
}

/**
 * Randomized Tukey HSD over every pair of runs (`scores[r][q]`, queries in the same order for every
 * run): B trials of within-query permutations, p = (count + 1)/(B + 1) with its Monte Carlo standard
 * error (file header). The same seed gives the same p values.
 */
export function randomizedTukeyHsd(
  runs: readonly string[],
  scores: readonly ArrayLike<number>[],
  opts: RandomizedTukeyOptions = {},
): MultiComparison {
  const B = opts.trials ?? DEFAULT_RANDOMIZED_TUKEY_TRIALS;
  if (!(Number.isSafeInteger(B) && B >= 1))
    throw new RangeError(`trials must be a positive integer, got ${B}`);
  const alpha = opts.alpha ?? DEFAULT_ALPHA;
  checkAlpha(alpha);
  const seed = opts.seed ?? 0;
  const m = scoreMatrix(runs, scores);
  return fromRanges(runs, m, permutedRanges(m, B, seed), alpha, false, seed);
}

/**
 * The exact randomized Tukey HSD: every one of the N!^Q arrangements (at most
 * `MAX_EXACT_ARRANGEMENTS`), p = count / N!^Q. For tiny cases and for checking the Monte Carlo version.
 */
export function exactRandomizedTukeyHsd(
  runs: readonly string[],
  scores: readonly ArrayLike<number>[],
  opts: { alpha?: number } = {},
): MultiComparison {
  const alpha = opts.alpha ?? DEFAULT_ALPHA;
  checkAlpha(alpha);
  const m = scoreMatrix(runs, scores);
  return fromRanges(runs, m, allArrangementRanges(m), alpha, true, undefined);
}
