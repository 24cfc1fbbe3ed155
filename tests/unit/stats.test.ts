// Paired statistics against independent computations: tests/fixtures/stats/fixtures.json is written by
// `/usr/bin/python3 tests/fixtures/stats/make_fixtures.py` (numpy, scipy, mpmath, brute force).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  alignByQuery,
  bootstrapMean,
  comparePaired,
  compareToBaseline,
  exactRandomizationTest,
  holmBonferroni,
  intervalPercentiles,
  logBeta,
  logGamma,
  measureByQuery,
  pairedBootstrap,
  pairedBootstrapFromIndices,
  pairedTTest,
  median,
  percentile,
  samplePercentile,
  RANDOMIZATION_TOLERANCE,
  randomizationTest,
  regularizedIncompleteBeta,
  studentTCdf,
  studentTTwoSided,
  winTieLoss,
  Xoshiro128,
  type ConfidenceInterval,
} from '../../src/lib/core/eval/stats';

interface Sample {
  a: number[];
  b: number[];
}
interface Fixtures {
  generated_by: string;
  randomization_tolerance: number;
  samples: Record<string, Sample>;
  ttest: {
    sample: string;
    statistic: number;
    pvalue: number;
    df: number;
    mean_diff: number;
    sd_diff: number;
  }[];
  t_cdf: { t: number; df: number; cdf: number; cdf_mp: number }[];
  t_two_sided: { t: number; df: number; p: number; p_mp: number }[];
  incbeta: { x: number; a: number; b: number; value: number; value_mp: number }[];
  log_gamma: { x: number; value: number }[];
  exact_randomization: { sample: string; count: number; total: number; p: number }[];
  randomization_mc: { sample: string; resamples: number; p: number }[];
  holm: { p: number[]; adjusted: number[] }[];
  percentile: { x: number[]; q: number[]; values: number[] }[];
  bootstrap_indices: {
    sample: string;
    indices: number[][];
    intervals: {
      confidence: number;
      q: [number, number];
      a: ConfidenceInterval;
      b: ConfidenceInterval;
      diff: ConfidenceInterval;
    }[];
  }[];
  prng: { seed: number; uint32: number[] }[];
}

const FX: Fixtures = JSON.parse(
  readFileSync(resolve(import.meta.dirname, '../fixtures/stats/fixtures.json'), 'utf8'),
);
const sample = (name: string) => FX.samples[name];

/** |actual − expected| ≤ rel·|expected| (+ abs). */
function expectRel(actual: number, expected: number, rel: number, abs = 0) {
  const err = Math.abs(actual - expected);
  if (!(err <= rel * Math.abs(expected) + abs))
    throw new Error(`expected ${expected}, got ${actual} (error ${err}, allowed rel ${rel} abs ${abs})`);
}

describe('fixtures', () => {
  it('record the command that generated them', () => {
    expect(FX.generated_by).toBe('/usr/bin/python3 tests/fixtures/stats/make_fixtures.py');
    expect(FX.randomization_tolerance).toBe(RANDOMIZATION_TOLERANCE);
  });
});

describe('Xoshiro128 (xoshiro128**)', () => {
  it('matches the python transcription of the generator and its seeding', () => {
    for (const { seed, uint32 } of FX.prng) {
      const rng = new Xoshiro128(seed);
      expect(uint32.map(() => rng.nextUint32())).toEqual(uint32);
    }
  });

  it('is deterministic per seed and draws exactly uniform integers in range', () => {
    const r1 = new Xoshiro128(123);
    const r2 = new Xoshiro128(123);
    const r3 = new Xoshiro128(124);
    const x1 = Array.from({ length: 5 }, () => r1.nextUint32());
    expect(Array.from({ length: 5 }, () => r2.nextUint32())).toEqual(x1);
    expect(Array.from({ length: 5 }, () => r3.nextUint32())).not.toEqual(x1);
    const rng = new Xoshiro128(5);
    const counts = new Array(7).fill(0);
    let bad = 0;
    for (let i = 0; i < 70000; i++) {
      const v = rng.nextInt(7);
      if (!(Number.isInteger(v) && v >= 0 && v < 7)) bad++;
      else counts[v]++;
    }
    expect(bad).toBe(0);
    // Each bin ~ Binomial(70000, 1/7): mean 10000, sd ≈ 93.
    for (const c of counts) expect(Math.abs(c - 10000)).toBeLessThan(500);
    for (let i = 0; i < 1000; i++) {
      const f = rng.nextFloat();
      if (!(f >= 0 && f < 1)) bad++;
    }
    expect(bad).toBe(0);
    expect(new Xoshiro128(1).nextInt(1)).toBe(0);
    expect(() => rng.nextInt(0)).toThrow();
    expect(() => rng.nextInt(2 ** 21 + 1)).toThrow();
  });
});

describe('percentile (numpy default linear)', () => {
  it('equals np.percentile', () => {
    for (const { x, q, values } of FX.percentile) {
      const sorted = Float64Array.from(x).sort();
      q.forEach((qq, i) => expectRel(percentile(sorted, qq), values[i], 0, 1e-15));
    }
  });

  it('takes unsorted samples too (samplePercentile, median), as np.percentile and np.median', () => {
    for (const { x, q, values } of FX.percentile) {
      const shuffled = [...x].reverse();
      q.forEach((qq, i) => expectRel(samplePercentile(shuffled, qq), values[i], 0, 1e-15));
      expect(median(shuffled)).toBe(percentile(Float64Array.from(x).sort(), 50));
    }
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
    expect(samplePercentile([], 90)).toBeNaN();
  });

  it('uses exactly 2.5/97.5 for 95%', () => {
    expect(intervalPercentiles(0.95)).toEqual([2.5, 97.5]);
    expect(intervalPercentiles(0.9)).toEqual([5, 95]);
    expect(intervalPercentiles(0.99)).toEqual([0.5, 99.5]);
    expect(() => intervalPercentiles(1)).toThrow();
  });
});

describe('paired bootstrap', () => {
  it('with the resample indices drawn in python equals numpy percentile intervals to 1e-12', () => {
    for (const { sample: name, indices, intervals } of FX.bootstrap_indices) {
      const { a, b } = sample(name);
      for (const iv of intervals) {
        expect(intervalPercentiles(iv.confidence)).toEqual(iv.q);
        const r = pairedBootstrapFromIndices(a, b, indices, iv.confidence);
        expect(r.resamples).toBe(indices.length);
        for (const key of ['a', 'b', 'diff'] as const) {
          expectRel(r[key].mean, iv[key].mean, 0, 1e-12);
          expectRel(r[key].lower, iv[key].lower, 0, 1e-12);
          expectRel(r[key].upper, iv[key].upper, 0, 1e-12);
        }
      }
    }
  });

  it('is deterministic per seed and brackets the observed means', () => {
    const { a, b } = sample('n300');
    const r1 = pairedBootstrap(a, b, { seed: 9 });
    const r2 = pairedBootstrap(a, b, { seed: 9 });
    const r3 = pairedBootstrap(a, b, { seed: 10 });
    expect(r1).toEqual(r2);
    expect(r3.diff.lower).not.toBe(r1.diff.lower);
    expect(r1.resamples).toBe(2000);
    for (const ci of [r1.a, r1.b, r1.diff]) {
      expect(ci.lower).toBeLessThan(ci.mean);
      expect(ci.upper).toBeGreaterThan(ci.mean);
    }
    // n300 has a clearly positive difference (t ≈ 3.67): its 95% interval excludes 0.
    expect(r1.diff.lower).toBeGreaterThan(0);
    expect(bootstrapMean(a, { seed: 9 })).toEqual(r1.a);
  });

  it('covers the true mean about 95% of the time in a simulation', () => {
    // 300 data sets of 60 draws from Exponential(1) (true mean 1, skewed), 1000 resamples each.
    const gen = new Xoshiro128(2026);
    let covered = 0;
    const trials = 300;
    for (let t = 0; t < trials; t++) {
      const x = Array.from({ length: 60 }, () => -Math.log(1 - gen.nextFloat()));
      const ci = bootstrapMean(x, { resamples: 1000, seed: t });
      if (ci.lower <= 1 && 1 <= ci.upper) covered++;
    }
    // Percentile intervals undercover slightly with skewed data at n = 60 (~0.93); binomial sd ≈ 0.013.
    expect(covered / trials).toBeGreaterThan(0.88);
    expect(covered / trials).toBeLessThan(0.99);
  });

  it('shrinks like 1/sqrt(n)', () => {
    const gen = new Xoshiro128(77);
    const widths = [100, 400, 1600].map((n) => {
      const x = Array.from({ length: n }, () => gen.nextFloat());
      const ci = bootstrapMean(x, { resamples: 4000, seed: 1 });
      return ci.upper - ci.lower;
    });
    // Uniform(0,1): width ≈ 2·1.96·0.2887/√n → 0.113, 0.0566, 0.0283.
    expect(widths[0] / widths[1]).toBeGreaterThan(1.7);
    expect(widths[0] / widths[1]).toBeLessThan(2.3);
    expect(widths[1] / widths[2]).toBeGreaterThan(1.7);
    expect(widths[1] / widths[2]).toBeLessThan(2.3);
    expectRel(widths[0], (2 * 1.96 * Math.sqrt(1 / 12)) / 10, 0.15);
  });

  it('rejects bad input', () => {
    expect(() => pairedBootstrap([1, 2], [1, 2], { resamples: 999 })).toThrow(/>= 1000/);
    expect(() => pairedBootstrap([1, 2], [1])).toThrow(/length/);
    expect(() => pairedBootstrap([], [])).toThrow(/no paired/);
    expect(() => pairedBootstrap([1, NaN], [1, 2])).toThrow(/finite/);
    expect(() => pairedBootstrapFromIndices([1, 2], [1, 2], [[0, 2]])).toThrow(/bad index/);
    expect(() => pairedBootstrapFromIndices([1, 2], [1, 2], [[0]])).toThrow(/indices/);
  });
});

describe('special functions', () => {
  // Relative accuracy: ~1e-14 up to df ≈ 1000, ~1e-12 at df = 1e5 (see studentTTwoSided).
  const tol = (df: number) => (df <= 1e4 ? 1e-12 : 1e-11);

  it('logGamma equals scipy.special.gammaln', () => {
    for (const { x, value } of FX.log_gamma) expectRel(logGamma(x), value, 1e-14, 1e-14);
  });

  it('logBeta agrees with logGamma where no cancellation occurs', () => {
    for (const [a, b] of [
      [0.5, 0.5],
      [3, 4.5],
      [12, 0.5],
      [30, 40],
    ])
      expectRel(logBeta(a, b), logGamma(a) + logGamma(b) - logGamma(a + b), 1e-13, 1e-13);
  });

  it('regularizedIncompleteBeta equals scipy.special.betainc and mpmath, tails included', () => {
    for (const { x, a, b, value, value_mp } of FX.incbeta) {
      const v = regularizedIncompleteBeta(x, a, b);
      expectRel(v, value_mp, 1e-12, 1e-300);
      expectRel(v, value, 1e-12, 1e-300);
    }
    expect(regularizedIncompleteBeta(0, 2, 3)).toBe(0);
    expect(regularizedIncompleteBeta(1, 2, 3)).toBe(1);
  });

  it('studentTCdf equals scipy.stats.t.cdf (and mpmath) down to the extreme lower tail', () => {
    let tiny = 0;
    for (const { t, df, cdf, cdf_mp } of FX.t_cdf) {
      const v = studentTCdf(t, df);
      expectRel(v, cdf_mp, tol(df), 1e-300);
      expectRel(v, cdf, tol(df), 1e-300);
      if (cdf_mp > 0 && cdf_mp < 1e-100) tiny++;
    }
    expect(tiny).toBeGreaterThanOrEqual(4); // the fixtures reach far into the tail (down to ~1e-300)
  });

  it('studentTTwoSided equals 2·scipy.stats.t.sf in the upper tail', () => {
    for (const { t, df, p, p_mp } of FX.t_two_sided) {
      expectRel(studentTTwoSided(t, df), p_mp, tol(df), 1e-300);
      expectRel(studentTTwoSided(-t, df), p, tol(df), 1e-300);
    }
    expect(studentTTwoSided(0, 5)).toBe(1);
    expect(studentTTwoSided(Infinity, 5)).toBe(0);
    expect(studentTCdf(0, 3)).toBe(0.5);
    // Cauchy (df = 1): F(t) = 1/2 + atan(t)/π.
    expectRel(studentTCdf(-3, 1), 0.5 + Math.atan(-3) / Math.PI, 1e-14);
  });
});

describe('paired t-test', () => {
  it('equals scipy.stats.ttest_rel(b, a)', () => {
    for (const r of FX.ttest) {
      const { a, b } = sample(r.sample);
      const t = pairedTTest(a, b);
      expect(t.n).toBe(a.length);
      expect(t.df).toBe(r.df);
      expectRel(t.meanDiff, r.mean_diff, 1e-13, 1e-16);
      expectRel(t.sdDiff, r.sd_diff, 1e-13);
      expectRel(t.t, r.statistic, 1e-12);
      expectRel(t.pValue, r.pvalue, 1e-12);
    }
  });

  it('handles zero-variance differences', () => {
    // A run against itself: t = 0, p = 1 (scipy would give NaN).
    expect(pairedTTest([0.1, 0.5, 0.9], [0.1, 0.5, 0.9])).toEqual({
      n: 3,
      df: 2,
      meanDiff: 0,
      sdDiff: 0,
      t: 0,
      pValue: 1,
    });
    // Every query improves by the same amount: t = +Infinity, p = 0.
    const up = pairedTTest([0, 0.25, 0.5], [0.5, 0.75, 1]);
    expect([up.t, up.pValue, up.sdDiff, up.meanDiff]).toEqual([Infinity, 0, 0, 0.5]);
    const down = pairedTTest([0.5, 0.75, 1], [0, 0.25, 0.5]);
    expect([down.t, down.pValue]).toEqual([-Infinity, 0]);
    // One query: no variance estimate.
    const one = pairedTTest([0.2], [0.7]);
    expect(one.df).toBe(0);
    expect(Number.isNaN(one.t) && Number.isNaN(one.pValue) && Number.isNaN(one.sdDiff)).toBe(true);
  });
});

describe('randomization test', () => {
  it('exact version equals brute-force enumeration in python', () => {
    for (const r of FX.exact_randomization) {
      const { a, b } = sample(r.sample);
      const e = exactRandomizationTest(a, b);
      expect(e.exact).toBe(true);
      expect(e.resamples).toBe(r.total);
      expect(e.extreme).toBe(r.count);
      expect(Math.abs(e.pValue - r.p)).toBeLessThanOrEqual(1e-12);
    }
    expect(() => exactRandomizationTest(new Array(21).fill(0), new Array(21).fill(1))).toThrow(/n <= 20/);
  });

  it('Monte Carlo version agrees with the exact one and with numpy Monte Carlo', () => {
    for (const name of ['n12', 'n16', 'n12_grid']) {
      const { a, b } = sample(name);
      const exact = exactRandomizationTest(a, b).pValue;
      const mc = randomizationTest(a, b, { resamples: 20000, seed: 3 });
      expect(mc.exact).toBe(false);
      // sd of the estimate ≤ 0.5/√20000 ≈ 0.0035.
      expect(Math.abs(mc.pValue - exact)).toBeLessThan(0.015);
    }
    for (const r of FX.randomization_mc) {
      const { a, b } = sample(r.sample);
      const mc = randomizationTest(a, b, { seed: 11 });
      expect(mc.resamples).toBe(10000);
      expect(mc.pValue).toBe((mc.extreme + 1) / 10001);
      const sd = Math.sqrt((r.p * (1 - r.p)) / 10000) + Math.sqrt((r.p * (1 - r.p)) / r.resamples);
      expect(Math.abs(mc.pValue - r.p)).toBeLessThan(4 * sd + 2 / 10001);
    }
  });

  it('is deterministic per seed', () => {
    const { a, b } = sample('n50');
    expect(randomizationTest(a, b, { seed: 4, resamples: 3000 })).toEqual(
      randomizationTest(a, b, { seed: 4, resamples: 3000 }),
    );
    expect(randomizationTest(a, b, { seed: 4, resamples: 3000 }).extreme).not.toBe(
      randomizationTest(a, b, { seed: 5, resamples: 3000 }).extreme,
    );
  });

  it('p = 1 for a run against itself, p = 1/(B+1) and 2/2^n at the extremes', () => {
    const x = sample('n50').a;
    expect(randomizationTest(x, x, { resamples: 1000 }).pValue).toBe(1);
    expect(exactRandomizationTest(x.slice(0, 15), x.slice(0, 15)).pValue).toBe(1);
    // Every d_i = 1: only the all-plus and all-minus assignments reach |S| = n.
    const zeros = new Array(40).fill(0);
    const ones = new Array(40).fill(1);
    expect(randomizationTest(zeros, ones, { resamples: 999 }).pValue).toBe(1 / 1000);
    expect(exactRandomizationTest(zeros.slice(0, 10), ones.slice(0, 10)).pValue).toBe(2 / 1024);
  });
});

describe('Holm–Bonferroni', () => {
  it('equals the definition (checked against statsmodels in the generator)', () => {
    for (const { p, adjusted } of FX.holm) {
      const h = holmBonferroni(p);
      h.forEach((v, i) => expectRel(v, adjusted[i], 0, 1e-15));
    }
  });

  it('hand-checked case and NaN handling', () => {
    // Sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 → max(0.06, 0.04) = 0.06.
    const h = holmBonferroni([0.01, 0.04, 0.03, 0.005]);
    expectRel(h[0], 0.03, 1e-15);
    expectRel(h[1], 0.06, 1e-15);
    expectRel(h[2], 0.06, 1e-15);
    expectRel(h[3], 0.02, 1e-15);
    const withNaN = holmBonferroni([0.01, NaN, 0.02]);
    expect(Number.isNaN(withNaN[1])).toBe(true);
    expect([withNaN[0], withNaN[2]]).toEqual([0.02, 0.02]);
    expect(holmBonferroni([])).toEqual([]);
    expect(() => holmBonferroni([1.5])).toThrow();
  });
});

describe('win/tie/loss, alignment, comparisons', () => {
  it('counts wins, ties and losses with a tolerance', () => {
    const a = [0.5, 0.5, 0.5, 0.5, 0.5];
    const b = [0.6, 0.5, 0.5000001, 0.4, 0.49];
    expect(winTieLoss(a, b)).toEqual({ wins: 2, ties: 1, losses: 2 });
    expect(winTieLoss(a, b, 1e-6)).toEqual({ wins: 1, ties: 2, losses: 2 });
    expect(winTieLoss(a, b, 0.05)).toEqual({ wins: 1, ties: 3, losses: 1 });
  });

  it('aligns by query id over the common queries, in byte order', () => {
    const base = new Map([
      ['q2', 0.2],
      ['q10', 0.1],
      ['\u{1F600}', 0.9],
      ['\uFFFD', 0.8],
      ['only-base', 1],
    ]);
    const sys = new Map([
      ['\uFFFD', 0.3],
      ['q10', 0.4],
      ['\u{1F600}', 0.5],
      ['q2', 0.6],
      ['only-sys', 0],
    ]);
    const p = alignByQuery(base, sys);
    expect(p.qids).toEqual(['q10', 'q2', '\uFFFD', '\u{1F600}']);
    expect([...p.a]).toEqual([0.1, 0.2, 0.8, 0.9]);
    expect([...p.b]).toEqual([0.4, 0.6, 0.3, 0.5]);
  });

  it('reads one measure out of per-query results', () => {
    const perQuery = new Map([
      ['q1', { ndcg_cut_10: 0.5, map: 0.2 }],
      ['q2', { ndcg_cut_10: 0.25, map: 0.1 }],
    ]);
    expect([...measureByQuery(perQuery, 'map')]).toEqual([
      ['q1', 0.2],
      ['q2', 0.1],
    ]);
    expect(() => measureByQuery(perQuery, 'P_5')).toThrow(/no value/);
  });

  it('a run compared with itself: difference 0, p = 1 for both tests', () => {
    for (const name of ['n12', 'n300']) {
      const m = new Map(sample(name).a.map((v, i) => [`q${i}`, v]));
      const c = comparePaired(m, m, { seed: 1 });
      expect(c.n).toBe(m.size);
      expect(c.bootstrap.diff).toEqual({ mean: 0, lower: 0, upper: 0 });
      expect(c.tTest.meanDiff).toBe(0);
      expect(c.tTest.pValue).toBe(1);
      expect(c.randomization.meanDiff).toBe(0);
      expect(c.randomization.pValue).toBe(1);
      expect(c.randomization.exact).toBe(m.size <= 20);
      expect(c.winTieLoss).toEqual({ wins: 0, ties: m.size, losses: 0 });
    }
  });

  it('compares several systems with a baseline and Holm-adjusts each test', () => {
    const { a, b } = sample('n300');
    const toMap = (x: number[]) => new Map(x.map((v, i) => [`q${i}`, v]));
    const base = toMap(a);
    const shifted = toMap(a.map((v, i) => (i % 2 ? v + 0.001 : v)));
    const res = compareToBaseline(base, [toMap(b), shifted, base], { seed: 2 });
    expect(res).toHaveLength(3);
    const pt = res.map((r) => r.tTest.pValue);
    const pr = res.map((r) => r.randomization.pValue);
    expect(res.map((r) => r.holm.tTest)).toEqual(holmBonferroni(pt));
    expect(res.map((r) => r.holm.randomization)).toEqual(holmBonferroni(pr));
    // Same queries, summed in another order (q0, q1, q10, q100, …): equal up to rounding.
    expectRel(res[0].tTest.pValue, pairedTTest(a, b).pValue, 1e-12);
    expect(res[2].holm.tTest).toBe(1);
    expect(res[1].winTieLoss).toEqual({ wins: 150, ties: 150, losses: 0 });
    expect(() => comparePaired(base, new Map([['x', 1]]))).toThrow(/no query in common/);
  });
});

describe('at benchmark scale', () => {
  // Speed is measured in benchmarks, not asserted here; this checks the large case is right.
  it('1,000 queries × 10,000 resamples: a systematic gain is detected, a null one is not', () => {
    const gen = new Xoshiro128(1);
    const a = Array.from({ length: 1000 }, () => gen.nextFloat());
    const b = a.map((v) => Math.min(1, v + 0.05 * (gen.nextFloat() - 0.4)));
    const boot = pairedBootstrap(a, b, { resamples: 10000 });
    expect(boot.diff.lower).toBeGreaterThan(0);
    expect(boot.diff.lower).toBeLessThan(boot.diff.mean);
    expect(boot.diff.upper).toBeGreaterThan(boot.diff.mean);
    expect(randomizationTest(a, b, { resamples: 10000 }).pValue).toBeLessThan(0.001);
    const noise = a.map((v) => v + 0.01 * (gen.nextFloat() - 0.5));
    expect(randomizationTest(a, noise, { resamples: 10000 }).pValue).toBeGreaterThan(0.01);
  });
});
