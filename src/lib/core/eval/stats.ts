// Paired comparisons of two systems over the same queries: bootstrap confidence intervals, the
// randomization (sign-flip) test, the paired t-test, Holm–Bonferroni correction and win/tie/loss
// counts. Pure: no DOM, no Node APIs; deterministic for a given seed; hot loops use typed arrays and
// allocate nothing per resample, so they run in a worker on 1,000 queries × 10,000 resamples in a few
// tens of milliseconds.
//
// Conventions:
// - `a` is the baseline and `b` the system compared with it; per query d_i = b_i − a_i, so a positive
//   mean difference means `b` scores higher. Scores are aligned by query id (`alignByQuery`): only the
//   queries both have count. To count queries a run misses as 0, evaluate it with `complete: true`.
// - Inputs must be finite numbers; an empty comparison (no query in common) is an error.
//
// Random numbers: xoshiro128** (Blackman & Vigna) seeded from a 32-bit seed (any number is taken
// modulo 2^32): the four state words are fmix32(seed + i·0x9E3779B9) for i = 1..4, fmix32 being
// MurmurHash3's 32-bit finaliser; fmix32 is a bijection, so the state is never all zero. An integer in
// [0, n) is ⌊u·n / 2^32⌋ for a 32-bit output u, drawing u again while (u·n mod 2^32) < (2^32 mod n)
// (Lemire's multiply-and-reject method), so it is exactly uniform.
import { compareUtf8 } from '../retrieval/topk';
import { MAX_INT_RANGE, Xoshiro128, uniformBelow } from './random';
import { studentTTwoSided } from './special-functions';

export { MAX_INT_RANGE, Xoshiro128 } from './random';
export {
  logBeta,
  logGamma,
  regularizedIncompleteBeta,
  studentTCdf,
  studentTTwoSided,
} from './special-functions';

// ---------------------------------------------------------------------------------------------------
// Pairing

/** Two systems' scores on the queries both have, in query-id byte order. */
export interface PairedScores {
  qids: string[];
  /** Baseline. */
  a: Float64Array;
  /** Compared system. */
  b: Float64Array;
}

/** Aligns two per-query score maps by query id, keeping the queries present in both (byte order). */
export function alignByQuery(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): PairedScores {
  const qids = [...a.keys()].filter((q) => b.has(q)).sort(compareUtf8);
  const xa = new Float64Array(qids.length);
  const xb = new Float64Array(qids.length);
  qids.forEach((q, i) => {
    xa[i] = a.get(q)!;
    xb[i] = b.get(q)!;
  });
  return { qids, a: xa, b: xb };
}

/** One measure's per-query values out of `EvalResult.perQuery`; throws if a query lacks the measure. */
export function measureByQuery(
  perQuery: ReadonlyMap<string, Readonly<Record<string, number>>>,
  measure: string,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const [q, values] of perQuery) {
    const v = values[measure];
    if (typeof v !== 'number') throw new Error(`query '${q}' has no value for measure '${measure}'`);
    out.set(q, v);
  }
  return out;
}

function finiteCopy(x: ArrayLike<number>, name: string): Float64Array {
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const v = x[i];
    if (!Number.isFinite(v)) throw new RangeError(`${name}[${i}] is not a finite number: ${v}`);
    out[i] = v;
  }
  return out;
}

interface Paired {
  a: Float64Array;
  b: Float64Array;
  d: Float64Array;
  n: number;
}

/** Validated copies of a and b and their differences d = b − a. */
function paired(a: ArrayLike<number>, b: ArrayLike<number>): Paired {
  if (a.length !== b.length)
    throw new RangeError(`paired samples differ in length: ${a.length} vs ${b.length}`);
  if (a.length === 0) throw new RangeError('no paired queries to compare');
  const xa = finiteCopy(a, 'a');
  const xb = finiteCopy(b, 'b');
  const d = new Float64Array(xa.length);
  for (let i = 0; i < d.length; i++) d[i] = xb[i] - xa[i];
  return { a: xa, b: xb, d, n: d.length };
}

function mean(x: Float64Array): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i];
  return s / x.length;
}

// ---------------------------------------------------------------------------------------------------
// Percentiles and bootstrap

/** The median of an unsorted sample (the mean of the middle two for an even count); NaN when empty. */
export function median(xs: readonly number[]): number {
  return xs.length
    ? percentile(
        [...xs].sort((a, b) => a - b),
        50,
      )
    : NaN;
}

/** The q-th percentile (0 ≤ q ≤ 100) of an unsorted sample, as `percentile`; NaN when empty. */
export function samplePercentile(xs: readonly number[], q: number): number {
  return xs.length
    ? percentile(
        [...xs].sort((a, b) => a - b),
        q,
      )
    : NaN;
}

/**
 * The q-th percentile (0 ≤ q ≤ 100) of an ascending-sorted sample, exactly as numpy's default
 * `np.percentile(x, q)` ('linear', Hyndman & Fan type 7): with h = (n − 1)·(q / 100), lo = ⌊h⌋ and
 * t = h − lo, the value is x[lo] + t·(x[lo+1] − x[lo]) (computed as x[lo+1] − (1 − t)·(x[lo+1] − x[lo])
 * when t ≥ 0.5, as numpy does); h ≥ n − 1 gives the maximum.
 */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  const n = sorted.length;
  if (n === 0) throw new RangeError('percentile of an empty sample');
  if (!(q >= 0 && q <= 100)) throw new RangeError(`percentile must be in [0, 100], got ${q}`);
  const h = (n - 1) * (q / 100);
  if (h >= n - 1) return sorted[n - 1];
  const lo = Math.floor(h);
  const t = h - lo;
  const x0 = sorted[lo];
  const x1 = sorted[lo + 1];
  const diff = x1 - x0;
  return t >= 0.5 ? x1 - diff * (1 - t) : x0 + diff * t;
}

/**
 * Percentiles bounding a central `level` interval: 50·(1 − level) and 100 − 50·(1 − level), rounded to
 * 1e-9 so that 0.95 gives exactly 2.5 and 97.5.
 */
export function intervalPercentiles(level: number): [number, number] {
  if (!(level > 0 && level < 1)) throw new RangeError(`confidence level must be in (0, 1), got ${level}`);
  const lo = Math.round(50 * (1 - level) * 1e9) / 1e9;
  return [lo, Math.round((100 - lo) * 1e9) / 1e9];
}

export interface BootstrapOptions {
  /** Number of bootstrap resamples B (≥ 1000). Default 2000. */
  resamples?: number;
  /** Central coverage of the interval. Default 0.95. */
  confidence?: number;
  /** PRNG seed (see the file header). Default 0. */
  seed?: number;
}

/** A mean with its percentile bootstrap interval. */
export interface ConfidenceInterval {
  /** The observed mean (not the mean of the bootstrap means). */
  mean: number;
  lower: number;
  upper: number;
}

export interface PairedBootstrapResult {
  n: number;
  resamples: number;
  confidence: number;
  /** Mean of the baseline's scores. */
  a: ConfidenceInterval;
  /** Mean of the compared system's scores. */
  b: ConfidenceInterval;
  /** Mean of d = b − a: each resample uses the same queries for both systems. */
  diff: ConfidenceInterval;
}

export const DEFAULT_BOOTSTRAP_RESAMPLES = 2000;
export const MIN_BOOTSTRAP_RESAMPLES = 1000;
export const DEFAULT_RANDOMIZATION_RESAMPLES = 10000;

/** Sorts the B resampled means of a, b and d and reads the intervals with `percentile`. */
function bootstrapIntervals(
  x: Paired,
  ma: Float64Array,
  mb: Float64Array,
  md: Float64Array,
  confidence: number,
): PairedBootstrapResult {
  const [qLo, qHi] = intervalPercentiles(confidence);
  const { a, b, d, n } = x;
  const B = ma.length;
  ma.sort();
  mb.sort();
  md.sort();
  const ci = (obs: number, sorted: Float64Array): ConfidenceInterval => ({
    mean: obs,
    lower: percentile(sorted, qLo),
    upper: percentile(sorted, qHi),
  });
  return {
    n,
    resamples: B,
    confidence,
    a: ci(mean(a), ma),
    b: ci(mean(b), mb),
    diff: ci(mean(d), md),
  };
}

/**
 * Paired percentile bootstrap: B resamples of the n queries drawn with replacement (the same queries
 * for both systems); the interval bounds are `percentile` of the B resampled means at
 * `intervalPercentiles(confidence)` (numpy's default linear interpolation).
 */
export function pairedBootstrap(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  opts: BootstrapOptions = {},
): PairedBootstrapResult {
  const B = opts.resamples ?? DEFAULT_BOOTSTRAP_RESAMPLES;
  if (!(Number.isSafeInteger(B) && B >= MIN_BOOTSTRAP_RESAMPLES))
    throw new RangeError(`bootstrap resamples must be an integer >= ${MIN_BOOTSTRAP_RESAMPLES}, got ${B}`);
  const confidence = opts.confidence ?? 0.95;
  intervalPercentiles(confidence); // validate before the work
  const x = paired(a, b);
  const { n } = x;
  if (n > MAX_INT_RANGE) throw new RangeError(`bootstrap supports at most ${MAX_INT_RANGE} queries`);
  const rng = new Xoshiro128(opts.seed ?? 0);
  const threshold = 4294967296 % n;
  const xa = x.a;
  const xb = x.b;
  const xd = x.d;
  const ma = new Float64Array(B);
  const mb = new Float64Array(B);
  const md = new Float64Array(B);
  for (let r = 0; r < B; r++) {
    let sa = 0;
    let sb = 0;
    let sd = 0;
    for (let i = 0; i < n; i++) {
      const j = uniformBelow(rng, n, threshold);
      sa += xa[j];
      sb += xb[j];
      sd += xd[j];
    }
    ma[r] = sa / n;
    mb[r] = sb / n;
    md[r] = sd / n;
  }
  return bootstrapIntervals(x, ma, mb, md, confidence);
}

/** Bootstrap interval of one system's mean score (`pairedBootstrap` with itself as baseline). */
export function bootstrapMean(x: ArrayLike<number>, opts: BootstrapOptions = {}): ConfidenceInterval {
  return pairedBootstrap(x, x, opts).a;
}

/**
 * `pairedBootstrap` with explicit resamples: `indices[r]` lists resample r's n query indices (0-based).
 * Lets tests feed the resamples another implementation drew.
 */
export function pairedBootstrapFromIndices(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  indices: ArrayLike<ArrayLike<number>>,
  confidence = 0.95,
): PairedBootstrapResult {
  const x = paired(a, b);
  const { n } = x;
  const B = indices.length;
  if (B === 0) throw new RangeError('no resamples');
  const ma = new Float64Array(B);
  const mb = new Float64Array(B);
  const md = new Float64Array(B);
  for (let r = 0; r < B; r++) {
    const row = indices[r];
    if (row.length !== n) throw new RangeError(`resample ${r} has ${row.length} indices, expected ${n}`);
    let sa = 0;
    let sb = 0;
    let sd = 0;
    for (let i = 0; i < n; i++) {
      const j = row[i];
      if (!(Number.isInteger(j) && j >= 0 && j < n)) throw new RangeError(`bad index ${j} in resample ${r}`);
      sa += x.a[j];
      sb += x.b[j];
      sd += x.d[j];
    }
    ma[r] = sa / n;
    mb[r] = sb / n;
    md[r] = sd / n;
  }
  return bootstrapIntervals(x, ma, mb, md, confidence);
}

// ---------------------------------------------------------------------------------------------------
// Randomization (sign-flip) test

export interface RandomizationOptions {
  /** Number of random sign-flip resamples B. Default 10000. */
  resamples?: number;
  /** PRNG seed. Default 0. */
  seed?: number;
}

export interface RandomizationResult {
  n: number;
  /** Observed mean of d = b − a. */
  meanDiff: number;
  /** Two-sided p-value (see `randomizationTest` / `exactRandomizationTest`). */
  pValue: number;
  /** Resampled statistics at least as extreme as the observed one. */
  extreme: number;
  /** B for the Monte Carlo test, 2^n for the exact one. */
  resamples: number;
  exact: boolean;
}

/** Relative tolerance of "at least as extreme": see `randomizationTest`. */
export const RANDOMIZATION_TOLERANCE = 1e-9;

/** |S_obs| − tolerance, the threshold a resampled |S*| must reach. */
export function extremeThreshold(d: Float64Array): number {
  let s = 0;
  let abs = 0;
  for (let i = 0; i < d.length; i++) {
    s += d[i];
    abs += Math.abs(d[i]);
  }
  return Math.abs(s) - RANDOMIZATION_TOLERANCE * abs;
}

/**
 * Paired randomization test of the mean difference, two-sided, by random sign flips: under the null
 * hypothesis each query's pair (a_i, b_i) is exchangeable, so d_i's sign is a fair coin. With S the sum
 * of the d_i (the mean times n), each of B resamples flips every sign independently; a resample counts
 * as at least as extreme when |S*| ≥ |S_obs| − 1e-9·Σ|d_i| (the tolerance absorbs summation rounding, so
 * resamples equal to the observed statistic in exact arithmetic count). p = (count + 1) / (B + 1): the
 * observed assignment counts as one of the resamples, so p is never 0 and a run compared with itself
 * (all d_i = 0) gets p = 1.
 */
export function randomizationTest(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  opts: RandomizationOptions = {},
): RandomizationResult {
  const B = opts.resamples ?? DEFAULT_RANDOMIZATION_RESAMPLES;
  if (!(Number.isSafeInteger(B) && B >= 1))
    throw new RangeError(`randomization resamples must be a positive integer, got ${B}`);
  const { d, n } = paired(a, b);
  const thr = extremeThreshold(d);
  const rng = new Xoshiro128(opts.seed ?? 0);
  let count = 0;
  for (let r = 0; r < B; r++) {
    let s = 0;
    let bits = 0;
    for (let i = 0; i < n; i++) {
      if ((i & 31) === 0) bits = rng.nextUint32();
      s += bits & 1 ? -d[i] : d[i];
      bits >>>= 1;
    }
    if (Math.abs(s) >= thr) count++;
  }
  return { n, meanDiff: mean(d), pValue: (count + 1) / (B + 1), extreme: count, resamples: B, exact: false };
}

/** Largest n `exactRandomizationTest` enumerates (2^20 sign assignments). */
export const MAX_EXACT_RANDOMIZATION_N = 20;

/**
 * Exact paired randomization test: every one of the 2^n sign assignments (the observed one included),
 * with the same "at least as extreme" rule as `randomizationTest`; p = count / 2^n. n ≤ 20. The sums are
 * built from the two halves' subset sums (2^⌊n/2⌋ + 2^⌈n/2⌉ direct sums, then 2^n additions).
 */
export function exactRandomizationTest(a: ArrayLike<number>, b: ArrayLike<number>): RandomizationResult {
  const { d, n } = paired(a, b);
  if (n > MAX_EXACT_RANDOMIZATION_N)
    throw new RangeError(`exact randomization test supports n <= ${MAX_EXACT_RANDOMIZATION_N}, got ${n}`);
  const thr = extremeThreshold(d);
  const h1 = n >> 1;
  const halfSums = (from: number, len: number): Float64Array => {
    const out = new Float64Array(1 << len);
    for (let m = 0; m < out.length; m++) {
      let s = 0;
      for (let i = 0; i < len; i++) s += (m >> i) & 1 ? -d[from + i] : d[from + i];
      out[m] = s;
    }
    return out;
  };
  const lo = halfSums(0, h1);
  const hi = halfSums(h1, n - h1);
  let count = 0;
  for (let i = 0; i < lo.length; i++) {
    const l = lo[i];
    for (let j = 0; j < hi.length; j++) if (Math.abs(l + hi[j]) >= thr) count++;
  }
  const total = 2 ** n;
  return { n, meanDiff: mean(d), pValue: count / total, extreme: count, resamples: total, exact: true };
}

// ---------------------------------------------------------------------------------------------------
// Paired t-test

export interface PairedTTestResult {
  n: number;
  /** n − 1. */
  df: number;
  /** Mean of d = b − a. */
  meanDiff: number;
  /** Sample standard deviation of d (n − 1 denominator). */
  sdDiff: number;
  t: number;
  /** Two-sided p-value. */
  pValue: number;
}

/**
 * Paired two-sided t-test of mean(d) = 0, d = b − a: t = mean / (sd / √n), df = n − 1, p = P(|T| ≥ |t|).
 * Same statistic and p-value as scipy.stats.ttest_rel(b, a). Degenerate cases (scipy gives NaN for the
 * first two):
 * - all d_i equal to 0 (e.g. a run against itself): t = 0, p = 1 — no difference at all;
 * - all d_i equal to the same c ≠ 0: sd = 0, t = ±Infinity (sign of c), p = 0;
 * - n = 1: df = 0, sd, t and p are NaN (no variance estimate).
 */
export function pairedTTest(a: ArrayLike<number>, b: ArrayLike<number>): PairedTTestResult {
  const { d, n } = paired(a, b);
  const m = mean(d);
  if (n < 2) return { n, df: 0, meanDiff: m, sdDiff: NaN, t: NaN, pValue: NaN };
  let constant = true;
  let ss = 0;
  for (let i = 0; i < n; i++) {
    const e = d[i] - m;
    ss += e * e;
    if (d[i] !== d[0]) constant = false;
  }
  const df = n - 1;
  if (constant) {
    if (d[0] === 0) return { n, df, meanDiff: 0, sdDiff: 0, t: 0, pValue: 1 };
    return { n, df, meanDiff: d[0], sdDiff: 0, t: d[0] > 0 ? Infinity : -Infinity, pValue: 0 };
  }
  const sd = Math.sqrt(ss / df);
  const t = m / (sd / Math.sqrt(n));
  return { n, df, meanDiff: m, sdDiff: sd, t, pValue: studentTTwoSided(t, df) };
}

// ---------------------------------------------------------------------------------------------------
// Multiple comparisons, win/tie/loss

/**
 * Holm–Bonferroni step-down adjusted p-values, in the input order. With the m p-values sorted
 * ascending p_(1) ≤ … ≤ p_(m) (ties keep input order), adj_(i) = max_{j ≤ i} min(1, (m − j + 1)·p_(j));
 * reject at level α where adj ≤ α. NaN entries stay NaN and do not count in m.
 */
export function holmBonferroni(pValues: readonly number[]): number[] {
  const out = new Array<number>(pValues.length).fill(NaN);
  const idx: number[] = [];
  pValues.forEach((p, i) => {
    if (Number.isNaN(p)) return;
    if (!(p >= 0 && p <= 1)) throw new RangeError(`p-value out of [0, 1]: ${p}`);
    idx.push(i);
  });
  idx.sort((i, j) => pValues[i] - pValues[j] || i - j);
  const m = idx.length;
  let running = 0;
  for (let r = 0; r < m; r++) {
    const v = Math.min(1, (m - r) * pValues[idx[r]]);
    if (v > running) running = v;
    out[idx[r]] = running;
  }
  return out;
}

export interface WinTieLoss {
  /** Queries where b − a > tolerance. */
  wins: number;
  /** Queries where |b − a| ≤ tolerance. */
  ties: number;
  /** Queries where b − a < −tolerance. */
  losses: number;
}

/** Per-query wins/ties/losses of `b` against the baseline `a`. Default tolerance 0 (exact equality). */
export function winTieLoss(a: ArrayLike<number>, b: ArrayLike<number>, tolerance = 0): WinTieLoss {
  if (!(tolerance >= 0)) throw new RangeError(`tie tolerance must be >= 0, got ${tolerance}`);
  const { d, n } = paired(a, b);
  let wins = 0;
  let losses = 0;
  for (let i = 0; i < n; i++) {
    if (d[i] > tolerance) wins++;
    else if (d[i] < -tolerance) losses++;
  }
  return { wins, ties: n - wins - losses, losses };
}

// ---------------------------------------------------------------------------------------------------
// One call per comparison

export interface CompareOptions {
  /** PRNG seed of both resampling procedures. Default 0. */
  seed?: number;
  /** Default 2000 (≥ 1000). */
  bootstrapResamples?: number;
  /** Monte Carlo sign-flip resamples. Default 10000. */
  randomizationResamples?: number;
  /** Use the exact randomization test when n ≤ this (at most 20). Default 20; 0 never. */
  exactRandomizationMaxN?: number;
  /** Default 0.95. */
  confidence?: number;
  /** Win/tie/loss tolerance. Default 0. */
  tieTolerance?: number;
}

export interface PairedComparison {
  /** Queries compared (present in both), byte order. */
  qids: string[];
  n: number;
  bootstrap: PairedBootstrapResult;
  tTest: PairedTTestResult;
  randomization: RandomizationResult;
  winTieLoss: WinTieLoss;
}

/** Every paired statistic of `system` against `baseline` over their common queries. */
export function comparePaired(
  baseline: ReadonlyMap<string, number>,
  system: ReadonlyMap<string, number>,
  opts: CompareOptions = {},
): PairedComparison {
  const { qids, a, b } = alignByQuery(baseline, system);
  if (qids.length === 0) throw new RangeError('the two runs have no query in common');
  const seed = opts.seed ?? 0;
  const exactMax = Math.min(
    opts.exactRandomizationMaxN ?? MAX_EXACT_RANDOMIZATION_N,
    MAX_EXACT_RANDOMIZATION_N,
  );
  return {
    qids,
    n: qids.length,
    bootstrap: pairedBootstrap(a, b, {
      resamples: opts.bootstrapResamples,
      confidence: opts.confidence,
      seed,
    }),
    tTest: pairedTTest(a, b),
    randomization:
      qids.length <= exactMax
        ? exactRandomizationTest(a, b)
        : randomizationTest(a, b, { resamples: opts.randomizationResamples, seed }),
    winTieLoss: winTieLoss(a, b, opts.tieTolerance ?? 0),
  };
}

export interface BaselineComparison extends PairedComparison {
  /** Holm–Bonferroni adjusted p-values over all the systems compared with the baseline. */
  holm: { tTest: number; randomization: number };
}

/**
 * Compares several systems with one baseline (each over the queries it shares with the baseline) and
 * Holm-adjusts each test's p-values over the systems. A NaN t-test p-value (n = 1) stays NaN.
 */
export function compareToBaseline(
  baseline: ReadonlyMap<string, number>,
  systems: readonly ReadonlyMap<string, number>[],
  opts: CompareOptions = {},
): BaselineComparison[] {
  const results = systems.map((s) => comparePaired(baseline, s, opts));
  const ht = holmBonferroni(results.map((r) => r.tTest.pValue));
  const hr = holmBonferroni(results.map((r) => r.randomization.pValue));
  return results.map((r, i) => ({ ...r, holm: { tTest: ht[i], randomization: hr[i] } }));
}
