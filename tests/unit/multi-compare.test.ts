// Comparing N runs at once: the studentized range distribution, the two-way ANOVA and Tukey's HSD
// against R 4.2.2 (../shared/golden/stats-multi, made by its generate.R), plus checks that do not
// depend on R: the studentized range of two means against Student's t, the range of normals against a
// direct quadrature, rank intervals and tied groups on constructed cases.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  fUpperTail,
  pairIndex,
  runGroups,
  scoreMatrix,
  tukeyHsd,
  twoWayAnova,
  type PairComparison,
} from '../../src/lib/core/eval/multi-compare';
import {
  allPairs,
  allPairsAcrossTasks,
  compareAcrossTasks,
  multiComparisonJson,
  pairsCsv,
  runsCsv,
  runsTable,
  formatTextTable,
} from '../../src/lib/core/eval/all-pairs';
import {
  MAX_EXACT_ARRANGEMENTS,
  allArrangementRanges,
  exactRandomizedTukeyHsd,
  permutedRanges,
  randomizedTukeyHsd,
} from '../../src/lib/core/eval/randomized-tukey';
import { exactRandomizationTest, pairedTTest, studentTTwoSided } from '../../src/lib/core/eval/stats';
import {
  normalCdf,
  normalRangeCdf,
  ptukey,
  qtukey,
  qtukeyPrecise,
} from '../../src/lib/core/eval/studentized-range';
import { GOLDEN_STATS_MULTI_DIR } from '../paths';

const TOL = 1e-9;

interface GoldenCase {
  case: string;
  runs: string[];
  queries: string[];
  scores_by_run: Record<string, number[]>;
  means: number[];
  anova: Record<
    | 'df_run'
    | 'df_query'
    | 'df_residual'
    | 'ss_run'
    | 'ss_query'
    | 'ss_residual'
    | 'ms_residual'
    | 'f_run'
    | 'p_run',
    number
  >;
  tukey_hsd: { a: string; b: string; diff_b_minus_a: number; lwr: number; upr: number; p_adj: number }[];
  best: string;
  p_adj_vs_best: number[];
  'tied_with_best_at_0.05': string[];
}

const read = <T>(name: string): T =>
  JSON.parse(readFileSync(join(GOLDEN_STATS_MULTI_DIR, name), 'utf8')) as T;
const CASES = [
  'three-runs',
  'five-runs-twin-and-ties',
  'twelve-close-runs',
  'eight-runs-500-queries',
  'two-runs',
];
const golden = Object.fromEntries(CASES.map((c) => [c, read<GoldenCase>(`${c}.json`)]));
const grid = read<{
  ptukey: { q: number; nmeans: number; df: number; p: number }[];
  qtukey: { p: number; nmeans: number; df: number; q: number }[];
}>('ptukey.json');

const scoresOf = (g: GoldenCase) => g.runs.map((r) => g.scores_by_run[r]);

/** Collects |actual − expected| > TOL as messages, so one failure lists every bad value. */
function within(bad: string[], label: string, actual: number | undefined, expected: number, tol = TOL) {
  if (!(typeof actual === 'number' && Math.abs(actual - expected) <= tol))
    bad.push(`${label}: got ${actual}, R ${expected}`);
}

describe('normal distribution and the range of normals', () => {
  it('Φ matches known values in both tails', () => {
    // 40-digit mpmath values.
    const ref: [number, number][] = [
      [-30, 4.906713927148187e-198],
      [-8, 6.220960574271784e-16],
      [-3.5, 0.00023262907903552504],
      [-1, 0.15865525393145707],
      [0, 0.5],
      [1.96, 0.9750021048517795],
      [6, 0.9999999990134123],
    ];
    for (const [x, v] of ref) expect(Math.abs(normalCdf(x) - v) / v).toBeLessThan(1e-13);
  });

  it('P(range of 2 normals ≤ w) = 2Φ(w/√2) − 1', () => {
    for (const w of [0.05, 0.5, 1, 2.5, 4, 6, 9]) {
      expect(normalRangeCdf(w, 2)).toBeCloseTo(2 * normalCdf(w / Math.SQRT2) - 1, 12);
    }
  });

  it('P(range of k normals ≤ w) agrees with k∫φ(z)[Φ(z) − Φ(z − w)]^(k−1) dz by Simpson', () => {
    const phi = (z: number) => Math.exp(-0.5 * z * z) / Math.sqrt(2 * Math.PI);
    const simpson = (w: number, k: number) => {
      const n = 4000;
      const lo = -9;
      const h = (9 + w - lo) / n;
      let s = 0;
      for (let i = 0; i <= n; i++) {
        const z = lo + i * h;
        const f = phi(z) * Math.pow(normalCdf(z) - normalCdf(z - w), k - 1);
        s += (i === 0 || i === n ? 1 : i % 2 ? 4 : 2) * f;
      }
      return (k * s * h) / 3;
    };
    expect(Math.abs(normalRangeCdf(1, 3) - simpson(1, 3))).toBeLessThan(1e-12);
    expect(Math.abs(normalRangeCdf(3, 5) - simpson(3, 5))).toBeLessThan(1e-12);
    // Copenhaver & Holland's 12-point rule (R's) is off by 1.7e-9 here; Simpson is not (same value
    // with 4 times the points).
    expect(Math.abs(normalRangeCdf(4.5, 20) - simpson(4.5, 20))).toBeLessThan(3e-9);
  });
});

describe('studentized range distribution', () => {
  it('ptukey matches R at every golden point (q 0.1–12, nmeans 2–50, df 2–5000)', () => {
    expect(grid.ptukey.length).toBe(539);
    const bad: string[] = [];
    for (const e of grid.ptukey)
      within(bad, `ptukey(${e.q}, ${e.nmeans}, ${e.df})`, ptukey(e.q, e.nmeans, e.df), e.p);
    expect(bad).toEqual([]);
  });

  it('qtukey matches R at every golden point (p 0.9, 0.95, 0.99)', () => {
    expect(grid.qtukey.length).toBe(126);
    const bad: string[] = [];
    for (const e of grid.qtukey)
      within(bad, `qtukey(${e.p}, ${e.nmeans}, ${e.df})`, qtukey(e.p, e.nmeans, e.df), e.q);
    expect(bad).toEqual([]);
  });

  it('for two means, P(Q ≤ q) = P(|T| ≤ q/√2) with Student t, tails included', () => {
    for (const df of [5, 30, 1000])
      for (const q of [0.01, 0.3, 2, 5, 8, 12]) {
        const t = studentTTwoSided(q / Math.SQRT2, df);
        expect(Math.abs(ptukey(q, 2, df) - (1 - t))).toBeLessThan(TOL);
        expect(Math.abs(ptukey(q, 2, df, false) - t)).toBeLessThan(TOL);
      }
    // A tail where the lower probability is tiny, and one where the upper is.
    expect(ptukey(0.01, 2, 5)).toBeGreaterThan(0);
    expect(ptukey(0.01, 2, 5)).toBeLessThan(0.01);
    expect(ptukey(20, 2, 1000, false)).toBeLessThan(1e-12);
    // Where R's quadrature is known to be coarse (as R's own values are): df = 2, whose χ density
    // does not vanish at 0 (error 1e-6 at q = 0.01, 3e-4 at q = 20), and far tails of df = 5.
    const t2 = (q: number) => 1 - studentTTwoSided(q / Math.SQRT2, 2);
    expect(Math.abs(ptukey(0.01, 2, 2) - t2(0.01))).toBeLessThan(1e-6);
    expect(Math.abs(ptukey(20, 2, 2) - t2(20))).toBeLessThan(4e-4);
    expect(Math.abs(ptukey(20, 2, 5, false) - studentTTwoSided(20 / Math.SQRT2, 5))).toBeLessThan(2e-7);
  });

  it('has the limits of a distribution function at both ends', () => {
    expect(ptukey(0, 5, 10)).toBe(0);
    expect(ptukey(-1, 5, 10)).toBe(0);
    expect(ptukey(Infinity, 5, 10)).toBe(1);
    expect(ptukey(0, 5, 10, false)).toBe(1);
    // Lower tail: many means and a small q leave almost no chance that the range stays under q.
    const lowTail = ptukey(0.5, 50, 30);
    expect(lowTail).toBeGreaterThanOrEqual(0);
    expect(lowTail).toBeLessThan(1e-12);
    // Upper tail with large df: the range of 3 normals exceeds 8 with probability ~ 3·2·Φ(−8/√2)… tiny.
    expect(ptukey(8, 3, 5000, false)).toBeLessThan(1e-6);
    expect(ptukey(8, 3, 5000, false)).toBeGreaterThan(0);
    // Upper tail of few df decays like a power of q: still sizeable at q = 12.
    expect(ptukey(12, 5, 2, false)).toBeGreaterThan(0.01);
    // Increasing in q, decreasing in nmeans.
    let prev = 0;
    for (const q of [0.2, 1, 2, 3, 4, 6, 9]) {
      const p = ptukey(q, 8, 20);
      expect(p).toBeGreaterThan(prev);
      prev = p;
    }
    expect(ptukey(3, 3, 20)).toBeGreaterThan(ptukey(3, 4, 20));
  });

  it('treats df > 25,000 as infinite df, continuously', () => {
    for (const [q, k] of [
      [2, 3],
      [3.5, 8],
    ]) {
      expect(ptukey(q, k, 1e6)).toBe(normalRangeCdf(q, k));
      expect(ptukey(q, k, Infinity)).toBe(normalRangeCdf(q, k));
      expect(Math.abs(ptukey(q, k, 20000) - ptukey(q, k, 30000))).toBeLessThan(1e-4);
    }
  });

  it('qtukey inverts ptukey to R’s tolerance; qtukeyPrecise to 1e-12', () => {
    for (const [p, k, df] of [
      [0.95, 2, 5],
      [0.99, 20, 2],
      [0.5, 3, 10],
    ]) {
      expect(Math.abs(ptukey(qtukey(p, k, df), k, df) - p)).toBeLessThan(1e-5);
      expect(Math.abs(ptukey(qtukeyPrecise(p, k, df), k, df) - p)).toBeLessThan(1e-12);
    }
    // R's stopping rule leaves qtukey(0.95, 2, 5) 2.7e-7 away from the true quantile, which
    // qtukeyPrecise finds: √2 · t(0.975, 5) = √2 · 2.5705818356363146.
    expect(Math.abs(qtukeyPrecise(0.95, 2, 5) - Math.SQRT2 * 2.5705818356363146)).toBeLessThan(1e-11);
    expect(Math.abs(qtukey(0.95, 2, 5) - Math.SQRT2 * 2.5705818356363146)).toBeGreaterThan(1e-7);
    expect(qtukey(0, 4, 10)).toBe(0);
    expect(qtukey(1, 4, 10)).toBe(Infinity);
  });

  it('rejects arguments outside its domain', () => {
    expect(() => ptukey(1, 1, 10)).toThrow(RangeError);
    expect(() => ptukey(1, 3, 1)).toThrow(RangeError);
    expect(() => qtukey(1.5, 3, 10)).toThrow(RangeError);
    expect(Number.isNaN(ptukey(NaN, 3, 10))).toBe(true);
  });
});

describe('two-way ANOVA and Tukey HSD against R', () => {
  for (const name of CASES) {
    it(`${name}: means, ANOVA, every pair (in R's order), best and tied group`, () => {
      const g = golden[name];
      const res = tukeyHsd(g.runs, scoresOf(g));
      const bad: string[] = [];
      g.means.forEach((m, i) => within(bad, `mean ${g.runs[i]}`, res.means[i], m));
      const a = res.anova!;
      const mine: Record<keyof GoldenCase['anova'], number> = {
        df_run: a.dfRun,
        df_query: a.dfQuery,
        df_residual: a.dfResidual,
        ss_run: a.ssRun,
        ss_query: a.ssQuery,
        ss_residual: a.ssResidual,
        ms_residual: a.msResidual,
        f_run: a.fRun,
        p_run: a.pRun,
      };
      for (const k of Object.keys(g.anova) as (keyof GoldenCase['anova'])[])
        within(bad, `anova ${k}`, mine[k], g.anova[k]);
      expect(res.pairs.map((p) => `${p.a}-${p.b}`)).toEqual(g.tukey_hsd.map((p) => `${p.a}-${p.b}`));
      g.tukey_hsd.forEach((p, i) => {
        const q = res.pairs[i];
        within(bad, `${p.a}-${p.b} diff`, q.diff, p.diff_b_minus_a);
        within(bad, `${p.a}-${p.b} lwr`, q.lwr, p.lwr);
        within(bad, `${p.a}-${p.b} upr`, q.upr, p.upr);
        within(bad, `${p.a}-${p.b} p_adj`, q.pAdj, p.p_adj);
        expect(q.significant).toBe(p.p_adj < 0.05);
      });
      g.p_adj_vs_best.forEach((p, i) => within(bad, `p vs best ${g.runs[i]}`, res.pVsBest[i], p));
      expect(bad).toEqual([]);
      expect(res.best).toBe(g.best);
      expect(res.tiedWithBest).toEqual(g['tied_with_best_at_0.05']);
      expect(twoWayAnova(scoresOf(g))).toEqual(res.anova);
    });
  }

  it('two runs: the Tukey p value is the paired t test’s', () => {
    const g = golden['two-runs'];
    const [a, b] = scoresOf(g);
    const res = tukeyHsd(g.runs, [a, b]);
    expect(Math.abs(res.pairs[0].pAdj - pairedTTest(a, b).pValue)).toBeLessThan(TOL);
    // F = t² for one degree of freedom.
    expect(res.anova!.fRun).toBeCloseTo(pairedTTest(a, b).t ** 2, 10);
  });

  it('the F upper tail has its closed forms', () => {
    // d1 = 2: P(F > f) = (1 + 2f/d2)^(−d2/2); F(1, 1) is the square of a Cauchy variable.
    expect(fUpperTail(3, 2, 10)).toBeCloseTo(1.6 ** -5, 14);
    expect(fUpperTail(1, 1, 1)).toBeCloseTo(0.5, 12);
    expect(fUpperTail(0, 3, 9)).toBe(1);
  });
});

describe('groups and rank intervals', () => {
  it('counts the runs significantly better and worse than each run', () => {
    // Four runs with means 0.1 < 0.2 < 0.3 < 0.4; significant pairs: (A,C), (A,D), (B,D).
    const runs = ['A', 'B', 'C', 'D'];
    const means = [0.1, 0.2, 0.3, 0.4];
    const sig = new Set(['A-C', 'A-D', 'B-D']);
    const pairs: PairComparison[] = [];
    for (let i = 0; i < 4; i++)
      for (let j = i + 1; j < 4; j++) {
        const s = sig.has(`${runs[i]}-${runs[j]}`);
        pairs.push({
          a: runs[i],
          b: runs[j],
          diff: means[j] - means[i],
          pAdj: s ? 0.01 : 0.5,
          significant: s,
        });
      }
    expect(pairIndex(4, 1, 3)).toBe(4);
    const g = runGroups(runs, means, pairs, 0.05);
    expect(g.best).toBe('D');
    expect(g.rankIntervals).toEqual([
      [3, 4], // A: C and D are better
      [2, 4], // B: D is better
      [1, 3], // C: worse than none significantly better, A significantly worse
      [1, 2], // D: A and B significantly worse
    ]);
    expect(g.pVsBest).toEqual([0.01, 0.01, 0.5, 1]);
    expect(g.tiedWithBest).toEqual(['C', 'D']);
  });

  it('Tukey HSD on clearly separated runs ranks them exactly; a twin shares its rank interval', () => {
    // Query difficulty varies a lot; the runs add 0, 0.3, 0.6 with small noise, and D copies A.
    const Q = 12;
    const base = Array.from({ length: Q }, (_, q) => ((q * 7) % 10) / 20);
    const noise = (q: number, r: number) => (((q * 13 + r * 7) % 5) - 2) * 0.004;
    const A = base.map((v, q) => v + noise(q, 0));
    const B = base.map((v, q) => v + 0.3 + noise(q, 1));
    const C = base.map((v, q) => v + 0.6 + noise(q, 2));
    const res = tukeyHsd(['A', 'B', 'C', 'D'], [A, B, C, A]);
    expect(res.best).toBe('C');
    expect(res.tiedWithBest).toEqual(['C']);
    expect(res.rankIntervals).toEqual([
      [3, 4],
      [2, 2],
      [1, 1],
      [3, 4],
    ]);
    const ad = res.pairs[pairIndex(4, 0, 3)];
    expect(ad.diff).toBe(0);
    expect(ad.pAdj).toBe(1);
  });

  it('handles runs that differ by a constant on every query (no residual variance)', () => {
    const a = [0.1, 0.5, 0.9, 0.3];
    const res = tukeyHsd(['a', 'b', 'c'], [a, a.map((v) => v + 0.25), a]);
    expect(res.anova!.msResidual).toBeLessThan(1e-30);
    // P(Q > q) for q → ∞ is 1 − (a quadrature that reaches 1 − 7e-14), as in R.
    const [ab, ac, bc] = res.pairs.map((p) => p.pAdj);
    expect(ab).toBeLessThan(1e-12);
    expect(ac).toBe(1);
    expect(bc).toBeLessThan(1e-12);
    expect(res.best).toBe('b');
  });

  it('rejects inputs it cannot compare', () => {
    expect(() => tukeyHsd(['a'], [[1, 2]])).toThrow(RangeError);
    expect(() => tukeyHsd(['a', 'b'], [[1, 2], [1]])).toThrow(RangeError);
    expect(() =>
      tukeyHsd(
        ['a', 'a'],
        [
          [1, 2],
          [1, 3],
        ],
      ),
    ).toThrow(RangeError);
    expect(() =>
      tukeyHsd(
        ['a', 'b'],
        [
          [1, NaN],
          [1, 3],
        ],
      ),
    ).toThrow(RangeError);
    // (2 − 1)(2 − 1) = 1 residual degree of freedom: ptukey needs 2.
    expect(() =>
      tukeyHsd(
        ['a', 'b'],
        [
          [1, 2],
          [1, 3],
        ],
      ),
    ).toThrow(/residual degrees of freedom/);
  });
});

describe('randomized Tukey HSD', () => {
  // 3 runs × 6 queries: 6^6 = 46,656 arrangements.
  const runs3 = ['a', 'b', 'c'];
  const scores3 = [
    [0.1, 0.5, 0.3, 0.8, 0.2, 0.6],
    [0.3, 0.6, 0.2, 0.9, 0.5, 0.7],
    [0.5, 0.9, 0.4, 1.0, 0.6, 0.9],
  ];

  it('exact: enumerates N!^Q arrangements; the Monte Carlo p values fall within 3 standard errors', () => {
    const exact = exactRandomizedTukeyHsd(runs3, scores3);
    expect(exact.trials).toBe(46656);
    expect(exact.exact).toBe(true);
    const p = exact.pairs.map((x) => x.pAdj);
    // Not degenerate: one pair clearly different, one not, one in between.
    expect(p[0]).toBeGreaterThan(0.3);
    expect(p[1]).toBeLessThan(0.01);
    // p = count / 46,656.
    for (const x of exact.pairs)
      expect(Math.abs(x.pAdj * 46656 - Math.round(x.pAdj * 46656))).toBeLessThan(1e-6);
    const B = 20000;
    const mc = randomizedTukeyHsd(runs3, scores3, { trials: B, seed: 7 });
    expect(mc.exact).toBe(false);
    mc.pairs.forEach((x, i) => {
      expect(x.se).toBeCloseTo(Math.sqrt((x.pAdj * (1 - x.pAdj)) / B), 15);
      const se = Math.sqrt((p[i] * (1 - p[i])) / B);
      expect(Math.abs(x.pAdj - p[i])).toBeLessThan(3 * se + 1 / (B + 1));
      // The convention p = (count + 1) / (B + 1).
      expect(Math.abs(x.pAdj * (B + 1) - Math.round(x.pAdj * (B + 1)))).toBeLessThan(1e-6);
    });
    // The whole distribution of the range, not just three tail areas.
    const all = allArrangementRanges(scoreMatrix(runs3, scores3));
    const sampled = permutedRanges(scoreMatrix(runs3, scores3), B, 11);
    for (const t of [0.2, 0.4, 0.6, 0.8]) {
      const pe = all.filter((r) => r >= t).length / all.length;
      const ps = sampled.filter((r) => r >= t).length / B;
      expect(Math.abs(ps - pe)).toBeLessThan(3 * Math.sqrt((pe * (1 - pe)) / B));
    }
  });

  it('for two runs, the exact version is the exact paired randomization (sign-flip) test', () => {
    const a = [0.2, 0.35, 0.5, 0.1, 0.9, 0.45, 0.3, 0.6, 0.05, 0.7];
    const b = [0.3, 0.3, 0.65, 0.25, 0.85, 0.6, 0.3, 0.75, 0.2, 0.72];
    const exact = exactRandomizedTukeyHsd(['a', 'b'], [a, b]);
    expect(exact.trials).toBe(1024);
    expect(exact.pairs[0].pAdj).toBe(exactRandomizationTest(a, b).pValue);
    expect(exact.pairs[0].pAdj).toBeLessThan(0.05);
  });

  it('permutes each query uniformly whatever N (13 runs: two 32-bit draws per query)', () => {
    // Run 0 scores 1 on the first query and 2 on the second, every other score is 0: the range of
    // the sums is 3 when both land on the same run (probability 1/13), else 2.
    const N = 13;
    const scores = Array.from({ length: N }, (_, r) => (r === 0 ? [1, 2] : [0, 0]));
    const B = 26000;
    const ranges = permutedRanges(
      scoreMatrix(
        scores.map((_, r) => `r${r}`),
        scores,
      ),
      B,
      3,
    );
    const same = ranges.filter((r) => r === 3).length;
    expect(ranges.filter((r) => r === 2).length).toBe(B - same);
    const p = 1 / 13;
    expect(Math.abs(same / B - p)).toBeLessThan(4 * Math.sqrt((p * (1 - p)) / B));
  });

  it('is deterministic for a seed, and the seed matters', () => {
    const g = golden['twelve-close-runs'];
    const one = randomizedTukeyHsd(g.runs, scoresOf(g), { trials: 200, seed: 42 });
    const two = randomizedTukeyHsd(g.runs, scoresOf(g), { trials: 200, seed: 42 });
    expect(two.pairs.map((p) => p.pAdj)).toEqual(one.pairs.map((p) => p.pAdj));
    expect(two.seed).toBe(42);
    const m = scoreMatrix(g.runs, scoresOf(g));
    expect(permutedRanges(m, 50, 1)).not.toEqual(permutedRanges(m, 50, 2));
    // Its groups agree with Tukey's HSD on this case: every run tied with the best.
    expect(one.best).toBe(g.best);
    expect(one.tiedWithBest).toEqual(g.runs);
  });

  it('gives p = 1 to identical runs and p near 1/(B + 1) to a run far above the others', () => {
    const base = [0.1, 0.4, 0.2, 0.7, 0.5, 0.3, 0.6, 0.2];
    const res = randomizedTukeyHsd(['a', 'b', 'c'], [base, base, base.map((v) => v + 0.5)], {
      trials: 999,
      seed: 1,
    });
    expect(res.pairs[0].pAdj).toBe(1);
    expect(res.pairs[1].pAdj).toBe(1 / 1000);
    expect(res.rankIntervals).toEqual([
      [2, 3],
      [2, 3],
      [1, 1],
    ]);
  });

  it('refuses what it cannot do', () => {
    expect(() => randomizedTukeyHsd(runs3, scores3, { trials: 0 })).toThrow(RangeError);
    expect(() => randomizedTukeyHsd(runs3, scores3, { alpha: 1 })).toThrow(RangeError);
    // 6^9 = 10,077,696 arrangements.
    expect(6 ** 9).toBeGreaterThan(MAX_EXACT_ARRANGEMENTS);
    const nine = runs3.map(() => Array.from({ length: 9 }, (_, i) => i / 9));
    expect(() => exactRandomizedTukeyHsd(runs3, nine)).toThrow(/arrangements/);
  });
});

describe('all pairs across tasks', () => {
  // Two runs, two tasks. Per-query differences B − A: task T1 (0.2, 0), task T2 (0.1, 0.2, 0.1).
  // By hand, with the 5 (task, query) blocks: mean A 0.34, mean B 0.46, d̄ = 0.12,
  // Σ(d − d̄)² = 0.028, so SS_run = 5·2·0.06² = 0.036, SS_residual = 0.028/2 = 0.014 on
  // (2 − 1)(5 − 1) = 4 df, MSE = 0.0035, F = 0.036/0.0035 = 10.2857… = t² of the paired t test on d.
  const runs = ['A', 'B'];
  const T1 = {
    task: 'T1',
    scores: [
      [0.2, 0.6],
      [0.4, 0.6],
    ],
  };
  const T2 = {
    task: 'T2',
    scores: [
      [0.5, 0.1, 0.3],
      [0.6, 0.3, 0.4],
    ],
  };

  it('pools the queries of all tasks, each (task, query) a block, as computed by hand', () => {
    const { pooled, perTask } = compareAcrossTasks(runs, [T1, T2]);
    const a = pooled.anova!;
    expect(pooled.queries).toBe(5);
    expect(pooled.means[0]).toBeCloseTo(0.34, 14);
    expect(pooled.means[1]).toBeCloseTo(0.46, 14);
    expect(a.dfQuery).toBe(4);
    expect(a.dfResidual).toBe(4);
    expect(a.ssRun).toBeCloseTo(0.036, 14);
    expect(a.ssResidual).toBeCloseTo(0.014, 14);
    expect(a.msResidual).toBeCloseTo(0.0035, 14);
    expect(a.fRun).toBeCloseTo(0.036 / 0.0035, 11);
    const d = [0.2, 0, 0.1, 0.2, 0.1];
    const t = pairedTTest([0, 0, 0, 0, 0], d);
    // R's quadrature (ptukey) is 7e-7 off the exact t here, with only 4 df; the F test is exact.
    expect(pooled.pairs[0].pAdj).toBeCloseTo(t.pValue, 5);
    expect(a.pRun).toBeCloseTo(t.pValue, 12);
    // Interval: 0.12 ± t(0.975, 4)·√(0.007/5), t(0.975, 4) = 2.7764451051977987, to qtukey's precision.
    const half = 2.7764451051977987 * Math.sqrt(0.007 / 5);
    expect(pooled.pairs[0].lwr!).toBeCloseTo(0.12 - half, 6);
    expect(pooled.pairs[0].upr!).toBeCloseTo(0.12 + half, 6);
    expect(pooled.method).toContain('2 tasks pooled, each (task, query) a block');
    // Per task: T1 alone has (2 − 1)(2 − 1) = 1 residual df, too few for Tukey's HSD; T2 has 2.
    expect(perTask[0].task).toBe('T1');
    expect(perTask[0].comparison).toBeUndefined();
    expect(perTask[0].error).toMatch(/degrees of freedom/);
    expect(perTask[1].comparison!.anova!.dfResidual).toBe(2);
    expect(perTask[1].comparison!.means[1]).toBeCloseTo(1.3 / 3, 14);
  });

  it('a constant added to one task’s scores changes nothing (the blocks absorb it)', () => {
    const shifted = { task: 'T2', scores: T2.scores.map((s) => s.map((v) => v + 0.3)) };
    const a = compareAcrossTasks(runs, [T1, T2]).pooled;
    const b = compareAcrossTasks(runs, [T1, shifted]).pooled;
    expect(b.pairs[0].pAdj).toBeCloseTo(a.pairs[0].pAdj, 12);
    expect(b.anova!.ssResidual).toBeCloseTo(a.anova!.ssResidual, 14);
    expect(b.anova!.ssQuery).not.toBeCloseTo(a.anova!.ssQuery, 3);
  });

  it('pools the randomized test the same way, and takes runs keyed by id and query id', () => {
    const toRun = (id: string, r: number, name?: string) => ({
      id,
      name,
      perQuery: new Map(
        [T1, T2].flatMap((t) => t.scores[r].map((v, q) => [`${t.task}-q${q}`, { ndcg: v }] as const)),
      ),
    });
    const byTask = (r: number) =>
      [T1, T2].map((t) => ({
        task: t.task,
        inputs: runs.map((id, i) => ({
          id,
          name: `run ${id}`,
          perQuery: new Map(t.scores[i].map((v, q) => [`q${q}`, { ndcg: v }] as const)),
        })),
      }))[r];
    const res = allPairsAcrossTasks({
      tasks: [byTask(0), byTask(1)],
      measure: 'ndcg',
      options: { method: 'exact-randomized' },
    });
    // 2^5 sign flips of d: exactly the exact paired randomization test on the pooled differences.
    expect(res.pooled.trials).toBe(32);
    expect(res.pooled.pairs[0].pAdj).toBe(
      exactRandomizationTest([0, 0, 0, 0, 0], [0.2, 0, 0.1, 0.2, 0.1]).pValue,
    );
    expect(res.pooled.names).toEqual(['run A', 'run B']);
    expect(res.excludedQueries).toEqual({ T1: 0, T2: 0 });
    // The same pooled comparison from one set of runs whose query ids carry the task.
    const flat = allPairs({
      inputs: [toRun('A', 0), toRun('B', 1)],
      measure: 'ndcg',
      options: { method: 'tukey' },
    });
    expect(flat.pairs[0].pAdj).toBeCloseTo(compareAcrossTasks(runs, [T1, T2]).pooled.pairs[0].pAdj, 14);
  });

  it('aligns runs on the queries they all have and refuses mismatched tasks', () => {
    const a = {
      id: 'a',
      perQuery: new Map([
        ['q1', { m: 0.1 }],
        ['q2', { m: 0.5 }],
        ['q3', { m: 0.3 }],
        ['q4', { m: 0.9 }],
      ]),
    };
    const b = {
      id: 'b',
      perQuery: new Map([
        ['q3', { m: 0.4 }],
        ['q1', { m: 0.2 }],
        ['q2', { m: 0.6 }],
      ]),
    };
    const c = {
      id: 'c',
      perQuery: new Map([
        ['q2', { m: 0.9 }],
        ['q3', { m: 0.7 }],
        ['q1', { m: 0.5 }],
        ['q5', { m: 1 }],
      ]),
    };
    const res = allPairs({ inputs: [a, b, c], measure: 'm' });
    expect(res.queries).toBe(3);
    expect(res.excludedQueries).toBe(2);
    expect(res.means[0]).toBeCloseTo(0.3, 14);
    expect(res.means[2]).toBeCloseTo(0.7, 14);
    expect(res.names).toBeUndefined();
    expect(() => allPairs({ inputs: [a, b], measure: 'x' })).toThrow(/no value for 'x'/);
    expect(() =>
      allPairsAcrossTasks({
        tasks: [
          { task: 't1', inputs: [a, b] },
          { task: 't2', inputs: [a, c] },
        ],
        measure: 'm',
      }),
    ).toThrow(/same runs/);
  });
});

describe('export', () => {
  const g = golden['three-runs'];

  it('CSV of pairs and runs opens with the method and holds every value at full precision', () => {
    const res = tukeyHsd(g.runs, scoresOf(g));
    const csv = pairsCsv(res).split('\n');
    expect(csv[0]).toBe('# method: Tukey HSD (two-way ANOVA, queries as blocks), alpha 0.05');
    const header = csv.findIndex((l) => l.startsWith('a,b,'));
    expect(csv[header]).toBe('a,b,diff_b_minus_a,lwr,upr,p_adj,se,significant');
    expect(csv.slice(1, header).every((l) => l.startsWith('# '))).toBe(true);
    const rows = csv.slice(header + 1, -1).map((l) => l.split(','));
    expect(rows.length).toBe(3);
    rows.forEach((r, i) => {
      const p = g.tukey_hsd[i];
      expect([r[0], r[1]]).toEqual([p.a, p.b]);
      expect(Math.abs(Number(r[3]) - p.lwr)).toBeLessThan(TOL);
      expect(Math.abs(Number(r[5]) - p.p_adj)).toBeLessThan(TOL);
      expect(r[6]).toBe('');
    });
    expect(csv.at(-1)).toBe('');
    const runsRows = runsCsv(res)
      .split('\n')
      .filter((l) => l && !l.startsWith('#'));
    expect(runsRows).toEqual([
      'run,name,mean,rank_lo,rank_hi,p_adj_vs_best,tied_with_best',
      `run01,run01,${res.means[0]},3,3,${res.pVsBest[0]},false`,
      `run02,run02,${res.means[1]},2,2,${res.pVsBest[1]},false`,
      `run03,run03,${res.means[2]},1,1,1,true`,
    ]);
  });

  it('the printed runs table: best first, rank intervals, p against the best, the tied group', () => {
    const res = tukeyHsd(g.runs, scoresOf(g));
    const rows = runsTable(res);
    expect(rows.map((r) => [r[0], r[1], r[3], r[5]])).toEqual([
      ['1', 'run03', '1', 'best'],
      ['2', 'run02', '2', 'no'],
      ['3', 'run01', '3', 'no'],
    ]);
    expect(rows[0][4]).toBe('');
    expect(rows[1][2]).toBe(res.means[1].toFixed(4));
    const lines = formatTextTable([['#', 'Run', 'Mean'], ...rows.map((r) => r.slice(0, 3))]).split('\n');
    expect(lines[0]).toMatch(/^# {2}Run {4}\s+Mean$/);
    expect(new Set(lines.map((l) => l.length)).size).toBe(1);
  });

  it('CSV quotes names and says how the randomized p was computed; JSON uses the golden names', () => {
    const res = randomizedTukeyHsd(
      ['x,1', 'y "2"'],
      [
        [0.1, 0.2, 0.3],
        [0.2, 0.4, 0.3],
      ],
      { trials: 10, seed: 5 },
    );
    const csv = pairsCsv(res);
    expect(csv).toContain('# method: Randomized Tukey HSD (scores permuted within queries), alpha 0.05');
    expect(csv).toContain('# trials: 10, seed: 5, p = (count + 1) / (trials + 1)');
    expect(csv).toContain('"x,1","y ""2"""');
    const json = JSON.parse(multiComparisonJson(tukeyHsd(g.runs, scoresOf(g))));
    expect(json.method).toBe('Tukey HSD (two-way ANOVA, queries as blocks)');
    expect(json.anova.f_run).toBeCloseTo(g.anova.f_run, 9);
    expect(Object.keys(json.pairs[0])).toEqual([
      'a',
      'b',
      'diff_b_minus_a',
      'lwr',
      'upr',
      'p_adj',
      'significant',
    ]);
    expect(json.pairs[1].p_adj).toBeCloseTo(g.tukey_hsd[1].p_adj, 12);
    expect(json.p_adj_vs_best).toHaveLength(3);
    expect(json.tied_with_best).toEqual(g['tied_with_best_at_0.05']);
  });
});
