// The many-column resampling (resampling.ts) and compareRuns built on it give, to the bit, what the
// one-column functions of stats.ts give for the same seed — those are checked against numpy, scipy
// and brute force in stats.test.ts. The reference below is compareRuns as it was written before
// (one bootstrap and one randomization test per measure and system).
import { describe, expect, it } from 'vitest';
import { compareRuns, type CompareInput, type Comparison } from '../../src/lib/core/eval/compare';
import { bootstrapIntervals, randomizationCounts } from '../../src/lib/core/eval/resampling';
import {
  Xoshiro128,
  bootstrapMean,
  compareToBaseline,
  extremeThreshold,
  pairedBootstrap,
  randomizationTest,
  type CompareOptions,
} from '../../src/lib/core/eval/stats';

function reference(inputs: CompareInput[], baselineId: string, measures: string[], options: CompareOptions) {
  const base = inputs.find((i) => i.id === baselineId)!;
  const others = inputs.filter((i) => i !== base);
  const column = (p: CompareInput['perQuery'], m: string) =>
    new Map([...p].map(([q, v]) => [q, v[m] ?? 0] as [string, number]));
  return measures.map((measure) => {
    const b = column(base.perQuery, measure);
    const mean = bootstrapMean([...b.values()], {
      resamples: options.bootstrapResamples,
      seed: options.seed,
    });
    const results = compareToBaseline(
      b,
      others.map((o) => column(o.perQuery, measure)),
      options,
    );
    return {
      measure,
      systems: [
        { id: base.id, name: base.name, n: b.size, mean },
        ...results.map((r, i) => ({
          id: others[i].id,
          name: others[i].name,
          n: r.n,
          mean: r.bootstrap.b,
          diff: r.bootstrap.diff,
          pRandomization: r.randomization.pValue,
          pTTest: r.tTest.pValue,
          holmRandomization: r.holm.randomization,
          holmTTest: r.holm.tTest,
          wins: r.winTieLoss.wins,
          ties: r.winTieLoss.ties,
          losses: r.winTieLoss.losses,
        })),
      ],
    };
  });
}

/** Runs over `n` queries (ids q0, q1, …: insertion order is not byte order) with graded and continuous measures. */
function runs(n: number, seed: number): CompareInput[] {
  const g = new Xoshiro128(seed);
  const grid = (x: number) => Math.round(x * 10) / 10; // P_10-like: many exact ties
  const base = Array.from({ length: n }, () => ({ c: g.nextFloat(), p: grid(g.nextFloat()), z: 0 }));
  const make = (
    id: string,
    f: (v: { c: number; p: number; z: number }, i: number) => Record<string, number>,
  ) => ({
    id,
    name: id,
    perQuery: new Map(base.map((v, i) => [`q${i}`, f(v, i)] as [string, Record<string, number>])),
  });
  const better = make('better', (v) => ({
    c: Math.min(1, v.c + 0.03 * (g.nextFloat() - 0.3)),
    p: grid(Math.min(1, v.p + (g.nextFloat() < 0.2 ? 0.1 : 0))),
    z: 0,
  }));
  const partial = make('partial', (v) => ({ c: g.nextFloat(), p: grid(g.nextFloat()), z: 0.5 }));
  for (const q of [...partial.perQuery.keys()]) if (g.nextFloat() < 0.1) partial.perQuery.delete(q);
  return [make('base', (v) => ({ ...v })), better, partial, make('copy', (v) => ({ ...v }))];
}

describe('compareRuns equals the one-column stats.ts functions to the bit', () => {
  const measures = ['c', 'p', 'z', 'absent'];
  it('3,000 queries, four runs (one with 10% of the queries missing, one a copy), four measures', () => {
    const inputs = runs(3000, 11);
    const options = { seed: 5, bootstrapResamples: 1000, randomizationResamples: 2000 };
    const fast: Comparison = compareRuns({ inputs, baselineId: 'base', measures, options });
    expect(fast.measures).toEqual(reference(inputs, 'base', measures, options));
    // Not a vacuous comparison: real intervals and a mix of significant and null results.
    const c = fast.measures[0].systems;
    expect(c[1].diff!.lower).toBeLessThan(c[1].diff!.upper);
    expect(c[1].pRandomization!).toBeLessThan(0.01);
    expect(c[2].n).toBeLessThan(3000);
    expect(c[3].pRandomization).toBe(1);
  });

  it('small samples (exact randomization), another confidence level and no exact test', () => {
    for (const [n, options] of [
      [12, { seed: 1, bootstrapResamples: 1000, confidence: 0.9 }],
      [40, { seed: 2, bootstrapResamples: 1500, randomizationResamples: 999, exactRandomizationMaxN: 0 }],
      [1, { seed: 3 }],
    ] as [number, CompareOptions][]) {
      const inputs = runs(n, n);
      const fast = compareRuns({ inputs: inputs.slice(0, 2), baselineId: 'base', measures, options });
      const full = { seed: 0, bootstrapResamples: 2000, randomizationResamples: 10000, ...options };
      expect(fast.measures).toEqual(reference(inputs.slice(0, 2), 'base', measures, full));
    }
  });

  it('the most changed queries and the facets are unchanged in meaning', () => {
    const inputs = runs(500, 3);
    const c = compareRuns({ inputs, baselineId: 'base', measures: ['c'], changedLimit: 7 });
    expect(c.changed).toHaveLength(7);
    const base = inputs[0].perQuery;
    const all = [...base.keys()]
      .map((q) => {
        const d = inputs.slice(1).map((o) => (o.perQuery.get(q)?.c ?? 0) - base.get(q)!.c);
        return { q, max: Math.max(0, ...d.map(Math.abs)), d };
      })
      .sort((a, b) => b.max - a.max || (a.q < b.q ? -1 : 1));
    expect(c.changed.map((x) => x.queryId)).toEqual(all.slice(0, 7).map((x) => x.q));
    expect(c.changed[0].diffs).toEqual({ better: all[0].d[0], partial: all[0].d[1], copy: all[0].d[2] });
  });
});

describe('resampling.ts against stats.ts', () => {
  it('bootstrapIntervals: each column as pairedBootstrap gives it, large and tiny values included', () => {
    const g = new Xoshiro128(4);
    for (const n of [1, 2, 7, 333, 2000]) {
      const cols = [
        Float64Array.from({ length: n }, () => g.nextFloat()),
        Float64Array.from({ length: n }, () => Math.round(g.nextFloat() * 4) / 4),
        Float64Array.from({ length: n }, () => (g.nextFloat() - 0.5) * 1e-300),
        Float64Array.from({ length: n }, () => (g.nextFloat() - 0.5) * 1e40),
      ];
      const got = bootstrapIntervals(
        cols.map((values, i) => ({ values, confidence: i === 1 ? 0.9 : 0.95 })),
        1200,
        n,
      );
      cols.forEach((x, i) =>
        expect(got[i]).toEqual(
          pairedBootstrap(x, x, { resamples: 1200, seed: n, confidence: i === 1 ? 0.9 : 0.95 }).a,
        ),
      );
    }
  });

  it('randomizationCounts: the extreme counts of randomizationTest, with many resamples on the threshold', () => {
    const g = new Xoshiro128(9);
    for (const n of [21, 64, 100, 1000]) {
      // Values on a grid: many sign assignments give |S*| = |S_obs| exactly, the case the tolerance decides.
      const a = Array.from({ length: n }, () => Math.round(g.nextFloat() * 10) / 10);
      const b = a.map((v) =>
        g.nextFloat() < 0.3 ? Math.round((v + (g.nextFloat() < 0.6 ? 0.1 : -0.1)) * 10) / 10 : v,
      );
      const c = Array.from({ length: n }, () => g.nextFloat());
      const ds = [b.map((v, i) => v - a[i]), c.map((v, i) => v - a[i])].map((d) => Float64Array.from(d));
      const got = randomizationCounts(
        ds,
        ds.map((d) => extremeThreshold(d)),
        3000,
        n,
      );
      const want = [b, c].map((x) => randomizationTest(a, x, { resamples: 3000, seed: n }).extreme);
      expect(got).toEqual(want);
      expect(want[0]).toBeGreaterThan(0);
    }
    // Resamples whose |S*| falls on the threshold itself, to the last bits: d = (0.3, 0.1, t, 0, …) with
    // 2t = the tolerance, so flipping t alone gives |S*| = |S_obs| − 2t ≈ the threshold.
    for (const t of [2e-10, 2.0000000001e-10, 1.9999999999e-10, 2.00000000004e-10]) {
      const d = new Float64Array(100);
      d.set([0.3, 0.1, t]);
      d[57] = 1e-17;
      const a = new Array(100).fill(0.5);
      const b = a.map((v, i) => v + d[i]);
      const dd = Float64Array.from(b, (v, i) => v - a[i]);
      const got = randomizationCounts([dd], [extremeThreshold(dd)], 4000, 17);
      expect(got).toEqual([randomizationTest(a, b, { resamples: 4000, seed: 17 }).extreme]);
    }
  });
});
